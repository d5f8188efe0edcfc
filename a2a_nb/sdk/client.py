"""An MQTT ``ClientTransport`` for the official a2a-sdk client.

``ClientFactory`` picks a transport by the ``protocolBinding`` of the card's ``supportedInterfaces``;
the kit's cards announce :data:`~a2a_nb.protocol.card_interface.MQTT_BINDING`. Registered under it,
:func:`mqtt_transport_producer` gives the factory an :class:`MqttTransport`, and the SDK's ``Client``
then travels over MQTT v5. The transport turns each SDK request into its v1.0 JSON params and hands
them, unchanged, to the kit's :class:`~a2a_nb.agents.requester.Requester` (``call`` / ``call_stream``),
so every rule of the profile is the requester's: Response Topic + Correlation Data, a requester-made
Task.id for a new task, the retry profile, stream recovery with GetTask, handover followed through
``a2a-responder-agent-id`` (Profile: Request/Reply Mapping, Requester Retry and Timeout Profile,
Optional Task Handover). Results come back as the SDK's types.

Untrusted input: every reply is read by the requester (bounded by its reply-topic subscription and
in-flight map) and then with the SDK's own types (:mod:`.convert`): a reply that is no valid
``Task`` / ``Message`` / ``StreamResponse`` is an ``A2AClientError`` of one line, never a crash.
Bounds: one requester (one MQTT connection, one reply topic) per transport; one thread per call in
flight (``asyncio.to_thread``, Python's default executor bounds them); streams are read one item
at a time as the caller consumes them. Push notifications are not part of the MQTT profile: those
calls raise the SDK's ``PushNotificationNotSupportedError``.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, Optional, TypeVar, Union
from urllib.parse import urlsplit

from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.client import ClientCallContext
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from a2a.client.transports.base import ClientTransport
from a2a.types import (AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
                       GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
                       ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
                       ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
                       SubscribeToTaskRequest, Task, TaskPushNotificationConfig)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, PushNotificationNotSupportedError
from google.protobuf.message import Message as Proto

from ..agents.requester import RequestTimeout, Requester, Stream
from ..mqtt.broker import BrokerEndpoint
from ..protocol import jsonrpc, topics
from ..protocol.card_interface import MQTT_BINDING, request_topic_of_url
from ..protocol.errors import A2AError
from ..protocol.routing import Address
from .convert import from_json, to_json

P = TypeVar("P", bound=Proto)
Broker = Union[str, BrokerEndpoint, None]

_SDK_ERROR_OF_CODE = {code: error_type for error_type, code in JSON_RPC_ERROR_CODE_MAP.items()}
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def sdk_error(exc: BaseException) -> Exception:
    """The SDK's exception for what the kit's requester raised: a JSON-RPC error by its code (as the
    SDK's JSON-RPC transport maps it), no reply as ``A2AClientTimeoutError``, anything else unreadable
    as ``A2AClientError`` (one line)."""
    if isinstance(exc, A2AError):
        metadata = None
        for d in exc.data if isinstance(exc.data, list) else []:
            if isinstance(d, dict) and d.get("@type") == _ERROR_INFO:
                metadata = d.get("metadata") or None
        error_type = _SDK_ERROR_OF_CODE.get(exc.code)
        if error_type is not None:
            return error_type(exc.message, data=metadata)
        return A2AClientError(f"JSON-RPC Error {exc.code}: {exc.message}")
    if isinstance(exc, RequestTimeout):
        return A2AClientTimeoutError(str(exc))
    return A2AClientError(str(exc))


def target_of_url(url: str) -> Address:
    """The agent (or pool) an MQTT interface ``url`` addresses; ``ValueError`` when it names none."""
    topic = request_topic_of_url(url)
    info = topics.parse_topic(topic) if topic is not None else None
    if info is None:
        raise ValueError(f"the interface url {url!r} names no A2A request topic ($a2a/v1/request/... or .../pool/...)")
    if info.kind == "pool":
        return Address(info.org, info.unit, pool=info.pool)
    return Address(info.org, info.unit, agent=info.agent)


def broker_of_url(url: str) -> Optional[str]:
    """``mqtt://host:port`` of an interface url that names its broker, else None (the card was found on it)."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("mqtt", "mqtts") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


class MqttTransport(ClientTransport):
    """The SDK's transport interface over the kit's requester.

    ``requester``: share one (it is not closed by ``close()``); without it the transport opens its
    own on first use, as ``agent`` in the target's org and unit (so the reply topic lies where the
    responder's reply namespaces allow), on ``broker`` (else the broker the url names, else
    ``A2A_BROKER_URL`` / the kit's embedded broker), and closes it in ``close()``.
    """

    def __init__(self, card: AgentCard, url: str, *, requester: Optional[Requester] = None, broker: Broker = None,
                 agent: str = "sdk-client"):
        self.card, self.url = card, url
        self.target = target_of_url(url)
        self._broker: Broker = broker if broker is not None else broker_of_url(url)
        self._agent = agent
        self._requester = requester
        self._owns_requester = requester is None
        self._opening = asyncio.Lock()

    async def _the_requester(self) -> Requester:
        async with self._opening:
            if self._requester is None:
                self._requester = await asyncio.to_thread(
                    Requester, self._agent, org=self.target.org, unit=self.target.unit, broker=self._broker)
            return self._requester

    async def _call(self, method: str, request: Proto, result_type: type[P]) -> P:
        requester = await self._the_requester()
        try:
            reply = await asyncio.to_thread(requester.call, method, to_json(request), to=self.target)
            return from_json(reply.result, result_type, f"the {method} result of {self.target}")
        except (A2AError, RequestTimeout, ValueError, TypeError) as exc:
            raise sdk_error(exc) from None

    async def _stream(self, method: str, request: Proto) -> AsyncGenerator[StreamResponse]:
        requester = await self._the_requester()
        try:
            stream: Stream = await asyncio.to_thread(requester.call_stream, method, to_json(request), to=self.target)
        except (A2AError, RequestTimeout, ValueError, TypeError) as exc:
            raise sdk_error(exc) from None
        try:
            while True:
                try:
                    event = await asyncio.to_thread(next, stream, None)
                except (A2AError, RequestTimeout) as exc:
                    raise sdk_error(exc) from None
                if event is None:
                    return
                if event.kind == "binaryChunk":  # only sent to a requester that asked for them: never here
                    continue
                kind = "task" if event.kind == "recovered" else event.kind  # a recovery's GetTask snapshot
                try:
                    yield from_json({kind: event.data}, StreamResponse, f"a {method} stream item of {self.target}")
                except ValueError as exc:
                    raise sdk_error(exc) from None
        finally:
            stream.close()  # the caller stopped reading (or the stream ended): its correlations are released

    # -- the SDK's ClientTransport -------------------------------------------------------------------------
    async def send_message(self, request: SendMessageRequest, *,
                           context: Optional[ClientCallContext] = None) -> SendMessageResponse:
        return await self._call(jsonrpc.SEND_MESSAGE, request, SendMessageResponse)

    async def send_message_streaming(self, request: SendMessageRequest, *,
                                     context: Optional[ClientCallContext] = None) -> AsyncGenerator[StreamResponse]:
        async for item in self._stream(jsonrpc.SEND_STREAMING_MESSAGE, request):
            yield item

    async def subscribe(self, request: SubscribeToTaskRequest, *,
                        context: Optional[ClientCallContext] = None) -> AsyncGenerator[StreamResponse]:
        async for item in self._stream(jsonrpc.SUBSCRIBE_TO_TASK, request):
            yield item

    async def get_task(self, request: GetTaskRequest, *, context: Optional[ClientCallContext] = None) -> Task:
        return await self._call(jsonrpc.GET_TASK, request, Task)

    async def cancel_task(self, request: CancelTaskRequest, *, context: Optional[ClientCallContext] = None) -> Task:
        return await self._call(jsonrpc.CANCEL_TASK, request, Task)

    async def list_tasks(self, request: ListTasksRequest, *,
                         context: Optional[ClientCallContext] = None) -> ListTasksResponse:
        return await self._call(jsonrpc.LIST_TASKS, request, ListTasksResponse)

    async def get_extended_agent_card(self, request: GetExtendedAgentCardRequest, *,
                                      context: Optional[ClientCallContext] = None) -> AgentCard:
        return self.card  # the retained card is the whole card: the kit's agents have no extended one

    async def create_task_push_notification_config(self, request: TaskPushNotificationConfig, *,
                                                   context: Optional[ClientCallContext] = None) -> TaskPushNotificationConfig:
        raise _no_push()

    async def get_task_push_notification_config(self, request: GetTaskPushNotificationConfigRequest, *,
                                                context: Optional[ClientCallContext] = None) -> TaskPushNotificationConfig:
        raise _no_push()

    async def list_task_push_notification_configs(
            self, request: ListTaskPushNotificationConfigsRequest, *,
            context: Optional[ClientCallContext] = None) -> ListTaskPushNotificationConfigsResponse:
        raise _no_push()

    async def delete_task_push_notification_config(self, request: DeleteTaskPushNotificationConfigRequest, *,
                                                   context: Optional[ClientCallContext] = None) -> None:
        raise _no_push()

    async def close(self) -> None:
        if self._owns_requester and self._requester is not None:
            requester, self._requester = self._requester, None
            await asyncio.to_thread(requester.close)


def _no_push() -> Exception:
    return PushNotificationNotSupportedError("push notifications are not part of the A2A over MQTT profile: "
                                             "stream the task (SendStreamingMessage / SubscribeToTask) instead")


def mqtt_transport_producer(*, requester: Optional[Requester] = None, broker: Broker = None,
                            agent: str = "sdk-client"):
    """A ``TransportProducer`` for ``ClientFactory.register(MQTT_BINDING, ...)``: each client it makes
    gets an :class:`MqttTransport` (sharing ``requester`` when given)."""
    def produce(card: AgentCard, url: str, config: ClientConfig) -> ClientTransport:
        return MqttTransport(card, url, requester=requester, broker=broker, agent=agent)
    return produce


def mqtt_client_factory(config: Optional[ClientConfig] = None, **producer: Any) -> ClientFactory:
    """A ``ClientFactory`` that prefers the card's MQTT interface (``producer``: see
    :func:`mqtt_transport_producer`)."""
    config = config or ClientConfig()
    if MQTT_BINDING not in config.supported_protocol_bindings:
        config.supported_protocol_bindings = [MQTT_BINDING, *config.supported_protocol_bindings]
    factory = ClientFactory(config)
    factory.register(MQTT_BINDING, mqtt_transport_producer(**producer))
    return factory


def connect(card: Union[AgentCard, dict], config: Optional[ClientConfig] = None, **producer: Any) -> Client:
    """The SDK's ``Client`` for ``card`` (an ``AgentCard`` or the card's JSON as Discovery shows it),
    over MQTT."""
    if isinstance(card, dict):
        card = from_json(card, AgentCard, "the agent card")
    return mqtt_client_factory(config, **producer).create(card)
