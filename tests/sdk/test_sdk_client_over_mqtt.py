"""The official a2a-sdk ``Client`` over MQTT: the kit's transport registered on ``ClientFactory``.

The same story the bridge test tells over HTTP (tests/bridge/test_sdk_client.py), but the SDK's
client talks MQTT v5 itself: the desk's card (as Discovery shows it) picks the MQTT interface, the
requester underneath makes the Task.id, follows the handover to the analyst and maps errors to the
SDK's exceptions. Real Mosquitto; the MQTT side is recorded and must pass ``lint``.
"""
from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from a2a.client import ClientConfig
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest,
                       SubscribeToTaskRequest, TaskState)
from a2a.utils.errors import PushNotificationNotSupportedError, TaskNotCancelableError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from a2a_nb import sdk
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import topics
from a2a_nb.protocol.card_interface import MQTT_BINDING
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.agents.requester import Requester
from a2a_nb.sdk.client import MqttTransport
from a2a_nb.story.cast import REPORT_ID, TicketDesk, desk_card
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from a2a_nb.traffic.frame import load_traffic
from a2a_nb.traffic.lint import check_traffic, format_findings
from tests.bridge.conftest import ORG
from tests.bridge.test_sdk_client import events_of, last_state, user_message
from tests.integration._roles_support import is_uuid4
from tests.sdk_check import assert_valid


async def tell_the_story(card: dict, broker_url: str) -> dict:
    seen: dict = {}
    streaming = sdk.connect(card, broker=broker_url)
    blocking = sdk.connect(card, ClientConfig(streaming=False), broker=broker_url)
    first = await events_of(streaming, SendMessageRequest(message=user_message(TICKET_TEXT)))
    seen["first"] = first
    task = await streaming.get_task(GetTaskRequest(id=first[0].task.id))
    seen["paused"] = task
    seen["subscribed"] = [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=task.id))]
    seen["second"] = await events_of(streaming, SendMessageRequest(message=user_message(REPRO_TEXT, task)))
    seen["done"] = await streaming.get_task(GetTaskRequest(id=task.id, history_length=1))
    seen["errors"] = {}
    unknown = str(uuid.uuid4())
    for name, call in (
        ("cancel completed", streaming.cancel_task(CancelTaskRequest(id=task.id))),
        ("get unknown", streaming.get_task(GetTaskRequest(id=unknown))),
        ("cancel unknown", streaming.cancel_task(CancelTaskRequest(id=unknown))),
    ):
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - the test looks at which error it was
            seen["errors"][name] = exc
    [reply] = await events_of(blocking, SendMessageRequest(message=user_message(TICKET_TEXT)))
    seen["blocking"] = reply.task
    seen["canceled"] = await blocking.cancel_task(CancelTaskRequest(id=reply.task.id))
    seen["listed"] = await blocking.list_tasks(ListTasksRequest(include_artifacts=True))
    await streaming.close()
    await blocking.close()
    return seen


def test_official_client_tells_the_ticket_story_over_mqtt(broker_url, unit, recorder):
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.01):
        seen = asyncio.run(tell_the_story(desk_card(ORG, unit), broker_url))

    first = seen["first"]
    task_id = first[0].task.id
    assert is_uuid4(task_id), "the requester under the SDK client names the new task"
    assert last_state(first) == TaskState.TASK_STATE_INPUT_REQUIRED
    assert seen["paused"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert seen["subscribed"][0].task.id == task_id
    second = seen["second"]
    chunks = [e.artifact_update for e in second if e.HasField("artifact_update")]
    assert len(chunks) >= 2 and {c.artifact.artifact_id for c in chunks} == {REPORT_ID}
    assert chunks[-1].last_chunk and all(c.append for c in chunks[1:])
    assert last_state(second) == TaskState.TASK_STATE_COMPLETED
    done = seen["done"]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and [a.artifact_id for a in done.artifacts] == [REPORT_ID]
    assert len(done.history) == 1, "historyLength reached the agent unchanged"
    assert isinstance(seen["errors"]["cancel completed"], TaskNotCancelableError)
    assert isinstance(seen["errors"]["get unknown"], TaskNotFoundError)
    assert isinstance(seen["errors"]["cancel unknown"], TaskNotFoundError)
    assert seen["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    listed = {t.id: t for t in seen["listed"].tasks}
    assert {task_id, seen["blocking"].id} <= set(listed)
    assert [a.artifact_id for a in listed[task_id].artifacts] == [REPORT_ID], "includeArtifacts reached the agent"

    recorder.wait_idle(0.3)
    df = load_traffic(recorder)
    sends = df[(df["kind"] == "request") & (df["task_id"] == task_id)
               & df["method"].isin(["SendStreamingMessage", "SendMessage"])]
    assert list(sends["agent"]) == ["ticket-desk", "analyst-1"], "the continuation followed the handover"
    must = check_traffic(df)
    must = must[must["level"] == "MUST"]
    assert must.empty, format_findings(must)


def test_the_producer_reads_the_mqtt_interface_of_a_kit_card(broker_url, unit):
    card = desk_card(ORG, unit)
    assert card["supportedInterfaces"][0]["protocolBinding"] == MQTT_BINDING
    proto = assert_valid("AgentCard", card)
    transport = sdk.mqtt_transport_producer(broker=broker_url)(proto, card["supportedInterfaces"][0]["url"],
                                                                ClientConfig())
    assert isinstance(transport, MqttTransport) and str(transport.target) == f"{ORG}/{unit}/ticket-desk"
    pooled = sdk.mqtt_transport_producer()(proto, f"mqtt://127.0.0.1:1/{topics.pool_topic(ORG, unit, 'analysts')}",
                                           ClientConfig())
    assert pooled.target.pool == "analysts" and pooled._broker == "mqtt://127.0.0.1:1"  # noqa: SLF001 - our own
    with pytest.raises(ValueError, match="names no A2A request topic"):
        sdk.mqtt_transport_producer()(proto, "https://example.invalid/a2a", ClientConfig())
    http_only = MessageToDict(proto)
    http_only["supportedInterfaces"] = [{"url": "https://example.invalid/a2a", "protocolBinding": "JSONRPC",
                                         "protocolVersion": "1.0"}]
    with pytest.raises(ValueError, match="no compatible transports"):
        sdk.connect(http_only)


def test_an_agent_that_never_answers_is_a_client_timeout_error(broker_url, unit):
    card = desk_card(ORG, unit)  # nobody serves it
    requester = Requester("sdk-client", org=ORG, unit=unit, broker=broker_url,
                          retry=RetryProfile(reply_first_timeout_s=0.3, max_attempts=1, backoff_s=(0.05,)))
    try:
        client = sdk.connect(card, ClientConfig(streaming=False), requester=requester)
        with pytest.raises(A2AClientTimeoutError):
            asyncio.run(events_of(client, SendMessageRequest(message=user_message("anyone?"))))
    finally:
        requester.close()


def test_hostile_replies_are_one_line_client_errors(broker_url, unit):
    """An "agent" answering with JSON that is no v1.0 result: the SDK client gets an A2AClientError of
    one line, not a crash or a protobuf traceback."""
    agent = Session(ORG, unit, "ticket-desk", broker=broker_url)
    answers = iter([{"task": {"id": 5, "status": "nope"}}, ["not", "an", "object"]])

    def answer(msg):
        body = json.loads(msg.payload)
        result = next(answers)
        agent.publish_nowait(MqttMessage(msg.response_topic, json.dumps(
            {"jsonrpc": "2.0", "id": body["id"], "result": result}).encode(), correlation_data=msg.correlation_data))
    agent.subscribe(topics.request_topic(ORG, unit, "ticket-desk"), handler=answer)
    client = sdk.connect(desk_card(ORG, unit), ClientConfig(streaming=False), broker=broker_url)
    try:
        for _ in range(2):
            with pytest.raises(A2AClientError) as caught:
                asyncio.run(events_of(client, SendMessageRequest(message=user_message("hi"))))
            assert "\n" not in str(caught.value) and len(str(caught.value)) < 400, caught.value
    finally:
        asyncio.run(client.close())
        agent.close()


def test_push_notification_calls_say_the_profile_has_none(broker_url, unit):
    from a2a.types import GetTaskPushNotificationConfigRequest

    client = sdk.connect(desk_card(ORG, unit), broker=broker_url)
    with pytest.raises(PushNotificationNotSupportedError, match="not part of the A2A over MQTT profile"):
        asyncio.run(client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(id="x")))
