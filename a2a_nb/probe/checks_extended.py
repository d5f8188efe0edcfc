"""Extended conformance: shared-subscription pools and the native binary artifact mode
(``--level extended``).

Profile: Optional Shared Subscription Dispatch 10-11, Requester Behavior (Interop) 6-8, Optional
MQTT Native Binary Artifact Mode 5-8, Conformance Levels (Extended 4-5).
"""
from __future__ import annotations

from typing import Optional

from ..protocol import cards, jsonrpc, messages, properties, states, topics
from ..protocol.ids import IDENTIFIER_RE
from ..protocol.safe_text import quoted
from .checks_tasks import NO_STREAMING
from .rules import EXTENDED, Outcome, check, failed, not_applicable, passed
from .probe_run import ANSWER_TEXT, ProbeRun


def pool_of(run: ProbeRun) -> Optional[str]:
    """The pool to probe: ``--pool``, else a pool request topic the card names."""
    if run.pool:
        return run.pool
    named = cards.request_topic_of(run.card)
    info = topics.parse_topic(named) if named else None
    return info.pool if info is not None and info.kind == "pool" else None


@check("pooled-responder-id", "pooled-responder-id", "a pooled reply names its member in a2a-responder-agent-id, "
       "and follow-ups to that member work", conformance=EXTENDED)
def pooled_responder_id(run: ProbeRun) -> Outcome:
    pool = pool_of(run)
    if pool is None:
        return not_applicable("no pool to probe: the card names no pool topic (give --pool NAME for a pool the "
                              "agent serves)")
    s = run.send(run.message(), to=f"pool:{pool}")
    sent = f"SendMessage to {topics.pool_topic(run.org, run.unit, pool)}"
    ex = s.exchange
    if ex.first is None:
        return failed(sent, ex.came_back(), "no correlated reply from the pool")
    member = ex.first.user_property(properties.RESPONDER_AGENT_ID)
    if not member or not IDENTIFIER_RE.fullmatch(member):
        return failed(sent, ex.came_back(), f"a2a-responder-agent-id is {quoted(member)}: a pooled reply must name its "
                      "member, or the requester treats it as a protocol error (Requester Behavior 6)")
    follow = run.call(jsonrpc.GET_TASK, messages.get_task_params(s.task_id), task_id=s.task_id)
    if not messages.is_task(follow.result):
        return failed(sent + f", then GetTask to {member}", follow.came_back(),
                      f"the member {member} named by the pooled reply does not answer for the task on its direct topic")
    return passed(sent + f", then GetTask to {member}", f"{member} answered both")


@check("binary-artifacts", "binary-chunk", "native binary chunks (when asked for and offered) carry Payload Format "
       "Indicator 0 and their five user properties", conformance=EXTENDED)
def binary_artifacts(run: ProbeRun) -> Outcome:
    if not run.streaming:
        return not_applicable(NO_STREAMING)
    mode = ((properties.ARTIFACT_MODE, properties.MODE_BINARY),)
    first = run.send(run.message(), stream=True, extra_props=mode)
    sents = [first]
    if states.is_interrupted(first.state or ""):
        sents.append(run.send(run.message(ANSWER_TEXT, task_id=first.task_id, context_id=first.context_id),
                              stream=True, extra_props=mode))
    sent = "SendStreamingMessage with a2a-artifact-mode=binary"
    chunks = [m for s in sents for m in s.exchange.correlated
              if m.user_property(properties.EVENT_TYPE) == properties.EVENT_ARTIFACT_UPDATE
              and (m.payload_format == 0 or properties.is_binary_chunk(m.user_properties, m.payload_format))]
    if not chunks:
        chosen = {str(m.user_property(properties.ARTIFACT_MODE)) for s in sents for m in s.exchange.correlated
                  if m.user_property(properties.ARTIFACT_MODE) is not None}
        return not_applicable("no native binary chunks came (the agent answered "
                              f"a2a-artifact-mode={'/'.join(sorted(chosen)) or 'absent'} and sent JSON artifacts)",
                              sent, sents[-1].exchange.came_back())
    needed = (properties.TASK_ID, properties.ARTIFACT_ID, properties.CHUNK_SEQNO, properties.LAST_CHUNK)
    missing = [k for k in needed if any(m.user_property(k) is None for m in chunks)]
    if missing:
        return failed(sent, f"{len(chunks)} binary chunk(s)", f"chunks without {', '.join(missing)}")
    unmarked = sum(1 for m in chunks if m.payload_format != 0)
    if unmarked:
        return failed(sent, f"{len(chunks)} binary chunk(s)", f"{unmarked} chunk(s) arrived without Payload Format "
                      "Indicator 0 (the profile requires it; if the agent sets it, the broker dropped it: "
                      "`python -m a2a_nb check-broker` tells)")
    return passed(sent, f"{len(chunks)} binary chunk(s), Payload Format Indicator 0, properties complete")
