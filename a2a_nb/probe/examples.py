"""Small agents to point the probe at: a sketch of the profile in one class, with mistakes to switch on.

:class:`SketchAgent` is an A2A-over-MQTT responder written directly on a
:class:`~a2a_nb.mqtt.session.Session`, without the kit's Responder: every task completes at once with
an echo of its text (a streamed request gets WORKING, one artifact and COMPLETED). It reuses the
kit's pure rules (``protocol.inbound`` checks each request) and answers on the session's network thread,
which only suits work this quick.

:class:`Mistakes` switches on one habit each that breaks a rule of the profile, the kind of thing an
implementation carries over from HTTP A2A or gets slightly wrong; the probe names each by rule id.
``careless_agent()`` is the lesson's example: it makes its own Task.ids (core A2A's habit; over MQTT
the requester makes them) and reads Correlation Data as text, so binary Correlation Data stops it.
"""
from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session
from ..protocol import cards, errors, inbound, jsonrpc, messages, properties, states, topics
from ..protocol.errors import A2AError
from ..protocol.ids import IdSource
from ..protocol.packet import MqttMessage, encode_json

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Mistakes:
    """Habits that break the profile (all off: a sketch the probe finds Core conformant)."""

    wrong_correlation: bool = False
    """Replies carry new Correlation Data instead of the request's (Request/Reply Mapping 3)."""
    own_task_ids: bool = False
    """Replies name a Task.id the agent made, not the requester's (Request/Reply Mapping 6-7)."""
    reply_after_final: bool = False
    """A stream gets one more status update after COMPLETED (Streaming Reply Mapping 5-7)."""
    reflect_response_topic: bool = False
    """Replies go to any Response Topic, also outside ``$a2a/v1/reply/`` (the kit's hardening)."""
    text_correlation: bool = False
    """Correlation Data is decoded as UTF-8 text; binary Correlation Data makes the request fail."""
    handover_without_property: bool = False
    """New tasks are passed to a helper instance that answers without ``a2a-responder-agent-id``
    (Optional Task Handover 2); the card agent then does not know them."""


class SketchAgent:
    """A minimal responder: retained card with presence, request checks, tasks in a dict."""

    def __init__(self, agent: str = "sketch", *, org: str = "acme", unit: str = "support",
                 broker: Union[str, BrokerEndpoint, None] = None, mistakes: Mistakes = Mistakes(),
                 card: bool = True):
        self.org, self.unit, self.agent = org, unit, agent
        self.mistakes = mistakes
        self.ids = IdSource()
        self.tasks: dict[str, dict] = {}
        self.card = cards.agent_card(
            name=f"Sketch {agent}", description="Echoes each message as a finished task (a probe example).",
            version="0.1.0", org=org, unit=unit, agent=agent, streaming=True,
            # tagged as what it is: a lesson's searches for "echo" on a shared broker must not find it
            skills=[cards.skill("sketch", "Sketch", "Answers with the text it got", tags=["probe-example"])]) \
            if card else None
        will = self._card_message(properties.OFFLINE, properties.SOURCE_LWT) if self.card else None
        self.helper = SketchAgent(f"{agent}-helper", org=org, unit=unit, broker=broker, card=False) \
            if mistakes.handover_without_property else None
        namespaces = ("",) if mistakes.reflect_response_topic else (topics.reply_namespace(org, unit),)
        self.reply_namespaces: tuple[str, ...] = namespaces
        self.session = Session(org, unit, agent, broker=broker, will=will)
        self.session.subscribe(topics.request_topic(org, unit, agent), handler=self._on_request)
        if self.card is not None:
            self.session.publish(self._card_message(properties.ONLINE, properties.SOURCE_AGENT))

    def _card_message(self, status: str, source: str) -> MqttMessage:
        """The retained card with its presence (Profile: Discovery Topic, Presence and Liveness)."""
        return MqttMessage(topics.discovery_topic(self.org, self.unit, self.agent), encode_json(self.card), qos=1,
                           retain=True, user_properties=properties.presence_properties(status, source))

    # -- requests (the session's network thread) --------------------------------------------------------
    def _on_request(self, msg: MqttMessage) -> None:
        if self.mistakes.text_correlation and msg.correlation_data is not None:
            try:
                msg.correlation_data.decode("utf-8")  # the mistake: Correlation Data taken for text
            except UnicodeDecodeError as exc:
                log.info("%s could not read the Correlation Data as text (%s): no reply", self.agent, exc)
                return
        verdict = inbound.check_request(msg, time.time(), self.agent, reply_namespaces=self.reply_namespaces)
        if isinstance(verdict, inbound.Drop):
            log.info("%s dropped a request: %s", self.agent, verdict.reason)
            return
        if isinstance(verdict, inbound.Rejected):
            self._answer(msg, jsonrpc.error_response(verdict.request_id, verdict.error))
            return
        try:
            self._dispatch(msg, verdict)
        except A2AError as err:
            self._answer(msg, jsonrpc.error_response(verdict.request_id, err))

    def _dispatch(self, msg: MqttMessage, v: inbound.Accepted) -> None:
        p = v.params
        if v.method in (jsonrpc.SEND_MESSAGE, jsonrpc.SEND_STREAMING_MESSAGE):
            self._send_message(msg, v, stream=v.method == jsonrpc.SEND_STREAMING_MESSAGE)
        elif v.method == jsonrpc.GET_TASK:
            self._result(msg, v, self._named(inbound.check_get(self.tasks.get(p["id"]), p["id"])))
        elif v.method == jsonrpc.CANCEL_TASK:
            inbound.check_cancel(self.tasks.get(p["id"]), p["id"])  # every task here is finished: -32001 or -32002
        elif v.method == jsonrpc.SUBSCRIBE_TO_TASK:
            inbound.check_subscribe(self.tasks.get(p["id"]), p["id"])  # likewise: -32001 or -32004
        elif v.method == jsonrpc.LIST_TASKS:
            found = [self._named(t) for t in self.tasks.values()
                     if p.get("contextId") in (None, t["contextId"])]
            self._result(msg, v, messages.list_tasks_result(found, page_size=len(found) or 1, total_size=len(found)))
        else:
            raise errors.unsupported_operation(f"{v.method} is not offered by this sketch")

    def _send_message(self, msg: MqttMessage, v: inbound.Accepted, stream: bool) -> None:
        message = v.params["message"]
        stored = self.tasks.get(message["taskId"])
        what = inbound.classify_send(stored, message)  # -32602 on another contextId, -32004 on a finished task
        if what == inbound.SEND_NEW and self.helper is not None:
            self.session.publish_then(MqttMessage(self.helper.session_topic, msg.payload, response_topic=msg.response_topic,
                                                  correlation_data=msg.correlation_data), lambda ack: None)
            return
        task = stored if stored is not None else self._complete(message)
        if not stream:
            self._result(msg, v, {"task": self._named(task)})
            return
        tid, ctx = self._named(task)["id"], task["contextId"]
        art = messages.artifact("echo", messages.text_of(task["status"]["message"]))
        items = [messages.stream_status(messages.status_update(tid, ctx, states.WORKING)),
                 messages.stream_artifact(messages.artifact_update(tid, ctx, art, last_chunk=True)),
                 messages.stream_status(messages.status_update(tid, ctx, task["status"]))]
        if self.mistakes.reply_after_final:
            items.append(messages.stream_status(messages.status_update(tid, ctx, states.WORKING)))
        for item in items:
            self._result(msg, v, item)

    @property
    def session_topic(self) -> str:
        return topics.request_topic(self.org, self.unit, self.agent)

    def _complete(self, message: dict) -> dict:
        reply = messages.agent_message(f"sketch: {messages.text_of(message)}", message_id=self.ids.message_id(),
                                       task_id=message["taskId"], context_id=message["contextId"])
        task = messages.task(message["taskId"], message["contextId"],
                             messages.task_status(states.COMPLETED, reply), history=[message, reply])
        self.tasks[task["id"]] = task
        return task

    def _named(self, task: dict) -> dict:
        """The task as the replies show it (with ``own_task_ids``, under an id of the agent's own)."""
        if not self.mistakes.own_task_ids:
            return task
        return {**task, "id": "sketch-" + task["id"][:8]}

    # -- replies -------------------------------------------------------------------------------------------
    def _result(self, msg: MqttMessage, v: inbound.Accepted, result: dict) -> None:
        self._answer(msg, jsonrpc.result_response(v.request_id, result))

    def _answer(self, msg: MqttMessage, payload: dict) -> None:
        corr = secrets.token_hex(16).encode() if self.mistakes.wrong_correlation else msg.correlation_data
        assert msg.response_topic is not None
        self.session.publish_then(MqttMessage(msg.response_topic, encode_json(payload), qos=1, correlation_data=corr),
                                  lambda ack: None)

    def stop(self, forget: bool = False) -> None:
        """Say offline on the card (while still connected), then disconnect (and the helper, if any).
        ``forget``: clear the retained card instead, so no later lesson on the same broker finds it."""
        if self.card is not None and not self.session.closed:
            gone = MqttMessage(topics.discovery_topic(self.org, self.unit, self.agent), b"", qos=1, retain=True)
            self.session.publish(gone if forget else self._card_message(properties.OFFLINE, properties.SOURCE_AGENT))
        self.session.close()
        if self.helper is not None:
            self.helper.stop()


def careless_agent(agent: str = "careless", *, org: str = "acme", unit: str = "support",
                   broker: Union[str, BrokerEndpoint, None] = None) -> SketchAgent:
    """The lesson's example of what not to do: Task.ids of its own, Correlation Data read as text."""
    return SketchAgent(agent, org=org, unit=unit, broker=broker,
                       mistakes=Mistakes(own_task_ids=True, text_correlation=True))


__all__ = ["Mistakes", "SketchAgent", "careless_agent"]
