"""A hostile A2A-over-MQTT agent for the probe's tests, written on bare paho-mqtt (nothing of the kit).

It publishes a retained card (a plain one, or any bytes a test gives: a deeply nested or malformed
card) and answers every request the way a careless or hostile peer on a shared broker might:

``endless``
    SendStreamingMessage and SubscribeToTask get WORKING status updates every 50 ms, forever; the
    stream never reaches a final item.
``huge``
    Every reply is about ``HUGE_BYTES`` (10 MB): a Task whose status message holds 10 MB of text,
    or an error whose message does.
``flood``
    Every request gets ``FLOOD`` correlated replies (WORKING status updates) before its answer.
``control``
    Every string it can choose carries ESC, BEL, NUL, a C1 CSI and other control characters: the
    card's name, status texts, error messages and codes, Task and context ids, the name of a field
    A2A does not know (which the schema check quotes).
``properties``
    Malformed MQTT properties on its replies: no or foreign Correlation Data (bytes with ESC, BEL and
    NUL), a wrong Content Type, Payload Format Indicator 1 on bytes that are not UTF-8, a Response
    Topic on a reply, 300 user properties of 200 characters with bidi overrides and line separators
    (an ``a2a-responder-agent-id`` among them), and a U+FEFF (see ``BOM``). Mosquitto disconnects a client whose MQTT
    strings hold C0 or C1 control characters (measured: ESC, BEL, NUL and CSI in a user property or
    the Content Type each end the publisher's connection), so those travel in payloads and in
    Correlation Data, which is binary.

Everything is answered on one worker thread (paho's network thread only queues requests), so a test
stops it with ``stop()``: the card is cleared and the client disconnects.
"""
from __future__ import annotations

import json
import queue
import threading
import uuid
from dataclasses import replace
from typing import Any, Optional

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.session import paho_client

ORG = "acme"
HUGE_BYTES = 10 * 1024 * 1024
FLOOD = 3000
CONTROL = "\x1b[31mred\x1b[0m\x07bell\x00nul\x08\x0b\x0c\x7f\x9b2J\u2028end"
"""ESC (a colour and a reset), BEL, NUL, backspace, vertical tab, form feed, DEL, the C1 CSI (a clear
screen for terminals that read C1 codes) and a Unicode line separator."""
SNEAKY = "\u202eevil\u202c\u2028"
"""What Mosquitto lets through in an MQTT string: a right-to-left override, a line separator."""
BOM = "\ufeff"
"""U+FEFF in an MQTT string: Mosquitto passes it on, and paho-mqtt 2.2 then drops the receiving
client's connection (``MalformedPacket [MQTT-1.5.4-3]``), though MQTT 5 only says it must not be
stripped. The ``properties`` agent sends one with its ListTasks answer."""

WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
BEHAVIOURS = ("endless", "huge", "flood", "control", "properties")
EVENTS = "events"
"""Not among ``BEHAVIOURS`` (its answers are otherwise plain): after each SendMessage, task events for
the task on its event topic that no one should trust: a JSON list, 2 MB of bytes, a state with control
characters, and ``FLOOD`` more (the probe's ``task-events`` check keeps 100)."""


def card(unit: str, agent: str, name: str = "Hostile") -> dict:
    return {"name": name, "description": f"{name} agent for the probe's tests", "version": "1.0.0",
            "supportedInterfaces": [{"url": f"$a2a/v1/request/{ORG}/{unit}/{agent}",
                                     "protocolBinding": "https://github.com/emqx/mqtt-for-ai/tree/main/a2a-over-mqtt"
                                                        "/specification/0.1", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": name, "description": "answers", "tags": ["echo"]}]}


def nested(depth: int) -> bytes:
    """A card whose ``skills`` is ``depth`` lists inside each other (valid JSON)."""
    inner = "[" * depth + "]" * depth
    return ('{"name":"Deep","description":"d","version":"1","skills":' + inner + "}").encode()


def _props(corr: Optional[bytes], **extra: Any) -> Properties:
    p = Properties(PacketTypes.PUBLISH)
    if corr is not None:
        p.CorrelationData = corr
    for key, value in extra.items():
        setattr(p, key, value)
    return p


def take_requests(c: mqtt.Client, endpoint: BrokerEndpoint, request_topic: str) -> None:
    """Connect a bare paho agent, start its loop and wait until it is subscribed to its request topic."""
    ready = threading.Event()
    c.on_subscribe = lambda *a: ready.set()
    c.connect(endpoint.host, endpoint.port)
    c.loop_start()
    c.subscribe(request_topic, qos=1)
    assert ready.wait(5), "no SUBACK"


class HostileAgent:
    """``behaviour`` is one of ``BEHAVIOURS`` (None: a plain agent that only holds a card).
    ``card_payload``: the retained card's bytes (default a valid card, with control characters in
    its name for ``control``)."""

    def __init__(self, broker_url: str, unit: str, behaviour: Optional[str], agent: str = "hostile",
                 card_payload: Optional[bytes] = None):
        assert behaviour in BEHAVIOURS + (EVENTS, None), behaviour
        self.unit, self.agent, self.behaviour = unit, agent, behaviour
        endpoint = BrokerEndpoint.from_url(broker_url)
        self.card_topic = f"$a2a/v1/discovery/{ORG}/{unit}/{agent}"
        self.requests: "queue.Queue[Optional[mqtt.MQTTMessage]]" = queue.Queue()
        self.streams: list[tuple[str, bytes, Any, str, str]] = []  # endless: (topic, corr, id, task, context)
        self.answered = 0
        self.last_method: Optional[str] = None
        self._stop = threading.Event()
        self.c = paho_client(replace(endpoint, inflight=0), f"{ORG}/{unit}/{agent}")
        self.c.on_message = lambda c, u, m: self.requests.put(m)
        take_requests(self.c, endpoint, f"$a2a/v1/request/{ORG}/{unit}/{agent}")
        if card_payload is None:
            name = "Hostile" + (CONTROL if behaviour == "control" else "")
            card_payload = json.dumps(card(unit, agent, name)).encode()
        status = [("a2a-status", "online"), ("a2a-status-source", "agent")]
        self.c.publish(self.card_topic, card_payload, qos=1, retain=True,
                       properties=_props(None, UserProperty=status)).wait_for_publish(10)
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    # -- the worker ----------------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.requests.get(timeout=0.05)
            except queue.Empty:
                msg = None
            if msg is not None:
                try:
                    self._answer(msg)
                except Exception as exc:  # a fixture bug shows in the test's output, never hangs it
                    print("hostile agent:", type(exc).__name__, exc)
                self.answered += 1
            for topic, corr, rid, task, ctx in list(self.streams):
                self._pub(topic, self._result(rid, {"statusUpdate": self._status(task, ctx, WORKING)}), corr)

    def _pub(self, topic: str, payload: Any, corr: Optional[bytes], **props: Any) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.c.publish(topic, body, qos=1, properties=_props(corr, **props))

    @staticmethod
    def _result(rid: Any, result: dict) -> dict:
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    @staticmethod
    def _error(rid: Any, code: Any, message: str, data: Optional[dict] = None) -> dict:
        err: dict = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        return {"jsonrpc": "2.0", "id": rid, "error": err}

    def _text(self, text: str) -> str:
        if self.behaviour == "huge":
            return text + " " + "x" * HUGE_BYTES
        if self.behaviour == "control":
            return text + CONTROL
        return text

    def _status(self, task: str, ctx: str, state: str, text: str = "") -> dict:
        status: dict = {"state": state}
        if text:
            status["message"] = {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT", "taskId": task,
                                 "contextId": ctx, "parts": [{"text": self._text(text)}]}
        return {"taskId": task, "contextId": ctx, "status": status}

    def _answer(self, msg: mqtt.MQTTMessage) -> None:
        p = msg.properties
        topic = getattr(p, "ResponseTopic", None)
        corr = getattr(p, "CorrelationData", None)
        if not topic:
            return
        try:
            req = json.loads(msg.payload)
            rid, method, params = req.get("id"), req.get("method"), req.get("params") or {}
        except (ValueError, AttributeError):
            self._reply(topic, corr, self._error(None, -32700, self._text("parse error")))
            return
        self.last_method = method
        message = params.get("message") if isinstance(params.get("message"), dict) else {}
        task = str(message.get("taskId") or params.get("id") or uuid.uuid4())
        ctx = str(message.get("contextId") or uuid.uuid4())
        if self.behaviour == "control":
            task, ctx = task + CONTROL, ctx + CONTROL
        if self.behaviour == "flood":
            for _ in range(FLOOD):
                self._pub(topic, self._result(rid, {"statusUpdate": self._status(task, ctx, WORKING, "flood " * 20)}),
                          corr)
        if method in ("SendStreamingMessage", "SubscribeToTask"):
            first = {"statusUpdate": self._status(task, ctx, WORKING, "working")}
            self._reply(topic, corr, self._result(rid, first))
            if self.behaviour == "endless":
                self.streams.append((topic, corr, rid, task, ctx))
                return
            self._reply(topic, corr, self._result(rid, {"statusUpdate": self._status(task, ctx, COMPLETED, "done")}))
        elif method == "SendMessage":
            if self.behaviour == EVENTS:
                self._hostile_events(task, ctx)
            done = {"id": task, "contextId": ctx, "status": self._status(task, ctx, COMPLETED, "done")["status"]}
            if self.behaviour == "control":
                done["note" + CONTROL] = CONTROL  # a field A2A does not know: the schema check names it
            self._reply(topic, corr, self._result(rid, {"task": done}))
        elif method in ("GetTask", "CancelTask"):
            code: Any = ("-32001" + CONTROL) if self.behaviour == "control" else -32001
            self._reply(topic, corr, self._error(rid, code, self._text("task not found"),
                                                 {"a2a_error": self._text("task_not_found")}))
        else:
            self._reply(topic, corr, self._error(rid, -32601, self._text(f"method {method} not found")))

    def _hostile_events(self, task: str, ctx: str) -> None:
        topic = f"$a2a/v1/event/{ORG}/{self.unit}/{self.agent}"
        tied = [("a2a-event-type", "task-status-update"), ("a2a-task-id", task), ("a2a-context-id", ctx)]
        odd = {"taskId": task, "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED" + CONTROL}}
        for payload in [["not", "an", "event"], b"x" * 2_000_000, odd] + [odd] * FLOOD:
            self._pub(topic, payload, None, UserProperty=tied)

    def _reply(self, topic: str, corr: Optional[bytes], payload: dict) -> None:
        if self.behaviour != "properties":
            self._pub(topic, payload, corr)
            return
        body = json.dumps(payload).encode()
        odd = [(f"x-{SNEAKY}-{i}", SNEAKY * 40) for i in range(300)]
        self._pub(topic, body, corr, ContentType="text/html" + SNEAKY, ResponseTopic=topic + "/again",
                  UserProperty=[("a2a-responder-agent-id", "evil" + SNEAKY)] + odd)
        self._pub(topic, body, None)  # no Correlation Data
        self._pub(topic, body, b"\xff\x00foreign" + CONTROL.encode())  # someone else's
        self._pub(topic, b"\xff\xfe not UTF-8 \x1b\x07\x00", corr, PayloadFormatIndicator=1)
        if json.loads(body).get("id") is not None and self.last_method == "ListTasks":
            self._pub(topic, body, corr, UserProperty=[("x-bom", BOM)])  # the probe's connection drops

    # -- the end -------------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        self.worker.join(5)
        if self.c.is_connected():
            self.c.publish(self.card_topic, b"", qos=1, retain=True).wait_for_publish(5)
        self.c.disconnect()
        self.c.loop_stop()


__all__ = ["BEHAVIOURS", "EVENTS", "BOM", "CONTROL", "SNEAKY", "FLOOD", "HUGE_BYTES", "HostileAgent", "card", "nested"]
