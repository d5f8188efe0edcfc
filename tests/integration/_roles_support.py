"""Shared tools of the requester/responder integration tests (test_roles_*.py).

* ``Traffic``: an independent observer on ``$a2a/#`` (live traffic only, original retain flag), and
  the check that every payload the kit emitted validates with the official a2a-sdk v1.0 types and
  never echoes ``a2a-authorization``.
* ``RawClient`` / ``RawResponder``: independent clients written from the profile, with hand-built
  JSON-RPC payloads. What they publish is recorded in ``HAND_BUILT`` and skipped by the kit check.

Everything runs against the real Mosquitto of ``tests/conftest.py``; nothing is mocked.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from typing import Any, Callable, Optional

import pytest

from a2a_nb.mqtt.session import Session, Subscription
from a2a_nb.protocol import cards, jsonrpc
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.protocol.retry import RetryProfile
from tests.sdk_check import assert_valid
from tests.helpers import uid

FAST = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=1.0, max_attempts=3, backoff_s=(0.05, 0.1, 0.2))
ORG, UNIT = "acme", "support"
SECRET = "s3cr3t-token-never-echoed"

HAND_BUILT: "Counter[tuple]" = Counter()
"""(topic, payload, correlation) of every message a test built by hand (not the kit's output), with
how many times it was published (a replayed kit message is skipped once, the original still checked)."""


def is_uuid4(value: Any) -> bool:
    """Independent of the kit: canonical hyphenated lowercase-or-not UUID with version 4, RFC variant."""
    if not isinstance(value, str):
        return False
    try:
        u = uuid.UUID(value)
    except ValueError:
        return False
    return str(u) == value.lower() and u.version == 4 and u.variant == uuid.RFC_4122


def card_for(agent: str) -> dict:
    return cards.agent_card(
        name=agent, description=f"test agent {agent}", version="1.0.0", org=ORG, unit=UNIT, agent=agent,
        skills=[cards.skill("echo", "Echo", "Answers what it is told", ["test"])])


def request_topic(agent: str) -> str:
    return f"$a2a/v1/request/{ORG}/{UNIT}/{agent}"


def discovery_topic(agent: str) -> str:
    return f"$a2a/v1/discovery/{ORG}/{UNIT}/{agent}"


def wait_until(pred: Callable[[], Any], timeout: float = 5.0, interval: float = 0.01) -> Any:
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            return v
        time.sleep(interval)


def json_metadata_ok(m: MqttMessage) -> bool:
    """A JSON payload's binding metadata: PFI 1 or absent, Content Type JSON or absent (both optional)."""
    ct = (m.content_type or "application/json").split(";")[0].strip().lower()
    return m.payload_format in (None, 1) and ct in ("application/json", "application/json-rpc")


def hand_key(m: MqttMessage) -> tuple:
    """What identifies a hand-built message in HAND_BUILT."""
    return (m.topic, bytes(m.payload), m.correlation_data)


# -- hand-built JSON-RPC payloads ----------------------------------------------------------------------
def user_message(text: str = "hello", *, task_id: Optional[str] = None, context_id: Optional[str] = None,
                 message_id: Optional[str] = None) -> dict:
    m = {"messageId": message_id or str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}],
         "taskId": task_id or str(uuid.uuid4()), "contextId": context_id or str(uuid.uuid4())}
    return m


def rpc(method: str, params: Any, rid: Any = "req-1") -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def send_rpc(message: dict, rid: Any = "req-1", method: str = "SendMessage") -> dict:
    return rpc(method, {"message": message}, rid)


# -- the observer ------------------------------------------------------------------------------------
class Traffic:
    """Everything published under ``$a2a/`` while it runs (live only: retained history is not sent)."""

    def __init__(self, broker_url: str):
        self.messages: list[MqttMessage] = []
        self._cond = threading.Condition()
        self.session = Session(ORG, UNIT, uid("observer"), broker=broker_url)
        self.session.subscribe(Subscription("$a2a/#", qos=1, retain_as_published=True, retain_handling=2),
                               handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self._cond:
            self.messages.append(m)
            self._cond.notify_all()

    def snapshot(self) -> list[MqttMessage]:
        with self._cond:
            return list(self.messages)

    def wait_for(self, pred: Callable[[MqttMessage], bool], count: int = 1, timeout: float = 5.0) -> list[MqttMessage]:
        with self._cond:
            self._cond.wait_for(lambda: sum(1 for m in self.messages if pred(m)) >= count, timeout)
            return [m for m in self.messages if pred(m)]

    def on_topic(self, topic: str) -> list[MqttMessage]:
        return [m for m in self.snapshot() if m.topic == topic]

    def requests(self, agent: Optional[str] = None, method: Optional[str] = None) -> list[tuple[MqttMessage, dict]]:
        """Requests seen so far (after in-flight traffic settled), with their parsed payloads."""
        self.settle(0.05)
        out = []
        for m in self.snapshot():
            if not m.topic.startswith("$a2a/v1/request/"):
                continue
            if agent is not None and m.topic != request_topic(agent):
                continue
            try:
                body = json.loads(m.payload)
            except ValueError:
                body = None
            if method is not None and (not isinstance(body, dict) or body.get("method") != method):
                continue
            out.append((m, body))
        return out

    def replies(self, correlation: bytes, topic: Optional[str] = None) -> list[MqttMessage]:
        self.settle(0.05)
        return [m for m in self.snapshot() if m.topic.startswith("$a2a/v1/reply/") and m.correlation_data == correlation
                and (topic is None or m.topic == topic)]

    def settle(self, quiet_s: float = 0.15, timeout: float = 3.0) -> None:
        """Wait until nothing new arrived for ``quiet_s`` (in-flight traffic reached the observer)."""
        deadline = time.time() + timeout
        n = -1
        while time.time() < deadline:
            with self._cond:
                cur = len(self.messages)
            if cur == n:
                return
            n = cur
            time.sleep(quiet_s)

    # -- the kit's payloads against a2a-sdk --------------------------------------------------------------
    def kit_problems(self) -> tuple[int, list[str]]:
        """(number of kit payloads checked, problems found)."""
        msgs = self.snapshot()
        methods: dict[bytes, str] = {}
        for m in msgs:
            if m.topic.startswith("$a2a/v1/request/") and m.correlation_data is not None:
                try:
                    methods[m.correlation_data] = json.loads(m.payload).get("method")
                except (ValueError, AttributeError):
                    pass
        checked, problems = 0, []
        hand = Counter(HAND_BUILT)
        for m in msgs:
            if hand[hand_key(m)] > 0:
                hand[hand_key(m)] -= 1
                continue
            try:
                n = check_kit_message(m, methods)
            except AssertionError as exc:
                problems.append(f"{m.topic} corr={m.correlation_data!r}: {exc}")
                continue
            checked += n
        return checked, problems


def check_kit_message(m: MqttMessage, methods: dict) -> int:
    """Assert one message the kit published is valid; returns 1 if a payload was checked, else 0."""
    if not m.topic.startswith("$a2a/v1/request/"):
        # Responder Behavior 8, OAuth 6: a bearer token is never echoed, neither as a property nor in a payload.
        assert not any(k.lower() == "a2a-authorization" for k, _ in m.user_properties), "a2a-authorization echoed"
        assert SECRET.encode() not in bytes(m.payload), "bearer token echoed in a payload"
    if m.topic.startswith("$a2a/v1/discovery/"):
        if not m.payload:
            return 0  # a retained-card delete
        assert_valid("AgentCard", json.loads(m.payload))
        return 1
    if m.topic.startswith("$a2a/v1/request/"):
        assert json_metadata_ok(m), f"JSON request with PFI {m.payload_format} / Content Type {m.content_type!r}"
        body = json.loads(m.payload)
        assert body.get("jsonrpc") == "2.0" and isinstance(body.get("id"), (str, int)), body
        method = body["method"]
        assert method in jsonrpc.PARAMS_TYPE, f"unknown method {method!r}"
        assert_valid(jsonrpc.PARAMS_TYPE[method], body.get("params", {}))
        return 1
    if m.topic.startswith("$a2a/v1/reply/"):
        if m.payload_format == 0:  # a native binary chunk: properties only
            for key in ("a2a-event-type", "a2a-task-id", "a2a-artifact-id", "a2a-chunk-seqno", "a2a-last-chunk"):
                assert m.user_property(key) is not None, f"binary chunk without {key}"
            return 0
        assert json_metadata_ok(m), f"JSON reply with PFI {m.payload_format} / Content Type {m.content_type!r}"
        body = json.loads(m.payload)
        assert body.get("jsonrpc") == "2.0", body
        assert ("result" in body) != ("error" in body), body
        if "error" in body:
            err = body["error"]
            assert isinstance(err.get("code"), int) and isinstance(err.get("message"), str), err
            data = err.get("data")
            if isinstance(data, list):  # core A2A errors: google.rpc.ErrorInfo details
                for d in data:
                    assert d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo" and d.get("reason"), d
            return 1
        method = methods.get(m.correlation_data)
        assert method is not None, "a reply whose request was never seen"
        kind = jsonrpc.RESULT_TYPE[method]
        ignore = ("tasks", "next_page_token", "page_size", "total_size") if kind == "ListTasksResponse" else ()
        assert_valid(kind, body["result"], ignore_required=ignore)
        return 1
    return 0


@pytest.fixture
def traffic(broker_url):
    """An observer on ``$a2a/#``; at teardown every payload the kit emitted must validate."""
    t = Traffic(broker_url)
    yield t
    t.settle(0.08)
    checked, problems = t.kit_problems()
    assert not problems, f"{len(problems)} invalid kit payload(s) out of {checked}:\n" + "\n".join(problems[:20])


# -- independent clients -----------------------------------------------------------------------------
_DEFAULT: Any = object()


class RawClient:
    """A requester written from the profile: hand-built payloads, its own reply topic."""

    def __init__(self, broker_url: str, agent: Optional[str] = None):
        self.agent = agent or uid("raw")
        self.session = Session(ORG, UNIT, self.agent, broker=broker_url)
        self.reply_topic = f"$a2a/v1/reply/{ORG}/{UNIT}/{self.agent}/{uuid.uuid4().hex[:16]}"
        self._cond = threading.Condition()
        self.by_corr: dict[bytes, list[MqttMessage]] = defaultdict(list)
        self.all: list[MqttMessage] = []
        self.session.subscribe(self.reply_topic, handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        with self._cond:
            self.all.append(m)
            if m.correlation_data is not None:
                self.by_corr[m.correlation_data].append(m)
            self._cond.notify_all()

    def publish(self, msg: MqttMessage):
        HAND_BUILT[hand_key(msg)] += 1
        return self.session.publish(msg)

    def request(self, to_agent: str, payload: Any, *, correlation: Any = _DEFAULT, response_topic: Any = _DEFAULT,
                props: tuple = (("a2a-authorization", f"Bearer {SECRET}"),), content_type: Optional[str] = "application/json",
                payload_format: Optional[int] = 1, expiry: Optional[int] = None, topic: Optional[str] = None) -> Optional[bytes]:
        corr = uuid.uuid4().bytes if correlation is _DEFAULT else correlation
        rt = self.reply_topic if response_topic is _DEFAULT else response_topic
        data = payload if isinstance(payload, (bytes, bytearray)) else encode_json(payload)
        self.publish(MqttMessage(topic or request_topic(to_agent), bytes(data), qos=1, response_topic=rt,
                                 correlation_data=corr, user_properties=tuple(props), content_type=content_type,
                                 payload_format=payload_format, message_expiry=expiry))
        return corr

    def replies(self, corr: bytes, count: int = 1, timeout: float = 3.0) -> list[MqttMessage]:
        with self._cond:
            self._cond.wait_for(lambda: len(self.by_corr.get(corr, [])) >= count, timeout)
            return list(self.by_corr.get(corr, []))

    def reply(self, corr: bytes, timeout: float = 3.0) -> Optional[MqttMessage]:
        got = self.replies(corr, 1, timeout)
        return got[0] if got else None

    def call(self, to_agent: str, payload: Any, timeout: float = 3.0, **kw) -> tuple[bytes, MqttMessage, dict]:
        corr = self.request(to_agent, payload, **kw)
        m = self.reply(corr, timeout)
        assert m is not None, f"no reply from {to_agent} within {timeout} s"
        return corr, m, json.loads(m.payload)


class RawResponder:
    """A responder written from the profile that answers only delivery number ``answer_on``."""

    def __init__(self, broker_url: str, agent: str, answer_on: int = 2):
        self.agent = agent
        self.answer_on = answer_on
        self.received: list[MqttMessage] = []
        self.session = Session(ORG, UNIT, agent, broker=broker_url)
        self.session.subscribe(request_topic(agent), handler=self._on)

    def _on(self, m: MqttMessage) -> None:
        self.received.append(m)
        if len(self.received) != self.answer_on:
            return
        body = json.loads(m.payload)
        msg = body["params"]["message"]
        task = {"id": msg["taskId"], "contextId": msg["contextId"],
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2025-01-01T00:00:00.000Z",
                           "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT",
                                       "parts": [{"text": f"answered delivery {len(self.received)}"}],
                                       "taskId": msg["taskId"], "contextId": msg["contextId"]}},
                "history": [msg]}
        reply = MqttMessage(m.response_topic, encode_json({"jsonrpc": "2.0", "id": body["id"], "result": {"task": task}}),
                            qos=1, correlation_data=m.correlation_data, content_type="application/json",
                            payload_format=1)
        HAND_BUILT[hand_key(reply)] += 1
        self.session.publish_nowait(reply)  # on the network thread: never wait for the PUBACK here
