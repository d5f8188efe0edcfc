"""Extended conformance: the untrusted-broker security profile ``ubsp-v1`` and trusted JKU policy
(``--level extended``).

Profile: Optional Untrusted-Broker Security Profile 3-12; Security Metadata and Trust 1-3;
Conformance Levels (Extended 1, 6). The probe speaks ubsp-v1 itself (``ProbeRun.ubsp``: its keys,
served by this machine's key home, and the trust it was given): it seals requests to the key the
card's metadata names and opens the replies, then tries what an operator on the broker could:
re-address a sealed request, replay one, and announce a requester whose keys sit behind a
``jwksUri`` no one should trust.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from ..protocol import errors, jsonrpc, messages, ubsp
from ..protocol.packet import MqttMessage
from ..protocol.safe_text import safe_text
from .client import Exchange, json_of
from .probe_run import ProbeRun
from .rules import EXTENDED, MUST, SHOULD, Outcome, check, failed, not_applicable, passed

UNTRUSTED_URI = "https://keys.untrusted.invalid/jwks.json"
SECTION = "Optional Untrusted-Broker Security Profile"


def _not_offered(run: ProbeRun) -> Optional[Outcome]:
    """Why the ubsp-v1 checks cannot run (the card does not offer it, the probe cannot speak it)."""
    if ubsp.card_key_metadata(run.card) is None:
        return not_applicable(f"not offered: the card has no ubsp-v1 key metadata (extension {ubsp.EXTENSION_URI})")
    if run.ubsp is None:
        return not_applicable("this probe cannot speak ubsp-v1 here (install the 'secure' extra)")
    return None


def sealed_request(run: ProbeRun, text: str = "a2a_nb probe: a sealed request", *, recipient: Optional[str] = None,
                   as_agent: Optional[str] = None) -> MqttMessage:
    """A SendMessage sealed to the agent's key (``UntrustedKeySource`` when that key is not trusted);
    ``recipient``: another ``a2a-recipient-agent-id`` on the wire; ``as_agent``: sealed in the name
    of another requester id (signed with the probe's keys)."""
    protection = run.ubsp if as_agent is None else run.ubsp.for_instance(as_agent)
    payload = run.client.request_payload(jsonrpc.SEND_MESSAGE, messages.send_message_params(run.message(text)))
    msg = protection.seal_request(MqttMessage(run.request_topic, payload, user_properties=run.props()),
                                  run.org, run.unit, run.agent)
    if recipient is not None:
        msg = replace(msg, user_properties=ubsp.without_ubsp(msg.user_properties)
                      + ubsp.request_properties(protection.agent, recipient))
    return msg


def _sealed_or_why(run: ProbeRun, **kw: Any) -> tuple[Optional[MqttMessage], Optional[Outcome]]:
    """A sealed request for a check that needs one, or why the check does not apply."""
    why_not = _not_offered(run)
    if why_not is not None:
        return None, why_not
    try:
        return sealed_request(run, **kw), None
    except ValueError as exc:  # UntrustedKeySource, SealError: ubsp-round-trip reports it as a failure
        return None, not_applicable(f"no trusted key for the agent: {safe_text(str(exc), 160)}")


def exchange(run: ProbeRun, msg: MqttMessage) -> Exchange:
    return run.client.exchange(msg.topic, msg.payload, user_properties=msg.user_properties,
                               content_type=msg.content_type)


def opened(run: ProbeRun, reply: MqttMessage) -> tuple[Any, str]:
    """The JSON-RPC reply, opened when sealed and read within the probe's bounds (``json_of``; None
    when it cannot be read), and how it came."""
    if not ubsp.is_protected(reply):
        found = json_of(reply)
        return found, "in plaintext" if found is not None else "in plaintext, not JSON"
    try:
        plain = run.ubsp.open_reply(reply, run.org, run.unit)
    except ValueError as exc:
        return None, f"sealed, but not for the probe: {safe_text(str(exc), 160)}"
    return json_of(plain), "sealed to the probe"


def _refused(run: ProbeRun, ex: Exchange, sent: str, what: str) -> Outcome:
    """Passed when the agent answered -32005 (sealed or not), failed when it ran the request."""
    if ex.first is None:
        return failed(sent, ex.came_back(), f"no answer: {what} must be refused with -32005 transport_protocol_error")
    reply, how = opened(run, ex.first)
    err = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(err, dict) and err.get("code") == errors.TRANSPORT_PROTOCOL_ERROR:
        return passed(sent, f"error -32005 {how}: {safe_text(str(err.get('message')), 120)}")
    if isinstance(reply, dict) and "result" in reply:
        return failed(sent, f"a result {how}", f"{what} was processed: it must be refused (-32005)")
    return failed(sent, ex.came_back() + f" ({how})", f"{what} must be answered with -32005 transport_protocol_error")


@check("ubsp-round-trip", "ubsp-v1", "a request sealed to the card's key is answered sealed to the "
       "requester's key, with the profile's user properties", conformance=EXTENDED)
def ubsp_round_trip(run: ProbeRun) -> Outcome:
    why_not = _not_offered(run)
    if why_not is not None:
        return why_not
    sent = "SendMessage sealed to the agent's key (JWE, a2a-security-profile ubsp-v1)"
    try:
        msg = sealed_request(run)
    except ValueError as exc:  # UntrustedKeySource, SealError
        return failed("resolving the card's key metadata", safe_text(str(exc), 200),
                      "the probe could not get a trusted key for the agent (give --trust-host / --ca)")
    ex = exchange(run, msg)
    if ex.first is None:
        return failed(sent, ex.came_back(), "no answer to a sealed request")
    problem = ubsp.response_problem(ex.first, run.ubsp.agent)
    if problem is not None:
        return failed(sent, ex.came_back(), f"the reply is not a ubsp-v1 reply: {problem}")
    reply, how = opened(run, ex.first)
    if not isinstance(reply, dict) or "result" not in reply:
        return failed(sent, f"{ex.came_back()} ({how})", "the sealed reply is not a JSON-RPC result")
    return passed(sent, f"a result {how} ({ex.first.content_type})")


@check("ubsp-recipient", "ubsp-recipient-mismatch", "a sealed request whose a2a-recipient-agent-id names another "
       "agent is refused with -32005", conformance=EXTENDED, level=MUST, section=f"{SECTION} 11")
def ubsp_recipient(run: ProbeRun) -> Outcome:
    other = f"{run.client.agent}-elsewhere"
    msg, why_not = _sealed_or_why(run, recipient=other)
    if msg is None:
        return why_not or not_applicable("no sealed request")
    return _refused(run, exchange(run, msg), f"sealed SendMessage with a2a-recipient-agent-id {other}",
                    "a request addressed to another agent")


@check("ubsp-replay", "ubsp-replay", "a sealed request published again (same JWE, new Correlation Data) is "
       "refused as a replay", conformance=EXTENDED, level=SHOULD, section=f"{SECTION} 12")
def ubsp_replay(run: ProbeRun) -> Outcome:
    msg, why_not = _sealed_or_why(run)
    if msg is None:
        return why_not or not_applicable("no sealed request")
    first = exchange(run, msg)
    if first.first is None:
        return failed("a sealed SendMessage", first.came_back(), "no answer to the first copy")
    return _refused(run, exchange(run, msg), "the same sealed SendMessage again, new Correlation Data",
                    "a replayed request")


@check("trusted-jku", "trusted-jku", "the agent's keys sit behind a jwksUri the probe trusts, and the agent refuses "
       "a requester whose keys sit behind an untrusted one", conformance=EXTENDED, level=SHOULD,
       section="Security Metadata and Trust 1-3; Conformance Levels (Extended 1)")
def trusted_jku(run: ProbeRun) -> Outcome:
    why_not = _not_offered(run)
    if why_not is not None:
        return why_not
    meta: Any = ubsp.card_key_metadata(run.card)
    if not isinstance(meta.get("jwksUri"), str):
        return not_applicable("not offered: the card's key metadata has no jwksUri (inline keys only)")
    impostor = f"{run.client.agent}-jku"
    announce = ubsp.key_metadata_message(run.org, run.unit, impostor,
                                         {"jwksUri": UNTRUSTED_URI, "jwks": run.ubsp.keys.public_jwks()})
    ack = run.client.session.publish(announce)
    if not ack.accepted:
        return not_applicable(f"the broker did not let the probe announce a second requester ({ack.reason})")
    try:
        msg = sealed_request(run, as_agent=impostor)
        return _refused(run, exchange(run, msg), f"sealed SendMessage from {impostor}, whose keys are announced at "
                        f"{UNTRUSTED_URI} (and inline)", "a request whose requester's keys are not trusted")
    finally:
        run.client.session.publish(ubsp.key_metadata_message(run.org, run.unit, impostor, None))
