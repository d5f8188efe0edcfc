"""The conformance probe against live agents on the real Mosquitto.

The kit's agents (echo, the ticket desk with its analysts and a pool) pass Core; a second, small
implementation written on a bare session (``probe.examples.SketchAgent``) passes too, and each
deliberate mistake it can make is named by the right rule id. Each agent runs in its own unit, so
cards left by other tests never matter; the session-wide clean-up after every test
(``tests/conftest.py``) is why each report is made inside one fixture.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from a2a_nb.agents.auth import BearerPolicy, LocalIssuer
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.cli import main
from a2a_nb.mqtt.broker import ENV_URL
from a2a_nb.mqtt.secure import SecureBroker
from a2a_nb.probe import CHECKS, ProbeError, probe, run_probe
from a2a_nb.probe.examples import Mistakes, SketchAgent, careless_agent
from a2a_nb.probe.report import COLUMNS
from a2a_nb.probe.rules import CORE, FAIL, MUST, NOT_APPLICABLE, PASS, SHOULD, SKIPPED
from a2a_nb.protocol import cards, errors, jsonrpc
from a2a_nb.protocol.jsonrpc import PARAMS_TYPE
from a2a_nb.protocol.packet import MqttMessage, encode_json
from a2a_nb.story.cast import TicketDesk, desk_card, echo_card, echo_handler
from tests.sdk_check import assert_valid
from tests.without_pandas import run_without_pandas

CORE_BUDGET_S = 10.0
"""The issue's bound for the whole Core probe of a local agent."""


def _failed(report) -> dict[str, str]:
    return {r.rule: r.level for r in report.rows if r.verdict == FAIL}


def probed(agent: SketchAgent, broker_url: str, via=run_probe):
    """``via`` (``run_probe``: the report; ``probe``: its DataFrame) of ``agent`` at the Core level, with
    short timeouts (the sketch answers at once); then the agent stops."""
    try:
        return via(agent.agent, unit=agent.unit, broker=broker_url, timeout=0.5)
    finally:
        agent.stop()


ECHO_PROGRESS: list = []  # (row, seconds since the probe started): run_probe(progress=...) of echo_report


@pytest.fixture(scope="module")
def echo_report(broker_url):
    agent = Responder("echo", echo_handler, unit="probe-echo", card=echo_card(unit="probe-echo"), broker=broker_url,
                      options=ResponderOptions(inline=True))
    started = time.monotonic()
    try:
        return run_probe("echo", unit="probe-echo", broker=broker_url,
                         progress=lambda row: ECHO_PROGRESS.append((row, time.monotonic() - started)))
    finally:
        agent.stop()


@pytest.fixture(scope="module")
def desk_report(broker_url):
    desk = TicketDesk(unit="probe-desk", broker=broker_url, pool="desks")
    try:
        return run_probe("ticket-desk", unit="probe-desk", broker=broker_url, level="extended", pool="desks")
    finally:
        desk.stop()


def test_echo_is_core_conformant_within_the_time_bound(echo_report):
    assert echo_report.core_conformant, echo_report.text()
    assert echo_report.exit_code() == 0
    assert not _failed(echo_report), echo_report.text()
    assert echo_report.seconds < CORE_BUDGET_S
    assert echo_report.summary().startswith("echo (acme/probe-echo): Core conformant")
    rows = {r.check: r for r in echo_report.rows}
    assert rows["correlation-binary"].verdict == PASS and rows["correlation-text"].verdict == PASS
    assert rows["multi-turn"].verdict == NOT_APPLICABLE  # echo never asks for input
    assert [r.check for r in echo_report.rows] == [c.name for c in CHECKS if c.conformance == CORE]


def test_progress_hears_of_every_row_as_its_check_ends(echo_report):
    """Lesson 08 prints a mark per check as the probe goes: every row, in order, and as it happens
    (the first rows long before the probe ends), not all at the end."""
    assert [row for row, _ in ECHO_PROGRESS] == echo_report.rows
    assert ECHO_PROGRESS[0][1] < echo_report.seconds / 2


def test_echo_answers_with_a_message_which_the_report_notes_for_interop(echo_report):
    assert any(note.startswith("result-schema: the agent answers SendMessage with a Message") for note in
               echo_report.interop)


def test_ticket_desk_passes_core_with_handover_and_its_pool(desk_report):
    assert desk_report.core_conformant, desk_report.text()
    assert not [r for r in desk_report.rows if r.verdict == FAIL and r.level == MUST], desk_report.text()
    assert desk_report.seconds < CORE_BUDGET_S + 5  # Extended: two more streamed tickets
    rows = {r.check: r for r in desk_report.rows}
    for name in ("handover-responder-id", "multi-turn", "cancel-task", "stream-artifacts", "pooled-responder-id",
                 "subscribe-to-task", "idempotent-resend"):
        assert rows[name].verdict == PASS, (name, rows[name])
    assert "GetTask" in rows["handover-responder-id"].sent and "analyst-" in rows["handover-responder-id"].sent
    assert "task handover" in desk_report.summary() and "shared-subscription dispatch (pools)" in desk_report.summary()


def test_every_well_formed_request_of_the_probe_is_valid_a2a(echo_report, desk_report):
    """The probe's own requests that an agent accepted validate against the a2a-sdk v1.0 types."""
    checked = 0
    for report in (echo_report, desk_report):
        answered = {rec["correlation"] for i, rec in enumerate(report.traffic)
                    if i not in report.sent and isinstance(rec["payload_json"], dict) and "result" in rec["payload_json"]}
        for i in report.sent:
            rec = report.traffic[i]
            payload = rec["payload_json"]
            if rec["correlation"] in answered and isinstance(payload, dict) and payload.get("method") in PARAMS_TYPE:
                assert_valid(PARAMS_TYPE[payload["method"]], payload.get("params", {}))
                checked += 1
    assert checked >= 10


def test_the_report_as_a_dataframe_and_junit(echo_report):
    df = echo_report.frame()
    assert list(df.columns) == COLUMNS
    assert set(df["verdict"]) <= {PASS, NOT_APPLICABLE}
    assert set(df["level"]) == {MUST, SHOULD}
    assert df.attrs["summary"] == echo_report.summary()
    suite = ET.fromstring(echo_report.junit())
    assert int(suite.get("tests")) == len(df) and suite.get("failures") == "0"
    assert len(suite.findall("testcase/skipped")) == (df["verdict"] == NOT_APPLICABLE).sum()


@pytest.mark.parametrize("mistake, check, rule", [
    ("wrong_correlation", "correlation-text", "reply-correlation"),
    ("own_task_ids", "task-id-echo", "task-id-stable"),
    ("reply_after_final", "after-stream-final", "after-stream-final"),
    ("reflect_response_topic", "reflected-response-topic", "reflected-response-topic"),
    ("text_correlation", "correlation-binary", "reply-correlation"),
    ("handover_without_property", "handover-responder-id", "handover-responder-id"),
])
def test_each_mistake_is_named_by_its_rule(broker_url, mistake, check, rule):
    unit = "probe-" + mistake.replace("_", "-")
    report = probed(SketchAgent("sketch", unit=unit, broker=broker_url, mistakes=Mistakes(**{mistake: True})),
                    broker_url)
    row = next(r for r in report.rows if r.check == check)
    assert (row.verdict, row.rule) == (FAIL, rule), report.text()
    if row.level == MUST:
        assert report.exit_code() == 1 and not report.core_conformant
        assert rule in report.summary()
    else:  # the kit's hardening, a SHOULD: named, but not a Core failure
        assert report.exit_code() == 0 and report.core_conformant


def test_a_sketch_without_mistakes_is_core_conformant(broker_url):
    """A second implementation, not built on the kit's Responder, passes too: the probe tests the profile."""
    df = probed(SketchAgent("sketch", unit="probe-sketch", broker=broker_url), broker_url, via=probe)
    assert FAIL not in set(df["verdict"]), df[df["verdict"] == FAIL].to_string()
    assert "Core conformant" in df.attrs["summary"]


class StrictSketch(SketchAgent):
    """Rejects a request without Correlation Data with -32005 (Responder Behavior 2's SHOULD) instead
    of dropping it: the error reply can carry no Correlation Data either."""

    def _on_request(self, msg: MqttMessage) -> None:
        if msg.correlation_data is None and msg.response_topic:
            error = jsonrpc.error_response(None, errors.transport_protocol_error("no Correlation Data"))
            self.session.publish_then(MqttMessage(msg.response_topic, encode_json(error)), lambda ack: None)
            return
        super()._on_request(msg)


class FragileSketch(SketchAgent):
    """Disconnects for good when a payload is not JSON."""

    def _on_request(self, msg: MqttMessage) -> None:
        if msg.payload.startswith(b"{") and not msg.payload.rstrip().endswith(b"}"):
            threading.Thread(target=self.session.close).start()
            return
        super()._on_request(msg)


def test_rejecting_a_request_without_correlation_data_is_fine_too(broker_url):
    report = probed(StrictSketch("sketch", unit="probe-strict", broker=broker_url), broker_url)
    row = next(r for r in report.rows if r.check == "no-reply-path")
    assert row.verdict == PASS and "error -32005 (transport_protocol_error)" in row.received
    assert report.core_conformant and not _failed(report), report.text()


def test_an_agent_that_goes_silent_fails_there_and_the_rest_is_skipped(broker_url):
    report = probed(FragileSketch("sketch", unit="probe-fragile", broker=broker_url), broker_url)
    verdicts = {r.check: r.verdict for r in report.rows}
    assert verdicts["parse-error"] == FAIL
    assert "no longer answers" in next(r.remark for r in report.rows if r.check == "parse-error")
    after = {r.check: r.verdict for r in report.rows[[r.check for r in report.rows].index("parse-error") + 1:]
             if not r.check.startswith("lint:")}
    assert after.pop("no-bearer-echo") == NOT_APPLICABLE  # it only reads what came before (and sent no token)
    assert after and set(after.values()) == {SKIPPED}
    assert report.exit_code() == 1 and not report.core_conformant
    assert "NOT Core conformant (MUST failed: error-parse" in report.summary()


def test_no_card_is_one_error_line_with_a_hint(broker_url, capsys):
    with pytest.raises(ProbeError, match=r"no card for nobody in acme/probe-empty; known agents: none"):
        run_probe("nobody", unit="probe-empty", broker=broker_url, timeout=0.3)
    assert main(["probe", "nobody", "--unit", "probe-empty", "--broker", broker_url, "--timeout", "0.3"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: no card for nobody in acme/probe-empty; known agents: none"
    assert err[1].startswith("hint: is the agent served") and len(err) == 2


def test_cli_json_and_junit_exit_1_on_a_must_failure(broker_url, tmp_path):
    agent = careless_agent(unit="probe-cli", broker=broker_url)
    junit = tmp_path / "probe.xml"
    try:
        done = subprocess.run([sys.executable, "-m", "a2a_nb", "probe", "careless", "--unit", "probe-cli", "--json",
                               "--junit", str(junit), "--timeout", "0.5"], capture_output=True, text=True, timeout=60,
                              env={**os.environ, ENV_URL: broker_url})
    finally:
        agent.stop()
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    failed = {c["rule"] for c in report["checks"] if c["verdict"] == FAIL}
    assert {"task-id-stable", "reply-correlation"} <= failed
    assert report["core_conformant"] is False and report["exit_code"] == 1
    suite = ET.parse(junit).getroot()
    assert int(suite.get("tests")) == len(report["checks"]) and int(suite.get("failures")) == len(
        [c for c in report["checks"] if c["verdict"] == FAIL])


def test_cli_probe_runs_without_pandas_as_with_it(broker_url):
    """The probe and the traffic lint it runs at its end need no pandas: the same verdicts either way."""
    agent = careless_agent(unit="probe-nopandas", broker=broker_url)
    args = ("probe", "careless", "--unit", "probe-nopandas", "--json", "--timeout", "0.5")
    env = {**os.environ, ENV_URL: broker_url}
    try:
        without = run_without_pandas(*args, timeout=60, env=env)
        with_pandas = subprocess.run([sys.executable, "-m", "a2a_nb", *args], capture_output=True, text=True,
                                     timeout=60, env=env)
    finally:
        agent.stop()
    assert without.returncode == with_pandas.returncode == 1, without.stderr
    verdicts = [[(c["check"], c["verdict"]) for c in json.loads(done.stdout)["checks"]] for done in (without, with_pandas)]
    assert verdicts[0] == verdicts[1]  # the traffic lint ran over the probe's traffic in both


def test_a_desk_that_checks_bearer_tokens_over_tls():
    """On a broker where every client logs in as itself, the probe logs in as `cli` and sends the
    token the desk's card asks for: the desk passes, and the token never comes back."""
    plain = desk_card()
    card = cards.agent_card(
        name=plain["name"], description=plain["description"], version="1.0.0", org="acme", unit="support",
        agent="ticket-desk", skills=plain["skills"],
        security_schemes={"acme-oauth": cards.oauth2_scheme("https://auth.acme.example/token", {"tickets.analyze": "x"})},
        security_requirements=[cards.requirement("acme-oauth", ["tickets.analyze"])])
    issuer = LocalIssuer(issuer="https://auth.acme.example", kid="probe-test")
    policy = BearerPolicy.from_card(card, issuer=issuer.issuer, audience="acme/support/ticket-desk",
                                    key=issuer.public_key)
    token = issuer.token("acme/support/ticket-desk", ["tickets.analyze"], subject="acme/support/cli")
    with SecureBroker(cast=("cli", "ticket-desk"), pools={}) as broker:
        desk = Responder("ticket-desk", lambda ctx: "done", card=card, broker=broker.credentials("ticket-desk"),
                         auth=policy)
        login = broker.credentials("cli")
        try:
            with pytest.raises(ProbeError, match="asks for a bearer token"):
                run_probe("ticket-desk", broker=login, probe_as="cli")
            report = run_probe("ticket-desk", broker=login, probe_as="cli", token=token)
        finally:
            desk.stop()
    assert report.core_conformant and not _failed(report), report.text()
    row = next(r for r in report.rows if r.check == "no-bearer-echo")
    assert row.verdict == PASS and "Bearer" in row.sent
    assert not any(token in json.dumps(rec) for rec in report.traffic)  # records redact it, replies never had it


def test_the_kits_requests_reach_an_agent_that_reads_correlation_data_as_text(broker_url):
    """Interop: the kit's Correlation Data is UTF-8 text (hex), so an agent that decodes it as text
    (and stops on other bytes, as the probe's correlation-binary check shows) answers every request."""
    agent = SketchAgent("sketch", unit="probe-text-corr", broker=broker_url, mistakes=Mistakes(text_correlation=True))
    try:
        with Requester("coordinator", unit="probe-text-corr", broker=broker_url) as req:
            replies = [req.send("sketch", f"hello {i}") for i in range(20)]
    finally:
        agent.stop()
    assert [r.text for r in replies] == [f"sketch: hello {i}" for i in range(20)]
    assert all(r.mqtt.correlation_data.decode("utf-8") for r in replies)


@pytest.mark.parametrize("argv, phrase", [
    (["probe", "no/slash"], "agent_id 'no/slash' contains characters not allowed"),
    (["probe", "echo", "--level", "full"], "unknown level 'full'; choose from core, extended"),
    (["probe", "echo", "--timeout", "0"], "0 is out of range; give a number of seconds greater than 0"),
])
def test_probe_usage_mistakes_exit_2_before_connecting(argv, phrase, capsys):
    try:
        status = main(argv + ["--broker", "mqtt://127.0.0.1:1"])  # nothing listens there
    except SystemExit as exc:  # argparse refuses the option value itself
        status = exc.code
    assert status == 2
    assert phrase in capsys.readouterr().err


def test_native_binary_chunks_are_an_extended_feature(broker_url):
    def chunks(ctx):
        for i in range(3):
            ctx.chunk("blob", bytes([i]) * 64, content_type="application/octet-stream", last=i == 2)
        ctx.complete("sent 3 chunks")

    card = echo_card(unit="probe-binary", agent="chunker")
    agent = Responder("chunker", chunks, unit="probe-binary", card=card, broker=broker_url)
    try:
        report = run_probe("chunker", unit="probe-binary", broker=broker_url, level="extended")
    finally:
        agent.stop()
    row = next(r for r in report.rows if r.check == "binary-artifacts")
    assert row.verdict == PASS and row.received.startswith("3 binary chunk(s)"), report.text()
    assert report.core_conformant and "native binary artifact mode" in report.summary()
