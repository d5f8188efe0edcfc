"""Conformance checks on recorded traffic: which MUST and SHOULD of the profile did it break?

``check_traffic(df)`` reads a recording (anything ``load_traffic`` reads) and returns one row per finding:
``rule``, ``level`` (MUST / SHOULD), ``section`` (the profile section, as headed in
``mqtt_transport.md``), ``i`` (the message's row) and ``explanation`` (what was seen, why it
matters, what to change). A recording only shows what crossed the broker, so rules about private
state (for example "subscribe before publishing") are not checked.

Every rule is one small function below, registered with ``@rule(id, level, section, summary,
kinds)``: it gets one ``Message`` (a row of the frame, linked to its request) and the ``Context``
(what earlier messages did) and yields the explanation of each finding. ``RULES`` lists every
rule in the order they are defined. ``check_traffic`` runs, for every message in recorded order,
each rule that applies to its kind, then lets the context remember the message.

A recording file or a list of records is read without pandas (``reading.py``: the same readers
``load_traffic`` builds its columns with), so ``python -m a2a_nb lint`` and the probe run where
pandas is not installed: ``lint_findings`` returns plain tuples; ``check_traffic`` turns them into
a DataFrame, and reads a DataFrame (a part of a recording, say) as it is.

Topic parsing, identifiers, errors, states and stream ends come from ``a2a_nb.protocol``; payloads
are checked against the official A2A v1.0 types of ``a2a-sdk`` (``protocol.sdk_schema``: a strict
``ParseDict`` and the required fields), cards with ``protocol.card_schema``.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Union

from ..protocol import errors as E
from ..protocol import jsonrpc as J
from ..protocol import properties as P
from ..protocol import ubsp
from ..protocol.card_schema import type_problem
from ..protocol.ids import IDENTIFIER_RE, is_uuid4, readable_correlation
from ..protocol.messages import task_ids_of
from ..protocol.packet import MqttMessage
from ..protocol.pools import PRESENCE_EVENT
from ..protocol.routing import FALLBACK
from ..protocol.safe_text import quoted, safe_text
from ..protocol.sdk_schema import validate_payload
from ..protocol.streams import STREAM_SEQ, item_key, reply_ends_stream
from ..protocol.topics import parse_topic
from ..protocol.routing import replay
from .reading import KINDS, REQUEST_KINDS, describe, ends, pair, routing_steps, topic_info
from .records import FORMAT_VERSION, complete_record, read_records, record_problem

if TYPE_CHECKING:
    import pandas as pd

    from .frame import Source

MUST, SHOULD = "MUST", "SHOULD"
FINDING_COLUMNS = ["rule", "level", "section", "i", "explanation"]


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    section: str
    summary: str


RULES: dict[str, Rule] = {}
"""Every rule by id, in the order they are defined below."""

Check = Callable[["Message", "Context"], Iterable[Union[str, tuple[str, str]]]]
_CHECKS: list[tuple[Rule, frozenset, Check]] = []


def rule(id: str, level: str, section: str, summary: str, kinds: Iterable[str] = KINDS):
    """Register a check function as the rule ``id`` for messages of ``kinds``.

    The function yields one explanation per finding (or ``(level, explanation)`` when one finding
    is weaker than the rule, e.g. a SHOULD of a MUST rule).
    """
    def register(check: Check) -> Check:
        r = Rule(id, level, section, summary)
        RULES[id] = r
        _CHECKS.append((r, frozenset(kinds), check))
        return check
    return register


_BEARER_RE = re.compile(r"Bearer\s+[A-Za-z0-9\-._~+/]+=*")
_CHUNK_PROPS = (P.EVENT_TYPE, P.TASK_ID, P.ARTIFACT_ID, P.CHUNK_SEQNO, P.LAST_CHUNK)
_SEND_METHODS = (J.SEND_MESSAGE, J.SEND_STREAMING_MESSAGE)
_QOS_WHY = {
    True: "use QoS 1, so the PUBACK reason code (16 = no matching subscribers) tells the publisher nobody listens",
    False: "use QoS 1; QoS 2 adds a PUBREC/PUBREL/PUBCOMP round trip for nothing, since Correlation Data and "
           "Task.id already make duplicates harmless",
}


# -- what a check sees --------------------------------------------------------------------------------

@dataclass(eq=False)
class Message:
    """One recorded message as the checks read it: a row of ``load_traffic`` plus its request."""

    i: int
    kind: str
    topic: str
    qos: int
    retain: bool
    correlation: Optional[str]
    response_topic: Optional[str]
    method: Optional[str]
    task_id: Optional[str]
    event: Optional[str]
    from_agent: Optional[str]
    to_agent: Optional[str]
    request_i: Optional[int]
    payload: Any                    # payload_json
    props: dict[str, str]           # user properties, last value wins (properties.as_dict)
    binary: Optional[str]           # payload_b64
    payload_format: Optional[int]
    content_type: Optional[str] = None
    request: Optional["Message"] = None  # a reply's request (joined by Correlation Data)

    @property
    def protected(self) -> bool:
        """Sealed under a security profile (ubsp-v1): its payload is a JWE nobody but the recipient
        reads, so the rules about payloads do not apply to it (``ubsp-v1`` checks its metadata)."""
        return self.props.get(P.SECURITY_PROFILE) is not None

    @cached_property
    def item_key(self) -> Any:
        """What identifies a stream item across duplicate deliveries (Error Handling and
        Deduplication 2): ``a2a-stream-seq`` when present, else the item itself (``streams.item_key``:
        a copy delivered twice is the same payload; a recording keeps it as parsed JSON)."""
        seq = self.props.get(STREAM_SEQ)
        if seq is not None:
            return ("seq", seq)
        p = self.payload
        if isinstance(p, dict) and isinstance(p.get("result"), dict):
            return item_key(p["result"])
        return json.dumps(p, sort_keys=True) if p is not None else ("raw", self.binary)

    @property
    def ends_its_stream(self) -> bool:
        """Is this reply the last item on its correlation (Streaming Reply Mapping 5-7)? An error,
        any answer to a non-streaming request, or a terminal/interrupted state or Message
        (``streams.reply_ends_stream``)."""
        if type(self.payload) is not dict or self.request is None:
            return False
        return self.request.method not in J.STREAMING_METHODS or reply_ends_stream(self.payload)


_MESSAGE_COLUMNS = ("i", "kind", "topic", "qos", "retain", "correlation", "response_topic", "method", "task_id",
                    "event", "from_agent", "to_agent", "request_i", "payload_json")


def messages_of(df: "pd.DataFrame") -> list[Message]:
    """The rows of a traffic frame as ``Message`` objects, each reply linked to its request."""
    props = [P.as_dict(pairs) if pairs else {} for pairs in df["user_properties"]]
    binary = df["payload_b64"] if "payload_b64" in df else [None] * len(df)
    ctype = df["content_type"] if "content_type" in df else [None] * len(df)
    out = [Message(*values) for values in zip(*(df[c] for c in _MESSAGE_COLUMNS), props, binary,
                                                df["payload_format"], ctype)]
    return _linked(out)


def _linked(messages: list[Message]) -> list[Message]:
    by_i = {m.i: m for m in messages}
    for m in messages:
        if m.request_i is not None:
            m.request = by_i.get(m.request_i)
    return messages


def read_messages(source: Any) -> tuple[list[Message], dict[str, list[tuple[int, str, str]]]]:
    """A recording file or a list of record dicts as ``Message`` objects (as ``load_traffic`` would
    read them, without pandas) and the routing table's reroutes per Task.id (``frame.reroutes_by_task``).

    Raises ``ValueError`` naming the first record that is none (a file: ``read_records``)."""
    records = read_records(source) if isinstance(source, (str, os.PathLike)) else list(source)
    records = [complete_record(k, r) for k, r in enumerate(records)]
    for k, rec in enumerate(records):
        problem = record_problem({"v": FORMAT_VERSION, **rec})
        if problem is not None:
            raise ValueError(f"record {k}: {problem}")
    topics: dict[Any, tuple] = {}
    msgs: list[Message] = []
    where: list[tuple] = []  # (org, unit, agent, pool, responder) of each message, for the routing replay
    for k, rec in enumerate(records):
        topic = rec["topic"]
        kind, org, unit, agent, pool, _ = topics.get(topic) or topics.setdefault(topic, topic_info(topic))
        pairs = rec["user_properties"]
        ids_fields = describe(kind, rec["payload_json"], pairs, rec["payload_b64"], rec["payload_format"])
        sender, receiver = ends(kind, agent, pool, rec["response_topic"])
        msgs.append(Message(k, kind, topic, rec["qos"], rec["retain"], rec["correlation"], rec["response_topic"],
                            ids_fields[3], ids_fields[0], ids_fields[6], sender, receiver, None, rec["payload_json"],
                            P.as_dict(pairs) if pairs else {}, rec["payload_b64"], rec["payload_format"],
                            rec["content_type"]))
        where.append((org, unit, agent, pool, ids_fields[12]))
    rows, req = pair([m.kind for m in msgs], [m.correlation for m in msgs])
    for k, q in zip(rows, req):  # a reply takes from its request what frame.pair_replies gives it
        m, r = msgs[k], msgs[q]
        m.request_i, m.method = q, r.method
        m.from_agent = where[k][4] if where[k][4] is not None else r.to_agent
        if m.task_id is None:
            m.task_id = r.task_id
    for m, w in zip(msgs, where):
        if m.kind == "reply" and m.from_agent is None:
            m.from_agent = w[4]
    org, unit, agent, pool, responder = zip(*where) if where else ((),) * 5
    positions, steps = routing_steps([m.i for m in msgs], [r["t"] for r in records], [m.task_id for m in msgs],
                                     org, unit, agent, pool, responder, [m.kind for m in msgs],
                                     answered=(m.request_i for m in msgs if m.request_i is not None))
    moves: dict[str, list[tuple[int, str, str]]] = {}
    for k, move in zip(positions, replay(steps)):
        if move is not None:
            moves.setdefault(str(move.task_id), []).append((k, move.to.label, move.cause))
    return _linked(msgs), moves


@dataclass
class Context:
    """What the checks know besides the message: the options, and what earlier messages did.

    ``remember`` updates it after every rule has seen a message, so a rule always reads the
    recording as it was before that message.
    """

    schema: bool                    # check payloads with a2a-sdk
    answered: set[int]              # request rows that got at least one reply (the whole recording)
    correlations: dict[str, int] = field(default_factory=dict)   # Correlation Data -> first request row
    task_starts: dict[str, int] = field(default_factory=dict)    # Task.id -> its first request row
    task_targets: dict[str, Optional[str]] = field(default_factory=dict)  # Task.id -> where that request went
    moves: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)  # Task.id -> [(row, to, cause)]: its
    # requester's routing table replayed from the whole recording (frame.reroutes_by_task)
    unanswered: dict[str, list[tuple[int, Optional[str]]]] = field(default_factory=dict)  # Task.id -> [(row, target)]
    stream_ends: dict[int, tuple[int, Any]] = field(default_factory=dict)  # request row -> (row, publisher)
    items: dict[int, set] = field(default_factory=dict)         # request row -> item keys seen

    def remember(self, m: Message) -> None:
        if m.kind in REQUEST_KINDS:
            if m.correlation is not None:
                self.correlations.setdefault(m.correlation, m.i)
            if type(m.payload) is dict and m.task_id is not None:
                self.task_starts.setdefault(m.task_id, m.i)
                self.task_targets.setdefault(m.task_id, m.to_agent)
                if m.i not in self.answered:
                    self.unanswered.setdefault(m.task_id, []).append((m.i, m.to_agent))
        elif m.kind == "reply":
            if m.request is not None:
                self.items.setdefault(m.request.i, set()).add(m.item_key)
                if m.request.i not in self.stream_ends and m.ends_its_stream:
                    self.stream_ends[m.request.i] = (m.i, m.from_agent)

    def after_final_item(self, m: Message) -> Optional[tuple[int, Any]]:
        """(row, publisher) of the stream-final item that this reply follows on its correlation,
        unless this reply is a duplicate delivery of an item already seen."""
        if m.request is None:
            return None
        end = self.stream_ends.get(m.request.i)
        if end is None or m.item_key in self.items.get(m.request.i, ()):
            return None
        return end


def _short(corr: Optional[str]) -> str:
    """A recorded Correlation Data (hex, see FORMAT.md) as a person reads it, cut to 12 characters."""
    try:
        s = readable_correlation(bytes.fromhex(corr)) if corr else str(corr)
    except ValueError:  # a hand-edited recording: show what it holds
        s = str(corr)
    return s if len(s) <= 12 else s[:12] + "…"


def _params_message(payload: Any) -> Optional[dict]:
    """``params.message`` of a JSON-RPC request payload, if it has one."""
    params = payload.get("params") if type(payload) is dict else None
    msg = params.get("message") if isinstance(params, dict) else None
    return msg if isinstance(msg, dict) else None


def _send_message(m: Message) -> Optional[dict]:
    """The Message of a SendMessage / SendStreamingMessage request, if any."""
    return _params_message(m.payload) if m.method in _SEND_METHODS else None


# -- the rules (in the order of RULES) ----------------------------------------------------------------

@rule("identifiers", MUST, "Identifier Format",
      "topic levels and a2a-responder-agent-id match ^[A-Za-z0-9_.-]+$ and follow the Topic Model")
def identifiers(m: Message, ctx: Context) -> Iterator[str]:
    if m.kind == "invalid":
        try:
            parse_topic(m.topic)
            why = "it does not follow the Topic Model"
        except ValueError as exc:
            why = str(exc)
        yield f"topic {m.topic!r} is not a valid profile topic: {why}"
    responder = m.props.get(P.RESPONDER_AGENT_ID)
    if responder is not None and not IDENTIFIER_RE.fullmatch(responder):
        yield (f"a2a-responder-agent-id {responder!r} is not a valid agent_id "
               "(letters, digits, '_', '.', '-' only): requesters cannot route to it")
    if m.kind in REQUEST_KINDS and m.response_topic is not None:
        try:
            parse_topic(m.response_topic)
        except ValueError as exc:
            yield f"Response Topic {m.response_topic!r} is malformed: {exc}"


@rule("request-reply-path", MUST, "Request/Reply Mapping (MQTT v5) 2",
      "every request sets Response Topic and Correlation Data", kinds=REQUEST_KINDS)
def request_reply_path(m: Message, ctx: Context) -> Iterator[str]:
    missing = [name for name, value in (("Response Topic", m.response_topic), ("Correlation Data", m.correlation))
               if value is None]
    if missing:
        yield (f"request to {m.to_agent} has no {' and '.join(missing)}: the responder has no reply path "
               "and should reject or drop it; set both on every request")


@rule("reply-topic-pattern", SHOULD, "Request/Reply Mapping (MQTT v5) 4",
      "Response Topics follow $a2a/v1/reply/{org}/{unit}/{agent}/{reply_suffix}", kinds=REQUEST_KINDS)
def reply_topic_pattern(m: Message, ctx: Context) -> Iterator[str]:
    if m.response_topic is None:
        return
    try:
        info = parse_topic(m.response_topic)
    except ValueError:
        return  # malformed: an identifiers finding
    if info is None or info.kind != "reply":
        yield (f"Response Topic {m.response_topic!r} is not $a2a/v1/reply/{{org}}/{{unit}}/"
               "{agent}/{reply_suffix}: recorders and ACLs expect that pattern")


@rule("reply-correlation", MUST, "Request/Reply Mapping (MQTT v5) 3",
      "every reply and stream item echoes the Correlation Data of a request", kinds=("reply",))
def reply_correlation(m: Message, ctx: Context) -> Iterator[str]:
    if m.correlation is None:
        yield (f"reply on {m.topic} has no Correlation Data: requesters must ignore it as "
               "a protocol error; echo the request's Correlation Data unchanged")
    elif m.request is None:
        yield (f"reply on {m.topic} carries Correlation Data {_short(m.correlation)} that no recorded "
               "request used: the requester will drop it (Requester Behavior 5); echo the "
               "request's Correlation Data unchanged (or the request was not recorded)")


@rule("reply-topic", MUST, "Request/Reply Mapping (MQTT v5) 3",
      "replies go to the Response Topic of their request", kinds=("reply",))
def reply_topic(m: Message, ctx: Context) -> Iterator[str]:
    req = m.request
    if req is not None and m.topic != req.response_topic:
        yield (f"reply published on {m.topic} but its request (row {req.i}) asked for "
               f"{req.response_topic}: publish replies to the request's Response Topic")


@rule("jsonrpc-id", MUST, "Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT) 3",
      "a JSON-RPC response carries the id of its request", kinds=("reply",))
def jsonrpc_id(m: Message, ctx: Context) -> Iterator[str]:
    p, req = m.payload, m.request
    if req is None or type(p) is not dict:
        return
    req_p = req.payload if type(req.payload) is dict else {}
    rid = p.get("id")
    if "id" in req_p and not (rid is None and "error" in p) and rid != req_p.get("id"):
        yield (f"response id {rid!r} differs from its request's id {req_p.get('id')!r} "
               "(JSON-RPC 2.0: a response carries its request's id)")


@rule("task-id-uuid4", MUST, "Request/Reply Mapping (MQTT v5) 6",
      "SendMessage carries Message.taskId, a UUIDv4 made by the requester, from the task's first request",
      kinds=REQUEST_KINDS)
def task_id_uuid4(m: Message, ctx: Context) -> Iterator[str]:
    msg = _send_message(m)
    if msg is None:
        return
    tid = msg.get("taskId")
    if tid is None:
        yield (f"{m.method} without Message.taskId: over MQTT the requester creates Task.id "
               "(a UUIDv4) before the first publish so retries cannot duplicate the task; "
               "responders must reject this request")
    elif type(tid) is not str:
        yield f"Message.taskId must be a string (a UUIDv4), got {quoted(tid)}"
    elif tid not in ctx.task_starts and not is_uuid4(tid):
        yield (f"the first {m.method} of task {tid!r} does not carry a UUIDv4 Task.id; "
               "generate it with uuid.uuid4() (IdSource.task_id())")


@rule("task-id-stable", MUST, "Request/Reply Mapping (MQTT v5) 7",
      "replies and stream items echo the Task.id of their request", kinds=("reply",))
def task_id_stable(m: Message, ctx: Context) -> Iterator[str]:
    if m.request is None or type(m.payload) is not dict:
        return
    own = task_ids_of(m.payload, m.props)[0]
    asked = m.request.task_id
    if own is not None and asked is not None and own != asked:
        yield (f"reply names Task.id {own!r} but its request was for task {asked!r}: "
               "responders must use the requester's Task.id in every reply and stream item")


@rule("context-id", MUST, "Multi-Turn Conversation Patterns (Context Identifier Semantics 4, 7)",
      "a2a-context-id matches Message.contextId; replies echo the requester's contextId",
      kinds=("request", "pool", "reply"))
def context_id(m: Message, ctx: Context) -> Iterator[str]:
    if m.kind in REQUEST_KINDS:
        msg = _send_message(m)
        prop = m.props.get(P.CONTEXT_ID)
        if msg is not None and prop is not None and msg.get("contextId") is not None and prop != msg["contextId"]:
            yield (f"a2a-context-id {prop!r} differs from Message.contextId "
                   f"{msg.get('contextId')!r}; both must match (the payload is authoritative)")
        return
    if m.request is None or type(m.payload) is not dict:
        return
    own = task_ids_of(m.payload, m.props)[1]
    asked = _params_message(m.request.payload)
    sent = asked.get("contextId") if asked is not None else None
    if sent and own and own != sent:
        yield (f"reply has contextId {own!r}, the request sent {sent!r}: "
               "responders must echo the requester's contextId")


@rule("fresh-correlation", MUST, "Requester Retry and Timeout Profile 3",
      "every publish (including retries) uses new Correlation Data", kinds=REQUEST_KINDS)
def fresh_correlation(m: Message, ctx: Context) -> Iterator[str]:
    first = ctx.correlations.get(m.correlation) if m.correlation is not None else None
    if first is not None:
        yield (f"Correlation Data {_short(m.correlation)} was already used by the request at row "
               f"{first}: generate new Correlation Data for every publish, retries "
               "included (Requester Behavior 2), or replies cannot be told apart")


@rule("card-retained", MUST, "Discovery Topic", "Agent Cards are published retained", kinds=("discovery",))
def card_retained(m: Message, ctx: Context) -> Iterator[str]:
    if not m.retain:
        yield (f"the card on {m.topic} was published without the retain flag: "
               "subscribers that connect later will never see it; publish cards retained")


def _is_card(m: Message) -> bool:
    """A discovery message with a card in it (an empty payload deletes a retained card)."""
    return m.payload is not None or bool(m.binary)


@rule("card-status", SHOULD, "Presence and Liveness 1",
      "Agent Cards carry a2a-status online/offline (and a2a-status-source)", kinds=("discovery",))
def card_status(m: Message, ctx: Context) -> Iterator[str]:
    if not _is_card(m):
        return
    status = m.props.get(P.STATUS)
    if status is None:
        yield ("the card has no a2a-status user property: subscribers cannot tell a live "
               "agent from a stale card; add a2a-status=online (and a2a-status-source=agent)")
    elif status not in P.STATUSES:
        yield f"a2a-status is {status!r}; the profile defines 'online' and 'offline'"


@rule("not-retained", SHOULD, "Request/Reply Mapping (MQTT v5)",
      "requests, replies and events are not retained (only cards, pool members' presence and key metadata are)",
      kinds=("request", "pool", "reply", "event"))
def not_retained(m: Message, ctx: Context) -> Iterator[str]:
    # a pool member's presence and an agent's key metadata are state, retained like a card
    state = m.kind == "event" and m.props.get(P.EVENT_TYPE) in (PRESENCE_EVENT, ubsp.KEY_EVENT)
    if m.retain and not state:
        yield (f"this {m.kind} was published retained: the broker will replay it to every "
               "future subscriber (a stale request can be executed again); publish with retain=False")


@rule("qos1", SHOULD, "QoS Guidance 1",
      "requests and replies use QoS 1 (cards: not QoS 0); QoS 0 loses the PUBACK reason code",
      kinds=("request", "pool", "reply", "discovery"))
def qos1(m: Message, ctx: Context) -> Iterator[str]:
    if m.kind == "discovery":
        if _is_card(m) and m.qos == 0:
            yield "the card was published with QoS 0; register with QoS 1 (Discovery Publisher Behavior 1)"
    elif m.qos != 1:
        what, where = (f"request to {m.to_agent}", "Request/Reply Mapping 1") if m.kind in REQUEST_KINDS else \
            ("reply", "Request/Reply Mapping 3, Streaming Reply Mapping 4")
        yield f"{what} published with QoS {m.qos}: " + _QOS_WHY[m.qos == 0] + f" ({where})"


@rule("after-stream-final", MUST, "Streaming Reply Mapping (SendStreamingMessage) 5-7",
      "nothing follows a stream-final item (terminal/interrupted state, Message, error) on a correlation",
      kinds=("reply",))
def after_stream_final(m: Message, ctx: Context) -> Iterator[str]:
    end = ctx.after_final_item(m)
    if end is not None and end[1] == m.from_agent:
        yield (f"{m.event or 'item'} after the stream-final item at row {end[0]} on "
               f"correlation {_short(m.correlation)}: the requester has already closed that "
               "correlation; stop publishing after a terminal or interrupted state")


@rule("stream-order", SHOULD, "Streaming Reply Mapping (SendStreamingMessage) 5-7",
      "items of one correlation come from one publisher, so they cannot arrive after its final item",
      kinds=("reply",))
def stream_order(m: Message, ctx: Context) -> Iterator[str]:
    end = ctx.after_final_item(m)
    if end is not None and end[1] != m.from_agent:
        yield (f"{m.event or 'item'} from {m.from_agent} arrived after the stream-final item "
               f"from {end[1]} (row {end[0]}) on correlation {_short(m.correlation)}: MQTT orders messages "
               "per publisher only, so the requester drops it; publish all items of one stream "
               "from the same client")


@rule("follow-latest-responder", MUST, "Optional Task Handover 3-4",
      "follow-ups for a task go to the latest a2a-responder-agent-id (fallback to the card agent only "
      "after the new agent went silent)", kinds=REQUEST_KINDS)
def follow_latest_responder(m: Message, ctx: Context) -> Iterator[str]:
    task, target = m.task_id, m.to_agent
    if type(m.payload) is not dict or task is None or task not in ctx.task_starts or target is None:
        return
    moves = ctx.moves.get(task, [])
    before = [move for move in moves if move[0] < m.i]
    expected = before[-1][1] if before else ctx.task_targets[task]  # where the requester's table routes it
    if target == expected:
        return
    fell_back = any(j == m.i and cause == FALLBACK for (j, _, cause) in moves)
    went_silent = [j for (j, agent) in ctx.unanswered.get(task, ()) if agent == expected and j < m.i]
    if fell_back and went_silent:
        return  # fallback to the card agent after the new agent went silent: allowed
    if before and before[-1][2] != FALLBACK:
        yield (f"{m.method} for task {_short(task)} went to {target}, but the reply at row {before[-1][0]} named "
               f"a2a-responder-agent-id={expected}: requesters must honor the most recent responder id "
               "(fall back to the card agent only after that agent stops answering)")
    elif before:
        yield (f"{m.method} for task {_short(task)} went to {target}, but the requester fell back to {expected} "
               f"at row {before[-1][0]}: follow-ups belong to {expected} until a reply names a new responder")
    else:
        yield (f"{m.method} for task {_short(task)} went to {target}, but no reply named a new responder: "
               f"follow-ups belong to {expected}, where the task started")


@rule("pooled-responder-id", MUST, "Optional Shared Subscription Dispatch 10",
      "replies to pooled requests carry a2a-responder-agent-id", kinds=("reply",))
def pooled_responder_id(m: Message, ctx: Context) -> Iterator[str]:
    req = m.request
    if req is not None and req.kind == "pool" and m.props.get(P.RESPONDER_AGENT_ID) is None:
        yield (f"reply to a pooled request (row {req.i}, {req.to_agent}) without "
               "a2a-responder-agent-id: the requester cannot learn which pool member owns the "
               "task and must treat the reply as a protocol error")


@rule("binding-error", MUST, "Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT) 5",
      "-32003/-32004/-32005 binding errors carry the matching error.data.a2a_error", kinds=("reply",))
def binding_error(m: Message, ctx: Context) -> Iterator[Union[str, tuple[str, str]]]:
    p = m.payload
    if m.request is None or type(p) is not dict or not isinstance(p.get("error"), dict):
        return
    err = p["error"]
    data = err.get("data")
    marker = data.get("a2a_error") if isinstance(data, dict) else None
    code = err.get("code")
    if marker is None:
        return
    want = E.BINDING_NAMES.get(code) if isinstance(code, int) else None
    if want is None:
        yield SHOULD, (f"error {code!r} carries data.a2a_error={marker!r}, but the marker only "
                       "belongs to the binding's -32003/-32004/-32005; drop it or use the binding code")
    elif marker != want:
        yield (f"binding error {code} must carry data.a2a_error={want!r}, not {marker!r}: "
               "requesters decide on retries by this marker")


def _is_binary_chunk(m: Message) -> bool:
    return m.payload is None and m.binary is not None and not m.protected


@rule("binary-chunk", MUST, "Optional MQTT Native Binary Artifact Mode 5-8",
      "binary chunks only when requested, with Payload Format Indicator 0 and their five user properties",
      kinds=("reply",))
def binary_chunk(m: Message, ctx: Context) -> Iterator[str]:
    if m.request is None or not _is_binary_chunk(m):
        return
    if m.request.props.get(P.ARTIFACT_MODE) != P.MODE_BINARY:
        yield ("a non-JSON reply, but the request did not ask for a2a-artifact-mode=binary: "
               "without it responders must use JSON mode (base64 'raw' parts)")
    if m.payload_format != 0:
        yield ("a binary artifact chunk must set Payload Format Indicator 0 (unspecified bytes); "
               f"it has {m.payload_format!r}")
    missing = [k for k in _CHUNK_PROPS if k not in m.props]
    if missing:
        yield (f"binary artifact chunk without {', '.join(missing)}: the requester cannot "
               "place or de-duplicate the chunk")


@rule("no-bearer-echo", MUST, "Responder Behavior (Interop) 8",
      "no a2a-authorization property or 'Bearer ' token in replies, events or cards",
      kinds=("reply", "event", "discovery"))
def no_bearer_echo(m: Message, ctx: Context) -> Iterator[str]:
    keys = [k for k in m.props if P.is_authorization_key(k)]
    if keys:
        yield (f"this {m.kind} carries the user property {keys[0]!r}: responders must never "
               "echo bearer tokens (also OAuth 2.0 and OIDC over MQTT User Properties 6); "
               "build reply properties from scratch instead of copying the request's")
    text = json.dumps(m.payload) if m.payload is not None else ""
    values = " ".join(v for k, v in m.props.items() if not P.is_authorization_key(k))
    if _BEARER_RE.search(text) or _BEARER_RE.search(values):
        yield (f"this {m.kind} contains 'Bearer <token>' text: a bearer token must never "
               "appear in replies, events or cards; remove it from the payload/properties")


@rule("a2a-schema", MUST, "A2A v1.0 data structures (Profile: A2A base specification)",
      "request params, results and errors are valid A2A v1.0 JSON-RPC (checked with a2a-sdk)",
      kinds=("request", "pool", "reply"))
def a2a_schema(m: Message, ctx: Context) -> Iterator[str]:
    p = m.payload
    if m.protected:
        return  # a JWE: only its recipient can check what is inside (``ubsp-v1`` checks the envelope)
    if m.kind in REQUEST_KINDS:
        if type(p) is not dict:
            yield "the request payload is not a JSON object: A2A over MQTT requests are JSON-RPC 2.0 request objects"
        elif ctx.schema:
            yield from _request_schema(p)
    elif m.request is None:
        if type(p) is not dict and not m.binary:
            yield "reply payload is empty"
    elif _is_binary_chunk(m):
        return  # a binary-chunk matter
    elif type(p) is not dict:
        yield "reply payload is not a JSON object (JSON-RPC 2.0 response)"
    elif ctx.schema:
        yield from _reply_schema(p, m.request.method)


@rule("ubsp-v1", MUST, "Optional Untrusted-Broker Security Profile 3-4, 8-9",
      "a ubsp-v1 request, and every reply to it, is a JOSE payload naming requester and recipient/responder",
      kinds=("request", "reply"))
def ubsp_envelope(m: Message, ctx: Context) -> Iterator[str]:
    if m.kind == "request":
        if m.protected:
            problem = ubsp.request_problem(_as_packet(m), m.to_agent or "")
            if problem:
                yield problem
        return
    if m.request is None or not m.request.protected:
        return
    if not m.protected:
        if not ubsp.is_plaintext_refusal(m.payload):
            yield ("a reply to a ubsp-v1 request is not protected: every reply and stream item of the "
                   "interaction must be a JWE to the requester")
        return
    problem = ubsp.response_problem(_as_packet(m), m.request.props.get(P.REQUESTER_AGENT_ID, ""))
    if problem:
        yield problem


def _as_packet(m: Message) -> MqttMessage:
    """The MQTT metadata of a recorded message (what the ubsp-v1 rules read)."""
    return MqttMessage(m.topic, b"", user_properties=tuple(m.props.items()), content_type=m.content_type)


def _request_schema(p: dict) -> Iterator[str]:
    try:
        J.parse_request(json.dumps(p))
    except E.A2AError as exc:
        yield f"not a JSON-RPC 2.0 request: {exc.message}"
        return
    method = p["method"]
    if method not in J.KNOWN_METHODS:
        hint = " (v0.3 name: A2A v1.0 uses PascalCase such as 'SendMessage')" if "/" in method else ""
        yield f"unknown A2A v1.0 method {method!r}{hint}"
        return
    bad = validate_payload(J.PARAMS_TYPE[method], p.get("params", {}))
    if bad:
        yield f"{method} params are not a valid A2A v1.0 {J.PARAMS_TYPE[method]}: {bad}"


def _reply_schema(p: dict, method: Any) -> Iterator[str]:
    try:
        resp = J.parse_response(p)
    except ValueError as exc:
        yield f"not a JSON-RPC 2.0 response: {exc}"
        return
    if resp.error is not None:
        err = resp.error
        if isinstance(err.get("data"), list) and err["code"] in E.CORE_NAMES:
            if not all(isinstance(d, dict) and "@type" in d for d in err["data"]):
                yield (f"core error {err['code']} data entries must be typed objects "
                       "(google.rpc.ErrorInfo with '@type')")
        return
    kind = J.RESULT_TYPE.get(method) if isinstance(method, str) else None
    if kind is None:
        return
    bad = validate_payload(kind, resp.result)
    if bad:
        what = "stream item" if method in J.STREAMING_METHODS else "result"
        yield f"{method} {what} is not a valid A2A v1.0 {kind}: {bad}"


@rule("card-schema", SHOULD, "Agent Card Requirements 1", "card payloads are valid A2A v1.0 AgentCards",
      kinds=("discovery",))
def card_schema(m: Message, ctx: Context) -> Iterator[str]:
    if not ctx.schema or not _is_card(m):
        return
    if m.payload is None:
        yield "the card payload is not JSON"
        return
    bad = type_problem(m.payload)  # the normative check of a card (card_schema)
    if bad:
        yield f"the card is not a valid A2A v1.0 AgentCard: {bad}"


# -- running the rules --------------------------------------------------------------------------------

Finding = tuple[str, str, str, int, str]
"""One finding: ``(rule, level, section, i, explanation)`` (``FINDING_COLUMNS``)."""
Findings = Union["pd.DataFrame", list[Finding]]


def lint_findings(source: Any, schema: bool = True) -> list[Finding]:
    """Every finding in a recording, as tuples sorted by message, then level and rule.

    ``source``: a recording file, a list of record dicts (both read without pandas) or a frame of
    ``load_traffic``. ``schema=False`` skips the a2a-sdk payload checks (about 0.1 ms per message)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(source, pd.DataFrame):
        from .frame import reroutes_by_task

        messages, moves = messages_of(source), reroutes_by_task(source)
    else:
        messages, moves = read_messages(source)
    ctx = Context(schema=schema, answered={m.request_i for m in messages if m.request_i is not None}, moves=moves)
    found: list[Finding] = []
    for m in messages:
        for r, kinds, check in _CHECKS:
            if m.kind in kinds:
                for note in check(m, ctx):
                    level, text = note if isinstance(note, tuple) else (r.level, note)
                    found.append((r.id, level, r.section, int(m.i), text))
        ctx.remember(m)
    return sorted(found, key=lambda f: (f[3], f[1], f[0]))


def check_traffic(df: "Source", schema: bool = True) -> "pd.DataFrame":
    """Every finding in a recording: columns ``rule, level, section, i, explanation``.

    ``df`` is anything ``load_traffic`` accepts. ``schema=False`` skips the a2a-sdk payload checks
    (about 0.1 ms per message). Findings are sorted by message, then rule.
    """
    import pandas as pd

    if not isinstance(df, (str, os.PathLike, list, pd.DataFrame)):  # a Recorder, an iterable of records
        from .frame import load_traffic

        df = load_traffic(df)
    out = pd.DataFrame(lint_findings(df, schema=schema), columns=FINDING_COLUMNS)
    out["i"] = out["i"].astype("int64")
    return out


# -- files and the command line ----------------------------------------------------------------------

def _levels(findings: Findings) -> list[str]:
    return [f[1] for f in findings] if isinstance(findings, list) else list(findings["level"])


def exit_code(findings: Findings) -> int:
    """1 when any MUST finding is present, else 0."""
    return int(MUST in _levels(findings))


def lint_file(path: str, schema: bool = True) -> tuple["pd.DataFrame", int]:
    """Lint a recording file: ``(findings, exit_code)``; exit code 1 on any MUST violation."""
    findings = check_traffic(path, schema=schema)
    return findings, exit_code(findings)


def summary(findings: Findings, messages: Optional[int] = None, name: str = "traffic") -> str:
    """One line: counts by level and the verdict."""
    levels = _levels(findings)
    must, should = levels.count(MUST), levels.count(SHOULD)
    n = f"{messages} messages, " if messages is not None else ""
    verdict = "FAIL (MUST violations)" if must else "OK"
    return f"{name}: {n}{must} MUST and {should} SHOULD finding(s): {verdict}"


SHOWN_CHARS = 1500
"""An explanation is printed with at most this many characters; a word in it (a value it quotes
from the recording) with at most ``WORD_CHARS``."""
WORD_CHARS = 80
_LONG_WORD = re.compile(r"\S{%d,}" % (WORD_CHARS + 1))


def _printable(text: str) -> str:
    """An explanation for a terminal: each word cut to ``WORD_CHARS`` (the advice around a quoted
    100 kB value stays readable), the whole to ``SHOWN_CHARS``, invisible characters shown escaped
    (``safe_text``: an ESC or a BEL never reaches the terminal raw)."""
    return safe_text(_LONG_WORD.sub(lambda m: m.group()[:WORD_CHARS - 1] + "…", text), SHOWN_CHARS)


def format_findings(findings: Findings, width: int = 100) -> str:
    """A readable table: one header line per finding, the explanation (cut to ``SHOWN_CHARS``,
    control characters escaped) wrapped below it."""
    import textwrap

    rows = findings if isinstance(findings, list) else list(zip(*(findings[c] for c in FINDING_COLUMNS)))
    if not rows:
        return "no findings"
    lines = []
    w_rule = max(len(r[0]) for r in rows)
    for rule, level, section, i, text in rows:
        lines.append(f"#{i:<5} {level:<6} {rule:<{w_rule}}  [{section}]")
        lines.extend(textwrap.wrap(_printable(str(text)), width=width, initial_indent="       ",
                                   subsequent_indent="       "))
    return "\n".join(lines)


def main_lint(path: str, schema: bool = True, out=None) -> int:
    """Print the findings of a recording and a one-line summary; return the exit code."""
    out = out or sys.stdout
    try:
        records = read_records(path)
        findings = lint_findings(records, schema=schema)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_findings(findings), file=out)
    print(summary(findings, len(records), str(path)), file=out)
    return exit_code(findings)
