"""``probe --level extended``: the ubsp-v1 and trusted JKU checks, against the kit's agents served
with keys from a key home (as ``serve`` does), an agent without ubsp-v1, and agents that get it wrong.
Real Mosquitto. Profile: Optional Untrusted-Broker Security Profile 3-12; Security Metadata and Trust."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest

from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.mqtt.status_plugin import plugin_path
from a2a_nb.probe import run_probe
from a2a_nb.probe.rules import FAIL, NOT_APPLICABLE, PASS
from a2a_nb.protocol import cards, properties, ubsp
from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler
from a2a_nb.ubsp.keys import AgentKeys, parse_key_set
from a2a_nb.ubsp.local_keys import LocalKeys
from tests.helpers import uid
from a2a_nb.ubsp.protection import Ubsp
from a2a_nb.ubsp.trust import KeyTrust

UBSP_CHECKS = ("ubsp-round-trip", "ubsp-recipient", "ubsp-replay", "trusted-jku")


def verdicts(report) -> dict[str, str]:
    return {r.check: r.verdict for r in report.rows if r.check in UBSP_CHECKS}


@pytest.fixture
def local():
    """The key home the probe uses too (the tests' own: A2A_UBSP_DIR, set by conftest)."""
    with LocalKeys() as keys:
        yield keys


def probe(agent: str, u: str, broker_url: str, local: LocalKeys):
    return run_probe(agent, unit=u, broker=broker_url, level="extended", trust=local.trust, timeout=1.0)


def test_echo_and_the_ticket_desk_pass_every_ubsp_check(broker_url, local):
    """The agents `serve` runs: all four checks pass, and the summary names both Extended features."""
    u = uid("probe-ubsp")
    echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=broker_url,
                     options=ResponderOptions(inline=True), ubsp=local.ubsp("acme", u, "echo"))
    desk = TicketDesk(unit=u, broker=broker_url, pace=0.0, ubsp=local.ubsp("acme", u, "ticket-desk"))
    try:
        for agent in ("echo", "ticket-desk"):
            report = probe(agent, u, broker_url, local)
            assert verdicts(report) == dict.fromkeys(UBSP_CHECKS, PASS), report.text()
            assert "untrusted-broker security profile (ubsp-v1)" in report.summary()
            assert "trusted JKU policy" in report.summary() and report.core_conformant
            assert not [r for r in report.rows if r.check.startswith("lint:")], report.text()
    finally:
        echo.stop()
        desk.stop()


def test_an_agent_without_ubsp_is_reported_not_offered(broker_url, local):
    u = uid("probe-ubsp")
    echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=broker_url,
                     options=ResponderOptions(inline=True))
    try:
        report = probe("echo", u, broker_url, local)
        assert verdicts(report) == dict.fromkeys(UBSP_CHECKS, NOT_APPLICABLE)
        assert all("not offered" in r.remark for r in report.rows if r.check in UBSP_CHECKS)
    finally:
        echo.stop()


class _Careless(Ubsp):
    """An agent that opens whatever is sealed to its key: no recipient check, and a fresh replay
    cache every time (its keys reloaded per request), so replays pass."""

    def open_request(self, msg):
        requester = msg.user_property(properties.REQUESTER_AGENT_ID) or ""
        org, unit = msg.topic.split("/")[3:5]
        opened = AgentKeys(self.agent, self.keys.private_jwks(), replays=ubsp.ReplayCache()).open(
            msg.payload, requester, lambda who: self._peer_keys(org, unit, who), now=time.time())
        return replace(msg, payload=opened.payload, content_type=None, user_properties=ubsp.without_ubsp(
            msg.user_properties) + ((properties.SECURITY_PROFILE, ubsp.PROFILE), (properties.REQUESTER_AGENT_ID, requester),
                                    (ubsp.OPENED_JTI, opened.claims["jti"])))


class _Credulous(KeyTrust):
    """A trust that takes inline keys whatever the jwksUri next to them says."""

    def key_set_for(self, metadata, fetch=True):
        return parse_key_set(metadata["jwks"]) if "jwks" in metadata else super().key_set_for(metadata, fetch)


def test_an_agent_that_skips_the_recipient_check_replay_cache_or_jku_policy_fails_those_checks(broker_url, local):
    u = uid("probe-ubsp")
    keys = local.ubsp("acme", u, "echo")
    careless = _Careless(keys.keys, _Credulous(allowed_hosts=keys.trust.allowed_hosts, ca_file=keys.trust.ca_file),
                         keys.metadata)
    echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=broker_url, ubsp=careless)
    try:
        report = probe("echo", u, broker_url, local)
        got = verdicts(report)
        assert got["ubsp-round-trip"] == PASS
        assert got["ubsp-recipient"] == FAIL and got["ubsp-replay"] == FAIL and got["trusted-jku"] == FAIL, report.text()
        assert report.exit_code() == 1  # a MUST of an offered Extended feature failed
    finally:
        echo.stop()


def test_a_card_whose_keys_the_probe_does_not_trust_fails_the_round_trip_with_the_reason(broker_url, local):
    u = uid("probe-ubsp")
    keys = local.ubsp("acme", u, "echo")
    echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=broker_url,
                     ubsp=Ubsp(keys.keys, keys.trust, {"jwksUri": "https://keys.elsewhere.example/echo.json"}))
    try:
        report = probe("echo", u, broker_url, local)
        row = next(r for r in report.rows if r.check == "ubsp-round-trip")
        assert row.verdict == FAIL and "keys.elsewhere.example" in row.received and "--trust-host" in row.remark
    finally:
        echo.stop()


def test_the_card_extension_is_valid_a2a():
    """The extension the kit adds to a card is valid A2A v1.0 (checked by the a2a-sdk types)."""
    from tests.sdk_check import assert_valid

    card = echo_card()
    card["capabilities"]["extensions"] = [ubsp.card_extension({"jwksUri": "https://127.0.0.1:1/x.json"})]
    assert_valid("AgentCard", card)
    assert cards.card_matches(card, capabilities=("streaming",))


@pytest.fixture(scope="module")
def status_broker():
    from a2a_nb.mqtt.broker import EmbeddedBroker

    with EmbeddedBroker(broker_status=True) as b:  # as `python -m a2a_nb broker` starts it
        yield b.url


def test_the_report_lists_the_six_extended_capabilities(status_broker, local):
    """``serve echo`` (inline, task events on, keys from the key home) on the kit's broker (with the
    a2a_status plugin): five of six pass; echo serves no pool here, so pools are not offered."""
    u = uid("probe-ubsp")
    echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=status_broker,
                     options=ResponderOptions(inline=True, task_events=True), ubsp=local.ubsp("acme", u, "echo"))
    try:
        report = probe("echo", u, status_broker, local)
    finally:
        echo.stop()
    status = "pass" if plugin_path() is not None else "not offered"
    assert report.capabilities == {
        "trusted JKU policy": "pass", "broker-managed status": status,
        "extended observability": "pass", "native binary artifact mode": "pass",
        "shared-subscription dispatch": "not offered", "untrusted-broker security profile (ubsp-v1)": "pass"}
    assert "Extended capabilities: trusted JKU policy: pass;" in report.text()
    assert report.as_dict()["capabilities"]["untrusted-broker security profile (ubsp-v1)"] == "pass"
    events = next(r for r in report.rows if r.check == "task-events")
    assert events.received.startswith("1 event(s) on $a2a/v1/event/acme/") and events.received.endswith("completed")
    assert not [r for r in report.rows if r.check.startswith("lint:")], report.text()


def test_the_ticket_desk_serving_a_pool_passes_the_four_that_need_no_keys(status_broker):
    """``serve ticket-desk --pool analysts`` (task events on, no ubsp keys here) probed with ``--pool
    analysts``: broker-managed status, task events, binary chunks (the orders CSV) and pools pass."""
    u = uid("probe-ubsp")
    desk = TicketDesk(unit=u, broker=status_broker, pace=0.0, pool="analysts", task_events=True)
    try:
        report = run_probe("ticket-desk", unit=u, broker=status_broker, level="extended", pool="analysts", timeout=1.0)
    finally:
        desk.stop()
    caps = report.capabilities
    assert caps["extended observability"] == "pass" and caps["shared-subscription dispatch"] == "pass"
    assert caps["broker-managed status"] == ("pass" if plugin_path() is not None else "not offered")
    assert caps["native binary artifact mode"] == "pass" and report.core_conformant
    events = next(r for r in report.rows if r.check == "task-events")
    assert "working → input-required" in events.received, events.received


def test_without_the_plugin_or_task_events_both_capabilities_are_not_offered(local):
    from a2a_nb.mqtt.broker import EmbeddedBroker

    u = uid("probe-ubsp")
    with EmbeddedBroker(broker_status=False) as plain:
        echo = Responder("echo", echo_handler, unit=u, card=echo_card(unit=u), broker=plain.url)
        try:
            report = run_probe("echo", unit=u, broker=plain.url, level="extended", timeout=0.5)
        finally:
            echo.stop()
    assert report.capabilities["broker-managed status"] == "not offered"
    assert report.capabilities["extended observability"] == "not offered"
    rows = {r.check: r for r in report.rows}
    assert "a2a-status-source='agent'" in rows["broker-status"].remark
    assert "no task-status-update event" in rows["task-events"].remark
