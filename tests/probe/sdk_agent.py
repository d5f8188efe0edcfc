"""An agent built with the official a2a-sdk, on MQTT with the thinnest shim the profile allows.

The work is the SDK's own: its ``DefaultRequestHandler`` with an ``AgentExecutor`` that echoes, its task
store, its v1.0 protobuf types. The shim is bare paho (none of this kit's roles): the card retained on
the discovery topic with ``a2a-status=online`` (and a Last Will saying offline), requests read from the
request topic, each JSON-RPC request parsed into the SDK's request type, handed to the SDK's handler on
an asyncio loop, and every answer (a result, each stream item, an error) published to the request's
Response Topic with its Correlation Data, QoS 1. Nothing of the Extended profile: no task events, no
binary mode, no pool, no ubsp-v1, no broker plugin. The probe should find all six "not offered".
"""
from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Optional

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from a2a.types import (AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest,
                       SendMessageResponse, StreamResponse, SubscribeToTaskRequest)
from google.protobuf.json_format import MessageToDict, ParseDict
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from a2a_nb.mqtt.broker import BrokerEndpoint
from a2a_nb.mqtt.session import paho_client
from a2a_nb.story.cast import echo_card
from tests.probe.hostile_agent import take_requests
from tests.sdk.executors import EchoExecutor

ORG = "acme"


def _dict(msg: Any) -> dict:
    return MessageToDict(msg, preserving_proto_field_name=False)


def _stream_item(event: Any) -> dict:
    """One event of the SDK's stream as the v1.0 ``StreamResponse`` JSON."""
    field = {"Task": "task", "Message": "message", "TaskStatusUpdateEvent": "status_update",
             "TaskArtifactUpdateEvent": "artifact_update"}[type(event).__name__]
    return _dict(StreamResponse(**{field: event}))


class SdkAgent:
    """``SdkAgent(url, unit, agent)``: started at once; ``close()`` says offline and disconnects."""

    def __init__(self, url: str, unit: str, agent: str = "sdk-echo"):
        self.unit, self.agent = unit, agent
        card = echo_card(ORG, unit, agent)
        self.handler = DefaultRequestHandler(EchoExecutor(), InMemoryTaskStore(), ParseDict(card, AgentCard()))
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name=f"{agent}-sdk-loop").start()
        endpoint = BrokerEndpoint.from_url(url)
        self.card_topic = f"$a2a/v1/discovery/{ORG}/{unit}/{agent}"
        self.c = paho_client(endpoint, f"{ORG}/{unit}/{agent}")
        offline = Properties(PacketTypes.WILLMESSAGE)
        offline.UserProperty = [("a2a-status", "offline"), ("a2a-status-source", "lwt")]
        self.c.will_set(self.card_topic, json.dumps(card).encode(), qos=1, retain=True, properties=offline)
        self.c.on_message = lambda client, userdata, m: asyncio.run_coroutine_threadsafe(self._serve(m), self.loop)
        take_requests(self.c, endpoint, f"$a2a/v1/request/{ORG}/{unit}/{agent}")
        self._card(card, "online")

    def _card(self, card: dict, status: str) -> None:
        props = Properties(PacketTypes.PUBLISH)
        props.UserProperty = [("a2a-status", status), ("a2a-status-source", "agent")]
        props.ContentType = "application/json"
        self.c.publish(self.card_topic, json.dumps(card).encode(), qos=1, retain=True,
                       properties=props).wait_for_publish(5)

    def _reply(self, m, payload: dict) -> None:
        props = Properties(PacketTypes.PUBLISH)
        props.CorrelationData = m.properties.CorrelationData
        props.ContentType = "application/json"
        self.c.publish(m.properties.ResponseTopic, json.dumps(payload).encode(), qos=1, properties=props)

    async def _serve(self, m) -> None:
        if not getattr(m.properties, "ResponseTopic", None) or not getattr(m.properties, "CorrelationData", None):
            return  # no reply path (Request/Reply Mapping 3-4)
        rid: Optional[Any] = None
        try:
            body = json.loads(m.payload)
            rid = body.get("id") if isinstance(body, dict) else None
            if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
                return self._reply(m, _error(rid, -32600, "invalid request"))
            await self._call(m, rid, body["method"], body.get("params") or {})
        except ValueError as exc:
            self._reply(m, _error(rid, -32700 if rid is None else -32602, str(exc)[:200]))
        except Exception as exc:  # the SDK's A2A errors, with the SDK's own JSON-RPC codes
            self._reply(m, _error(rid, JSON_RPC_ERROR_CODE_MAP.get(type(exc), -32603), str(exc)[:200]))

    async def _call(self, m, rid: Any, method: str, params: dict) -> None:
        ctx, h = ServerCallContext(), self.handler
        ok = lambda result: self._reply(m, {"jsonrpc": "2.0", "id": rid, "result": result})  # noqa: E731
        if method == "SendMessage":
            got = await h.on_message_send(ParseDict(params, SendMessageRequest()), ctx)
            field = "task" if type(got).__name__ == "Task" else "message"
            return ok(_dict(SendMessageResponse(**{field: got})))
        if method in ("SendStreamingMessage", "SubscribeToTask"):
            stream = (h.on_message_send_stream(ParseDict(params, SendMessageRequest()), ctx) if method == "SendStreamingMessage"
                      else h.on_subscribe_to_task(ParseDict(params, SubscribeToTaskRequest()), ctx))
            async for event in stream:
                ok(_stream_item(event))
            return None
        if method == "GetTask":
            return ok(_dict(await h.on_get_task(ParseDict(params, GetTaskRequest()), ctx)))
        if method == "CancelTask":
            return ok(_dict(await h.on_cancel_task(ParseDict(params, CancelTaskRequest()), ctx)))
        if method == "ListTasks":
            return ok(_dict(await h.on_list_tasks(ParseDict(params, ListTasksRequest()), ctx)))
        return self._reply(m, _error(rid, -32601, f"method {method!r} not found"))

    def close(self) -> None:
        self._card(echo_card(ORG, self.unit, self.agent), "offline")
        self.c.disconnect()
        self.c.loop_stop()
        self.loop.call_soon_threadsafe(self.loop.stop)


def _error(rid: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
