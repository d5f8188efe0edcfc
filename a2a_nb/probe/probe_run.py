"""What the probe's checks share: the agent, its card and the exchanges made once (:class:`ProbeRun`),
and a SendMessage with what it caused (:class:`Sent`).

A check (``rules.check``) takes a ``ProbeRun``; the runner (``runner.run_probe``) makes one after it
found the agent's card and hands it to every check in turn. The first SendMessage, a finished task and
an interrupted one are made once, on first use, and shared (``ProbeRun.once``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from ..protocol import jsonrpc, messages, properties, states, topics
from ..protocol.packet import MqttMessage, encode_json
from .client import FINAL, FIRST, Exchange, ProbeClient

PROBE_TEXT = "a2a_nb probe: please answer this message"
ANSWER_TEXT = "a2a_nb probe: here is the input you asked for (steps: open the page twice, then refresh)"


@dataclass
class Sent:
    """A SendMessage the probe made: its Message and the exchange it caused."""

    message: dict
    exchange: Exchange

    @property
    def task_id(self) -> str:
        return str(self.message["taskId"])

    @property
    def context_id(self) -> str:
        return str(self.message["contextId"])

    @property
    def state(self) -> Optional[str]:
        """The last state the replies named (status update or Task)."""
        for payload in reversed(self.exchange.payloads):
            state = state_in(payload)
            if state is not None:
                return state
        return None


def task_in(payload: Any) -> Optional[dict]:
    """The Task a JSON-RPC reply carries (``result.task`` or a Task ``result``), if any."""
    return messages.task_in_result(payload.get("result") if isinstance(payload, dict) else None)


def state_in(payload: Any) -> Optional[str]:
    """The task state a reply names: a Task's, a status update's, or COMPLETED for a Message."""
    result = payload.get("result") if isinstance(payload, dict) else None
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("message"), dict):
        return states.COMPLETED
    task = task_in(payload)
    body = task if task is not None else result.get("statusUpdate")
    state = body.get("status", {}).get("state") if isinstance(body, dict) else None
    return state if isinstance(state, str) else None


@dataclass
class ProbeRun:
    """What the checks share: the client, the agent and its card, and exchanges made once."""

    client: ProbeClient
    agent: str
    card: dict
    card_message: MqttMessage
    level: str = "core"
    pool: Optional[str] = None
    token: Optional[str] = None
    bad_inputs: list[str] = field(default_factory=list)
    silent_after: Optional[str] = None
    deadline: float = 60.0
    ubsp: Any = None
    """The probe's own ubsp-v1 protection (``a2a_nb.ubsp.protection.Ubsp``), for ``--level extended``;
    None without the ``secure`` extra."""
    _memo: dict[str, Any] = field(default_factory=dict)

    @property
    def out_of_time(self) -> str:
        """Why a check was not run or not finished once the overall deadline came."""
        return f"the probe's deadline of {self.deadline:g} s ran out (give a longer --deadline)"

    @property
    def org(self) -> str:
        return self.client.org

    @property
    def unit(self) -> str:
        return self.client.unit

    @property
    def capabilities(self) -> dict:
        caps = self.card.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def streaming(self) -> bool:
        return bool(self.capabilities.get("streaming"))

    @property
    def request_topic(self) -> str:
        return topics.request_topic(self.org, self.unit, self.agent)

    def props(self, *extra: tuple[str, str]) -> tuple:
        """User properties of a probe request: the bearer token when one was given, plus ``extra``."""
        auth = (properties.bearer(self.token),) if self.token else ()
        return auth + tuple(extra)

    # -- building and sending --------------------------------------------------------------------------
    def message(self, text: str = PROBE_TEXT, *, task_id: Optional[str] = None,
                context_id: Optional[str] = None) -> dict:
        ids = self.client.ids
        return messages.user_message(text, message_id=ids.message_id(), task_id=task_id or ids.task_id(),
                                     context_id=context_id or ids.context_id())

    def send(self, message: dict, *, stream: bool = False, correlation: Optional[bytes] = b"",
             extra_props: tuple = (), configuration: Optional[dict] = None, to: Optional[str] = None) -> Sent:
        """SendMessage (or SendStreamingMessage) of ``message``, routed like a requester routes it:
        a new task to ``to`` (default the agent), a known one to its latest responder."""
        method = jsonrpc.SEND_STREAMING_MESSAGE if stream else jsonrpc.SEND_MESSAGE
        task_id = message["taskId"]
        known = self.client.routing.target(task_id)
        topic = known.topic if known is not None else self.client.start_route(task_id, to or self.agent)
        params = messages.send_message_params(message, configuration=configuration)
        ex = self.client.exchange(topic, self.client.request_payload(method, params), correlation=correlation,
                                  user_properties=self.props(*extra_props), until=FINAL if stream else FIRST,
                                  task_id=task_id)
        return Sent(message, ex)

    def call(self, method: str, params: Optional[dict], task_id: Optional[str] = None, **kw: Any) -> Exchange:
        """A well-formed request, routed to the task's latest responder when ``task_id`` is known."""
        kw.setdefault("user_properties", self.props())
        return self.client.call(self.agent, method, params, task_id=task_id, **kw)

    def raw(self, payload: Union[bytes, dict], **kw: Any) -> Exchange:
        """Any payload (a dict is sent as JSON) to the agent's request topic."""
        body = encode_json(payload) if isinstance(payload, dict) else payload
        kw.setdefault("user_properties", self.props())
        return self.client.exchange(self.request_topic, body, **kw)

    def unknown_task_id(self) -> str:
        return self.client.ids.task_id()

    def alive(self) -> Optional[Exchange]:
        """GetTask for a task that does not exist: the exchange when any reply came (even one with
        the wrong Correlation Data: the agent answers, which is all this asks)."""
        ex = self.call(jsonrpc.GET_TASK, messages.get_task_params(self.unknown_task_id()))
        return ex if ex.replies else None

    # -- exchanges the checks share (each made once) ---------------------------------------------------
    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()`` the first time ``key`` is asked for, the same value after that."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def baseline(self) -> Sent:
        """The first SendMessage: a new task, a requester-made UUIDv4 Task.id and contextId, text
        Correlation Data (the hex of 16 random bytes)."""
        return self.once("baseline", lambda: self.send(self.message()))

    def interrupted(self) -> Optional[Sent]:
        """The baseline task while it waits for input (input- or auth-required), else None."""
        base = self.baseline()
        return base if states.is_interrupted(base.state or "") else None

    def finished(self) -> Optional[Sent]:
        """A task in a terminal state: the first task once it ended (after the multi-turn check
        answered it), else a task the probe canceled; None when there is neither."""
        def find() -> Optional[Sent]:
            base = self.baseline()
            ex = self.call(jsonrpc.GET_TASK, messages.get_task_params(base.task_id), task_id=base.task_id)
            if states.is_terminal(state_in(ex.response) or ""):
                return base
            canceled = self.canceled()
            if canceled is not None and states.is_terminal(state_in(canceled[1].response) or ""):
                return canceled[0]
            return None
        return self.once("finished", find)

    def canceled(self) -> Optional[tuple[Sent, Exchange]]:
        """A task started with ``returnImmediately`` and canceled while it was not finished: the
        send and the CancelTask exchange; None when the agent had already finished it."""
        def make() -> Optional[tuple[Sent, Exchange]]:
            sent = self.send(self.message(), configuration=messages.send_message_configuration(return_immediately=True))
            state = sent.state
            if state is None or not states.is_active(state) and not states.is_interrupted(state):
                return None
            ex = self.call(jsonrpc.CANCEL_TASK, messages.cancel_task_params(sent.task_id), task_id=sent.task_id)
            return sent, ex
        return self.once("canceled", make)
