"""Checks of the retained Agent Card and of the first request/reply exchange.

Profile: Discovery Topic, Discovery Publisher Behavior 1, Presence and Liveness 1-2, Agent Card
Requirements 1, Discovery Interoperability 3; Request/Reply Mapping (MQTT v5) 3-7; Multi-Turn
Conversation Patterns (Context Identifier Semantics 4); QoS Guidance 1.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

from ..protocol import cards, jsonrpc, properties, topics
from ..protocol.card_schema import card_problems
from ..protocol.messages import task_ids_of
from ..protocol.safe_text import quoted
from ..protocol.sdk_schema import validate_payload
from ..traffic.lint import SHOULD
from .client import short_bytes
from .rules import Outcome, check, failed, not_applicable, passed
from .probe_run import ProbeRun, Sent


def _subscribed(run: ProbeRun) -> str:
    return f"subscribe {topics.discovery_filter(run.org, run.unit)}"


@check("card-retained", "card-retained", "the Agent Card is a retained message on the agent's discovery topic")
def card_retained(run: ProbeRun) -> Outcome:
    m = run.card_message
    if m.retain:
        return passed(_subscribed(run), f"card on {m.topic}, retained")
    return failed(_subscribed(run), f"card on {m.topic} without the retain flag",
                  "a card that is not retained is never seen by subscribers that connect later; publish it retained")


@check("card-qos", "qos1", "the retained card was published with QoS 1")
def card_qos(run: ProbeRun) -> Outcome:
    m = run.card_message
    if m.qos >= 1:
        return passed(_subscribed(run), f"card delivered with QoS {m.qos} (subscribed with QoS 1)")
    return failed(_subscribed(run), "card delivered with QoS 0 (subscribed with QoS 1)",
                  "the card was published with QoS 0; register with QoS 1 (Discovery Publisher Behavior 1)")


@check("card-status", "card-status", "the card carries a2a-status=online and a2a-status-source=agent")
def card_status(run: ProbeRun) -> Outcome:
    m = run.card_message
    status, source = m.user_property(properties.STATUS), m.user_property(properties.STATUS_SOURCE)
    got = f"a2a-status={status}, a2a-status-source={source}"
    if status == properties.ONLINE and source is not None:
        return passed(_subscribed(run), got)
    if status is None:
        return failed(_subscribed(run), got, "no a2a-status on the card: subscribers cannot tell a live agent from "
                      "a stale card; publish it with a2a-status=online, a2a-status-source=agent")
    if status != properties.ONLINE:
        return failed(_subscribed(run), got, f"the card says a2a-status={quoted(status)} although the agent is being "
                      "probed; a running agent's card says 'online'")
    return failed(_subscribed(run), got, "a2a-status-source is missing: add a2a-status-source=agent "
                  "(Presence and Liveness 2)")


@check("card-schema", "card-schema", "the card is a valid A2A v1.0 AgentCard (checked with a2a-sdk)")
def card_schema(run: ProbeRun) -> Outcome:
    problems = card_problems(run.card, sdk=True)
    if not problems:
        return passed(_subscribed(run),
                      f"card {quoted(run.card.get('name'))}, {_count(run.card.get('skills'))} skill(s)")
    return failed(_subscribed(run), "an AgentCard with problems", "; ".join(problems[:4]))


@check("card-interface", "card-interface", "the card names the agent's MQTT request topic in supportedInterfaces",
       level=SHOULD, section="Discovery Interoperability 3")
def card_interface(run: ProbeRun) -> Outcome:
    named = cards.request_topic_of(run.card)
    if named == run.request_topic:
        return passed(_subscribed(run), f"MQTT interface {named}")
    mqtt = [i for i in run.card.get("supportedInterfaces") or []
            if isinstance(i, dict) and cards.is_mqtt_binding(i.get("protocolBinding"))]
    if named is None and mqtt:
        return passed(_subscribed(run),
                      f"MQTT interface {quoted(mqtt[0].get('url'))} ({quoted(mqtt[0].get('protocolBinding'), 100)})",
                      interop="the MQTT interface's url names no request topic; requesters take the Topic Model's "
                              f"direct topic {run.request_topic}")
    if named is None:
        return failed(_subscribed(run), "no MQTT entry in supportedInterfaces",
                      "requesters that select an interface by protocolBinding find no MQTT entry; the probe "
                      f"used the Topic Model's direct topic {run.request_topic}")
    return passed(_subscribed(run), f"MQTT interface {named}",
                  interop=f"the card names {named}, not the direct topic {run.request_topic}; the probe used the "
                          "direct topic (Topic Model)")


# -- the first request and its reply ----------------------------------------------------------------

def _sent(base: Sent, what: str = "SendMessage, new task") -> str:
    return (f"{what}: UUIDv4 Task.id {base.task_id[:8]}…, contextId {base.context_id[:8]}…, "
            f"Correlation Data {short_bytes(base.exchange.sent.correlation_data)}")


def _no_reply(base: Sent) -> Outcome:
    return not_applicable("no reply echoed the request's Correlation Data, so there is nothing to read "
                          "(see correlation-text)", _sent(base), base.exchange.came_back())


def answered(fn: Callable[[Sent], Outcome]) -> Callable[[ProbeRun], Outcome]:
    """A check of the reply to the first SendMessage; not applicable when no reply echoed its Correlation Data."""
    @functools.wraps(fn)
    def check_reply(run: ProbeRun) -> Outcome:
        base = run.baseline()
        return _no_reply(base) if base.exchange.first is None else fn(base)
    return check_reply


def _named(base: Sent, which: int) -> list[Optional[str]]:
    """The Task.id (``which`` 0) or contextId (1) each result of the first SendMessage names."""
    return [task_ids_of(p, {})[which] for p in base.exchange.payloads if isinstance(p, dict) and "result" in p]


def _not_json(base: Sent) -> Outcome:
    return failed(_sent(base), base.exchange.came_back(), "the reply is not a JSON-RPC 2.0 response object the "
                  "probe can read (JSON within 1 MiB and 64 levels of nesting)")


def _count(value: object) -> str:
    return str(len(value)) if isinstance(value, list) else "no list of"


@check("correlation-text", "reply-correlation", "a reply echoes text Correlation Data byte for byte")
def correlation_text(run: ProbeRun) -> Outcome:
    base = run.baseline()
    return expect_correlation(base, _sent(base))


SILENT = "no reply within the probe's timeout (a slow agent needs a longer --timeout)"


def expect_correlation(sent: Sent, what: str, silence: str = SILENT) -> Outcome:
    """Pass when a reply came back and every reply on the request's reply topic echoes its
    Correlation Data (Request/Reply Mapping (MQTT v5) 3); ``what`` describes the request,
    ``silence`` the failure when nothing came back."""
    ex = sent.exchange
    if ex.first is not None and not ex.stray:
        return passed(what, ex.came_back())
    if ex.first is not None:
        return failed(what, ex.came_back(), "some replies on this request's reply topic carry other Correlation "
                      "Data: echo the request's Correlation Data unchanged on every reply and stream item")
    if ex.stray:
        return failed(what, ex.came_back(), "the reply does not echo the request's Correlation Data, so a requester "
                      "drops it (Requester Behavior 5); echo it unchanged, as bytes")
    return failed(what, ex.came_back(), silence)


@check("reply-topic", "reply-topic", "the reply goes to the request's Response Topic")
def reply_topic(run: ProbeRun) -> Outcome:
    base = run.baseline()
    ex = base.exchange
    corr = ex.sent.correlation_data
    elsewhere = [m.topic for m in list(run.client.traffic) if m.correlation_data == corr and m.topic != ex.sent.response_topic
                 and m.response_topic is None]
    if elsewhere:
        return failed(_sent(base), f"a reply on {elsewhere[0]}", "replies go to the Response Topic the request named")
    if ex.first is None:
        return _no_reply(base)
    return passed(_sent(base), f"reply on {ex.first.topic}")


@check("jsonrpc-id", "jsonrpc-id", "the JSON-RPC response carries the request's id")
@answered
def jsonrpc_id(base: Sent) -> Outcome:
    response = base.exchange.response
    if response is None:
        return _not_json(base)
    asked = jsonrpc.request_id_of(base.exchange.sent.payload)
    if response.get("id") == asked:
        return passed(_sent(base), f"id {asked!r}")
    return failed(_sent(base), f"id {quoted(response.get('id'))}",
                  f"the request's id was {asked!r}: a JSON-RPC response "
                  "carries its request's id")


@check("task-id-echo", "task-id-stable", "the reply names the requester's Task.id (not one of its own)")
@answered
def task_id_echo(base: Sent) -> Outcome:
    named = _named(base, 0)
    wrong = [t for t in named if t != base.task_id]
    if named and not wrong:
        return passed(_sent(base), f"Task.id {base.task_id[:8]}… echoed")
    if not named:
        return failed(_sent(base), base.exchange.came_back(), "the reply names no Task.id (an error, or a Message "
                      "without taskId): responders echo the requester's Task.id in every reply (Request/Reply Mapping 7)")
    return failed(_sent(base), f"Task.id {quoted(wrong[0])}",
                  "the reply names a Task.id of the agent's own: over MQTT the "
                  "requester creates Task.id (a UUIDv4) and the responder must use it (Request/Reply Mapping 6-7)")


@check("context-echo", "context-id", "the reply echoes the requester's contextId")
@answered
def context_echo(base: Sent) -> Outcome:
    named = _named(base, 1)
    if named and all(c == base.context_id for c in named):
        return passed(_sent(base), f"contextId {base.context_id[:8]}… echoed")
    shown = named[0] if named else None
    return failed(_sent(base), f"contextId {quoted(shown)}",
                  "responders preserve and echo the requester's contextId in "
                  "every response (Context Identifier Semantics 4)")


@check("result-schema", "a2a-schema", "the SendMessage result is a valid A2A v1.0 SendMessageResponse")
@answered
def result_schema(base: Sent) -> Outcome:
    response = base.exchange.response
    if response is None:
        return _not_json(base)
    if "error" in response:
        return failed(_sent(base), base.exchange.came_back(), "a well-formed SendMessage was answered with an error: "
                      f"{quoted(response['error'], 200)}")
    result = response.get("result")
    if isinstance(result, dict) and ("statusUpdate" in result or "artifactUpdate" in result):
        return failed(_sent(base), base.exchange.came_back(), "SendMessage was answered with stream items (status or "
                      "artifact updates): its result is one SendMessageResponse, a Task or a Message; stream items "
                      "answer SendStreamingMessage", interop="a v1.0 requester reads the first reply as the whole "
                      "answer and drops the rest")
    bad = validate_payload("SendMessageResponse", result)
    if bad:
        return failed(_sent(base), "an invalid SendMessageResponse", bad)
    kind = "Message" if "message" in (response.get("result") or {}) else "Task"
    interop = ("the agent answers SendMessage with a Message, not a Task: a requester that waits for a Task or a "
               "status update gets neither" if kind == "Message" else "")
    return passed(_sent(base), f"a valid SendMessageResponse ({kind})", interop=interop)


@check("reply-qos", "qos1", "replies are published with QoS 1")
@answered
def reply_qos(base: Sent) -> Outcome:
    low = [m for m in base.exchange.correlated if m.qos < 1]
    if not low:
        return passed(_sent(base), "reply delivered with QoS 1 (subscribed with QoS 1)")
    return failed(_sent(base), "reply delivered with QoS 0", "publish replies with QoS 1 so the PUBACK reason code "
                  "tells the responder when nobody listens (Request/Reply Mapping 3)")

