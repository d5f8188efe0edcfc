"""The official a2a-sdk HTTP JSON-RPC client tells the ticket story through the bridge.

Used as its documentation shows for an HTTP agent: ``A2ACardResolver`` fetches the card from the
bridge's well-known URL, ``ClientFactory(ClientConfig(...)).create(card)`` picks the JSON-RPC
interface, ``send_message`` / ``get_task`` / ``cancel_task`` / ``list_tasks`` / ``subscribe`` do the
rest. Behind the bridge: the story's TicketDesk (handover plan ``first-reply``) on the real Mosquitto.
The MQTT side of the whole run is recorded and must pass ``lint`` without a MUST finding.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Optional

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
                       SendMessageRequest, SubscribeToTaskRequest, Task, TaskState)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from a2a_nb.story.cast import REPORT_ID
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from a2a_nb.traffic.frame import load_traffic
from a2a_nb.traffic.lint import check_traffic, format_findings
from tests.bridge.conftest import ORG
from tests.integration._roles_support import is_uuid4
from tests.sdk_check import assert_valid


def user_message(text: str, task: Optional[Task] = None) -> Message:
    """A user message as the SDK's tutorial builds one; with ``task``, it continues that task."""
    message = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=uuid.uuid4().hex)
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return message


async def events_of(client, request) -> list:
    return [event async for event in client.send_message(request)]


def last_state(events) -> int:
    last = events[-1]
    return last.status_update.status.state if last.HasField("status_update") else last.task.status.state


async def tell_the_story(url: str) -> dict:
    """The whole story with the SDK client; returns what the assertions need."""
    seen: dict = {}
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(httpx_client=http, base_url=url).get_agent_card()
        seen["card"] = card
        streaming = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)

        # 1. the ticket, streamed: the desk hands it to an analyst, who asks for the reproduction steps
        first = await events_of(streaming, SendMessageRequest(message=user_message(TICKET_TEXT)))
        seen["first"] = first
        task = await streaming.get_task(GetTaskRequest(id=first[0].task.id))
        seen["paused"] = task

        # 2. re-attach to the paused task: its snapshot comes first
        seen["subscribed"] = [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=task.id))]

        # 3. the answer on the same task: the analyst streams the report and completes
        seen["second"] = await events_of(streaming, SendMessageRequest(message=user_message(REPRO_TEXT, task)))
        seen["done"] = await streaming.get_task(GetTaskRequest(id=task.id))

        # 4. cancelling a completed task, and three unknown tasks
        seen["errors"] = {}
        unknown = str(uuid.uuid4())
        for name, call in (
            ("cancel completed", streaming.cancel_task(CancelTaskRequest(id=task.id))),
            ("get unknown", streaming.get_task(GetTaskRequest(id=unknown))),
            ("cancel unknown", streaming.cancel_task(CancelTaskRequest(id=unknown))),
            ("continue unknown", events_of(blocking, SendMessageRequest(
                message=user_message("more", Task(id=unknown, context_id=task.context_id))))),
        ):
            try:
                await call
            except Exception as exc:  # noqa: BLE001 - the test looks at which error it was
                seen["errors"][name] = exc

        # 5. a second ticket without streaming (SendMessage blocks until the pause), then cancelled
        [reply] = await events_of(blocking, SendMessageRequest(message=user_message(TICKET_TEXT)))
        seen["blocking"] = reply.task
        seen["canceled"] = await blocking.cancel_task(CancelTaskRequest(id=reply.task.id))

        seen["listed"] = await blocking.list_tasks(ListTasksRequest())
        await streaming.close()
        await blocking.close()
    return seen


def test_official_client_tells_the_ticket_story_through_the_bridge(bridge, recorder, unit):
    seen = asyncio.run(tell_the_story(bridge.url))

    card = MessageToDict(seen["card"])
    assert card["supportedInterfaces"][0] == {"url": bridge.url, "protocolBinding": "JSONRPC",
                                              "protocolVersion": "1.0"}
    assert_valid("AgentCard", card)

    first = seen["first"]
    task_id = first[0].task.id
    assert is_uuid4(task_id), "the bridge names the new task (the MQTT requester's rule), with a UUIDv4"
    assert last_state(first) == TaskState.TASK_STATE_INPUT_REQUIRED
    assert seen["paused"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert bridge.requester.routing.target(task_id).label == "analyst-1", "handover: the analyst owns the task"
    assert seen["subscribed"][0].task.id == task_id

    second = seen["second"]
    chunks = [e.artifact_update for e in second if e.HasField("artifact_update")]
    assert len(chunks) >= 2 and {c.artifact.artifact_id for c in chunks} == {REPORT_ID}
    assert chunks[-1].last_chunk and all(c.append for c in chunks[1:])
    assert last_state(second) == TaskState.TASK_STATE_COMPLETED
    done = seen["done"]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and done.id == task_id
    assert [a.artifact_id for a in done.artifacts] == [REPORT_ID] and len(done.artifacts[0].parts) == 4

    errors = seen["errors"]
    assert isinstance(errors["cancel completed"], TaskNotCancelableError)
    for name in ("get unknown", "cancel unknown", "continue unknown"):
        assert isinstance(errors[name], TaskNotFoundError), (name, errors[name])

    assert seen["blocking"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert seen["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert {task_id, seen["blocking"].id} <= {t.id for t in seen["listed"].tasks}

    # the MQTT side: the continuation went to the analyst's own topic, and the run is lint-clean
    recorder.wait_idle(0.3)
    df = load_traffic(recorder)
    sends = df[(df["kind"] == "request") & (df["task_id"] == task_id)
               & df["method"].isin(["SendStreamingMessage", "SendMessage"])]
    assert list(sends["agent"]) == ["ticket-desk", "analyst-1"]
    assert set(df[(df["kind"] == "reply") & (df["task_id"] == task_id)]["responder_agent_id"].dropna()) == {"analyst-1"}
    must = check_traffic(df)
    must = must[must["level"] == "MUST"]
    assert must.empty, format_findings(must)
    assert (df["org"] == ORG).all() and (df["unit"] == unit).all()
