"""Recorded messages read without pandas: what a topic, a payload and user properties say, who
sent a message to whom, which request a reply answers, and what the routing replay reads.

``frame.py`` builds its DataFrame columns from these functions, and the lint
(``lint.py``) reads a recording with them directly, so the lint and the probe run where pandas is
not installed. Each function reads one recorded message (or the recording's columns as lists):
recorded values are untrusted, so a value of the wrong type reads as None, never raises.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Optional, Sequence, Union

from ..protocol import properties as P
from ..protocol.messages import is_task, task_ids_of
from ..protocol.routing import Address, Replied, Sent
from ..protocol.topics import is_a2a_topic, parse_topic

KINDS = ("discovery", "request", "pool", "reply", "event", "other", "invalid")
"""``kind`` values: the five of ``parse_topic``, ``other`` (not ``$a2a/v1/``) and ``invalid``
(a ``$a2a/v1/`` topic that breaks the Topic Model or Identifier Format)."""

DISCOVERY = "discovery"
EVENTS_LANE = "events"
REQUEST_KINDS = ("request", "pool")


def topic_info(topic: Optional[str]) -> tuple:
    """``TOPIC_COLUMNS`` of a topic: (kind, org, unit, agent, pool, reply_suffix) by the Topic Model."""
    if not isinstance(topic, str):
        return ("invalid", None, None, None, None, None)
    try:
        info = parse_topic(topic)
    except ValueError:
        return ("invalid", None, None, None, None, None)
    if info is None:
        return ("invalid" if is_a2a_topic(topic) else "other", None, None, None, None, None)
    return (info.kind, info.org, info.unit, info.agent, info.pool, info.reply_suffix)



ID_COLUMNS = ("task_id", "context_id", "message_id")
PAYLOAD_COLUMNS = ("method", "jsonrpc_id", "state", "event", "artifact_id", "append", "last_chunk", "error_code",
                   "a2a_error")
BINDING_COLUMNS = ("responder_agent_id", "status", "status_source")
"""Columns read from user properties: ``a2a-responder-agent-id`` (Optional Task Handover 2),
``a2a-status`` and ``a2a-status-source`` (Presence and Liveness 1)."""



_NO_PROPERTIES: dict[str, str] = {}
_NO_BINDING = (None, None, None)
_NO_IDS = (None, None, None)
_NOTHING = (None,) * len(PAYLOAD_COLUMNS)
_CARD = (None, None, None, "card", None, None, None, None, None)
_PROTECTED = (None, None, None, "protected", None, None, None, None, None)
"""A ubsp-v1 request or reply: a JWE only its recipient reads (Optional Untrusted-Broker Security
Profile 3-4); what the frame shows of it is its topic and MQTT properties."""


@lru_cache(maxsize=4096)
def _sender(response_topic: Optional[str]) -> Optional[str]:
    """The agent a Response Topic belongs to (``$a2a/v1/reply/{org}/{unit}/{agent}/...``)."""
    return topic_info(response_topic)[3]


def describe(kind: str, payload: Any, pairs: Any, binary: Optional[str], pfi: Any) -> tuple:
    """``ID_COLUMNS + PAYLOAD_COLUMNS + BINDING_COLUMNS`` of one message, by its kind
    (replies first: most messages are). ``pairs``: its recorded user properties."""
    props = P.as_dict(pairs) if pairs else _NO_PROPERTIES
    binding = (props.get(P.RESPONDER_AGENT_ID), props.get(P.STATUS), props.get(P.STATUS_SOURCE)) if props \
        else _NO_BINDING
    if props and P.SECURITY_PROFILE in props and (kind == "reply" or kind in REQUEST_KINDS):
        return _NO_IDS + _PROTECTED + binding
    if kind == "reply":
        fields = _reply_fields(payload, props, binary, pfi)
    elif kind in REQUEST_KINDS:
        fields = _request_fields(payload)
    elif kind == "discovery":
        fields = _NOTHING if payload is None else _CARD
    elif kind == "event":
        fields = _NOTHING
    else:
        return _NO_IDS + _NOTHING + binding  # not a profile topic: only its user properties are read
    tid, cid, mid = ids = task_ids_of(payload, props)
    if not ((tid is None or type(tid) is str) and (cid is None or type(cid) is str)
            and (mid is None or type(mid) is str)):  # a peer's Task.id that is a number or a list: no identifier
        ids = (tid if type(tid) is str else None, cid if type(cid) is str else None,
               mid if type(mid) is str else None)
    return ids + fields + binding


def _text(value: Any) -> Optional[str]:
    """A value the profile says is a string (method, state, artifactId, a2a_error), else None."""
    return value if type(value) is str else None


_RID_TYPES = (str, int)
"""What a JSON-RPC id is (a string or an integer; null is None)."""


def _rid(value: Any) -> Any:
    """A JSON-RPC id (a string or an integer), else None."""
    return value if type(value) in _RID_TYPES else None


def _request_fields(payload: Any) -> tuple:
    """``PAYLOAD_COLUMNS`` of a request: its JSON-RPC method and id."""
    if type(payload) is not dict:
        return _NOTHING
    method, rid = payload.get("method"), payload.get("id")
    return (method if type(method) is str else None, rid if type(rid) in _RID_TYPES else None,
            None, None, None, None, None, None, None)


def _reply_fields(payload: Any, props: dict, binary: Optional[str], pfi: Any) -> tuple:
    """``PAYLOAD_COLUMNS`` of a reply or stream item: which event it is and what it carries.

    A JSON-RPC result is a status update, an artifact update, a Task (wrapped, or bare from
    GetTask/CancelTask), a Message or another result (Streaming Reply Mapping 3-7); an error
    reply has a code and maybe ``data.a2a_error`` (Binding-Specific Error Mapping 5); a non-JSON
    payload is a native binary chunk (Optional MQTT Native Binary Artifact Mode 5-8).

    The tuples here (and in ``_result_fields``) list ``PAYLOAD_COLUMNS`` in order: method, jsonrpc_id,
    state, event, artifact_id, append, last_chunk, error_code, a2a_error. Plain tuples, not a
    NamedTuple: this runs once per recorded message.
    """
    if type(payload) is dict:
        rid = _rid(payload.get("id"))
        result = payload.get("result")
        if type(result) is dict:
            return _result_fields(result, rid)
        if "error" in payload:
            code, marker = _error_fields(payload["error"])
            return (None, rid, None, "error", None, None, None, code, marker)
        return (None, rid, None, "result" if "result" in payload else None, None, None, None, None, None)
    if payload is None and binary:
        if pfi == 0 or P.EVENT_TYPE in props:
            last = props.get(P.LAST_CHUNK)
            return (None, None, None, "binary", props.get(P.ARTIFACT_ID), None,
                    None if last is None else last == "true", None, None)
        return (None, None, None, "binary", None, None, None, None, None)
    return _NOTHING


def _result_fields(result: dict, rid: Any) -> tuple:
    """``PAYLOAD_COLUMNS`` of a JSON-RPC result with id ``rid``: which event, which state or artifact."""
    update = result.get("statusUpdate")
    if type(update) is dict:
        return (None, rid, _state_of(update), "status", None, None, None, None, None)
    update = result.get("artifactUpdate")
    if type(update) is dict:
        artifact = update.get("artifact")
        aid = _text(artifact.get("artifactId")) if type(artifact) is dict else None
        return (None, rid, None, "artifact", aid, update.get("append") is True, update.get("lastChunk") is True,
                None, None)
    task = result.get("task")
    if type(task) is not dict and is_task(result):
        task = result  # GetTask / CancelTask answer with a bare Task
    if type(task) is dict:
        return (None, rid, _state_of(task), "task", None, None, None, None, None)
    event = "message" if type(result.get("message")) is dict else "result"
    return (None, rid, None, event, None, None, None, None, None)


def _state_of(body: dict) -> Optional[str]:
    """``status.state`` of a Task or a status update."""
    status = body.get("status")
    return _text(status.get("state")) if type(status) is dict else None


def _error_fields(error: Any) -> tuple:
    """(code, data.a2a_error) of a JSON-RPC error object."""
    if type(error) is not dict:
        return (None, None)
    data = error.get("data")
    code = error.get("code")
    return (code if type(code) is int else None, _text(data.get("a2a_error")) if type(data) is dict else None)



def ends(kind: str, agent: Optional[str], pool: Optional[str], response_topic: Optional[str]) -> tuple:
    """(from_agent, to_agent) of one message; a reply's sender is set by ``pair``-ing it.

    A request goes from the agent of its Response Topic to the topic's agent, or to ``pool:{id}``
    (Optional Pool Request Topic); a reply to the agent of its reply topic; a card from its agent
    to ``discovery``; an event from its agent to ``events``.
    """
    if kind == "reply":
        return (None, agent)
    if kind == "request":
        return (_sender(response_topic), agent)
    if kind == "pool":
        return (_sender(response_topic), "pool:" + pool if pool is not None else None)
    if kind == "discovery":
        return (agent, DISCOVERY)
    if kind == "event":
        return (agent, EVENTS_LANE)
    return (None, None)


def pair(kinds: Sequence[str], correlations: Sequence[Optional[str]]) -> tuple[list[int], list[int]]:
    """(reply positions, request positions): each reply joined to its request by Correlation Data
    (Request/Reply Mapping 3): the latest earlier request with its Correlation Data, else the last
    request that used it (a reply recorded before its request). Replies without either: left out."""
    latest: dict[str, int] = {}
    replies: list[int] = []
    requests: list[Optional[int]] = []
    for k, (kind, corr) in enumerate(zip(kinds, correlations)):
        if corr is None:
            continue
        if kind in REQUEST_KINDS:
            latest[corr] = k
        elif kind == "reply":
            replies.append(k)
            requests.append(latest.get(corr))
    rows, req = [], []
    for k, q in zip(replies, requests):
        if q is None:  # recorded before its request: the last request with its Correlation Data
            q = latest.get(correlations[k])  # type: ignore[arg-type]
        if q is not None:
            rows.append(k)
            req.append(q)
    return rows, req


def routing_steps(i: Sequence[int], t: Sequence[float], task: Sequence[Optional[str]], org: Sequence[Any],
                  unit: Sequence[Any], agent: Sequence[Any], pool: Sequence[Any], responder: Sequence[Any],
                  kinds: Sequence[str], answered: Iterable[Any]) -> tuple[list[int], list[Union[Sent, Replied]]]:
    """What ``protocol.routing.replay`` reads, in recorded order, from the recording's columns:
    each request of a task (where it went, whether it was answered: its ``i`` is in ``answered``)
    and each reply of a task that names a responder; with the position of each."""
    answered = set(answered)
    positions: list[int] = []
    steps: list[Union[Sent, Replied]] = []
    for k, (row, when, tid, o, u, a, p, named, kind) in enumerate(zip(i, t, task, org, unit, agent, pool,
                                                                        responder, kinds)):
        if tid is None:
            continue
        if kind in REQUEST_KINDS:
            to = _address(o, u, a, p)
            if to is None:
                continue
            steps.append(Sent(tid, to, when, row in answered))
        elif kind == "reply" and named is not None:
            steps.append(Replied(tid, named, when))
        else:
            continue
        positions.append(k)
    return positions, steps


@lru_cache(maxsize=4096)
def _address(org: str, unit: str, agent: Optional[str], pool: Optional[str]) -> Optional[Address]:
    """The ``Address`` a request topic names (None when it is none the routing table could hold)."""
    try:
        return Address(org, unit, agent=None if pool else agent, pool=pool)
    except ValueError:
        return None
