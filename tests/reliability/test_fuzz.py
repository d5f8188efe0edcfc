"""Property-based fuzzing of a running responder with malformed requests (hypothesis).

At least 5,000 bad requests go through the real Mosquitto to one responder: random bytes, invalid
UTF-8, deeply nested JSON, payloads above ``max_request_bytes``, a wrong type in each field of a
SendMessage, missing fields, extra fields, missing or odd MQTT properties, bogus ``a2a-*`` user
properties, odd Response Topics. The expected outcome of each one is worked out here, independently
of the kit, from the profile and JSON-RPC 2.0:

* no Response Topic, no Correlation Data, or a Response Topic with wildcards: no reply at all;
* payload above the limit: -32600 (id null); not UTF-8 / not JSON / nested too deeply: -32700;
* not a JSON-RPC request object: -32600; unknown method: -32601; params of the wrong shape: -32602;
* invalid binding metadata (PFI 0, non-JSON Content Type, ``a2a-security-profile``, another
  ``a2a-recipient-agent-id``, two ``a2a-authorization``): -32005 ``transport_protocol_error``;
* unknown ``a2a-*`` user properties are ignored (Error Handling and Deduplication 3).

Requests go out with ``publish_nowait`` in batches; replies are matched by Correlation Data. Valid
tasks sent in every batch must all complete, and the responder must still be up at the end.
"""
from __future__ import annotations

import functools
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import jsonrpc
from a2a_nb.protocol.packet import MqttMessage, encode_json
from tests.helpers import uid

ORG, UNIT = "acme", "support"
LIMIT = 16 * 1024  # the responder's max_request_bytes in this test
BATCH = 50
EXAMPLES = 101  # BATCH * EXAMPLES >= 5,000 malformed requests (plus the valid tasks)
DROP = "drop"
OK = "ok"
TASK_DONE = "task-done"

ROLES = ("ROLE_USER", "ROLE_AGENT")
JSON_CT = ("application/json", "application/json-rpc")

# -- independent oracle helpers ---------------------------------------------------------------------


def _is_uuid4(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        u = uuid.UUID(v)
    except ValueError:
        return False
    return str(u) == v.lower() and u.version == 4


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _valid_part(p: Any) -> bool:
    """A v1.0 Part: exactly one of text/raw/url (strings) or data, optional mediaType, filename, metadata."""
    if not isinstance(p, dict):
        return False
    kinds = [k for k in ("text", "data", "raw", "url") if k in p]
    if len(kinds) != 1 or (kinds[0] != "data" and not isinstance(p[kinds[0]], str)):
        return False
    if any(k in p and not isinstance(p[k], str) for k in ("mediaType", "filename")):
        return False
    if "metadata" in p and not isinstance(p["metadata"], dict):
        return False
    return not set(p) - {"text", "data", "raw", "url", "mediaType", "filename", "metadata"}


VALID: dict[tuple, Any] = {
    # path -> predicate "this value is acceptable there" (from the A2A v1.0 shapes / JSON-RPC 2.0)
    ("jsonrpc",): lambda v: v == "2.0",
    ("id",): lambda v: v is None or isinstance(v, str) or _is_int(v),
    ("method",): lambda v: isinstance(v, str) and v in jsonrpc.KNOWN_METHODS,
    ("params",): lambda v: False,  # replaced params are never the valid object
    ("params", "message"): lambda v: False,
    ("params", "message", "messageId"): lambda v: isinstance(v, str) and v != "",
    ("params", "message", "role"): lambda v: isinstance(v, str) and v in ROLES,
    ("params", "message", "parts"): lambda v: isinstance(v, list) and bool(v) and all(_valid_part(p) for p in v),
    ("params", "message", "parts", 0): lambda v: _valid_part(v),
    ("params", "message", "parts", 0, "text"): lambda v: isinstance(v, str),
    ("params", "message", "taskId"): _is_uuid4,
    ("params", "message", "contextId"): lambda v: isinstance(v, str) and v != "",
    ("params", "message", "referenceTaskIds"): _str_list,
    ("params", "message", "metadata"): lambda v: isinstance(v, dict),
    ("params", "message", "extensions"): _str_list,
    ("params", "configuration"): lambda v: v is None or isinstance(v, dict),  # (random keys are never known ones)
    ("params", "configuration", "historyLength"): lambda v: _is_int(v) and v >= 0,
    ("params", "configuration", "returnImmediately"): lambda v: isinstance(v, bool),
    ("params", "configuration", "acceptedOutputModes"): _str_list,
    ("params", "metadata"): lambda v: isinstance(v, dict),
}


def code_for_path(path: tuple) -> int:
    """The error a wrong value at ``path`` earns: envelope fields -32600, params -32602."""
    if path in (("jsonrpc",), ("id",), ("params",)):
        return -32600
    if path == ("method",):
        return -32600  # only non-strings / "" are generated here (unknown names: see method_cases)
    return -32602


def expected_for_payload(payload: bytes) -> set:
    """What a payload alone earns (default MQTT properties), checked the way JSON-RPC says."""
    if len(payload) > LIMIT:
        return {-32600}
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {-32700}
    if not isinstance(obj, dict):
        return {-32600}
    return {-32600, -32601, -32602}


def valid_message() -> dict:
    return {"messageId": uid("m"), "role": "ROLE_USER", "parts": [{"text": "fuzz"}],
            "taskId": str(uuid.uuid4()), "contextId": uid("ctx")}


def valid_request(rid: Any = "r1") -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "SendMessage",
            "params": {"message": valid_message(), "configuration": {"historyLength": 0}}}


# -- strategies -------------------------------------------------------------------------------------
@dataclass
class Case:
    kind: str
    payload: bytes
    expect: Any  # DROP, OK, TASK_DONE, or a set of error codes
    response_topic: Optional[str] = "default"
    with_correlation: bool = True
    user_properties: tuple = ()
    content_type: Optional[str] = None
    payload_format: Optional[int] = None
    message_expiry: Optional[int] = None


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c,
                                                                                             max_size=3),
                           max_leaves=6)
# MQTT strings: no NUL, no control characters, no surrogates or non-characters (the broker would drop
# the connection: that is the client's fault, not a request to answer)
mqtt_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFDCF, blacklist_categories=("Cs", "Cc")),
                    max_size=24)


def _set(obj: dict, path: tuple, value: Any) -> dict:
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


def _delete(obj: dict, path: tuple) -> dict:
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    del cur[path[-1]]
    return obj


@st.composite
def random_bytes(draw):
    data = draw(st.binary(max_size=200))
    return Case("random-bytes", data, expected_for_payload(data))


@st.composite
def invalid_utf8(draw):
    prefix = draw(st.binary(max_size=20))
    bad = draw(st.sampled_from([b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                                b"\xe2\x82", b"\xc0\xaf"]))
    payload = b'{"jsonrpc":"2.0","id":"u","method":"SendMessage","params":{"x":"' + prefix + bad + b'"}}'
    return Case("invalid-utf8", payload, {-32700})


@st.composite
def deep_json(draw):
    # parsed (<= 400 levels) or far beyond any recursion limit (>= 3000): never near the edge, where
    # the answer would depend on the stack depth of the thread that parses
    depth = draw(st.one_of(st.integers(1, 400), st.integers(3000, 12000)))
    inner = draw(st.sampled_from(["list", "dict", "params"]))
    if inner == "list":
        payload = ("[" * depth + "]" * depth).encode()
    elif inner == "dict":
        payload = ('{"a":' * depth + "1" + "}" * depth).encode()
    else:
        nested = "[" * depth + "]" * depth
        payload = ('{"jsonrpc":"2.0","id":"d","method":"SendMessage","params":{"message":' + nested + "}}").encode()
    return Case("deep-json", payload, _deep_expect(payload, inner))


def _deep_expect(payload: bytes, inner: str) -> set:
    base = expected_for_payload(payload)
    if base == {-32600, -32601, -32602}:  # parsed to an object
        return {-32602} if inner == "params" else {-32600}
    return base


@st.composite
def oversize(draw):
    extra = draw(st.integers(1, 3 * LIMIT))
    req = valid_request("big")
    req["params"]["message"]["parts"][0]["text"] = "x" * (LIMIT + extra)
    return Case("oversize", encode_json(req), {-32600})


@st.composite
def wrong_type(draw):
    path = draw(st.sampled_from(sorted(VALID, key=str)))
    value = draw(json_values.filter(lambda v: not VALID[path](v)))
    req = _set(valid_request(draw(st.sampled_from(["w1", 7, None]))), path, value)
    if path == ("method",) and isinstance(value, str) and value:
        expect = {-32601}
    elif path == ("params",) and isinstance(value, dict):
        expect = {-32602}  # an object, but without a message
    else:
        expect = {code_for_path(path)}
    return Case(f"wrong-type {'.'.join(map(str, path))}", encode_json(req), expect)


@st.composite
def missing_field(draw):
    path = draw(st.sampled_from([("jsonrpc",), ("method",), ("params", "message"),
                                 ("params", "message", "messageId"), ("params", "message", "role"),
                                 ("params", "message", "parts"), ("params", "message", "taskId"),
                                 ("params", "message", "parts", 0, "text"), ("params",), ("id",)]))
    req = _delete(valid_request("mf"), path)
    if path == ("id",):
        return Case("missing id", encode_json(req), TASK_DONE)  # answered with id null
    expect = {-32600} if path in (("jsonrpc",), ("method",)) else {-32602}
    return Case(f"missing {'.'.join(map(str, path))}", encode_json(req), expect)


@st.composite
def extra_field(draw):
    where = draw(st.sampled_from(["top", "params", "message", "part"]))
    key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in (
        "jsonrpc", "id", "method", "params", "message", "configuration", "metadata", "messageId", "role", "parts",
        "taskId", "contextId", "referenceTaskIds", "extensions", "text", "data", "raw", "url", "mediaType",
        "filename", "tenant")))
    value = draw(json_values)
    req = valid_request("xf")
    target = {"top": req, "params": req["params"], "message": req["params"]["message"],
              "part": req["params"]["message"]["parts"][0]}[where]
    target[key] = value
    # unknown members of the JSON-RPC envelope and of params are ignored; a Message or a Part with
    # unknown fields is not a v1.0 Message/Part
    expect = TASK_DONE if where in ("top", "params") else {-32602}
    return Case(f"extra field in {where}", encode_json(req), expect)


@st.composite
def method_cases(draw):
    kind = draw(st.sampled_from(["unknown", "v03", "get-unknown", "get-bad-id", "cancel-unknown", "list-bad",
                                 "subscribe-unknown", "push"]))
    if kind == "unknown":
        name = draw(st.text(min_size=1, max_size=20).filter(lambda m: m not in jsonrpc.KNOWN_METHODS))
        return Case("unknown method", encode_json({"jsonrpc": "2.0", "id": 1, "method": name, "params": {}}), {-32601})
    if kind == "v03":
        name = draw(st.sampled_from(["message/send", "message/stream", "tasks/get", "tasks/cancel"]))
        return Case("v0.3 method", encode_json({"jsonrpc": "2.0", "id": 2, "method": name, "params": {}}), {-32601})
    if kind == "get-unknown":
        return Case("GetTask unknown", encode_json(
            {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": str(uuid.uuid4())}}), {-32001})
    if kind == "get-bad-id":
        bad = draw(json_values.filter(lambda v: not (isinstance(v, str) and v)))
        return Case("GetTask bad id", encode_json(
            {"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": bad}}), {-32602})
    if kind == "cancel-unknown":
        return Case("CancelTask unknown", encode_json(
            {"jsonrpc": "2.0", "id": 5, "method": "CancelTask", "params": {"id": str(uuid.uuid4())}}), {-32001})
    if kind == "subscribe-unknown":
        return Case("SubscribeToTask unknown", encode_json(
            {"jsonrpc": "2.0", "id": 6, "method": "SubscribeToTask", "params": {"id": str(uuid.uuid4())}}), {-32001})
    if kind == "push":
        return Case("push config", encode_json({"jsonrpc": "2.0", "id": 8, "method": "CreateTaskPushNotificationConfig",
                                                "params": {}}), {-32003})
    status = draw(json_values.filter(lambda v: not (isinstance(v, str) and v.startswith("TASK_STATE_"))))
    return Case("ListTasks bad status", encode_json(
        {"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {"status": status}}), {-32602})


BOGUS_KEYS = st.one_of(st.builds(lambda s: "a2a-" + s, mqtt_text),
                       st.sampled_from(["a2a-status", "a2a-task-id", "a2a-chunk-seqno", "a2a-artifact-mode",
                                        "a2a-responder-agent-id", "a2a-requester-agent-id", "a2a-event-type",
                                        "a2a-recipient-kid", "a2a-authorization"]),
                       mqtt_text)


@st.composite
def mqtt_properties(draw, agent: str):
    kind = draw(st.sampled_from(["no-response-topic", "no-correlation", "wildcard-topic", "content-type",
                                 "pfi0", "pfi1", "user-properties", "security-profile", "recipient", "two-auth",
                                 "odd-reply-topic", "expiry"]))
    payload = encode_json(valid_request("p"))
    if kind == "no-response-topic":
        return Case(kind, payload, DROP, response_topic=None)
    if kind == "no-correlation":
        return Case(kind, payload, DROP, with_correlation=False)
    if kind == "wildcard-topic":
        wild = draw(st.sampled_from(["+", "#", "a/+/b", "x/#"]))
        return Case(kind, payload, DROP, response_topic="wild:" + wild)
    if kind == "content-type":
        ct = draw(st.one_of(st.sampled_from(["text/plain", "application/xml", "application/json",
                                             "application/json; charset=utf-8", "APPLICATION/JSON",
                                             "application/json-rpc", "application/octet-stream", ""]), mqtt_text))
        ok = ct.split(";")[0].strip().lower() in JSON_CT
        return Case(kind, payload, TASK_DONE if ok else {-32005}, content_type=ct)
    if kind == "pfi0":
        return Case(kind, payload, {-32005}, payload_format=0)
    if kind == "pfi1":
        return Case(kind, payload, TASK_DONE, payload_format=1)
    if kind == "expiry":
        return Case(kind, payload, TASK_DONE, message_expiry=draw(st.integers(30, 3600)))
    if kind == "security-profile":
        return Case(kind, payload, {-32005}, user_properties=(("a2a-security-profile", draw(mqtt_text)),))
    if kind == "recipient":
        other = draw(mqtt_text.filter(lambda s: s != agent))
        return Case(kind, payload, {-32005}, user_properties=(("a2a-recipient-agent-id", other),))
    if kind == "two-auth":
        return Case(kind, payload, {-32005}, user_properties=(("a2a-authorization", "Bearer a"),
                                                              ("a2a-authorization", "Bearer b")))
    if kind == "odd-reply-topic":
        suffix = draw(st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FFF,
                                            blacklist_categories=("Cs", "Cc"), blacklist_characters="+#/"),
                              min_size=1, max_size=16))
        return Case(kind, payload, TASK_DONE, response_topic="suffix:" + suffix)
    props = tuple(draw(st.lists(st.tuples(BOGUS_KEYS, mqtt_text), max_size=6)))
    auth = [p for p in props if p[0] == "a2a-authorization"]
    special = {k for k, _ in props} & {"a2a-security-profile", "a2a-recipient-agent-id"}
    return Case(kind, payload, {-32005} if len(auth) > 1 or special else TASK_DONE, user_properties=props)


def all_cases(agent: str):
    return st.one_of(random_bytes(), invalid_utf8(), deep_json(), oversize(), wrong_type(), missing_field(),
                     extra_field(), method_cases(), mqtt_properties(agent))


# -- the harness ----------------------------------------------------------------------------------------
@dataclass
class Sent:
    case: Case
    correlation: Optional[bytes]
    topic: Optional[str]


@dataclass
class Harness:
    session: Session
    agent: str
    reply_base: str
    replies: dict = field(default_factory=dict)  # correlation -> [MqttMessage]
    uncorrelated: list = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    counter: int = 0
    sent: list = field(default_factory=list)
    malformed: int = 0
    valid_tasks: int = 0
    kinds: dict = field(default_factory=dict)

    def on_reply(self, m: MqttMessage) -> None:
        with self.cond:
            if m.correlation_data is None:
                self.uncorrelated.append(m)
            else:
                self.replies.setdefault(m.correlation_data, []).append(m)
            self.cond.notify_all()

    def publish(self, case: Case) -> Sent:
        self.counter += 1
        corr = f"fz-{self.counter}".encode() if case.with_correlation else None
        rt = case.response_topic
        if rt == "default":
            rt = f"{self.reply_base}/main"
        elif rt and rt.startswith("wild:"):
            rt = f"{self.reply_base}/{rt[5:]}"
        elif rt and rt.startswith("suffix:"):
            rt = f"{self.reply_base}/{rt[7:]}"
        elif case.kind == "no-correlation":
            rt = f"{self.reply_base}/nocorr"
        msg = MqttMessage(f"$a2a/v1/request/{ORG}/{UNIT}/{self.agent}", case.payload, qos=1, response_topic=rt,
                          correlation_data=corr, user_properties=case.user_properties,
                          content_type=case.content_type, payload_format=case.payload_format,
                          message_expiry=case.message_expiry)
        self.session.publish_nowait(msg)
        s = Sent(case, corr, rt)
        self.sent.append(s)
        if case.expect == TASK_DONE and case.kind == "valid":
            self.valid_tasks += 1
        else:
            self.malformed += 1
        self.kinds[case.kind.split(" ")[0]] = self.kinds.get(case.kind.split(" ")[0], 0) + 1
        return s

    def wait(self, batch: list[Sent], timeout: float = 20.0) -> None:
        want = [s.correlation for s in batch if s.case.expect != DROP]
        with self.cond:
            self.cond.wait_for(lambda: all(c in self.replies for c in want), timeout)

    def check(self, s: Sent) -> None:
        got = self.replies.get(s.correlation, []) if s.correlation is not None else []
        case = s.case
        where = f"{case.kind}: payload {case.payload[:120]!r}"
        if case.expect == DROP:
            assert not got, f"{where}: expected no reply (no reply path), got {got}"
            return
        assert len(got) == 1, f"{where}: expected exactly one reply, got {len(got)}"
        reply = got[0]
        assert reply.topic == s.topic, f"{where}: reply on {reply.topic}, not the Response Topic {s.topic}"
        assert not any(k.lower() == "a2a-authorization" for k, _ in reply.user_properties), where
        body = json.loads(reply.payload)
        assert body.get("jsonrpc") == "2.0", where
        if case.expect in (OK, TASK_DONE):
            assert "result" in body, f"{where}: expected a result, got {body}"
            if case.expect == TASK_DONE:
                assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", where
            return
        assert "error" in body, f"{where}: expected an error {case.expect}, got {body}"
        code = body["error"]["code"]
        assert code in case.expect, f"{where}: expected {case.expect}, got {body['error']}"
        if code == -32005:
            assert body["error"]["data"]["a2a_error"] == "transport_protocol_error", where
        if case.kind in ("oversize", "invalid-utf8"):
            assert body["id"] is None, where


def handler(ctx) -> None:
    ctx.complete(f"done: {ctx.text[:20]}")


@pytest.fixture
def harness(broker_url):
    suffix = uuid.uuid4().hex[:6]
    agent = f"fuzz-target-{suffix}"
    responder = Responder(agent, handler, broker=broker_url,
                          options=ResponderOptions(max_request_bytes=LIMIT, workers=8))
    session = Session(ORG, UNIT, f"fuzzer-{suffix}", broker=broker_url)
    h = Harness(session, agent, f"$a2a/v1/reply/{ORG}/{UNIT}/fuzzer-{suffix}")
    session.subscribe(f"{h.reply_base}/#", handler=h.on_reply)
    h.responder = responder  # type: ignore[attr-defined]
    yield h
    responder.stop()
    session.close()


def test_fuzz_responder_with_malformed_requests(harness):
    h = harness
    agent = h.agent
    started = time.time()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.lists(all_cases(agent), min_size=BATCH, max_size=BATCH))
    def one_batch(cases):
        batch = [h.publish(c) for c in cases]
        for _ in range(2):  # well-formed tasks alongside
            batch.append(h.publish(Case("valid", encode_json(valid_request(f"ok-{h.counter}")), TASK_DONE)))
        h.wait(batch)
        for s in batch:
            h.check(s)

    one_batch()
    # the responder is still there and answers
    final = h.publish(Case("valid", encode_json(valid_request("final")), TASK_DONE))
    h.wait([final])
    h.check(final)
    time.sleep(0.3)  # late replies to requests that had no reply path would show up now
    for s in h.sent:
        if s.case.expect == DROP:
            h.check(s)
    assert not h.uncorrelated, f"replies without Correlation Data: {h.uncorrelated[:3]}"
    r = h.responder
    assert r.alive and r.session.connected and r.session.connect_count == 1
    assert h.session.connect_count == 1, "the fuzzer's own session was dropped by the broker"
    assert all(t.is_alive() for t in r._threads)
    assert r.stats.handler_crashes == 0
    assert h.malformed >= 5000, h.kinds
    assert h.valid_tasks >= 2 * EXAMPLES
    elapsed = time.time() - started
    print(f"\nfuzz: {h.malformed} malformed + {h.valid_tasks} valid requests in {elapsed:.1f} s; by kind {h.kinds}")


# -- the same checks in process: many more inputs, no broker ----------------------------------------
@settings(max_examples=1000, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(payload=st.one_of(st.binary(max_size=300), st.builds(encode_json, json_values),
                         st.builds(lambda v: encode_json({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                                          "params": {"message": v}}), json_values)),
       response_topic=st.one_of(st.none(), st.just("$a2a/v1/reply/acme/support/x/y"), mqtt_text),
       correlation=st.one_of(st.none(), st.binary(max_size=8)),
       props=st.lists(st.tuples(BOGUS_KEYS, mqtt_text), max_size=4),
       content_type=st.one_of(st.none(), mqtt_text), payload_format=st.sampled_from([None, 0, 1]))
def test_check_request_never_raises(payload, response_topic, correlation, props, content_type, payload_format):
    from a2a_nb.protocol import inbound

    msg = MqttMessage("$a2a/v1/request/acme/support/t", payload, response_topic=response_topic,
                      correlation_data=correlation, user_properties=tuple(props), content_type=content_type,
                      payload_format=payload_format, received_at=time.time())
    verdict = inbound.check_request(msg, time.time(), "t", LIMIT)
    assert isinstance(verdict, (inbound.Drop, inbound.Rejected, inbound.Accepted))
    if isinstance(verdict, inbound.Rejected):
        jsonrpc.error_response(verdict.request_id, verdict.error)  # always encodable


@functools.lru_cache(maxsize=1)
def _issuer():
    from a2a_nb.agents.auth import LocalIssuer

    return LocalIssuer()


@settings(max_examples=600, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(values=st.lists(st.one_of(mqtt_text, st.builds(lambda t: "Bearer " + t, mqtt_text),
                                 st.builds(lambda a, b, c: f"Bearer {a}.{b}.{c}", mqtt_text, mqtt_text, mqtt_text)),
                       min_size=0, max_size=2),
       tls=st.booleans())
def test_bearer_policy_refuses_garbage_without_echoing_it(values, tls):
    from a2a_nb.agents.auth import PERMISSION_DENIED, UNAUTHENTICATED, auth_reason

    policy = _issuer().policy("acme/support/t", ["s"])
    msg = MqttMessage("t", b"{}", user_properties=tuple(("a2a-authorization", v) for v in values))
    err = policy.check(msg, tls=tls)
    assert err is not None
    text = json.dumps(err.to_dict())
    # the refusal of the same values with every token character but "." made a snowman: words of
    # the kit's own message (a token "requ" is in "requiredScopes") are not an echo
    def masked(v: str) -> str:
        scheme, token = ("Bearer ", v[7:]) if v.startswith("Bearer ") else ("", v)
        return scheme + re.sub(r"[^.]", "\u2603", token)

    masked_values = tuple(("a2a-authorization", masked(v)) for v in values)
    own_words = json.dumps(policy.check(MqttMessage("t", b"{}", user_properties=masked_values), tls=tls).to_dict())
    for v in values:
        token = v[7:] if v.startswith("Bearer ") else v
        if len(token) >= 4 and token not in own_words:
            assert token not in text
    assert err.code == -32005 if len(values) > 1 else auth_reason(err) in (UNAUTHENTICATED, PERMISSION_DENIED)
