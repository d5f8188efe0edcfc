"""Clear failures, no tracebacks: every command turns mistakes and outages into an ``error:`` line.

Each test runs the real ``python -m a2a_nb`` as a subprocess (a real Mosquitto behind it, or a closed
loopback port for "unreachable") and checks the exit status (0 success, 1 expected failure, 2 usage,
130 Ctrl-C), the words a learner reads, and that no Python traceback reaches stderr.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from a2a_nb.commands import roles as cli_roles
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.mqtt.broker import BrokerEndpoint, free_port
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.mqtt.session import ConnectFailed, Session
from a2a_nb.protocol import topics
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.cast import HANDOVER_PLANS, TicketDesk, echo_card, echo_handler
from a2a_nb.story.scenarios import SCENARIOS
from tests.bench_command import run_bench
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]


def run(args, env, timeout=60):
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=timeout)


def start(args, env):
    """A command running in the background, its output unbuffered so lines arrive as printed."""
    return subprocess.Popen(CLI + args, env=dict(env, PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def read_until(proc, marker: str, timeout: float = 30.0) -> str:
    """stdout lines of ``proc`` up to the first containing ``marker`` (fails if it ends first)."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    proc.kill()
    raise AssertionError(f"{marker!r} never printed; stdout: {''.join(seen)}; stderr: {proc.stderr.read()}")


def assert_clean_failure(out, status: int, *phrases: str) -> None:
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == status, (out.returncode, out.stdout, out.stderr)
    for phrase in phrases:
        assert phrase in out.stderr, out.stderr


@pytest.fixture
def env(broker_url, tmp_path):
    """A2A_BROKER_URL exported; `send` keeps its routes in a state folder of the test's own."""
    return dict(os.environ, A2A_BROKER_URL=broker_url, XDG_STATE_HOME=str(tmp_path / "state"))


@pytest.fixture
def closed_port_env(tmp_path):
    """A2A_BROKER_URL naming a loopback port nobody listens on."""
    return dict(os.environ, A2A_BROKER_URL=f"mqtt://127.0.0.1:{free_port()}", XDG_STATE_HOME=str(tmp_path / "state"))


@pytest.fixture
def silent_port():
    """A loopback port that takes TCP connections (the kernel's backlog) and never answers a byte:
    to a client, a broker that never answers, without waiting on the internet."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


@pytest.fixture
def cards(broker_url):
    """Publish retained Agent Cards (as an agent would) and clear them afterwards."""
    session = Session("acme", "errs", uid("cards"), broker=broker_url)
    published = []

    def publish(unit: str, agent: str, status: str = "online") -> None:
        topic = topics.discovery_topic("acme", unit, agent)
        session.publish(MqttMessage(topic, json.dumps(echo_card("acme", unit, agent)).encode(), qos=1, retain=True,
                                    user_properties=(("a2a-status", status),)))
        published.append(topic)

    yield publish
    for topic in published:
        session.publish(MqttMessage(topic, b"", qos=1, retain=True))
    session.close()


# -- the broker is not there ---------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["send", "echo", "hi"],
    ["serve", "echo"],
    ["story", "--pace", "0"],
    ["record", "--out", "{tmp}/r.jsonl", "--seconds", "1"],
], ids=lambda argv: argv[0])
def test_unreachable_broker_is_one_error_line_and_exit_1(argv, closed_port_env, tmp_path):
    out = run([a.format(tmp=tmp_path) for a in argv], closed_port_env)
    assert_clean_failure(out, 1, "error: cannot reach the MQTT broker at mqtt://127.0.0.1:", "python -m a2a_nb broker")


def test_unreachable_broker_is_one_error_line_for_the_benchmarks_too(closed_port_env):
    out = run_bench(["-n", "5", "--stream-n", "5", "--rounds", "1", "--load-tasks", "0"], closed_port_env)
    assert_clean_failure(out, 1, "error: cannot reach the MQTT broker at mqtt://127.0.0.1:", "python -m a2a_nb broker")


@pytest.mark.parametrize("url", ["http://x", "mqtt://host:notaport", "garbage", "mqtt://127.0.0.1:99999"])
def test_bad_broker_url_says_what_it_must_look_like(url):
    out = run(["send", "echo", "hi"], dict(os.environ, A2A_BROKER_URL=url))
    assert_clean_failure(out, 2, f"error: A2A_BROKER_URL: broker URL {url!r}", "mqtt://127.0.0.1:1883")
    assert len(out.stderr.strip().splitlines()) == 1


def test_bad_broker_option_is_named_and_lint_ignores_the_variable(tmp_path):
    out = run(["record", "--out", str(tmp_path / "r.jsonl"), "--broker", "tcp://x:1"], dict(os.environ))
    assert_clean_failure(out, 2, "error: --broker: broker URL 'tcp://x:1' must start with mqtt:// or mqtts://")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    lint = run(["lint", str(empty)], dict(os.environ, A2A_BROKER_URL="garbage"))  # lint needs no broker
    assert lint.returncode == 0, lint.stderr


def test_broker_lost_mid_story_exits_1_with_a_clear_line(private_broker):
    story = start(["story", "--scenario", "full", "--pace", "0.2"], dict(os.environ, A2A_BROKER_URL=private_broker.url))
    try:
        read_until(story, "[05]")
        private_broker.stop()
        _, err = story.communicate(timeout=60)
    finally:
        story.kill()
    assert "Traceback" not in err, err
    assert story.returncode == 1, err
    assert f"error: lost the broker at mqtt://127.0.0.1:{private_broker.port}" in err, err
    assert "hint: start it again, then rerun the command" in err


def test_story_served_without_agents_says_to_serve_them(private_broker):
    out = run(["story", "--served", "--scenario", "no-handover"], dict(os.environ, A2A_BROKER_URL=private_broker.url))
    assert_clean_failure(out, 1, "error: no online agent with a root-cause-analysis skill",
                         "hint: serve them first: no-handover needs the desk served without handover: "
                         "`python -m a2a_nb serve ticket-desk --handover none`")


def test_a_broker_that_never_answers_is_named_at_once(silent_port, tmp_path):
    """No ten seconds of silence: `connecting to URL ...` comes within moments, and Ctrl-C then ends
    the wait quietly."""
    env = dict(os.environ, A2A_BROKER_URL=f"mqtt://127.0.0.1:{silent_port}", XDG_STATE_HOME=str(tmp_path))
    send = start(["send", "echo", "hi"], env)
    try:
        line = send.stderr.readline()
        still_waiting = send.poll() is None  # the line came while it waits for the CONNACK, not after giving up
        send.send_signal(signal.SIGINT)
        _, err = send.communicate(timeout=20)
    finally:
        send.kill()
    assert line == f"connecting to mqtt://127.0.0.1:{silent_port} ...\n"
    assert still_waiting, "the line came only when the command gave up"
    assert send.returncode == 130 and err.strip() == "interrupted", err


def test_the_connect_error_says_what_never_answered(silent_port):
    """The whole connect (TCP, TLS, CONNACK) has one time limit, and the message says which part failed."""
    t = time.monotonic()
    with pytest.raises(ConnectFailed) as failed:
        Session("acme", "errs", "silent", broker=f"mqtt://127.0.0.1:{silent_port}", connect_timeout=0.5)
    assert time.monotonic() - t < 3
    assert str(failed.value) == (f"cannot reach the MQTT broker at mqtt://127.0.0.1:{silent_port}: the port took the "
                                 "connection but sent no CONNACK within 0.5 s: is it an MQTT v5 broker?; if that port "
                                 "expects TLS, use mqtts:// instead of mqtt://")
    with pytest.raises(ConnectFailed, match="nothing listens on port .* Is it running"):
        Session("acme", "errs", "closed", broker=f"mqtt://127.0.0.1:{free_port()}")
    with pytest.raises(ConnectFailed, match=r"unknown host 'no-such-host\.invalid'"):
        Session("acme", "errs", "nowhere", broker="mqtt://no-such-host.invalid:1883", connect_timeout=3)


def test_mqtts_on_a_plain_port_says_tls_is_the_cause(broker_url, tmp_path):
    plain = BrokerEndpoint.from_url(broker_url)
    tls_url = f"mqtts://127.0.0.1:{plain.port}"
    out = run(["send", "echo", "hi"], dict(os.environ, A2A_BROKER_URL=tls_url, XDG_STATE_HOME=str(tmp_path)))
    assert_clean_failure(out, 1, f"error: cannot reach the MQTT broker at {tls_url}: the TLS handshake failed",
                         "the port answers, but not with TLS; for a plain MQTT port use mqtt:// instead of mqtts://")
    assert "Is it running" not in out.stderr


def test_tls_mistakes_on_a_tls_port_are_named_at_once():
    """``mqtt://`` on a TLS port: the broker closes the connection without a CONNACK, said at once
    (not after the timeout); ``mqtts://`` without the broker's CA: the certificate is not trusted;
    a wrong password: the broker's CONNACK code, kept on the exception. No password is ever printed."""
    with SecureBroker() as broker:
        login = broker.credentials("echo")
        plain = BrokerEndpoint(port=broker.port, username=login.username, password=login.password, inflight=0)
        t = time.monotonic()
        with pytest.raises(ConnectFailed, match="closed the connection without answering CONNECT; if that port "
                                                "expects TLS, use mqtts:// instead of mqtt://") as closed:
            Session("acme", "support", "echo", broker=plain, connect_timeout=10)
        assert time.monotonic() - t < 5
        untrusted = BrokerEndpoint(port=broker.port, tls=True, username=login.username, password=login.password)
        with pytest.raises(ConnectFailed, match="its TLS certificate is not trusted .*A2A_BROKER_CA") as no_ca:
            Session("acme", "support", "echo", broker=untrusted)
        with pytest.raises(ConnectFailed, match=r"refused acme/support/echo: Not authorized \(135\)") as refused:
            Session("acme", "support", "echo", broker=login.with_credentials(login.username, "wrong"))
        assert refused.value.reason_code == 135 and closed.value.reason_code is None
        for failure in (closed, no_ca, refused):
            assert login.password not in str(failure.value) and "wrong" not in str(failure.value)


def test_debug_flag_shows_the_traceback(closed_port_env):
    out = run(["--debug", "send", "echo", "hi"], closed_port_env)
    assert out.returncode == 1 and "Traceback" in out.stderr and "ConnectFailed" in out.stderr  # a SessionError


# -- send: who is there? -------------------------------------------------------------------------------
def test_send_to_an_unknown_agent_lists_the_known_ones_at_once(env, broker_url, cards):
    unit = uid("errs")
    cards(unit, "ticket-desk")
    cards(unit, "echo")  # replaced by the responder's own card; cleared at the end by the fixture
    echo = Responder("echo", echo_handler, org="acme", unit=unit, card=echo_card("acme", unit),
                     broker=broker_url, options=ResponderOptions(inline=True))
    try:
        t = time.monotonic()
        out = run(["send", "ecko", "hi", "--unit", unit, "--timeout", "30"], env)
        elapsed = time.monotonic() - t
        assert_clean_failure(out, 1, f"error: no card for ecko in acme/{unit}; known agents: echo, ticket-desk",
                             "check the agent name, --org and --unit")
        assert elapsed < 10, "answered without waiting for the 30 s reply timeout"
        known = run(["send", "echo", "hi", "--unit", unit], env)
        assert known.returncode == 0 and "echo: hi" in known.stdout, known.stderr
    finally:
        echo.stop()


def test_card_check_of_a_known_agent_costs_milliseconds(broker_url, cards):
    unit = uid("errs")
    cards(unit, "echo")
    session = Session("acme", unit, "cli-check", broker=broker_url)
    try:
        t = time.perf_counter()
        cli_roles.require_card(session, "echo", "acme", unit)
        assert time.perf_counter() - t < cli_roles.CARD_LOOKUP_S / 2
    finally:
        session.close()


def test_agent_with_an_offline_card_is_still_asked_then_times_out_with_a_hint(env, cards):
    unit = uid("errs")
    cards(unit, "ghost", status="offline")
    out = run(["send", "ghost", "hi", "--unit", unit, "--timeout", "0.3"], env)
    assert_clean_failure(out, 1, "note: the card of ghost says a2a-status=offline; sending anyway",
                         "error: timeout:", "ghost", "hint: is the agent served?")
    unknown = run(["send", "ghoul", "hi", "--unit", unit], env)
    assert_clean_failure(unknown, 1, f"no card for ghoul in acme/{unit}; known agents: ghost (offline)")


def test_pool_targets_skip_the_card_check(env):
    out = run(["send", "pool:nobody", "hi", "--unit", uid("errs"), "--timeout", "0.3"], env)
    assert_clean_failure(out, 1, "error: timeout:")
    assert "no card" not in out.stderr


# -- option values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, phrase", [
    (["serve", "ticket-desk", "--handover", "sideways"], "unknown handover plan 'sideways'; choose from none,"),
    (["story", "--scenario", "nope"], "unknown scenario 'nope'; choose from happy,"),
    (["story", "--pace", "-1"], "-1 is out of range; give a number of seconds, 0 or more"),
    (["send", "echo", "hi", "--timeout", "-1"], "-1 is out of range; give a number of seconds greater than 0"),
    (["send", "echo", "hi", "--timeout", "soon"], "'soon' is not a number"),
    (["serve", "analyst", "--pool", "p", "--members", "0"], "give a whole number of at least 1"),
    (["record", "--out", "x.jsonl", "--seconds", "0"], "give a number of seconds greater than 0"),
    (["record", "--out", "x.jsonl", "--filter", "#"], "error: org_filter '#' must start with '$a2a/'"),
    (["broker", "--port", "70000"], "give a TCP port between 1 and 65535"),
    (["serve", "analyst"], "error: serve analyst needs --pool NAME"),
    (["send", "no/slash", "hi"], "error: "),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_bad_option_values_are_usage_errors(argv, phrase, env):
    out = run(argv, env)
    assert_clean_failure(out, 2, phrase)


@pytest.mark.parametrize("argv, phrase", [
    (["-n", "0"], "0 is out of range; give a whole number of at least 1"),
    (["--load-tasks", "-5"], "give a whole number, 0 or more"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_bad_benchmark_option_values_are_usage_errors(argv, phrase, env):
    out = run_bench(argv, env)
    assert_clean_failure(out, 2, phrase)


@pytest.mark.parametrize("argv", [["send", "--bogus"], ["send", "echo", "hi", "--bogus"],
                                  ["send", "--bogus", "echo", "hi"]], ids=["alone", "after", "before"])
def test_an_unknown_option_shows_the_commands_own_usage(argv, env):
    out = run(argv, env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("usage: python -m a2a_nb send "), out.stderr
    assert "python -m a2a_nb send: error: " in out.stderr
    if argv[1:] != ["--bogus"]:
        assert "unrecognized arguments: --bogus" in out.stderr


def test_choices_match_the_story():
    assert cli_roles.HANDOVER_PLANS == HANDOVER_PLANS
    assert cli_roles.SCENARIO_NAMES == (*SCENARIOS, "full")


# -- files -----------------------------------------------------------------------------------------------
def _junk_files(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.jsonl").write_bytes(b"\x00\x01\xff\xfejunk\n")
    (tmp_path / "shape.jsonl").write_text('{"hello": "world"}\n')
    (tmp_path / "list.jsonl").write_text("[1, 2, 3]\n")
    return {
        "missing": (tmp_path / "missing.jsonl", "no recording at"),
        "folder": (tmp_path / "folder", "is a folder, not a recording"),
        "binary": (tmp_path / "binary.jsonl", "not text (a recording is UTF-8 JSON lines"),
        "shape": (tmp_path / "shape.jsonl", 'got an object without "v"'),
        "list": (tmp_path / "list.jsonl", "got a JSON list"),
    }


def test_lint_of_what_is_not_a_recording_is_one_line_exit_2(tmp_path):
    for name, (path, phrase) in _junk_files(tmp_path).items():
        out = run(["lint", str(path)], dict(os.environ))
        assert_clean_failure(out, 2, phrase)
        assert len(out.stderr.strip().splitlines()) == 1, (name, out.stderr)


def test_record_refuses_folders_and_foreign_files_before_connecting(tmp_path, closed_port_env):
    files = _junk_files(tmp_path)
    folder = run(["record", "--out", str(files["folder"][0])], closed_port_env)
    assert_clean_failure(folder, 2, "is a folder; give a file name")
    foreign = files["binary"][0]
    before = foreign.read_bytes()
    out = run(["record", "--out", str(foreign)], closed_port_env)
    assert_clean_failure(out, 2, "exists and is not a recording; choose another file")
    assert foreign.read_bytes() == before


def test_story_checks_record_and_charts_paths_first(tmp_path, env):
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    rec = run(["story", "--record", str(tmp_path / "folder")], env)
    assert_clean_failure(rec, 2, "--record", "is a folder")
    charts = run(["story", "--charts", str(tmp_path / "a-file")], env)
    assert_clean_failure(charts, 2, "--charts", "is a file; give a folder")
    assert "===" not in rec.stdout + charts.stdout  # no story was told


# -- Ctrl-C ----------------------------------------------------------------------------------------------
def test_ctrl_c_during_send_stream_exits_quietly(env, broker_url):
    unit = uid("errs")
    desk = TicketDesk(org="acme", unit=unit, broker=broker_url, handover="first-reply", pace=0.5)
    try:
        send = start(["send", "ticket-desk", "Analyze ticket TCK-4821\nReproduction: refresh twice", "--stream",
                      "--unit", unit], env)
        try:
            read_until(send, "statusUpdate")
            send.send_signal(signal.SIGINT)
            _, err = send.communicate(timeout=20)
        finally:
            send.kill()
    finally:
        desk.stop()
    assert send.returncode == 130 and err.strip() == "interrupted", err


def test_ctrl_c_during_story_exits_quietly(env):
    story = start(["story", "--scenario", "full", "--pace", "0.2"], env)
    try:
        read_until(story, "[03]")
        story.send_signal(signal.SIGINT)
        _, err = story.communicate(timeout=20)
    finally:
        story.kill()
    assert "Traceback" not in err, err
    assert story.returncode == 130 and "interrupted" in err, err


def test_ctrl_c_on_serve_says_what_it_stops(env):
    serve = start(["serve", "echo", "--unit", uid("errs")], env)
    try:
        read_until(serve, "serving")
        serve.send_signal(signal.SIGINT)
        _, err = serve.communicate(timeout=20)
    finally:
        serve.kill()
    assert serve.returncode == 0, err  # a server stopped on purpose stopped cleanly
    assert err == "Ctrl-C: stopping echo (its card will say offline) ...\nstopped\n", err


# -- the mapping itself (in-process) ----------------------------------------------------------------------
def test_explain_maps_agent_errors_and_unexpected_ones():
    from a2a_nb.cli import build_parser, explain
    from a2a_nb.protocol.errors import A2AError

    args = build_parser().parse_args(["send", "echo", "hi"])
    status, message, hint = explain(A2AError(-32001, "Task not found"), args)
    assert status == 1 and message.startswith("the agent answered error -32001 (") and "Task not found" in message
    status, message, hint = explain(KeyError("oops"), args)
    assert status == 1 and message == "KeyError: 'oops'" and "python -m a2a_nb --debug send" in hint
