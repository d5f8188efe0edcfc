"""Lesson 09 step 7, the official SDK over MQTT, as the lesson writes it (on the real Mosquitto of
``tests/conftest.py``, in a unit of the test's own).

The lesson serves an executor with a card written the SDK's way (an ``AgentCard`` naming no
interface, the agent's name given to ``serve``), and drives the desk from an SDK ``Client`` made
from the retained card's JSON, inside an ``async with`` on a loop that already runs (the kernel's).
tests/sdk covers the adapter's every method; this covers the lesson's way of using it.
"""
from __future__ import annotations

import asyncio
import secrets

import pytest
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.types import (AgentCard, AgentSkill, GetTaskRequest, Message, Part, Role, SendMessageRequest,
                       StreamResponse, Task, TaskState)

from a2a_nb import sdk
from a2a_nb.agents.discovery import Discovery
from a2a_nb.agents.requester import Requester
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import MqttMessage, properties, topics
from a2a_nb.protocol.card_interface import MQTT_BINDING
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from a2a_nb.traffic.recorder import Recorder

ORG = "acme"


class WordCounter(AgentExecutor):
    """The lesson's executor, word for word."""

    async def execute(self, context, event_queue):
        words = len(get_message_text(context.message).split())
        await event_queue.enqueue_event(new_text_message(f"{words} words", context_id=context.context_id))

    async def cancel(self, context, event_queue):
        raise RuntimeError("nothing to cancel: it answers at once")


COUNTER_CARD = AgentCard(name="Word counter", description="Counts the words of a message.", version="1.0.0",
                         skills=[AgentSkill(id="count", name="Count words", description="Counts the words",
                                            tags=["text"])])


@pytest.fixture
def unit(broker_url):
    name = f"ex09sdk-{secrets.token_hex(3)}"
    yield name
    cleaner = Session(ORG, name, f"cleaner-{secrets.token_hex(3)}", broker=broker_url)
    for agent in ("ticket-desk", "word-counter"):
        cleaner.publish(MqttMessage(topics.discovery_topic(ORG, name, agent), b"", qos=1, retain=True))
    cleaner.close()


def test_an_sdk_card_without_interfaces_is_served_under_the_given_name(broker_url, unit):
    with Discovery(ORG, unit, broker=broker_url) as discovery, Requester("coordinator", org=ORG, unit=unit,
                                                                         broker=broker_url) as coordinator:
        counter = sdk.serve(WordCounter(), COUNTER_CARD, agent="word-counter", org=ORG, unit=unit, broker=broker_url)
        try:
            entry = discovery.wait_for("word-counter", status=properties.ONLINE, timeout=30)
            assert entry is not None and entry.card["name"] == "Word counter"
            first = entry.card["supportedInterfaces"][0]
            assert (first["protocolBinding"], first["url"]) == (MQTT_BINDING,
                                                                topics.request_topic(ORG, unit, "word-counter"))
            assert [s["id"] for s in entry.card["skills"]] == ["count"], "the SDK card's own fields are kept"
            counted = coordinator.send("word-counter", TICKET_TEXT)
            assert list(counted.result) == ["message"]
            assert counted.text == f"{len(TICKET_TEXT.split())} words"
        finally:
            counter.stop()
        assert discovery.wait_for("word-counter", status=properties.OFFLINE, timeout=30) is not None


def test_the_sdk_client_from_the_retained_cards_json_inside_a_running_loop(broker_url, unit):
    """As in a notebook cell: ``async with sdk.connect(card)`` on the loop that runs the cell."""
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.01, seed=9), \
            Recorder(broker_url, org_filter=f"$a2a/v1/+/{ORG}/{unit}/#") as recorder, \
            Discovery(ORG, unit, broker=broker_url) as discovery:
        card = discovery.wait_for("ticket-desk", status=properties.ONLINE, timeout=30).card

        async def cell():
            async with sdk.connect(card, broker=broker_url) as client:
                ticket = Message(role=Role.ROLE_USER, message_id=f"m-{secrets.token_hex(4)}",
                                 parts=[Part(text=TICKET_TEXT + "\n" + REPRO_TEXT)])
                events = [e async for e in client.send_message(SendMessageRequest(message=ticket))]
                return events, await client.get_task(GetTaskRequest(id=events[0].task.id))

        events, task = asyncio.run(asyncio.wait_for(cell(), timeout=60))
        assert {type(e) for e in events} == {StreamResponse} and isinstance(task, Task)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED and task.id == events[0].task.id
        recorder.wait_idle(0.2)
        asked = [(r["topic"], (r.get("payload_json") or {}).get("method")) for r in recorder.records
                 if "/request/" in r["topic"]]
        assert asked[0] == (topics.request_topic(ORG, unit, "ticket-desk"), "SendStreamingMessage")
        got_task = [topic for topic, method in asked if method == "GetTask"]
        assert len(got_task) == 1 and "/analyst-" in got_task[0], f"GetTask follows the handover: {asked}"
