"""Running the probe: read the agent's retained card, run the checks in order, bound every wait.

``run_probe(agent)`` connects a :class:`~a2a_nb.probe.client.ProbeClient`, waits for the agent's
retained Agent Card (Profile: Discovery Topic, Discovery Subscriber Behavior 2), then runs every
check of the chosen level. After each check that sent bad input it asks whether the agent still
answers (a GetTask for a task that does not exist, the profile's own health signal: Presence
Subscriber Behavior 4); once the agent is silent, the remaining checks are ``skipped``. Finally the
traffic lint (``a2a_nb.traffic.lint``) reads everything the agent published during the probe.

Every wait is bounded, so the probe always ends with a verdict: each reply is waited for
``timeout`` (1 s), each exchange lasts ``EXCHANGE_DEADLINE_FACTOR`` (10) timeouts at most (a stream
that never ends fails with "no terminal state within 10 s"), and the whole probe ``deadline``
seconds (default ``DEADLINE_FACTOR`` (60) timeouts): after that the remaining checks are
``skipped`` ("the probe's deadline of 60 s ran out") and the agent is not Core conformant.

The checks share a few exchanges through :class:`~a2a_nb.probe.probe_run.ProbeRun` (the first
SendMessage, a finished task, an interrupted one), so each is made once: the whole Core probe of a
local agent takes a few seconds.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Optional, Union

from ..error_base import A2ANbError
from ..mqtt.broker import BrokerEndpoint
from ..protocol import cards, topics
from ..protocol.packet import MqttMessage
from ..protocol.safe_text import safe_text
from ..traffic.lint import lint_findings
from ..traffic.records import to_record
from . import rules
from .client import Cut, ProbeClient, json_of
from .probe_run import ProbeRun
from .report import ProbeReport, Row

LEVELS = ("core", "extended")
DEADLINE_FACTOR = 60
"""The whole probe ends within this many ``timeout`` unless ``deadline`` says otherwise (60 s with
the default 1 s: a Core probe of a local agent takes 3-4 s, one of an agent whose streams never end
about 35 s)."""
KNOWN_SHOWN = 10
"""How many other agents' names a "no card" error lists."""


class ProbeError(A2ANbError, RuntimeError):
    """The probe cannot start: no card for the agent, or the broker is not there. ``hint`` says what to do."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def discover(client: ProbeClient, agent: str, wait: float) -> tuple[dict, MqttMessage]:
    """The agent's retained card (and the message it came in), or ``ProbeError`` naming the agents
    whose cards are there (Profile: Discovery Subscriber Behavior 1-2). The card is read with
    ``cards.read_card_message`` (64 KiB, 64 levels of nesting); other agents' cards are only counted."""
    found: list[MqttMessage] = []
    others: set[str] = set()
    own = topics.discovery_topic(client.org, client.unit, agent)

    def on_card(msg: MqttMessage) -> None:
        info = topics.parse_topic(msg.topic)
        if info is None or not info.agent or not msg.payload:
            return
        if info.agent == agent:
            found.append(msg)
        elif len(others) <= 1000:
            others.add(info.agent)

    client.session.subscribe(topics.discovery_filter(client.org, client.unit), handler=on_card)
    deadline = time.monotonic() + wait
    while not found and time.monotonic() < deadline:  # retained cards arrive right after the SUBACK
        time.sleep(0.01)
    client.session.unsubscribe(topics.discovery_filter(client.org, client.unit))
    if not found:
        names = sorted(others)
        known = ", ".join(safe_text(n, 60) for n in names[:KNOWN_SHOWN]) or "none"
        if len(names) > KNOWN_SHOWN:
            known += f" and {len(names) - KNOWN_SHOWN} more"
        raise ProbeError(f"no card for {agent} in {client.org}/{client.unit}; known agents: {known}",
                         "is the agent served (`python -m a2a_nb serve ...`) on this broker, with these --org/--unit?")
    msg = found[0]
    read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
    if read is None or read.card is None:
        why = read.error if read is not None else "not on a discovery topic"
        raise ProbeError(f"the card on {own} is no card: {safe_text(why, 120)}",
                         "publish a valid A2A v1.0 AgentCard, retained (see Agent Card Requirements)")
    client.keep(msg)
    return read.card, msg


def _speak_ubsp(client: ProbeClient, trust: Optional[Any]) -> tuple[Optional[Any], Optional[Any]]:
    """The probe's ubsp-v1 side for the Extended checks: keys from this machine's key home, served
    there, announced retained on the probe's event topic; ``(None, None)`` without the ``secure`` extra."""
    try:
        from ..ubsp.local_keys import LocalKeys
    except ImportError:
        return None, None
    local = LocalKeys()
    protection = local.ubsp(client.org, client.unit, client.agent, trust)
    protection.bind(client.session, client.org, client.unit)
    protection.announce()
    return protection, local


def run_probe(agent: str, *, org: str = "acme", unit: str = "support",
              broker: Union[str, BrokerEndpoint, None] = None, level: str = "core", pool: Optional[str] = None,
              token: Optional[str] = None, timeout: float = 1.0, probe_as: Optional[str] = None,
              progress: Optional[Callable[[Row], None]] = None, deadline: Optional[float] = None,
              trust: Optional[Any] = None) -> ProbeReport:
    """Probe ``agent`` live and return the report (one row per check).

    ``level``: ``core`` (Core conformance) or ``extended`` (also pools, native binary artifacts).
    ``pool``: a pool the agent serves (for the pooled-reply check). ``token``: a bearer token to
    send with every request (only over TLS). ``timeout``: seconds each check waits for a reply; an
    exchange (a stream too) lasts 10 timeouts at most. ``deadline``: seconds the whole probe may
    take (default 60 timeouts); the checks it leaves are ``skipped``, and the verdict says so.
    ``probe_as``: the probe's own agent_id (default ``probe-`` and 8 random hex digits), e.g. an
    agent with a login on a broker where every client logs in as itself (``broker --secure``).
    ``progress``: called with each row as soon as its check is done (the probe takes seconds: most
    checks answer in milliseconds, but a check whose right answer is silence waits ``timeout``).
    ``trust``: the ``a2a_nb.ubsp.trust.KeyTrust`` the ubsp-v1 checks resolve the agent's keys with
    (default: this machine's key home, ``a2a_nb.ubsp.local_keys``, which also serves the probe's keys).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if not timeout > 0 or deadline is not None and not deadline > 0:
        raise ValueError(f"timeout and deadline must be positive seconds, got {timeout!r} and {deadline!r}")
    topics.discovery_topic(org, unit, agent)  # InvalidIdentifier (a usage mistake) before anything connects
    started = time.monotonic()
    deadline = DEADLINE_FACTOR * timeout if deadline is None else deadline
    client = ProbeClient(org, unit, broker=broker, timeout=timeout, agent=probe_as, ends_at=started + deadline)
    local, run_ubsp = None, None
    try:
        if token and not client.session.endpoint.tls:
            raise ProbeError("a bearer token may only travel over TLS (Profile: OAuth 2.0 and OIDC over MQTT "
                             "User Properties 5)", "probe over an mqtts:// broker URL")
        card, card_msg = discover(client, agent, wait=max(timeout, 1.0))
        if card.get("securityRequirements") and not token:
            asked = card["securityRequirements"]
            schemes = sorted({str(name) for req in (asked if isinstance(asked, list) else []) if isinstance(req, dict)
                              and isinstance(req.get("schemes"), (dict, list)) for name in req["schemes"]})
            raise ProbeError(f"the card of {agent} asks for a bearer token on every request (securityRequirements: "
                             f"{safe_text(', '.join(schemes), 120)}); without one every check would only see the "
                             "refusal",
                             "give --token TOKEN (an access token for this agent), over an mqtts:// broker")
        run = ProbeRun(client, agent, card, card_msg, level, pool, token, deadline=deadline)
        if level == "extended":
            run_ubsp, local = _speak_ubsp(client, trust)
            run.ubsp = run_ubsp
        rows = []
        for c in rules.CHECKS:
            if level == "extended" or c.conformance == rules.CORE:
                rows.append(_run_check(run, c))
                if progress is not None:
                    progress(rows[-1])
        found = lint_rows(run, rows)
        for row in found:
            if progress is not None:
                progress(row)
        rows += found
    finally:
        if run_ubsp is not None:
            run_ubsp.withdraw()  # the probe's key metadata goes with it
        client.close()
        if local is not None:
            local.close()
    traffic = [record_of(m) for m in client.traffic]
    return ProbeReport(agent, org, unit, level, rows, card, time.monotonic() - started, traffic,
                       frozenset(client.sent), deadline=deadline, ran_out=client.ran_out, not_kept=client.not_kept)


def record_of(msg: MqttMessage) -> dict:
    """The recording record of a message as the probe read it: a payload it does not read as JSON
    (not JSON, nested deeper than 64 levels, a :class:`Cut`) is recorded as bytes, and a Cut with
    the size it had."""
    if msg.payload and msg.payload_format != 0 and json_of(msg) is None:
        rec = to_record(replace(msg, payload_format=0))
        rec["payload_format"] = msg.payload_format
    else:
        rec = to_record(msg)
    if isinstance(msg, Cut):
        rec["size"] = msg.size
    return rec


def _run_check(run: ProbeRun, c: rules.Check) -> Row:
    if run.silent_after is not None and not c.passive:
        outcome = rules.Outcome(rules.SKIPPED, remark=f"not run: the agent stopped answering after {run.silent_after}")
    elif run.client.ran_out and not c.passive:
        outcome = rules.Outcome(rules.SKIPPED, remark=f"not run: {run.out_of_time}")
    else:
        try:
            outcome = c.run(run)
        except Exception as exc:  # a check that trips over an odd answer reports it instead of ending the probe
            outcome = rules.failed("", "", f"the check could not read the agent's answer: {type(exc).__name__}: {exc}")
        if run.client.ran_out and not c.passive:  # cut short: its verdict would blame the agent for the probe's clock
            return Row.of(c, rules.Outcome(rules.SKIPPED, outcome.sent, outcome.received,
                                           f"not finished: {run.out_of_time}"))
        if c.bad_input:
            run.bad_inputs.append(c.name)
            if run.alive() is None and not run.client.ran_out:
                run.silent_after = c.name
                silent = "After this input the agent no longer answers (a GetTask got no reply)."
                remark = f"{outcome.remark.rstrip('.')}. {silent}" if outcome.remark else silent
                outcome = rules.failed(outcome.sent, outcome.received, remark)
    return Row.of(c, outcome)


def lint_rows(run: ProbeRun, rows: list[Row]) -> list[Row]:
    """The traffic lint over everything the agent published during the probe: one row per rule it
    broke that no live check has already failed (Profile: every rule of ``a2a_nb.traffic.lint``)."""
    traffic = list(run.client.traffic)
    records = [record_of(m) for m in traffic]
    findings = lint_findings(records)
    # A request sent without Correlation Data may rightly be answered with an error that has none
    # (Responder Behavior 2): what arrives on its reply topic is the no-reply-path check's business.
    bare = {m.response_topic for i, m in enumerate(traffic) if i in run.client.sent and m.correlation_data is None}
    exempt = {i for i, m in enumerate(traffic) if m.topic in bare} | run.client.sent
    already = {r.rule for r in rows if r.verdict == rules.FAIL}
    by_rule: dict[str, list[tuple]] = {}  # in order of each rule's first finding
    for finding in findings:
        if finding[3] not in exempt and finding[0] not in already:
            by_rule.setdefault(finding[0], []).append(finding)
    out = []
    for rule_id, group in by_rule.items():
        _, level, section, _, explanation = group[0]
        out.append(Row(f"lint:{rule_id}", str(rule_id), str(level), rules.CORE, str(section),
                       "found by the traffic lint in what the agent published during the probe",
                       f"{len(records)} messages of this probe", f"{len(group)} finding(s)", rules.FAIL,
                       str(explanation)))
    return out
