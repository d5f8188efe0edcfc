"""Conformance checks on recorded traffic: which MUST and SHOULD of the profile did it break?

``check_traffic(df)`` reads the DataFrame of ``load_traffic`` and returns one row per finding:
``rule``, ``level`` (MUST / SHOULD), ``section`` (the profile section, as headed in
``mqtt_transport.md``), ``i`` (the message's row) and ``explanation`` (what was seen, why it
matters, what to change). ``RULES`` lists every rule. A recording only shows what crossed the
broker, so rules about private state (for example "subscribe before publishing") are not checked.

Topic parsing, identifiers, errors, states and stream ends come from ``a2a_nb.protocol``; payloads
are checked against the official A2A v1.0 types of ``a2a-sdk`` (``ParseDict`` + required fields).
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Optional

import pandas as pd

from ..protocol import errors as E
from ..protocol import jsonrpc as J
from ..protocol import properties as P
from ..protocol.ids import IDENTIFIER_RE, is_uuid4
from ..protocol.pools import PRESENCE_EVENT
from ..protocol.streams import STREAM_SEQ, StreamDeduper, ends_stream
from ..protocol.topics import parse_topic
from .frame import Source, load_traffic, task_ids_of

MUST, SHOULD = "MUST", "SHOULD"
FINDING_COLUMNS = ["rule", "level", "section", "i", "explanation"]


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    section: str
    summary: str


_RULES = [
    Rule("identifiers", MUST, "Identifier Format",
         "topic levels and a2a-responder-agent-id match ^[A-Za-z0-9_.-]+$ and follow the Topic Model"),
    Rule("request-reply-path", MUST, "Request/Reply Mapping (MQTT v5) 2",
         "every request sets Response Topic and Correlation Data"),
    Rule("reply-topic-pattern", SHOULD, "Request/Reply Mapping (MQTT v5) 4",
         "Response Topics follow $a2a/v1/reply/{org}/{unit}/{agent}/{reply_suffix}"),
    Rule("reply-correlation", MUST, "Request/Reply Mapping (MQTT v5) 3",
         "every reply and stream item echoes the Correlation Data of a request"),
    Rule("reply-topic", MUST, "Request/Reply Mapping (MQTT v5) 3",
         "replies go to the Response Topic of their request"),
    Rule("jsonrpc-id", MUST, "Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT) 3",
         "a JSON-RPC response carries the id of its request"),
    Rule("task-id-uuid4", MUST, "Request/Reply Mapping (MQTT v5) 6",
         "SendMessage carries Message.taskId, a UUIDv4 made by the requester, from the task's first request"),
    Rule("task-id-stable", MUST, "Request/Reply Mapping (MQTT v5) 7",
         "replies and stream items echo the Task.id of their request"),
    Rule("context-id", MUST, "Multi-Turn Conversation Patterns (Context Identifier Semantics 4, 7)",
         "a2a-context-id matches Message.contextId; replies echo the requester's contextId"),
    Rule("fresh-correlation", MUST, "Requester Retry and Timeout Profile 3",
         "every publish (including retries) uses new Correlation Data"),
    Rule("card-retained", MUST, "Discovery Topic", "Agent Cards are published retained"),
    Rule("card-status", SHOULD, "Presence and Liveness 1",
         "Agent Cards carry a2a-status online/offline (and a2a-status-source)"),
    Rule("not-retained", SHOULD, "Request/Reply Mapping (MQTT v5)",
         "requests, replies and events are not retained (only cards and pool members' presence are)"),
    Rule("qos1", SHOULD, "QoS Guidance 1",
         "requests and replies use QoS 1 (cards: not QoS 0); QoS 0 loses the PUBACK reason code"),
    Rule("after-stream-final", MUST, "Streaming Reply Mapping (SendStreamingMessage) 5-7",
         "nothing follows a stream-final item (terminal/interrupted state, Message, error) on a correlation"),
    Rule("stream-order", SHOULD, "Streaming Reply Mapping (SendStreamingMessage) 5-7",
         "items of one correlation come from one publisher, so they cannot arrive after its final item"),
    Rule("follow-latest-responder", MUST, "Optional Task Handover 3-4",
         "follow-ups for a task go to the latest a2a-responder-agent-id (fallback to the card agent only "
         "after the new agent went silent)"),
    Rule("pooled-responder-id", MUST, "Optional Shared Subscription Dispatch 10",
         "replies to pooled requests carry a2a-responder-agent-id"),
    Rule("binding-error", MUST, "Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT) 5",
         "-32003/-32004/-32005 binding errors carry the matching error.data.a2a_error"),
    Rule("binary-chunk", MUST, "Optional MQTT Native Binary Artifact Mode 5-8",
         "binary chunks only when requested, with Payload Format Indicator 0 and their five user properties"),
    Rule("no-bearer-echo", MUST, "Responder Behavior (Interop) 8",
         "no a2a-authorization property or 'Bearer ' token in replies, events or cards"),
    Rule("a2a-schema", MUST, "A2A v1.0 data structures (Profile: A2A base specification)",
         "request params, results and errors are valid A2A v1.0 JSON-RPC (checked with a2a-sdk)"),
    Rule("card-schema", SHOULD, "Agent Card Requirements 1", "card payloads are valid A2A v1.0 AgentCards"),
]
RULES: dict[str, Rule] = {r.id: r for r in _RULES}
"""Every rule by id."""

_BEARER_RE = re.compile(r"Bearer\s+[A-Za-z0-9\-._~+/]+=*")
_CHUNK_PROPS = (P.EVENT_TYPE, P.TASK_ID, P.ARTIFACT_ID, P.CHUNK_SEQNO, P.LAST_CHUNK)
_SEND_METHODS = (J.SEND_MESSAGE, J.SEND_STREAMING_MESSAGE)
_QOS_WHY = {
    True: "use QoS 1, so the PUBACK reason code (16 = no matching subscribers) tells the publisher nobody listens",
    False: "use QoS 1; QoS 2 adds a PUBREC/PUBREL/PUBCOMP round trip for nothing, since Correlation Data and "
           "Task.id already make duplicates harmless",
}


# -- a2a-sdk as the payload checker ----------------------------------------------------------------

@lru_cache(maxsize=1)
def _sdk() -> Optional[tuple]:
    """(types module, ParseDict, ParseError, validate_required) or None when a2a-sdk is missing."""
    try:
        import a2a.types as types
        from a2a.utils.proto_utils import validate_proto_required_fields
        from google.protobuf.json_format import ParseDict, ParseError
    except ImportError:
        return None
    return types, ParseDict, ParseError, validate_proto_required_fields


def sdk_available() -> bool:
    return _sdk() is not None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


_STEP = re.compile(r"^([A-Za-z0-9_]+)(?:\[([^\]]*)\])?$")


_EMPTY_LIST_OK = frozenset({("ListTasksResponse", "tasks")})
"""Required repeated fields that may legitimately be empty (a ListTasks page with no tasks)."""


def _present(payload: Any, path: str, kind: str = "") -> bool:
    """Is the field an a2a-sdk error path names (``tasks[0].status.state``) present in the JSON?

    The SDK reports proto3 zero values of required fields as missing (``nextPageToken: ""`` of a
    last ListTasks page); a field the sender did write is present, so such errors are ignored.
    An empty list still counts as missing (``skills: []``), except where emptiness is legitimate.
    """
    node = payload
    for step in path.split("."):
        m = _STEP.match(step)
        if m is None or not isinstance(node, dict):
            return False
        key = _camel(m.group(1))
        if key not in node:
            return False
        node = node[key]
        if m.group(2) is not None:
            idx = m.group(2)
            if isinstance(node, list) and idx.isdigit() and int(idx) < len(node):
                node = node[int(idx)]
            elif isinstance(node, dict) and idx in node:
                node = node[idx]
            else:
                return False
    return not (isinstance(node, list) and not node and (kind, path) not in _EMPTY_LIST_OK)


def _raw_problem(obj: Any, path: str = "$") -> Optional[str]:
    """Invalid base64 in ``raw`` parses as empty bytes in protobuf: check it strictly first."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "raw" and isinstance(v, str):
                try:
                    base64.b64decode(v, validate=True)
                except (binascii.Error, ValueError) as e:
                    return f"{path}.raw is not valid base64 ({e})"
            elif k not in ("data", "metadata"):
                bad = _raw_problem(v, f"{path}.{k}")
                if bad:
                    return bad
    elif isinstance(obj, list):
        for n, v in enumerate(obj):
            bad = _raw_problem(v, f"{path}[{n}]")
            if bad:
                return bad
    return None


_VALIDATED: dict[tuple[str, str], Optional[str]] = {}


def validate_payload(kind: str, payload: Any) -> Optional[str]:
    """None when ``payload`` is a valid A2A v1.0 ``kind`` (proto message name), else the problem.

    Strict ``ParseDict`` (unknown fields, bad enum names, two members of one oneof are errors)
    plus ``validate_proto_required_fields``. Results are cached by payload text.
    """
    sdk = _sdk()
    if sdk is None:
        return None
    types, parse_dict, parse_error, validate_required = sdk
    if not isinstance(payload, dict):
        return f"{kind} must be a JSON object, got {type(payload).__name__}"
    try:
        key = (kind, json.dumps(payload, sort_keys=True, separators=(",", ":")))
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _VALIDATED:
        return _VALIDATED[key]
    problem = _raw_problem(payload)
    if problem is None:
        cls = getattr(types, kind, None)
        if cls is None:
            return None
        msg = cls()
        try:
            parse_dict(payload, msg, ignore_unknown_fields=False)
        except parse_error as e:
            problem = str(e)
        except (TypeError, ValueError) as e:
            problem = str(e)
        else:
            try:
                validate_required(msg)
            except Exception as e:  # a2a.utils.errors.InvalidParamsError
                data = getattr(e, "data", None) or {}
                errs = data.get("errors", []) if isinstance(data, dict) else []
                missing = [f"{x.get('field')}: {x.get('message')}" for x in errs
                           if not _present(payload, str(x.get("field", "")), kind)]
                if missing or not errs:
                    problem = "required fields: " + ("; ".join(missing) if missing else str(e))
    if key is not None:
        if len(_VALIDATED) > 20000:
            _VALIDATED.clear()
        _VALIDATED[key] = problem
    return problem


# -- the checks -------------------------------------------------------------------------------------

def _props(raw: Any) -> dict[str, str]:
    return {k: v for k, v in raw} if raw else {}


def _short(corr: Any) -> str:
    s = str(corr)
    return s if len(s) <= 12 else s[:12] + "…"


def check_traffic(df: Source, schema: bool = True) -> pd.DataFrame:
    """Every finding in a recording: columns ``rule, level, section, i, explanation``.

    ``df`` is anything ``load_traffic`` accepts. ``schema=False`` skips the a2a-sdk payload checks
    (about 0.1 ms per message). Findings are sorted by message, then rule.
    """
    df = load_traffic(df)
    found: list[tuple] = []

    def add(rule: str, i: int, text: str, level: Optional[str] = None) -> None:
        r = RULES[rule]
        found.append((rule, level or r.level, r.section, int(i), text))

    cols = ["i", "kind", "topic", "qos", "retain", "correlation", "response_topic", "method", "task_id",
            "context_id", "event", "state", "error_code", "a2a_error", "responder_agent_id", "status",
            "from_agent", "to_agent", "request_i", "payload_json", "user_properties", "payload_format", "jsonrpc_id"]
    rows = [dict(zip(cols, vals)) for vals in zip(*(df[c] for c in cols))]
    b64 = dict(zip(df["i"], df["payload_b64"])) if "payload_b64" in df else {}
    by_i = {r["i"]: r for r in rows}

    used_corr: dict[str, int] = {}        # correlation -> first request row
    first_of_task: dict[str, int] = {}    # task -> first request row
    answered: set[int] = set(int(r["request_i"]) for r in rows if r["request_i"] is not None)
    finished: dict[int, tuple] = {}       # request row -> (row of final item, its publisher)
    items_seen: dict[int, set] = {}       # request row -> payload texts (duplicate deliveries)
    card_target: dict[str, str] = {}      # task -> first target (the card agent or pool)
    current: dict[str, tuple[int, str]] = {}  # task -> (row, latest a2a-responder-agent-id)
    silent_sent: dict[str, list[tuple[int, str]]] = {}  # task -> [(row, target)] requests never answered

    for r in rows:
        i, kind, p = r["i"], r["kind"], r["payload_json"]
        props = _props(r["user_properties"])

        # identifiers / topic model
        if kind == "invalid":
            try:
                parse_topic(r["topic"])
                why = "it does not follow the Topic Model"
            except ValueError as exc:
                why = str(exc)
            add("identifiers", i, f"topic {r['topic']!r} is not a valid profile topic: {why}")
        resp_id = props.get(P.RESPONDER_AGENT_ID)
        if resp_id is not None and not IDENTIFIER_RE.fullmatch(resp_id):
            add("identifiers", i, f"a2a-responder-agent-id {resp_id!r} is not a valid agent_id "
                                  "(letters, digits, '_', '.', '-' only): requesters cannot route to it")

        # bearer tokens never travel back
        if kind in ("reply", "event", "discovery"):
            keys = [k for k in props if k.lower() == P.AUTHORIZATION]
            if keys:
                add("no-bearer-echo", i, f"this {kind} carries the user property {keys[0]!r}: responders must never "
                                         "echo bearer tokens (also OAuth 2.0 and OIDC over MQTT User Properties 6); "
                                         "build reply properties from scratch instead of copying the request's")
            text = json.dumps(p) if p is not None else ""
            vals = " ".join(v for k, v in props.items() if k.lower() != P.AUTHORIZATION)
            if _BEARER_RE.search(text) or _BEARER_RE.search(vals):
                add("no-bearer-echo", i, f"this {kind} contains 'Bearer <token>' text: a bearer token must never "
                                         "appear in replies, events or cards; remove it from the payload/properties")

        if kind in ("request", "pool"):
            _check_request(r, props, add, used_corr, first_of_task, card_target, current, silent_sent, answered,
                           schema)
        elif kind == "reply":
            _check_reply(r, props, by_i, b64, add, finished, items_seen, current, schema)
        elif kind == "discovery":
            if not r["retain"]:
                add("card-retained", i, f"the card on {r['topic']} was published without the retain flag: "
                                        "subscribers that connect later will never see it; publish cards retained")
            if p is not None or b64.get(i):
                status = props.get(P.STATUS)
                if status is None:
                    add("card-status", i, "the card has no a2a-status user property: subscribers cannot tell a live "
                                          "agent from a stale card; add a2a-status=online (and a2a-status-source=agent)")
                elif status not in P.STATUSES:
                    add("card-status", i, f"a2a-status is {status!r}; the profile defines 'online' and 'offline'")
                if r["qos"] == 0:
                    add("qos1", i, "the card was published with QoS 0; register with QoS 1 "
                                   "(Discovery Publisher Behavior 1)")
                if schema:
                    if p is None:
                        add("card-schema", i, "the card payload is not JSON")
                    else:
                        bad = validate_payload("AgentCard", p)
                        if bad:
                            add("card-schema", i, f"the card is not a valid A2A v1.0 AgentCard: {bad}")
        presence = kind == "event" and props.get(P.EVENT_TYPE) == PRESENCE_EVENT  # a pool member's, retained
        if kind in ("request", "pool", "reply", "event") and r["retain"] and not presence:
            add("not-retained", i, f"this {kind} was published retained: the broker will replay it to every "
                                   "future subscriber (a stale request can be executed again); publish with retain=False")

    out = pd.DataFrame(found, columns=FINDING_COLUMNS)
    if not out.empty:
        out = out.sort_values(["i", "level", "rule"], kind="stable").reset_index(drop=True)
    out["i"] = out["i"].astype("int64")
    if schema and not sdk_available():
        out.attrs["note"] = "a2a-sdk is not installed: payloads were not checked against the A2A v1.0 types"
    return out


def _check_request(r: dict, props: dict, add: Callable, used_corr: dict, first_of_task: dict,
                   card_target: dict, current: dict, silent_sent: dict, answered: set, schema: bool) -> None:
    i, p, corr, rt = r["i"], r["payload_json"], r["correlation"], r["response_topic"]
    where = r["to_agent"]
    if rt is None or corr is None:
        missing = " and ".join(x for x, v in (("Response Topic", rt), ("Correlation Data", corr)) if v is None)
        add("request-reply-path", i, f"request to {where} has no {missing}: the responder has no reply path "
                                     "and should reject or drop it; set both on every request")
    if rt is not None:
        try:
            info = parse_topic(rt)
        except ValueError as exc:
            add("identifiers", i, f"Response Topic {rt!r} is malformed: {exc}")
            info = None
        else:
            if info is None or info.kind != "reply":
                add("reply-topic-pattern", i, f"Response Topic {rt!r} is not $a2a/v1/reply/{{org}}/{{unit}}/"
                                              "{agent}/{reply_suffix}: recorders and ACLs expect that pattern")
    if r["qos"] != 1:
        add("qos1", i, f"request to {where} published with QoS {r['qos']}: " + _QOS_WHY[r["qos"] == 0]
            + " (Request/Reply Mapping 1)")
    if corr is not None:
        first = used_corr.get(corr)
        if first is not None:
            add("fresh-correlation", i, f"Correlation Data {_short(corr)} was already used by the request at row "
                                        f"{first}: generate new Correlation Data for every publish, retries "
                                        "included (Requester Behavior 2), or replies cannot be told apart")
        else:
            used_corr[corr] = i

    method, task = r["method"], r["task_id"]
    if type(p) is not dict:
        add("a2a-schema", i, "the request payload is not a JSON object: A2A over MQTT requests are JSON-RPC 2.0 "
                             "request objects")
        return
    if schema:
        _check_request_schema(r, p, add)

    params = p.get("params") if isinstance(p.get("params"), dict) else {}
    msg = params.get("message") if isinstance(params.get("message"), dict) else None
    if method in _SEND_METHODS and msg is not None:
        ctx_prop = props.get(P.CONTEXT_ID)
        if ctx_prop is not None and msg.get("contextId") is not None and ctx_prop != msg.get("contextId"):
            add("context-id", i, f"a2a-context-id {ctx_prop!r} differs from Message.contextId "
                                 f"{msg.get('contextId')!r}; both must match (the payload is authoritative)")
        tid = msg.get("taskId")
        if tid is None:
            add("task-id-uuid4", i, f"{method} without Message.taskId: over MQTT the requester creates Task.id "
                                    "(a UUIDv4) before the first publish so retries cannot duplicate the task; "
                                    "responders must reject this request")
        elif tid not in first_of_task and not is_uuid4(tid):
            add("task-id-uuid4", i, f"the first {method} of task {tid!r} does not carry a UUIDv4 Task.id; "
                                    "generate it with uuid.uuid4() (IdSource.task_id())")
    if task is None:
        return
    target = r["to_agent"]
    if task not in first_of_task:
        first_of_task[task] = i
        card_target[task] = target
    else:
        latest = current.get(task)
        expected = latest[1] if latest is not None else card_target[task]
        if target != expected and target is not None:
            silent = [j for (j, a) in silent_sent.get(task, ()) if a == expected and j < i]
            if target == card_target[task] and silent:
                pass  # fallback to the card agent after the new agent went silent: allowed
            elif latest is not None:
                add("follow-latest-responder", i,
                    f"{method} for task {_short(task)} went to {target}, but the reply at row {latest[0]} named "
                    f"a2a-responder-agent-id={latest[1]}: requesters must honor the most recent responder id "
                    "(fall back to the card agent only after that agent stops answering)")
            else:
                add("follow-latest-responder", i,
                    f"{method} for task {_short(task)} went to {target}, but no reply named a new responder: "
                    f"follow-ups belong to {expected}, where the task started")
    if i not in answered:
        silent_sent.setdefault(task, []).append((i, target))


def _check_request_schema(r: dict, p: dict, add: Callable) -> None:
    i = r["i"]
    try:
        J.parse_request(json.dumps(p))
    except E.A2AError as exc:
        add("a2a-schema", i, f"not a JSON-RPC 2.0 request: {exc.message}")
        return
    method = p["method"]
    if method not in J.KNOWN_METHODS:
        hint = " (v0.3 name: A2A v1.0 uses PascalCase such as 'SendMessage')" if "/" in method else ""
        add("a2a-schema", i, f"unknown A2A v1.0 method {method!r}{hint}")
        return
    bad = validate_payload(J.PARAMS_TYPE[method], p.get("params", {}))
    if bad:
        add("a2a-schema", i, f"{method} params are not a valid A2A v1.0 {J.PARAMS_TYPE[method]}: {bad}")


def _check_reply(r: dict, props: dict, by_i: dict, b64: dict, add: Callable, finished: dict, items_seen: dict,
                 current: dict, schema: bool) -> None:
    i, p, corr, q = r["i"], r["payload_json"], r["correlation"], r["request_i"]
    req = by_i.get(q) if q is not None else None
    if corr is None:
        add("reply-correlation", i, f"reply on {r['topic']} has no Correlation Data: requesters must ignore it as "
                                    "a protocol error; echo the request's Correlation Data unchanged")
    elif req is None:
        add("reply-correlation", i, f"reply on {r['topic']} carries Correlation Data {_short(corr)} that no recorded "
                                    "request used: the requester will drop it (Requester Behavior 5); echo the "
                                    "request's Correlation Data unchanged (or the request was not recorded)")
    if r["qos"] != 1:
        add("qos1", i, f"reply published with QoS {r['qos']}: " + _QOS_WHY[r["qos"] == 0]
            + " (Request/Reply Mapping 3, Streaming Reply Mapping 4)")
    task = r["task_id"]
    resp_id = props.get(P.RESPONDER_AGENT_ID)
    if resp_id is not None and task is not None:
        current[task] = (i, resp_id)
    if req is None:
        if type(p) is not dict and not b64.get(i):
            add("a2a-schema", i, "reply payload is empty")
        return

    if r["topic"] != req["response_topic"]:
        add("reply-topic", i, f"reply published on {r['topic']} but its request (row {req['i']}) asked for "
                              f"{req['response_topic']}: publish replies to the request's Response Topic")
    if req["kind"] == "pool" and resp_id is None:
        add("pooled-responder-id", i, f"reply to a pooled request (row {req['i']}, {req['to_agent']}) without "
                                      "a2a-responder-agent-id: the requester cannot learn which pool member owns the "
                                      "task and must treat the reply as a protocol error")

    method = req["method"]
    streaming = method in J.STREAMING_METHODS
    # what ends this correlation, and what came after
    key = _item_key(p, props, b64.get(i))
    seen = items_seen.setdefault(q, set())
    duplicate = key in seen
    seen.add(key)
    end = finished.get(q)
    if end is not None and not duplicate:
        if end[1] == r["from_agent"]:
            add("after-stream-final", i, f"{r['event'] or 'item'} after the stream-final item at row {end[0]} on "
                                         f"correlation {_short(corr)}: the requester has already closed that "
                                         "correlation; stop publishing after a terminal or interrupted state")
        else:
            add("stream-order", i, f"{r['event'] or 'item'} from {r['from_agent']} arrived after the stream-final item "
                                   f"from {end[1]} (row {end[0]}) on correlation {_short(corr)}: MQTT orders messages "
                                   "per publisher only, so the requester drops it; publish all items of one stream "
                                   "from the same client")
    elif end is None:
        if type(p) is dict:
            if "error" in p or not streaming:
                finished[q] = (i, r["from_agent"])
            elif isinstance(p.get("result"), dict) and ends_stream(p["result"]):
                finished[q] = (i, r["from_agent"])

    # binary chunks (native binary artifact mode)
    if p is None and b64.get(i) is not None:
        req_props = _props(req["user_properties"])
        if req_props.get(P.ARTIFACT_MODE) != P.MODE_BINARY:
            add("binary-chunk", i, "a non-JSON reply, but the request did not ask for a2a-artifact-mode=binary: "
                                   "without it responders must use JSON mode (base64 'raw' parts)")
        if r["payload_format"] != 0:
            add("binary-chunk", i, "a binary artifact chunk must set Payload Format Indicator 0 (unspecified bytes); "
                                   f"it has {r['payload_format']!r}")
        missing = [k for k in _CHUNK_PROPS if k not in props]
        if missing:
            add("binary-chunk", i, f"binary artifact chunk without {', '.join(missing)}: the requester cannot "
                                   "place or de-duplicate the chunk")
        return
    if type(p) is not dict:
        add("a2a-schema", i, "reply payload is not a JSON object (JSON-RPC 2.0 response)")
        return

    # JSON-RPC envelope and ids
    req_p = req["payload_json"] if type(req["payload_json"]) is dict else {}
    rid = p.get("id")
    if "id" in req_p and not (rid is None and "error" in p) and rid != req_p.get("id"):
        add("jsonrpc-id", i, f"response id {rid!r} differs from its request's id {req_p.get('id')!r} "
                             "(JSON-RPC 2.0: a response carries its request's id)")

    if "error" in p and isinstance(p["error"], dict):
        err = p["error"]
        data = err.get("data")
        marker = data.get("a2a_error") if isinstance(data, dict) else None
        code = err.get("code")
        if marker is not None:
            want = E.BINDING_NAMES.get(code) if isinstance(code, int) else None
            if want is None:
                add("binding-error", i, f"error {code!r} carries data.a2a_error={marker!r}, but the marker only "
                                        "belongs to the binding's -32003/-32004/-32005; drop it or use the binding "
                                        "code", level=SHOULD)
            elif marker != want:
                add("binding-error", i, f"binding error {code} must carry data.a2a_error={want!r}, not {marker!r}: "
                                        "requesters decide on retries by this marker")

    # Task.id and contextId echo
    own_tid, own_cid, _ = task_ids_of(p, props)
    req_tid = req["task_id"]
    if own_tid is not None and req_tid is not None and own_tid != req_tid:
        add("task-id-stable", i, f"reply names Task.id {own_tid!r} but its request was for task {req_tid!r}: "
                                 "responders must use the requester's Task.id in every reply and stream item")
    req_msg = (req_p.get("params") or {}).get("message") if isinstance(req_p.get("params"), dict) else None
    if isinstance(req_msg, dict) and req_msg.get("contextId") and own_cid and own_cid != req_msg["contextId"]:
        add("context-id", i, f"reply has contextId {own_cid!r}, the request sent {req_msg['contextId']!r}: "
                             "responders must echo the requester's contextId")

    if schema:
        _check_reply_schema(r, p, method, add)


def _item_key(p: Any, props: dict, raw: Any) -> Any:
    """What identifies a stream item across duplicate deliveries (Error Handling and Deduplication 2):
    ``a2a-stream-seq`` when present, else the item's identity as the kit's requester computes it."""
    seq = props.get(STREAM_SEQ)
    if seq is not None:
        return ("seq", seq)
    if isinstance(p, dict) and isinstance(p.get("result"), dict):
        try:
            return StreamDeduper().key(p["result"], None)
        except (KeyError, ValueError, TypeError, AttributeError):
            pass
    return json.dumps(p, sort_keys=True) if p is not None else ("raw", raw)


def _check_reply_schema(r: dict, p: dict, method: Any, add: Callable) -> None:
    i = r["i"]
    try:
        resp = J.parse_response(p)
    except ValueError as exc:
        add("a2a-schema", i, f"not a JSON-RPC 2.0 response: {exc}")
        return
    if resp.error is not None:
        err = resp.error
        if isinstance(err.get("data"), list) and err["code"] in E.CORE_NAMES:
            for d in err["data"]:
                if not (isinstance(d, dict) and "@type" in d):
                    add("a2a-schema", i, f"core error {err['code']} data entries must be typed objects "
                                         "(google.rpc.ErrorInfo with '@type')")
                    break
        return
    kind = J.RESULT_TYPE.get(method) if isinstance(method, str) else None
    if kind is None:
        return
    bad = validate_payload(kind, resp.result)
    if bad:
        what = "stream item" if method in J.STREAMING_METHODS else "result"
        add("a2a-schema", i, f"{method} {what} is not a valid A2A v1.0 {kind}: {bad}")


# -- files and the command line ----------------------------------------------------------------------

def exit_code(findings: pd.DataFrame) -> int:
    """1 when any MUST finding is present, else 0."""
    return int(bool((findings["level"] == MUST).any())) if len(findings) else 0


def lint_file(path: str, schema: bool = True) -> tuple[pd.DataFrame, int]:
    """Lint a recording file: ``(findings, exit_code)``; exit code 1 on any MUST violation."""
    findings = check_traffic(load_traffic(path), schema=schema)
    return findings, exit_code(findings)


def summary(findings: pd.DataFrame, messages: Optional[int] = None, name: str = "traffic") -> str:
    """One line: counts by level and the verdict."""
    must = int((findings["level"] == MUST).sum()) if len(findings) else 0
    should = int((findings["level"] == SHOULD).sum()) if len(findings) else 0
    n = f"{messages} messages, " if messages is not None else ""
    verdict = "FAIL (MUST violations)" if must else "OK"
    return f"{name}: {n}{must} MUST and {should} SHOULD finding(s): {verdict}"


def format_findings(findings: pd.DataFrame, width: int = 100) -> str:
    """A readable table: one header line per finding, the explanation wrapped below it."""
    import textwrap

    if findings.empty:
        return "no findings"
    lines = []
    w_rule = max(len(r) for r in findings["rule"])
    for rule, level, section, i, text in zip(findings["rule"], findings["level"], findings["section"],
                                             findings["i"], findings["explanation"]):
        lines.append(f"#{i:<5} {level:<6} {rule:<{w_rule}}  [{section}]")
        lines.extend(textwrap.wrap(text, width=width, initial_indent="       ", subsequent_indent="       "))
    return "\n".join(lines)


def main_lint(path: str, schema: bool = True, out=None) -> int:
    """Print the findings of a recording and a one-line summary; return the exit code."""
    out = out or sys.stdout
    try:
        df = load_traffic(path)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    findings = check_traffic(df, schema=schema)
    print(format_findings(findings), file=out)
    if findings.attrs.get("note"):
        print(f"note: {findings.attrs['note']}", file=out)
    print(summary(findings, len(df), str(path)), file=out)
    return exit_code(findings)
