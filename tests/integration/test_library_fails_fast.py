"""The library says what is wrong as the command line does (real Mosquitto): a new task to an agent
with no card and nobody serving it fails at its first PUBACK with ``UnknownAgent`` (a
``RequestTimeout``), naming the agents that have one; a second ``TicketDesk`` refuses to take the
served one's connection over; ``Discovery(wait=...)`` holds the retained cards when it returns; a
wrong argument type is a ``TypeError`` with a sentence; a probe report prints in one line."""
from __future__ import annotations


import pytest

from a2a_nb import Discovery, Requester, RequestTimeout, Responder, TicketDesk, UnknownAgent
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import cards, jsonrpc, messages, states, topics
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.story.cast import AlreadyServed, echo_card, echo_handler
from tests.integration._roles_support import FAST
from tests.helpers import uid


def test_a_new_task_to_an_agent_without_a_card_fails_at_once_naming_the_known_ones(broker_url):
    unit = uid("ff-unknown")
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card(unit=unit), broker=broker_url)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=FAST)
    try:
        message = req.new_message("hi")
        with pytest.raises(UnknownAgent) as caught:
            req.send("ecko", message=message)
        exc = caught.value
        assert isinstance(exc, RequestTimeout)  # an old `except RequestTimeout` still holds
        assert str(exc) == (f"no card for ecko in acme/{unit}, and nobody subscribes to its request topic; "
                            "known agents: echo")
        assert (exc.agent, exc.known) == ("ecko", "echo")
        assert req.stats.sent == 1 and req.stats.retries == 0  # not after the whole retry profile
        assert req.routing.target(message["taskId"]) is None  # the task never started
        assert req.send("echo", message=message).text == "echo: hi"  # the same message, the right agent
    finally:
        req.close()
        echo.stop()


def test_a_stream_to_an_unknown_agent_fails_the_same_way(broker_url):
    unit = uid("ff-stream")
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=FAST)
    try:
        with pytest.raises(UnknownAgent, match=r"known agents: none$"):
            req.stream("nobody", "hi")
    finally:
        req.close()


def test_an_agent_without_a_card_that_listens_is_still_asked(broker_url):
    """No card is no proof of absence (an analyst, lesson 06's raw agents): a subscriber on the request
    topic gets the request as before, and the retry profile still runs when it stays silent once."""
    unit = uid("ff-cardless")
    heard = []
    raw = Session("acme", unit, "raw-analyst", broker=broker_url)

    def on_request(msg):
        request = jsonrpc.parse_request(msg.payload)
        heard.append(request["params"]["message"]["messageId"])
        if len(heard) == 1:
            return  # the first attempt is lost
        m = request["params"]["message"]
        task = messages.task(m["taskId"], m["contextId"], messages.task_status(states.COMPLETED))
        raw.publish_then(MqttMessage(msg.response_topic, encode_json(
            jsonrpc.result_response(request["id"], messages.send_message_result(task))),
            correlation_data=msg.correlation_data), lambda ack: None)

    raw.subscribe(topics.request_topic("acme", unit, "raw-analyst"), handler=on_request)
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=FAST)
    try:
        assert req.send("raw-analyst", "hi").state == states.COMPLETED
        assert len(heard) == 2 and req.stats.retries == 1
    finally:
        req.close()
        raw.close()


def test_a_card_published_after_the_requester_started_counts(broker_url):
    unit = uid("ff-late")
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=FAST)
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card(unit=unit), broker=broker_url)
    try:
        assert req.send("echo", "hi").text == "echo: hi"
    finally:
        req.close()
        echo.stop()


def test_a_second_ticket_desk_refuses_to_take_the_served_ones_connection(broker_url):
    unit = uid("ff-desk")
    desk = TicketDesk(unit=unit, broker=broker_url, pace=0.0, handover="none")
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=FAST)
    try:
        with pytest.raises(AlreadyServed) as caught:
            TicketDesk(unit=unit, broker=broker_url)
        text = str(caught.value)
        assert "\n" not in text and text.startswith(f"ticket-desk already serves acme/{unit} on this broker")
        assert "same Client ID" in text
        reply = req.send("ticket-desk", "Analyze ticket TCK-4821\nReproduction: refresh twice")
        assert reply.responder in (None, "ticket-desk") and reply.state == states.COMPLETED  # the first desk answers
    finally:
        req.close()
        desk.stop()
    again = TicketDesk(unit=unit, broker=broker_url)  # stopped (card offline): a new desk may start
    again.stop()


def test_discovery_wait_holds_every_retained_card_when_it_returns(broker_url):
    unit = uid("ff-disco")
    publisher = Session("acme", unit, "card-writer", broker=broker_url)
    names = [f"agent-{i:02d}" for i in range(40)]
    try:
        for name in names:
            card = cards.agent_card(name=name, description="d", version="1", org="acme", unit=unit, agent=name,
                                    skills=[cards.skill("s", "S", "d", tags=["t"])])
            publisher.publish(MqttMessage(topics.discovery_topic("acme", unit, name), encode_json(card), retain=True))
        with Discovery(unit=unit, agent=uid("disco"), broker=broker_url, wait=5.0) as disco:
            assert [row["agent"] for row in disco.table()] == names
            assert disco.settled() is True
        with pytest.raises(TypeError, match="seconds"):
            Discovery(unit=unit, agent=uid("disco"), broker=broker_url, wait="soon")
    finally:
        for name in names:
            publisher.publish(MqttMessage(topics.discovery_topic("acme", unit, name), b"", retain=True))
        publisher.close()


@pytest.mark.parametrize("call, words", [
    (lambda r: r.send("echo", 123), "the content of a message is text (a str), a part (a dict) or a list of them, not int"),
    (lambda r: r.send("echo", None), "not NoneType"),
    (lambda r: r.send(123, "hi"), "the agent to ask is a name such as 'echo' or 'pool:NAME' (a str) or an Address, not int"),
    (lambda r: Requester(broker=5), "broker: a URL such as 'mqtt://127.0.0.1:1883' (a str) or a BrokerEndpoint, not int"),
])
def test_a_wrong_argument_type_gets_a_sentence(broker_url, call, words):
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    try:
        with pytest.raises(TypeError) as caught:
            call(req)
        assert words in str(caught.value)
    finally:
        req.close()


def test_load_traffic_of_a_number_says_what_it_takes():
    from a2a_nb import load_traffic

    with pytest.raises(TypeError, match=r"^load_traffic\(\) takes a recording's path, a Recorder, a list of "
                                        r"records or a DataFrame, not int$"):
        load_traffic(42)


def test_a_probe_report_prints_in_one_short_line():
    from a2a_nb.probe.report import ProbeReport

    report = ProbeReport("echo", "acme", "support", "core", rows=[], card={}, seconds=1.5,
                         traffic=[{"topic": "t", "payload": "x" * 1000}] * 100)
    shown = repr(report)
    assert len(shown) < 400 and "\n" not in shown and str(report) == shown
    assert shown.startswith("<ProbeReport echo (acme/support): Core conformant") and "report.text()" in shown


def test_a_second_story_served_run_tells_the_whole_story_with_new_task_ids(private_broker):
    """With --served the desk keeps its finished tasks: a run that reused the task id got the stored
    task back (fewer steps, still "OK"). Each run's task is its own."""
    import os
    import re
    import subprocess
    import sys

    env = dict(os.environ, A2A_BROKER_URL=private_broker.url)
    cli = [sys.executable, "-m", "a2a_nb"]
    desk = subprocess.Popen(cli + ["serve", "ticket-desk", "--pace", "0.01"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in desk.stdout.readline()
        runs = [subprocess.run(cli + ["story", "--scenario", "happy", "--served", "--pace", "0"], env=env,
                               capture_output=True, text=True, timeout=120) for _ in range(2)]
        for run in runs:
            assert run.returncode == 0, run.stdout + run.stderr
        tasks = [re.search(r"Task\.id (\S+)…", run.stdout).group(1) for run in runs]
        assert tasks[0] != tasks[1]
        assert len(runs[1].stdout.splitlines()) == len(runs[0].stdout.splitlines()), runs[1].stdout
    finally:
        desk.terminate()
        assert desk.wait(timeout=15) == 0
