"""The bridge forwards the params an HTTP client sends unchanged (issue [21] item 4).

It used to unpack them into Requester keyword arguments and rebuild them, losing SendMessage's
``configuration.acceptedOutputModes`` and ``metadata`` (a stream lost its whole ``configuration``) and
ListTasks' ``includeArtifacts`` and ``historyLength``. Each test sends one field through a real Bridge
to a real kit agent on the session's Mosquitto and checks that the request the agent gets carries
exactly that field (a new message gains only its ``taskId`` and ``contextId``), and, where the kit's
agents read the field, that the answer shows it.
"""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Responder
from a2a_nb.bridge import Bridge
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, topics
from a2a_nb.protocol.packet import MqttMessage
from tests.bridge.conftest import ORG
from tests.bridge.test_http import rpc, send_params, sse_items
from tests.waiting import wait_until
from tests.helpers import uid


def requests_to(broker_url: str, unit: str, agent: str) -> list[MqttMessage]:
    """Every request the broker delivers on ``agent``'s request topic from now on (what it receives)."""
    seen: list[MqttMessage] = []
    s = Session(ORG, unit, uid("witness"), broker=broker_url)
    s.subscribe(topics.request_topic(ORG, unit, agent), handler=seen.append)
    return seen


def params_received(seen: list[MqttMessage], method: str) -> dict:
    assert wait_until(lambda: any(m.json()["method"] == method for m in seen)), f"no {method} reached the agent"
    return next(m.json()["params"] for m in seen if m.json()["method"] == method)


def as_sent_with_ids(sent: dict, received: dict) -> dict:
    """``sent`` with the ids the bridge gives a new message (and nothing else)."""
    ids = {k: received["message"][k] for k in ("taskId", "contextId")}
    return {**sent, "message": {**sent["message"], **ids}}


@pytest.fixture
def maker(broker_url, unit):
    """A kit agent that answers with an artifact and completes: its tasks have history and artifacts."""
    card = cards.agent_card(name="Maker", description="makes one artifact", version="1", org=ORG, unit=unit,
                            agent="maker", skills=[cards.skill("x", "X", "an artifact", ["test"])])

    def make(ctx):
        ctx.artifact("report", f"made from {ctx.text}")
        ctx.complete("done")

    with Responder("maker", make, org=ORG, unit=unit, broker=broker_url, card=card) as agent:
        with Bridge("maker", org=ORG, unit=unit, broker=broker_url) as bridge:
            yield agent, bridge
        agent.unregister()


def test_send_message_accepted_output_modes_reach_the_agent(broker_url, unit, bridge):
    seen = requests_to(broker_url, unit, "ticket-desk")
    sent = {**send_params(), "configuration": {"acceptedOutputModes": ["text/plain", "application/json"]}}
    assert "result" in rpc(bridge.url, "SendMessage", sent).json()
    received = params_received(seen, "SendMessage")
    assert received["configuration"] == {"acceptedOutputModes": ["text/plain", "application/json"]}
    assert received == as_sent_with_ids(sent, received)


def test_send_message_metadata_reaches_the_agent(broker_url, unit, bridge):
    seen = requests_to(broker_url, unit, "ticket-desk")
    sent = {**send_params(), "metadata": {"ticket": "T-7", "priority": 2}}
    assert "result" in rpc(bridge.url, "SendMessage", sent).json()
    received = params_received(seen, "SendMessage")
    assert received["metadata"] == {"ticket": "T-7", "priority": 2}
    assert received == as_sent_with_ids(sent, received)


def test_a_streams_configuration_and_metadata_reach_the_agent(broker_url, unit, bridge):
    seen = requests_to(broker_url, unit, "ticket-desk")
    sent = {**send_params(), "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 1},
            "metadata": {"ticket": "T-8"}}
    assert sse_items(rpc(bridge.url, "SendStreamingMessage", sent))
    received = params_received(seen, "SendStreamingMessage")
    assert received == as_sent_with_ids(sent, received)


def test_list_tasks_include_artifacts_reaches_the_agent(broker_url, unit, maker):
    agent, bridge = maker
    task = rpc(bridge.url, "SendMessage", send_params("a tiny report")).json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and task["artifacts"]
    seen = requests_to(broker_url, unit, "maker")
    sent = {"contextId": task["contextId"], "includeArtifacts": True}
    listed = rpc(bridge.url, "ListTasks", sent).json()["result"]
    assert params_received(seen, "ListTasks") == sent
    assert [t["artifacts"][0]["artifactId"] for t in listed["tasks"]] == ["report"]


def test_list_tasks_history_length_reaches_the_agent(broker_url, unit, maker):
    agent, bridge = maker
    task = rpc(bridge.url, "SendMessage", send_params("a tiny report")).json()["result"]["task"]
    assert len(task["history"]) >= 2  # the user's message and the agent's answer
    seen = requests_to(broker_url, unit, "maker")
    sent = {"contextId": task["contextId"], "historyLength": 1}
    listed = rpc(bridge.url, "ListTasks", sent).json()["result"]
    assert params_received(seen, "ListTasks") == sent
    assert [len(t["history"]) for t in listed["tasks"]] == [1]


def test_a_field_of_the_wrong_type_is_still_refused_before_mqtt(broker_url, unit, bridge):
    """Passing params through keeps the bridge's check: -32602 at once, nothing published."""
    seen = requests_to(broker_url, unit, "ticket-desk")
    for method, params in (("SendMessage", {**send_params(), "metadata": "not an object"}),
                           ("SendMessage", {**send_params(), "configuration": {"acceptedOutputModes": "text"}}),
                           ("ListTasks", {"includeArtifacts": True, "historyLength": -1}),
                           ("ListTasks", {"includeArtifacts": "yes"})):
        error = rpc(bridge.url, method, params).json()["error"]
        assert error["code"] == -32602, (method, params, error)
    rpc(bridge.url, "GetTask", {"id": str(uuid.uuid4())})  # a request after them: -32001 from the agent
    assert wait_until(lambda: any(m.json()["method"] == "GetTask" for m in seen))
    assert [m.json()["method"] for m in seen] == ["GetTask"]
