"""The requester role: send requests, match replies, retry, stream, and follow handovers.

Profile: Client Session Requirements 2 (subscribe the reply topic first), Request/Reply Mapping
(Response Topic + Correlation Data; requester-generated UUIDv4 Task.id), Requester Behavior
(in-flight map by Correlation Data; unknown/missing correlation ignored and counted), Requester
Retry and Timeout Profile (fresh correlation per attempt, same Task.id and messageId; stop at the
first correlated reply; stream-idle recovery with GetTask; pooled retries), Optional Task Handover
(the routing table; fallback to the card agent), Multi-Turn Conversation Patterns.
"""
from __future__ import annotations

import copy
import logging
import queue
import random
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Union

from ..error_base import A2ANbError
from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session, SessionError
from ..protocol import errors, jsonrpc, messages, properties, states, topics
from ..protocol import ubsp as ubsp_rules
from ..protocol.errors import A2AError
from ..protocol.ids import IdSource, readable_correlation
from ..protocol.packet import MqttMessage, encode_json
from ..protocol.retry import DEFAULT, RetryProfile, next_delay
from ..protocol.routing import Address, Reroute, RoutingTable, silence_reason
from ..protocol.streams import STREAM_SEQ, StreamDeduper
from .task_view import TaskView

if TYPE_CHECKING:
    from ..ubsp.protection import Ubsp

log = logging.getLogger(__name__)

Target = Union[str, Address]


class RequestTimeout(A2ANbError, TimeoutError):
    """No correlated reply after every attempt (and the fallback, when there was one)."""


class UnknownAgent(RequestTimeout):
    """A new task's agent has no Agent Card in this unit and nobody subscribes to its request topic:
    raised at the first attempt's PUBACK instead of after the whole retry profile. ``agent`` is the name
    asked for, ``known`` the agents with a card (a ``RequestTimeout``: an ``except RequestTimeout`` holds)."""

    def __init__(self, agent: str, where: str, known: str):
        super().__init__(f"no card for {agent} in {where}, and nobody subscribes to its request topic; "
                         f"known agents: {known}")
        self.agent, self.known = agent, known


CARD_GRACE_S = 0.25
"""How long a first request that nobody subscribes to (PUBACK 16) waits for its agent's retained card
(they come right after the SUBACK) before ``UnknownAgent``."""


class ProtocolError(A2ANbError, RuntimeError):
    """A reply broke a MUST of the profile (for example a pooled reply without its responder id)."""


@dataclass
class Attempt:
    """One publish of a logical operation (what the notebooks show as a table). ``correlation`` is
    its Correlation Data as every view shows it (``ids.readable_correlation``: the kit's 32 hex
    digits, the very characters on the wire)."""

    number: int
    topic: str
    correlation: str
    at: float
    reason_code: Optional[int] = None
    outcome: str = "sent"


@dataclass
class RequesterStats:
    sent: int = 0
    replies: int = 0
    ignored_unknown_correlation: int = 0
    ignored_missing_correlation: int = 0
    duplicates: int = 0
    retries: int = 0
    fallbacks: int = 0
    refused: int = 0  # ubsp-v1 replies that could not be opened (tampered, replayed, not sealed for us)
    plaintext_errors: int = 0  # ubsp-v1 calls answered by a plaintext JSON-RPC error


_REFUSED = object()  # queued by ``_Call.acked`` to wake a waiter whose publish the broker refused
_NOBODY = object()  # queued by ``_Call.acked``: nobody subscribes to a card-less agent's request topic


class _Call:
    """One logical operation; its attempts' correlations all lead here.

    Replies travel from the network thread to the caller through a ``queue.SimpleQueue`` (a C
    queue: one cheap wake per item, which on a stream is most of the consumer's cost)."""

    def __init__(self, method: str, task_id: Optional[str], request_id: str):
        self.method, self.task_id, self.request_id = method, task_id, request_id
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self.correlations: list[bytes] = []
        self.attempts: list[Attempt] = []
        self.refused = False  # the last attempt's publish was refused: stop waiting for its reply
        self.unlisted = False  # a new task's agent without a card: PUBACK 16 ends the wait (UnknownAgent)
        self.nobody = False  # ... and PUBACK 16 came
        self.opener: Optional[Callable[[MqttMessage], Optional[MqttMessage]]] = None
        """ubsp-v1: opens each reply on the caller's thread (None: not a protected one, skip it)."""
        self.sealed_as: dict[bytes, str] = {}
        """ubsp-v1: each attempt's Correlation Data -> the jti its request was sealed with (its replies name it)."""

    def push(self, msg: MqttMessage) -> None:
        self._queue.put(msg)

    def wake(self) -> None:
        """Wake a reader blocked in ``next`` (it returns None at once): its stream was closed."""
        self._queue.put(None)

    def acked(self, attempt: Attempt, result) -> None:
        """PUBACK of one attempt (network thread): 16 is noted, a failure code ends the wait."""
        attempt.reason_code = result.reason_code
        if not result.accepted:
            attempt.outcome = f"refused by the broker ({result.reason})"
            self.refused = True
            self._queue.put(_REFUSED)
        elif result.no_subscribers:
            attempt.outcome = "no matching subscribers (PUBACK 16)"
            if self.unlisted and attempt.number == 1:
                self.nobody = True
                self._queue.put(_NOBODY)

    def next(self, timeout: float) -> Optional[MqttMessage]:
        """The next reply within ``timeout`` s; None on timeout, or at once when the current
        attempt was refused and no reply is waiting."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                item = self._queue.get_nowait() if self.refused else \
                    self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if item is _NOBODY:
                return None
            if item is not _REFUSED:
                if item is None or self.opener is None:
                    return item
                opened = self.opener(item)  # a reply that cannot be opened is skipped: keep waiting
                if opened is not None:
                    return opened
            # a refusal: the loop returns a waiting reply or None, unless the flag was reset since
            # (the refusal was about an attempt the caller has moved past)


@dataclass
class Reply:
    """The answer to one request: a result (Task, Message, list...) or an error, with its transport."""

    method: str
    result: Any
    mqtt: MqttMessage
    rtt_s: float
    attempts: list[Attempt]
    responder: Optional[str] = None
    target: Optional[Address] = None

    @property
    def task(self) -> Optional[dict]:
        return messages.task_in_result(self.result)

    @property
    def message(self) -> Optional[dict]:
        r = self.result
        return r.get("message") if isinstance(r, dict) else None

    @property
    def state(self) -> Optional[str]:
        t = self.task
        return t["status"]["state"] if t else None

    @property
    def task_id(self) -> Optional[str]:
        t = self.task
        return t["id"] if t else (self.message or {}).get("taskId")

    @property
    def context_id(self) -> Optional[str]:
        t = self.task
        return t.get("contextId") if t else (self.message or {}).get("contextId")

    @property
    def text(self) -> str:
        if self.message:
            return messages.text_of(self.message)
        t = self.task
        if t and t["status"].get("message"):
            return messages.text_of(t["status"]["message"])
        return ""

    def _repr_html_(self) -> str:
        from .reprs import reply_html

        return reply_html(self)


class Requester:
    """A client agent (the story's coordinator) with one reply topic and a routing table."""

    def __init__(
        self,
        agent: str = "coordinator",
        *,
        org: str = "acme",
        unit: str = "support",
        broker: Union[str, BrokerEndpoint, None] = None,
        retry: RetryProfile = DEFAULT,
        ids: Optional[IdSource] = None,
        routing: Optional[RoutingTable] = None,
        routes_path: Optional[str] = None,
        token: Optional[str] = None,
        allow_token_without_tls: bool = False,
        seed: Optional[int] = None,
        ubsp: Optional["Ubsp"] = None,
    ):
        self.org, self.unit, self.agent = org, unit, agent
        self.ubsp = ubsp
        self.retry = retry
        self.ids = ids or IdSource(seed)
        self.rng = random.Random(seed)
        self.token = token
        self.allow_token_without_tls = allow_token_without_tls
        self.stats = RequesterStats()
        self._route_store = None
        if routes_path is not None:
            from .routes_store import SqliteRoutes

            self._route_store = SqliteRoutes(routes_path)
            routing = self._route_store.load()
        self.routing = routing or RoutingTable()
        self.on_attempt: Optional[Callable[[Attempt], None]] = None
        """Called on the caller's thread with each attempt once its outcome is known (answered, no
        reply within the first-reply timeout, refused): a notebook prints each one as it happens."""
        self.on_notice: Optional[Callable[[str], None]] = None
        """Told, in words, why the requester waits while nothing arrives: the broker gone and back
        (its session's reconnects), a stream recovered with GetTask. ``send`` prints them on stderr;
        unset, they are logged (INFO). May be called on the network thread: it must be quick."""
        self._inflight: dict[bytes, _Call] = {}
        self._addresses: dict[str, Address] = {}
        self._lock = threading.Lock()
        self.reply_topic = topics.reply_topic(org, unit, agent, self.ids.reply_suffix())
        # messageIds must stay unique across restarts (a responder treats a repeated one as a resend);
        # seeded runs (notebooks, tests) keep their reproducible ids
        self._message_prefix = agent if self.ids.seed is not None else f"{agent}-{self.ids.uuid4()[:8]}"
        self.session = Session(org, unit, agent, broker=broker)
        self.session.on_link = self._notice
        try:
            self._check_token_transport(token)
        except ValueError:
            self.session.close()
            raise
        # Profile: Client Session Requirements 2: the reply topic is subscribed before any request.
        self.session.subscribe(self.reply_topic, handler=self._on_reply)
        if ubsp is not None:  # Untrusted-Broker Security Profile 7: where responders find our keys
            ubsp.bind(self.session, org, unit)
            ubsp.announce()

    def _check_token_transport(self, token: Optional[str]) -> None:
        if token and not self.session.endpoint.tls and not self.allow_token_without_tls:
            raise ValueError(
                "a bearer token may only travel over TLS (Profile: OAuth 2.0 and OIDC over MQTT User Properties 5): "
                f"use an mqtts:// broker instead of {self.session.endpoint.url} "
                "(allow_token_without_tls=True exists only to show a responder refusing it)")

    def with_token(self, token: Optional[str]) -> "Requester":
        """This requester sending ``token`` as its bearer token instead (a bridge forwards each HTTP
        caller's own): the same session, reply topic, in-flight map and routing table, only the
        token differs. Close the original, never the copy."""
        self._check_token_transport(token)
        view = copy.copy(self)
        view.token = token
        return view

    # -- intake (network thread) -----------------------------------------------------------------------
    def _on_reply(self, msg: MqttMessage) -> None:
        corr = msg.correlation_data
        if corr is None:
            self.stats.ignored_missing_correlation += 1
            log.info("%s ignored a reply without Correlation Data", self.agent)
            return
        with self._lock:
            call = self._inflight.get(corr)
        if call is None:
            self.stats.ignored_unknown_correlation += 1
            log.info("%s ignored a reply with unknown Correlation Data %s", self.agent, corr.hex())
            return
        self.stats.replies += 1
        call.push(msg)

    # -- addressing ------------------------------------------------------------------------------------
    def address(self, to: Target) -> Address:
        """``"ticket-desk"`` → that agent; ``"pool:analysts"`` → that pool; an Address as is."""
        if isinstance(to, Address):
            return to
        if not isinstance(to, str):
            raise TypeError(f"the agent to ask is a name such as 'echo' or 'pool:NAME' (a str) or an Address, "
                            f"not {type(to).__name__}")
        found = self._addresses.get(to)
        if found is None:
            found = Address.parse(to, self.org, self.unit)
            self._addresses[to] = found
        return found

    def target_of(self, task_id: str, to: Optional[Target] = None) -> Address:
        t = self.routing.target(task_id)
        if t is not None:
            return t
        if to is None:
            raise ValueError(f"task {task_id} is not in this requester's routing table: say which agent to ask (to=...)")
        return self.address(to)

    # -- the one place requests are published ---------------------------------------------------------
    def _properties(self, artifact_mode: Optional[str]) -> tuple:
        props = []
        if self.token:
            props.append(properties.bearer(self.token))
        if artifact_mode:
            props.append((properties.ARTIFACT_MODE, artifact_mode))
        return tuple(props)

    def _publish_attempt(self, call: _Call, target: Address, payload: bytes, props: tuple) -> Attempt:
        corr = self.ids.correlation()
        msg = MqttMessage(target.topic, payload, qos=1, response_topic=self.reply_topic, correlation_data=corr,
                          user_properties=props,
                          message_expiry=self.retry.message_expiry_s())
        if call.opener is not None and self.ubsp is not None and target.agent is not None:
            # sealed anew for each attempt (a fresh jti: a retry is no replay); no trusted key for the
            # target raises UntrustedKeySource here: nothing is sent in plaintext instead
            jti = str(uuid.uuid4())
            msg = self.ubsp.seal_request(msg, target.org, target.unit, target.agent, jti=jti)
            call.sealed_as[corr] = jti
        with self._lock:
            self._inflight[corr] = call
        call.correlations.append(corr)
        att = Attempt(len(call.attempts) + 1, target.topic, readable_correlation(corr), time.time())
        call.attempts.append(att)
        self.stats.sent += 1
        call.refused = False
        try:
            self.session.publish_then(msg, lambda result: call.acked(att, result))
        except SessionError as exc:
            att.outcome = f"publish failed: {exc}"
            att.reason_code = -1
            call.refused = True
        return att

    def _opener(self, call: _Call, org: str, unit: str) -> Callable[[MqttMessage], Optional[MqttMessage]]:
        """Open the replies of a ubsp-v1 call; a reply that is not sealed for this requester by the
        agent it names, or not bound to the attempt whose Correlation Data it carries (its jti and
        the call's JSON-RPC id signed in: a reply captured from another exchange), is refused (None,
        said once through ``on_notice``), except a plaintext JSON-RPC error: a responder that cannot
        open a request, or has no trusted key for us, can say so only in plaintext."""
        protection = self.ubsp
        assert protection is not None

        def open_reply(msg: MqttMessage) -> Optional[MqttMessage]:
            if not msg.user_property(properties.SECURITY_PROFILE) and ubsp_rules.is_plaintext_refusal(_json_or_none(msg)):
                self.stats.plaintext_errors += 1
                return msg
            jti = call.sealed_as.get(msg.correlation_data or b"", "")
            try:
                return protection.open_reply(msg, org, unit, answers=(jti, msg.correlation_data, call.request_id))
            except ValueError as exc:  # SealError, UntrustedKeySource
                self.stats.refused += 1
                log.warning("%s refused a reply on %s: %s", self.agent, msg.topic, exc)
                self._notice(f"refused a sealed reply: {exc}")
                return None
        return open_reply

    def _release(self, call: _Call) -> None:
        with self._lock:
            for c in call.correlations:
                self._inflight.pop(c, None)

    def _operate(self, method: str, params: dict, task_id: Optional[str], target: Address,
                 artifact_mode: Optional[str] = None, new_task: bool = False) -> tuple[_Call, MqttMessage, Address]:
        """Publish with retries until the first correlated reply; on a handover target that stays
        silent, fall back to the card agent (Profile: Requester Retry 3-7, 9; Task Handover).

        ``new_task``: the first request of a task; when the first PUBACK says nobody subscribes and
        its agent has no card (:class:`~a2a_nb.agents.card_index.CardIndex`), :class:`UnknownAgent` at once."""
        call = _Call(method, task_id, self.ids.jsonrpc_id())
        call.unlisted = new_task and self._unlisted(target)
        if self.ubsp is not None:
            if target.agent is None:
                raise ValueError(f"ubsp-v1 seals a request to one recipient's key: {target} is a pool (send to an agent)")
            call.opener = self._opener(call, target.org, target.unit)
        payload = encode_json(jsonrpc.request(method, params, call.request_id))
        props = self._properties(artifact_mode)
        while True:
            try:
                first = self._attempts(call, target, payload, props)
            except UnknownAgent:
                self._release(call)
                if task_id is not None:  # the task never started: a resend may name another agent
                    self.routing.drop(task_id)
                    if self._route_store is not None:
                        self._route_store.drop(task_id)
                raise
            if first is not None:
                return call, first, target
            reroute = self.routing.fall_back(task_id, time.time(), self._silence_reason(call, target)) if task_id else None
            if reroute is None:
                self._release(call)
                raise RequestTimeout(
                    f"{method}: no reply from {target} after {len(call.attempts)} attempts "
                    f"(first-reply timeout {self.retry.reply_first_timeout_s:g} s each)"
                    + (f"; task {task_id} may still be running" if task_id else ""))
            self.stats.fallbacks += 1
            self._persist_route(reroute.task_id, reroute)
            target = reroute.to

    def _attempts(self, call: _Call, target: Address, payload: bytes, props: tuple) -> Optional[MqttMessage]:
        """Publish until the first correlated reply; how long to wait before the next attempt, and
        whether there is one, is the retry profile's decision (``retry.next_delay``)."""
        made = 0
        while True:
            if made:
                self.stats.retries += 1
            att = self._publish_attempt(call, target, payload, props)
            made += 1
            # waits for the first correlated reply; a refused publish ends the wait early (rule 6)
            first = call.next(self.retry.reply_first_timeout_s)
            if first is not None:
                return self._answered(call, first)
            if call.nobody:
                call.nobody = call.unlisted = False
                from .card_index import CardIndex

                with CardIndex(self.session, target.org, target.unit) as index:
                    if index.watching and not index.wait_for(str(target.agent), CARD_GRACE_S):
                        att.outcome = "no matching subscribers (PUBACK 16), and no card"
                        self._settled(att)
                        raise UnknownAgent(str(target.agent), f"{target.org}/{target.unit}", index.known())
                first = call.next(self.retry.reply_first_timeout_s)  # it has a card: wait as usual
                if first is not None:
                    return self._answered(call, first)
            if att.outcome == "sent":
                att.outcome = f"no reply within {self.retry.reply_first_timeout_s:g} s"
            self._settled(att)
            delay = next_delay(self.retry, made, self.rng)
            if delay is None:
                return None
            call.refused = False
            late = call.next(delay)  # a late reply still counts
            if late is not None:
                return self._answered(call, late)

    def _answered(self, call: _Call, first: MqttMessage) -> MqttMessage:
        """Mark the attempt whose Correlation Data the first reply echoes (maybe an earlier one)."""
        corr = readable_correlation(first.correlation_data) if first.correlation_data else None
        for att in call.attempts:
            if att.correlation == corr:
                att.outcome = "answered" if att is call.attempts[-1] else "answered (late)"
                self._settled(att)
        return first

    @staticmethod
    def _unlisted(target: Address) -> bool:
        """``target`` is an agent (not a pool): PUBACK 16 on its first request sends the requester to
        look for its card (:class:`~a2a_nb.agents.card_index.CardIndex`)."""
        return target.agent is not None

    def _notice(self, text: str) -> None:
        hook = self.on_notice
        if hook is None:
            log.info("%s: %s", self.agent, text)
            return
        try:
            hook(text)
        except Exception:
            log.exception("%s: on_notice failed", self.agent)

    def _settled(self, att: Attempt) -> None:
        """Tell ``on_attempt`` (if set) that ``att`` has its outcome; a failing hook is logged, never
        allowed to break the operation."""
        hook = self.on_attempt
        if hook is None:
            return
        try:
            hook(att)
        except Exception:
            log.exception("%s: on_attempt failed", self.agent)

    @staticmethod
    def _silence_reason(call: _Call, target: Address) -> str:
        codes = [a.reason_code for a in call.attempts if a.topic == target.topic]
        return silence_reason(target.label, len(codes), nobody_subscribed=16 in codes)

    # -- reading replies -------------------------------------------------------------------------------
    def _observe(self, task_id: Optional[str], msg: MqttMessage, target: Address,
                 responder: Optional[str]) -> Optional[Reroute]:
        """Apply ``responder``, the ``a2a-responder-agent-id`` of ``msg`` (any reply or stream item),
        to the routing table."""
        if target.pool is not None and responder is None:
            raise ProtocolError(
                f"a pooled reply on {msg.topic} has no a2a-responder-agent-id (Profile: Shared Subscription Dispatch 10)")
        if task_id is None:
            return None
        reroute = self.routing.observe(task_id, responder, time.time())
        if reroute is not None:
            self._persist_route(task_id, reroute)
        return reroute

    def _persist_route(self, task_id: str, reroute: Optional[Reroute] = None) -> None:
        if self._route_store is not None:
            self._route_store.save(self.routing.routes[task_id], reroute)

    def _unary(self, method: str, params: dict, task_id: Optional[str], target: Address,
               retry_errors: bool = True, new_task: bool = False) -> Reply:
        started = time.time()
        errors_answered = 0
        while True:
            call, first, target = self._operate(method, params, task_id, target, new_task=new_task)
            new_task = False
            self._release(call)
            response = jsonrpc.parse_response(first.payload)
            responder = first.user_property(properties.RESPONDER_AGENT_ID)
            self._observe(task_id, first, target, responder)
            reply = Reply(method, response.result, first, time.time() - started, call.attempts, responder, target)
            if response.error is None:
                return reply
            err = A2AError.from_dict(response.error)
            err.reply = reply
            errors_answered += 1
            # a retry-eligible error (Error Mapping 7-8) is retried on the retry profile's schedule
            delay = next_delay(self.retry, errors_answered, self.rng) \
                if retry_errors and errors.classify(err).retry_eligible else None
            if delay is None:
                raise err
            time.sleep(delay)

    # -- public operations -----------------------------------------------------------------------------
    def new_message(self, content: Any, *, task_id: Optional[str] = None, context_id: Optional[str] = None,
                    message_id: Optional[str] = None, reference_task_ids=None, metadata=None) -> dict:
        """A user Message with the MQTT binding's ids: a fresh UUIDv4 Task.id for a new task."""
        return messages.user_message(
            content, message_id=message_id or self.ids.message_id(self._message_prefix),
            task_id=task_id or self.ids.task_id(), context_id=context_id or self.ids.context_id(),
            reference_task_ids=reference_task_ids, metadata=metadata)

    def send(self, to: Optional[Target], content: Any = None, *, message: Optional[dict] = None,
             task_id: Optional[str] = None, context_id: Optional[str] = None, message_id: Optional[str] = None,
             return_immediately: bool = False, history_length: Optional[int] = None) -> Reply:
        """SendMessage (blocking by default): returns the Task or the Message the agent answered."""
        message = message or self.new_message(content, task_id=task_id, context_id=context_id, message_id=message_id)
        new_task = self.routing.target(message["taskId"]) is None
        target = self._start_route(message["taskId"], to)
        config = messages.send_message_configuration(return_immediately=return_immediately or None,
                                                     history_length=history_length)
        params = messages.send_message_params(message, configuration=config or None)
        return self._unary(jsonrpc.SEND_MESSAGE, params, message["taskId"], target, new_task=new_task)

    def stream(self, to: Optional[Target], content: Any = None, *, message: Optional[dict] = None,
               task_id: Optional[str] = None, context_id: Optional[str] = None, message_id: Optional[str] = None,
               artifact_mode: Optional[str] = None) -> "Stream":
        """SendStreamingMessage: an iterator of events that ends at a terminal or interrupted state."""
        message = message or self.new_message(content, task_id=task_id, context_id=context_id, message_id=message_id)
        new_task = self.routing.target(message["taskId"]) is None
        target = self._start_route(message["taskId"], to)
        params = messages.send_message_params(message)
        return Stream(self, jsonrpc.SEND_STREAMING_MESSAGE, params, message["taskId"], target, artifact_mode,
                      view=TaskView(message["taskId"], message.get("contextId")), new_task=new_task)

    def continue_task(self, task: Union[dict, Reply, TaskView, "Stream"], content: Any, *, stream: bool = False,
                      message_id: Optional[str] = None, **kw):
        """Answer an interrupted task (INPUT_REQUIRED / AUTH_REQUIRED): a new messageId, the same
        Task.id and contextId, fresh Correlation Data, routed to whoever answers for the task now."""
        task_id, context_id = _ids_of(task)
        message = self.new_message(content, task_id=task_id, context_id=context_id, message_id=message_id)
        if stream:
            return self.stream(None, message=message, **kw)
        return self.send(None, message=message, **kw)

    def call(self, method: str, params: dict, *, to: Optional[Target] = None) -> Reply:
        """Any unary JSON-RPC method with ``params`` sent as given: nothing unpacked or rebuilt, so every
        field the caller set (``configuration``, ``metadata``, ``historyLength``, ...) reaches the agent.
        Routing, retries and handover as for ``send``; a new message gets a requester-made Task.id
        (Profile: Request/Reply Mapping). Raises :class:`A2AError` for an error reply."""
        params, task_id, target, new_task = self._routed(method, params, to)
        return self._unary(method, params, task_id, target, new_task=new_task)

    def call_stream(self, method: str, params: dict, *, to: Optional[Target] = None,
                    artifact_mode: Optional[str] = None) -> "Stream":
        """``SendStreamingMessage`` or ``SubscribeToTask`` with ``params`` sent as given (see ``call``)."""
        if method not in jsonrpc.STREAMING_METHODS:
            raise ValueError(f"call_stream takes a streaming method ({', '.join(sorted(jsonrpc.STREAMING_METHODS))}), "
                             f"not {method!r}: use call()")
        params, task_id, target, new_task = self._routed(method, params, to)
        assert task_id is not None  # both streaming methods name a task
        context_id = (params.get("message") or {}).get("contextId")
        return Stream(self, method, params, task_id, target, artifact_mode, view=TaskView(task_id, context_id),
                      new_task=new_task)

    def _routed(self, method: str, params: Any, to: Optional[Target]) -> tuple[dict, Optional[str], Address, bool]:
        """``params`` (a message without a taskId given a fresh one), the task it names, who to ask, and
        whether it starts a task (as in ``send``: an unknown agent is then :class:`UnknownAgent` at once)."""
        jsonrpc.check_method(method)
        if not isinstance(params, dict):
            raise TypeError(f"params of {method} must be a dict (the JSON-RPC params object), not {type(params).__name__}")
        if method in (jsonrpc.SEND_MESSAGE, jsonrpc.SEND_STREAMING_MESSAGE):
            message = params.get("message")
            if not isinstance(message, dict):
                raise TypeError(f"params of {method} need a 'message' object (a dict), not {type(message).__name__}")
            if not message.get("taskId"):  # a new task: its id is made here (Profile: Request/Reply Mapping)
                message = {**message, "taskId": self.ids.task_id(),
                           "contextId": message.get("contextId") or self.ids.context_id()}
                params = {**params, "message": message}
            task_id = message["taskId"]
            new_task = self.routing.target(task_id) is None
            return params, task_id, self._start_route(task_id, to), new_task
        task_id = params.get("id") if method in jsonrpc.TASK_METHODS else None
        if isinstance(task_id, str) and task_id:
            return params, task_id, self.target_of(task_id, to), False
        if to is None:
            raise ValueError(f"{method} needs a target: call({method!r}, params, to='ticket-desk')")
        return params, None, self.address(to), False

    def _start_route(self, task_id: str, to: Optional[Target]) -> Address:
        if self.routing.target(task_id) is None:
            if to is None:
                raise ValueError("a new task needs a target: send('ticket-desk', ...) or send('pool:NAME', ...)")
            self.routing.start(task_id, self.address(to), time.time())
            self._persist_route(task_id)
        return self.target_of(task_id)

    def get_task(self, task_id: str, *, history_length: Optional[int] = None, to: Optional[Target] = None) -> dict:
        return self.get_task_reply(task_id, history_length=history_length, to=to).result

    def get_task_reply(self, task_id: str, *, history_length: Optional[int] = None, to: Optional[Target] = None) -> Reply:
        return self._unary(jsonrpc.GET_TASK, messages.get_task_params(task_id, history_length), task_id,
                           self.target_of(task_id, to))

    def cancel_task(self, task_id: str, *, to: Optional[Target] = None) -> dict:
        return self._unary(jsonrpc.CANCEL_TASK, messages.cancel_task_params(task_id), task_id,
                           self.target_of(task_id, to)).result

    def list_tasks(self, to: Target, *, context_id: Optional[str] = None, status: Optional[str] = None,
                   page_size: Optional[int] = None, page_token: Optional[str] = None) -> dict:
        params = messages.list_tasks_params(context_id=context_id, status=status, page_size=page_size,
                                            page_token=page_token)
        return self._unary(jsonrpc.LIST_TASKS, params, None, self.address(to)).result

    def subscribe(self, task_id: str, *, to: Optional[Target] = None, artifact_mode: Optional[str] = None) -> "Stream":
        """SubscribeToTask: re-attach to a running task (first item: the Task snapshot)."""
        return Stream(self, jsonrpc.SUBSCRIBE_TO_TASK, messages.subscribe_task_params(task_id), task_id,
                      self.target_of(task_id, to), artifact_mode, view=TaskView(task_id))

    def poll(self, task_id: str, *, until=states.ends_stream, interval_s: float = 0.2, max_interval_s: float = 2.0,
             timeout_s: float = 60.0) -> dict:
        """GetTask with exponential backoff until ``until(state)`` (default: terminal or interrupted)."""
        deadline = time.time() + timeout_s
        delay = interval_s
        while True:
            task = self.get_task(task_id)
            if until(task["status"]["state"]) or time.time() + delay > deadline:
                return task
            time.sleep(delay)
            delay = min(delay * 2, max_interval_s)

    def close(self) -> None:
        if self.ubsp is not None and self.session.connected:
            self.ubsp.withdraw()  # our key metadata goes with us
        self.session.close()
        if self._route_store is not None:
            self._route_store.close()

    def __enter__(self) -> "Requester":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Requester {self.org}/{self.unit}/{self.agent} replies on {self.reply_topic}>"


def _ids_of(task: Any) -> tuple[Optional[str], Optional[str]]:
    if isinstance(task, (TaskView,)):
        return task.task_id, task.context_id
    if isinstance(task, Stream):
        return task.view.task_id, task.view.context_id
    if isinstance(task, Reply):
        return task.task_id, task.context_id
    return task["id"], task["contextId"]


@dataclass
class StreamEvent:
    """One stream item as a cell sees it."""

    kind: str  # task | statusUpdate | artifactUpdate | message | binaryChunk | recovered
    data: Any
    mqtt: Optional[MqttMessage] = None
    responder: Optional[str] = None
    reroute: Optional[Reroute] = None

    @property
    def state(self) -> Optional[str]:
        if self.kind == "statusUpdate":
            return self.data["status"]["state"]
        if self.kind in ("task", "recovered"):
            return self.data["status"]["state"]
        return None

    def __repr__(self) -> str:
        extra = f" state={states.short_name(self.state)}" if self.state else ""
        if self.kind == "artifactUpdate":
            extra = f" artifact={self.data['artifact']['artifactId']}"
        if self.reroute:
            extra += f" handover→{self.reroute.to.label}"
        return f"<StreamEvent {self.kind}{extra}>"


class Stream:
    """Iterate over a reply stream; ``view`` is the task as assembled so far.

    Ends at a terminal or interrupted state (or a Message result). When the stream goes quiet for
    longer than the stream-idle timeout after at least one item, it recovers with GetTask on the same
    Task.id and, if the task is still running, re-attaches with SubscribeToTask, never by
    republishing the original request (Profile: Requester Retry 7-8).
    """

    def __init__(self, requester: Requester, method: str, params: dict, task_id: str, target: Address,
                 artifact_mode: Optional[str], view: TaskView, new_task: bool = False):
        self.requester, self.method, self.task_id = requester, method, task_id
        self.view = view
        self.events: list[StreamEvent] = []
        self.recoveries = 0
        self.duplicates = 0
        self.done = False
        self._artifact_mode = artifact_mode
        self._call, first, self.target = requester._operate(method, params, task_id, target, artifact_mode,
                                                            new_task=new_task)
        self._pending: Optional[MqttMessage] = first
        self._dedup = StreamDeduper()
        self._recover_why: Optional[str] = None  # set by recover_now

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        while not self.done:
            msg = self._pending or self._call.next(self.requester.retry.stream_idle_timeout_s)
            self._pending = None
            if msg is None:
                if self.done:  # closed while waiting
                    break
                return self._recover()
            event = self._read(msg)
            if event is not None:
                return event
        self.requester._release(self._call)
        raise StopIteration

    def _read(self, msg: MqttMessage) -> Optional[StreamEvent]:
        req = self.requester
        props = properties.as_dict(msg.user_properties)  # read once: this runs for every item
        responder = props.get(properties.RESPONDER_AGENT_ID)
        try:
            reroute = req._observe(self.task_id, msg, self.target, responder)
        except ProtocolError:
            self.done = True
            req._release(self._call)
            raise
        if reroute is not None:
            self.target = reroute.to
        if properties.is_binary_chunk(msg.user_properties, msg.payload_format):
            if not self.view.add_binary_chunk(msg):
                self.duplicates += 1
                req.stats.duplicates += 1
                return None
            return self._emit(StreamEvent("binaryChunk", {
                "artifactId": props.get(properties.ARTIFACT_ID),
                "seqno": int(props.get(properties.CHUNK_SEQNO) or 0),
                "lastChunk": props.get(properties.LAST_CHUNK) == "true", "size": len(msg.payload)},
                msg, responder, reroute))
        response = jsonrpc.parse_response(msg.payload)
        if response.error is not None:
            self.done = True
            req._release(self._call)  # an error ends the stream: its correlations leave the in-flight map
            err = A2AError.from_dict(response.error)
            raise err
        result = response.result
        if not self._dedup.accept(result, props.get(STREAM_SEQ), msg.payload):
            self.duplicates += 1
            req.stats.duplicates += 1
            return None
        kind = messages.stream_kind(result)
        self.view.apply(result, responder=responder)
        if self._dedup.finished:
            self.done = True
            req._release(self._call)
        return self._emit(StreamEvent(kind, result[kind], msg, responder, reroute))

    def _emit(self, ev: StreamEvent) -> StreamEvent:
        self.events.append(ev)
        return ev

    def _recover(self) -> StreamEvent:
        req = self.requester
        req._release(self._call)
        why, self._recover_why = self._recover_why, None
        if not req.retry.can_recover(self.recoveries):
            self.done = True
            raise RequestTimeout(f"stream for task {self.task_id} stayed silent after {self.recoveries} recoveries")
        self.recoveries += 1
        idle = f"no stream item for {req.retry.stream_idle_timeout_s:g} s (the stream idle timeout)"
        req._notice(f"{why or idle}: asking {self.target.label} for task {self.task_id} (GetTask, recovery "
                    f"{self.recoveries} of {req.retry.max_attempts}) ...")
        task = req.get_task(self.task_id)
        self.view.apply({"task": task})
        if states.ends_stream(task["status"]["state"]):
            self.done = True
        else:
            self._call, self._pending, self.target = req._operate(
                jsonrpc.SUBSCRIBE_TO_TASK, messages.subscribe_task_params(self.task_id), self.task_id,
                req.target_of(self.task_id), self._artifact_mode)
            self._dedup = StreamDeduper()
        self._recover_why = None  # a recover_now during this recovery woke the call it replaced
        return self._emit(StreamEvent("recovered", task))

    def recover_now(self, why: str) -> None:
        """Recover at once instead of at the stream idle timeout, when ``why`` (the agent announced
        itself again after a restart, the broker came back) says items may have been lost: the
        reader wakes and asks with GetTask (Profile: Requester Retry 8). Any thread may call it."""
        if not self.done:
            self._recover_why = why
            self._call.wake()

    def close(self) -> None:
        """Stop reading (a bridge whose HTTP client went away): the stream's correlations leave the
        in-flight map, so later items are ignored as unknown correlation, and a reader blocked in
        ``next`` wakes up and stops. The task runs on: a dropped stream is not a cancel."""
        self.done = True
        self.requester._release(self._call)
        self._call.wake()

    @property
    def attempts(self) -> list[Attempt]:
        """The publishes it took to get the first item (retries and fallback included)."""
        return self._call.attempts

    def wait(self) -> TaskView:
        """Consume the stream to its end and return the task view."""
        for _ in self:
            pass
        return self.view

    @property
    def state(self) -> Optional[str]:
        return self.view.state

    def _repr_html_(self) -> str:
        from .reprs import stream_html

        return stream_html(self)


def _json_or_none(msg: MqttMessage) -> Any:
    """The payload as JSON, or None when it is none (a JWE, bytes)."""
    try:
        return msg.json()
    except ValueError:
        return None
