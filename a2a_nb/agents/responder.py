"""The responder role: publish a card with presence, take requests, answer on the reply path.

Profile: Discovery Publisher Behavior, Presence and Liveness (retained card with ``a2a-status``,
last will, offline on graceful stop), Request/Reply Mapping 3-7, Error Handling and Deduplication,
Mandatory Binding-Specific Error Mapping, Optional Shared Subscription Dispatch 4-10 (a pool's
membership: :mod:`a2a_nb.agents.pool_member`). Each JSON-RPC method has its handler in the method
table (``_method_table``).

Requests arrive on the session's network thread and are only queued there; a small pool of worker
threads checks and executes them (an ``inline`` agent, such as echo, runs them on the network thread
and has no workers, except for ``ubsp-v1`` requests: opening one may fetch the requester's keys, which
never happens on the network thread). A crash in a handler fails that task, never the agent.
"""
from __future__ import annotations

import json
import logging
import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from ..mqtt.broker import BrokerEndpoint
from ..mqtt.session import Session, Subscription
from ..protocol import cards, errors, inbound, jsonrpc, messages, pools, properties, states, task_pages, topics
from ..protocol import ubsp as ubsp_rules
from ..protocol.errors import A2AError
from ..protocol.ids import IdSource
from ..protocol.packet import LIVE_ONLY, MqttMessage, encode_json
from .auth import BearerPolicy
from .context import TaskContext
from .pool_member import PoolMember
from .reply_paths import BLOCKING, STREAM, Listener, Seal
from .runtime import TaskCanceled, TaskRuntime, trim_history

if TYPE_CHECKING:
    from ..ubsp.protection import Ubsp

log = logging.getLogger(__name__)

Handler = Callable[[TaskContext], object]
MethodHandler = Callable[[MqttMessage, "inbound.Accepted", bool, str], None]
"""Answers one checked request: (request, verdict, pooled, caller)."""

DEFAULT_MAX_REQUEST_BYTES = 256 * 1024


@dataclass
class ResponderStats:
    requests: int = 0
    dropped: int = 0
    errors: int = 0
    overloaded: int = 0
    handler_crashes: int = 0
    executions: int = 0


@dataclass(frozen=True)
class ResponderOptions:
    """How a responder runs; the defaults suit the lessons. All optional.

    ``workers``: threads that execute requests; ``max_pending``: requests waiting for a worker before
    new ones are answered -32004 (busy). ``inline``: run the handler on the network thread instead of a
    worker (one thread switch less per request; no worker threads are started, unless the agent
    speaks ubsp-v1: its sealed requests go to workers); only for handlers that answer at once and
    never block, such as echo. ``binary_artifacts``: honour a request for the native
    binary artifact mode.
    ``keepalive``: MQTT keep-alive in seconds (the last will fires after 1.5 times this).
    ``max_request_bytes``: larger request payloads are answered with -32600 without being parsed.
    ``reply_namespaces``: the only topic prefixes replies go to (default ``$a2a/v1/reply/{org}/{unit}/``);
    a request whose Response Topic lies elsewhere is logged and dropped, never executed.
    ``admit``: called with the Message of every SendMessage that would create a new task, before the
    task exists; an :class:`A2AError` it returns (e.g. -32004 ``responder_unavailable`` when the agent
    is at capacity) is the reply, and no task is created. ``ids``: where contextIds come from (seed it
    for reproducible lessons). ``pool_takeover_s``: how long a pool member waits for the winner's claim
    of a pooled request before the request is taken over (see :mod:`a2a_nb.protocol.pools`).
    ``pool_dispatch``: ``"auto"`` consumes a pool through ``$share`` where the broker delivers it on
    ``$`` topics, else claims (slot dispatch); ``"slot"`` always claims. Use ``"slot"`` on bridged
    brokers (:mod:`a2a_nb.mqtt.bridged`): a ``$share`` group is per broker, so each broker of a bridge
    would dispatch its own copy of every pooled request, while claims cross the bridge.
    ``task_events``: announce every state change of its tasks on its event topic (extended
    observability, :mod:`a2a_nb.protocol.task_events`); only for the runtime the responder makes itself.
    """

    workers: int = 8
    max_pending: int = 1000
    inline: bool = False
    binary_artifacts: bool = True
    keepalive: int = 30
    max_request_bytes: Optional[int] = DEFAULT_MAX_REQUEST_BYTES
    reply_namespaces: tuple[str, ...] = ()
    admit: Optional[Callable[[dict], Optional[A2AError]]] = None
    ids: Optional[IdSource] = None
    pool_takeover_s: float = pools.TAKEOVER_S
    pool_dispatch: str = "auto"
    task_events: bool = False


class Responder:
    """One agent on the broker, with Client ID ``{org}/{unit}/{agent}``.

    ``card``: the Agent Card to publish retained (None for a spawned instance: no card of its own).
    ``runtime``: share one between a card agent and the instances it spawns.
    ``pool``: also consume ``$share/{group_id}/$a2a/v1/request/{org}/{unit}/pool/{pool}``, or, where the
    broker does not deliver ``$share`` on ``$`` topics, the plain pool topic, claiming among the live
    members (see :mod:`a2a_nb.protocol.pools`). ``members_allowed``: the names whose presence counts in
    that pool (names, or prefixes ending in ``*``; this member always counts); None counts every
    member that announces itself, only right where every client of the broker is trusted.
    ``auth``: a :class:`~a2a_nb.agents.auth.BearerPolicy`; every request must then carry a valid
    ``a2a-authorization: Bearer <token>`` and is refused before any processing otherwise.
    ``options``: :class:`ResponderOptions` (threads, limits, reply namespaces, admission).
    """

    def __init__(
        self,
        agent: str,
        handler: Handler,
        *,
        org: str = "acme",
        unit: str = "support",
        broker: Union[str, BrokerEndpoint, None] = None,
        card: Optional[dict] = None,
        runtime: Optional[TaskRuntime] = None,
        pool: Optional[str] = None,
        members_allowed: Optional[Iterable[str]] = None,
        auth: Optional[BearerPolicy] = None,
        options: ResponderOptions = ResponderOptions(),
        ubsp: Optional["Ubsp"] = None,
        start: bool = True,
    ):
        self.org, self.unit, self.agent = org, unit, agent
        self.handler = handler
        self.ubsp = ubsp
        self.card = cards.with_extension(card, ubsp.card_extension()) if (card is not None and ubsp is not None) else card
        self.runtime = runtime or TaskRuntime(task_events=(org, unit) if options.task_events else None)
        self.pool = pool
        self.pool_member = PoolMember(org, unit, agent, pool or "", intake=self._intake_pooled,
                                      frozen=lambda: self.frozen, members_allowed=members_allowed,
                                      takeover_s=options.pool_takeover_s, dispatch=options.pool_dispatch)
        self.auth = auth
        self.options = options
        self.ids = options.ids or IdSource()
        self.reply_namespaces = options.reply_namespaces or (topics.reply_namespace(org, unit),)
        self.frozen = False
        self.stats = ResponderStats()
        self.request_topic = topics.request_topic(org, unit, agent)
        self.discovery_topic = topics.discovery_topic(org, unit, agent)
        self._queue: "queue.Queue[Optional[tuple[MqttMessage, bool]]]" = queue.Queue()  # (request, pooled)
        self._threads: list[threading.Thread] = []
        self._broker = broker
        self._session: Optional[Session] = None
        self._methods = self._method_table()
        if start:
            self.start()

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> "Responder":
        will = None
        if self.card is not None:
            will = self._card_message(properties.OFFLINE, properties.SOURCE_LWT)
        elif self.pool:  # a pool member has no card: its will marks its presence offline
            will = self.pool_member.presence_message(properties.OFFLINE, properties.SOURCE_LWT)
        self._session = Session(self.org, self.unit, self.agent, broker=self._broker, will=will,
                               keepalive=self.options.keepalive)
        self.session.on_reconnect = self._on_reconnect
        self.session.on_close = self._closed_without_stop
        if self.ubsp is not None:
            self.ubsp.bind(self.session, self.org, self.unit)
            if self.card is None and not self.pool:  # no card to carry its key metadata: its event topic does
                self.ubsp.announce()
        self.runtime.register(self)
        for i in range(0 if self.options.inline and self.ubsp is None else self.options.workers):
            t = threading.Thread(target=self._work, name=f"{self.agent}-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self.session.subscribe(Subscription(self.request_topic, retain_handling=LIVE_ONLY), handler=self._on_request)
        if self.card is not None:  # before joining a pool: the other members read an online card as "live"
            self.publish_card()
        if self.pool:
            self.pool_member.join(self.session)
        return self

    def _closed_without_stop(self) -> None:
        """The session closes without ``stop()`` (``stop_all()``, a re-run cell, the end of the process).
        The broker sends no will after a clean DISCONNECT, so the card and a pool member's presence say
        ``offline`` now: else discovery would show a gone agent online, and the other pool members
        would keep counting this one and its share of the requests would never be answered. Not waited
        for: paho sends them before the DISCONNECT (not connected: the broker sends the will instead).
        The workers end with the session."""
        if self.session.connected:
            if self.card is not None:
                self.session.publish_nowait(self._card_message(properties.OFFLINE, properties.SOURCE_AGENT))
            if self.pool:
                self.session.publish_nowait(self.pool_member.presence_message(properties.OFFLINE,
                                                                              properties.SOURCE_AGENT))
        self._shutdown_workers()
        self.runtime.unregister(self)

    @property
    def pool_mode(self) -> Optional[str]:
        """``"shared"`` (the broker dispatches the pool) or ``"slot"`` (slot claiming); None: no pool."""
        return self.pool_member.mode

    @property
    def pool_mode_why(self) -> str:
        """Why slot claiming: what the broker said or did ("" otherwise)."""
        return self.pool_member.mode_why

    @property
    def live_members(self) -> frozenset[str]:
        """Slot mode: the members of the pool this one sees live (itself included)."""
        return self.pool_member.live

    @property
    def pool_membership(self) -> "pools.Membership[MqttMessage]":
        """Slot mode: who is live, which requests wait for a claim, how many were taken over."""
        return self.pool_member.membership

    def _on_reconnect(self) -> None:
        """After every reconnect (its own thread): a broker restarted without persistence has forgotten
        the retained card and presence messages, so they are published again; a pool member also learns
        the live members afresh (Profile: Presence and Liveness)."""
        if self.pool:
            self.pool_member.rejoin()
        if self.card is not None:
            self.publish_card()

    def _card_message(self, status: str, source: str) -> MqttMessage:
        return MqttMessage(self.discovery_topic, encode_json(self.card), qos=1, retain=True,
                           user_properties=properties.presence_properties(status, source),
                           content_type="application/json", payload_format=1)

    def publish_card(self, card: Optional[dict] = None) -> None:
        """(Re)publish the full card, retained, QoS 1, ``a2a-status=online``."""
        if card is not None:
            self.card = card
        self.session.publish(self._card_message(properties.ONLINE, properties.SOURCE_AGENT))

    def unregister(self) -> None:
        """Clear the retained card (an empty retained payload deletes it)."""
        self.session.publish(MqttMessage(self.discovery_topic, b"", qos=1, retain=True))
        self.card = None

    def stop(self) -> None:
        """Graceful stop: the card (and a pool member's presence) is republished ``offline`` (source
        ``agent``) first."""
        if self._session is None or self._session.closed:
            return
        self.session.on_close = None  # said here, and waited for
        if self.card is not None:
            try:
                self.session.publish(self._card_message(properties.OFFLINE, properties.SOURCE_AGENT), timeout=2)
            except Exception as exc:
                log.warning("%s: could not publish offline card: %s", self.agent, exc)
        if self.pool:
            try:
                self.pool_member.announce(properties.OFFLINE, timeout=2)
            except Exception as exc:
                log.warning("%s: could not publish offline presence: %s", self.agent, exc)
        if self.ubsp is not None and self.card is None and not self.pool:
            self.ubsp.withdraw()  # its key metadata goes with it
        self._shutdown_workers()
        self.session.close()
        self.runtime.unregister(self)

    def crash(self) -> None:
        """Disconnect as if the process died: the broker publishes the last will."""
        self._shutdown_workers()
        self.session.close(send_will=True)
        self.runtime.unregister(self)

    def die_after_replies(self) -> None:
        """Simulate a process that dies right after its last reply: from now on nothing is taken
        in, and once the broker acknowledged what was sent, the connection drops (last will)."""
        self.frozen = True

        def die() -> None:
            self.runtime.outbox.wait_acked(self.agent, 2.0)
            self.crash()

        threading.Thread(target=die, name=f"{self.agent}-dying", daemon=True).start()

    def _shutdown_workers(self) -> None:
        self.pool_member.stop()
        for _ in self._threads:
            self._queue.put(None)
        self._threads = []

    @property
    def session(self) -> Session:
        """The agent's MQTT session (from ``start()`` on)."""
        if self._session is None:
            raise RuntimeError(f"{self.agent} is not started: call start() first")
        return self._session

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._session.closed

    def __enter__(self) -> "Responder":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Responder {self.org}/{self.unit}/{self.agent} {'up' if self.alive else 'stopped'}>"

    # -- intake (network thread: queue only) ----------------------------------------------------------
    def _intake_pooled(self, msg: MqttMessage) -> None:
        self._intake(msg, pooled=True)  # the pool member took it (see pool_member.py)

    def _on_request(self, msg: MqttMessage) -> None:
        self._intake(msg, pooled=False)

    def _intake(self, msg: MqttMessage, pooled: bool) -> None:
        if self.frozen:
            return
        self.stats.requests += 1
        if self.options.inline and not (self.ubsp is not None and ubsp_rules.is_protected(msg)):
            self._run_one(msg, pooled)  # a sealed request goes to a worker: opening it may fetch keys
            return
        if self._queue.qsize() >= self.options.max_pending and self._answerable(msg):
            self.stats.overloaded += 1
            err = errors.responder_unavailable(f"{self.agent} has {self.options.max_pending} requests waiting; retry later")
            self._reply_error(msg, jsonrpc.request_id_of(msg.payload), err, pooled)
            return
        self._queue.put((msg, pooled))

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._run_one(*item)

    def _run_one(self, msg: MqttMessage, pooled: bool) -> None:
        try:
            self._process(msg, pooled)
        except Exception:  # never let one request kill a worker (or the network thread)
            log.exception("%s: unexpected error while processing a request", self.agent)
            if self._answerable(msg):
                try:  # still answer: the requester learns at once instead of waiting for its timeout
                    self._reply_error(msg, None, errors.internal_error("the responder failed on this request"), pooled)
                except Exception:
                    log.exception("%s: could not answer a request that failed", self.agent)

    def _answerable(self, msg: MqttMessage) -> bool:
        """A reply path this agent may publish to (Response Topic inside its reply namespaces)."""
        return (msg.response_topic is not None and msg.correlation_data is not None
                and inbound.reply_path_problem(msg.response_topic, self.reply_namespaces) is None)

    # -- processing ------------------------------------------------------------------------------------
    def _process(self, msg: MqttMessage, pooled: bool) -> None:
        opened = False
        if self.ubsp is not None and ubsp_rules.is_protected(msg) and self._answerable(msg):
            try:  # Untrusted-Broker Security Profile 8, 11, 12: checked and opened before anything else
                msg = self.ubsp.open_request(msg)
                opened = True
            except ValueError as exc:  # SealError, UntrustedKeySource: misaddressed, tampered, replayed, no key
                log.info("%s refused a ubsp-v1 request: %s", self.agent, exc)  # answered -32005: the requester is told
                self._reply_error(msg, None, errors.transport_protocol_error(f"ubsp-v1: {exc}"), pooled)
                return
        verdict = inbound.check_request(msg, self.runtime.clock(), self.agent, self.options.max_request_bytes,
                                        self.reply_namespaces, opened)
        if isinstance(verdict, inbound.Drop):
            self.stats.dropped += 1
            log.warning("%s dropped a request on %s: %s", self.agent, msg.topic, verdict.reason)
            return
        subject = None
        if self.auth is not None:  # bearer token checks come before anything else is looked at
            claims = self.auth.authenticate(msg, tls=self.session.endpoint.tls)
            if isinstance(claims, A2AError):
                self._reply_error(msg, verdict.request_id, claims, pooled)
                return
            subject = str(claims.get("sub", ""))
        if isinstance(verdict, inbound.Rejected):
            self._reply_error(msg, verdict.request_id, verdict.error, pooled)
            return
        caller = inbound.requester_identity(_reply_path(msg)[0], subject)
        try:
            self._dispatch(msg, verdict, pooled, caller)
        except A2AError as err:
            self._reply_error(msg, verdict.request_id, err, pooled)

    def _listener(self, msg: MqttMessage, v: inbound.Accepted, kind: str, pooled: bool,
                  history_length: Optional[int] = None) -> Listener:
        mode = None
        if msg.user_property(properties.ARTIFACT_MODE) is not None:
            mode = properties.MODE_BINARY if (v.artifact_mode == properties.MODE_BINARY and self.options.binary_artifacts
                                              and kind == STREAM) else properties.MODE_JSON
        topic, correlation = _reply_path(msg)
        seal = self._seal_for(msg)
        if seal is not None and mode == properties.MODE_BINARY:
            mode = properties.MODE_JSON  # a protected stream's chunks are JWE text, never native binary
        return Listener(kind, topic, correlation, v.request_id, self.agent, pooled, mode, history_length, seal=seal)

    def _seal_for(self, msg: MqttMessage) -> Optional[Seal]:
        """How replies to ``msg`` are sealed: to its requester when it came under ubsp-v1, each bound
        to the request (its ``jti``, Correlation Data and JSON-RPC id, signed in). A reply that cannot
        be sealed (no trusted key for the requester) is not sent. A protected request this agent did
        not open gets only its refusal (-32005), bound to its Correlation Data, sealed when the
        requester's keys are at hand, else in plaintext (it says only why; Untrusted-Broker Security
        Profile 11, ``ubsp_rules.is_plaintext_refusal``): refusing it costs no key fetch."""
        if self.ubsp is None or not ubsp_rules.is_protected(msg):
            return None
        protection, requester = self.ubsp, msg.user_property(properties.REQUESTER_AGENT_ID) or ""
        jti = msg.user_property(ubsp_rules.OPENED_JTI)
        if jti is None:  # not opened: the refusal, sealed only with keys at hand
            refusal = ubsp_rules.reply_binding(None, msg.correlation_data, None)

            def seal_refusal(reply: MqttMessage, sender: str) -> Optional[MqttMessage]:
                if not ubsp_rules.is_plaintext_refusal(_json_or_none(reply.payload)):
                    return None  # only a refusal answers a request that was not opened
                try:
                    return protection.seal_reply(reply, sender, requester, refusal, fetch=False)
                except ValueError:  # no key at hand for the requester (or none at all)
                    return reply
            return seal_refusal
        binding = ubsp_rules.reply_binding(jti, msg.correlation_data, jsonrpc.request_id_of(msg.payload))

        def seal(reply: MqttMessage, sender: str) -> Optional[MqttMessage]:
            try:
                return protection.seal_reply(reply, sender, requester, binding)
            except ValueError as exc:  # no trusted key for the requester
                log.warning("%s cannot seal a reply to %s: %s", self.agent, requester, exc)
                return None
        return seal

    def _dispatch(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        """One checked request (its method is one of ``jsonrpc.KNOWN_METHODS``): the runtime decides,
        its outbox sends (in order)."""
        self._methods[v.method](msg, v, pooled, caller)

    def _method_table(self) -> dict[str, MethodHandler]:
        """Which handler answers each JSON-RPC method (Profile: Request/Reply Mapping)."""
        unsupported = _raises(errors.push_notification_not_supported)
        return {
            jsonrpc.SEND_MESSAGE: self._send_message,
            jsonrpc.SEND_STREAMING_MESSAGE: self._send_streaming_message,
            jsonrpc.GET_TASK: self._get_task,
            jsonrpc.CANCEL_TASK: self._cancel_task,
            jsonrpc.LIST_TASKS: self._list,
            jsonrpc.SUBSCRIBE_TO_TASK: self._subscribe,
            jsonrpc.GET_EXTENDED_AGENT_CARD: _raises(errors.extended_agent_card_not_configured),
            jsonrpc.CREATE_TASK_PUSH_NOTIFICATION_CONFIG: unsupported,
            jsonrpc.GET_TASK_PUSH_NOTIFICATION_CONFIG: unsupported,
            jsonrpc.LIST_TASK_PUSH_NOTIFICATION_CONFIGS: unsupported,
            jsonrpc.DELETE_TASK_PUSH_NOTIFICATION_CONFIG: unsupported,
        }

    def _get_task(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        p = v.params
        rec = self.runtime.task_for(p["id"], caller)
        task = inbound.check_get(rec.task if rec else None, p["id"])
        self._reply_result(msg, v, rec, trim_history(task, p.get("historyLength")), pooled)

    def _cancel_task(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        outbox = self.runtime.outbox
        with outbox.in_order():
            canceled = self.runtime.cancel(v.params["id"], caller)
            outbox.send(canceled.outgoing)
        self._reply_result(msg, v, canceled.record, canceled.record.task, pooled)

    def _subscribe(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        outbox = self.runtime.outbox
        with outbox.in_order():
            outbox.send(self.runtime.subscribe(v.params["id"], caller, self._listener(msg, v, STREAM, pooled)))

    def _send_streaming_message(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        self._send_message(msg, v, pooled, caller, stream=True)

    def _send_message(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str,
                      stream: bool = False) -> None:
        message = v.params["message"]
        config = v.params.get("configuration") or {}
        task_id = message["taskId"]
        listener = self._listener(msg, v, STREAM if stream else BLOCKING, pooled, config.get("historyLength"))
        outbox = self.runtime.outbox
        with outbox.in_order():
            got = self.runtime.receive(message, caller, listener, new_context_id=self.ids.context_id,
                                       immediate=bool(config.get("returnImmediately")) and not stream,
                                       admit=self.options.admit)
            outbox.send(got.outgoing)
        if got.what != inbound.SEND_DUPLICATE:
            self._execute(task_id, message)

    def _execute(self, task_id: str, message: dict) -> None:
        """Run the handler for one message of a task; its outcome always leaves a known state."""
        self.stats.executions += 1
        ctx = TaskContext(self.runtime, self, task_id, message, self.ids)
        try:
            result = self.handler(ctx)
            outbox = self.runtime.outbox
            with outbox.in_order():  # a continuation (received in order too) cannot slip in between check and change
                latest = ctx.user_messages[-1:]
                if latest and latest[0].get("messageId") != message.get("messageId"):
                    return  # the requester answered (input-required) as this run ended: the next run owns the task
                state = ctx.state
                if ctx.response_message is not None and states.is_active(state):
                    outbox.send(self.runtime.complete_with_message(task_id, ctx.response_message).outgoing)
                elif states.is_active(state):
                    ctx.complete(result if isinstance(result, (str, dict, list)) else None)
        except TaskCanceled:
            pass
        except Exception as exc:
            self.stats.handler_crashes += 1
            log.warning("%s: handler failed on task %s: %r", self.agent, task_id, exc)
            try:
                ctx.fail(f"the agent's handler failed: {type(exc).__name__}: {exc}")
            except Exception:
                log.exception("%s: could not mark task %s failed", self.agent, task_id)

    def _list(self, msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        """ListTasks: only the caller's own tasks."""
        p = v.params
        records = [r for r in self.runtime.store.list(p.get("contextId"), p.get("status"))
                   if inbound.visible_to(r.requester, caller)]
        found = task_pages.page(records, p.get("pageToken"), p.get("pageSize"))
        tasks = [trim_history(r.task, p.get("historyLength", 0)) for r in found.items]
        if not p.get("includeArtifacts"):
            tasks = [{k: val for k, val in t.items() if k != "artifacts"} for t in tasks]
        result = messages.list_tasks_result(tasks, next_page_token=found.next_page_token,
                                            page_size=found.page_size, total_size=found.total_size)
        self._reply_result(msg, v, None, result, pooled)

    # -- replies (the runtime decides who sends, the outbox publishes) ---------------------------------
    def _reply_result(self, msg: MqttMessage, v: inbound.Accepted, rec, result, pooled: bool) -> None:
        self.runtime.outbox.send([self.runtime.reply(rec, self.agent, pooled, *_reply_path(msg),
                                                     jsonrpc.result_response(v.request_id, result), self._seal_for(msg))])

    def _reply_error(self, msg: MqttMessage, request_id, err: A2AError, pooled: bool,
                     seal: Optional[Seal] = None) -> None:
        """An error on ``msg``'s reply path, sealed like every reply to it (``seal``: another way)."""
        self.stats.errors += 1
        self.runtime.outbox.send([self.runtime.reply(None, self.agent, pooled, *_reply_path(msg),
                                                     jsonrpc.error_response(request_id, err),
                                                     seal or self._seal_for(msg))])


def _raises(error: Callable[[], A2AError]) -> MethodHandler:
    """A method this responder answers only with ``error()``."""
    def refuse(msg: MqttMessage, v: inbound.Accepted, pooled: bool, caller: str) -> None:
        raise error()
    return refuse


def _json_or_none(payload: bytes):
    try:
        return json.loads(payload)  # our own reply
    except ValueError:
        return None


def _reply_path(msg: MqttMessage) -> tuple[str, bytes]:
    """The Response Topic and Correlation Data of a request that ``inbound.check_request`` (or
    ``Responder._answerable``) has already found to carry both."""
    assert msg.response_topic is not None and msg.correlation_data is not None
    return msg.response_topic, msg.correlation_data

