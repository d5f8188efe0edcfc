"""One agent's side of ``ubsp-v1``: its keys, whom it trusts, and the four steps of an interaction.

Profile: Optional Untrusted-Broker Security Profile 3-12. A requester seals a request to the
responder and opens the replies; a responder opens the request and seals every reply and stream
item to the requester. Each step turns one :class:`~a2a_nb.protocol.packet.MqttMessage` into
another: sealed messages carry the JOSE Content Type and the profile's user properties, opened ones
carry the plain JSON-RPC payload, so everything else in the kit handles them as it handles any
message. :class:`Ubsp` is given to a ``Requester`` or ``Responder`` (``ubsp=...``); it is bound to
the agent's session when the agent starts.
"""
from __future__ import annotations

import copy
import logging
import dataclasses
import time
from typing import Any, Callable, Mapping, Optional

from ..mqtt.session import Session
from ..protocol import properties, topics, ubsp
from ..protocol.bounded_json import loads_bounded
from ..protocol.packet import MqttMessage
from .directory import WAIT_S, KeyDirectory
from .keys import AgentKeys, KeySet, SealError
from .trust import KeyTrust, UntrustedKeySource

log = logging.getLogger(__name__)


class Ubsp:
    """``keys``: this agent's keys; ``trust``: which key metadata to believe; ``metadata``: where
    others find this agent's public keys (``{"jwksUri": url}`` served by a trusted host, or
    ``{"jwks": keys.public_jwks()}`` for peers that trust inline sets)."""

    def __init__(self, keys: AgentKeys, trust: KeyTrust, metadata: Optional[dict[str, Any]] = None):
        self.keys, self.trust = keys, trust
        self.agent = keys.agent
        self.metadata = metadata if metadata is not None else {"jwks": keys.public_jwks()}
        self.directory: Optional[KeyDirectory] = None
        self._where: Optional[tuple[Session, str, str]] = None  # the session, org and unit of ``bind``
        self.speaks_for = {self.agent}  # this agent and the instances it spawned (``for_instance``)
        self.refused = 0  # protected messages that could not be opened (tampered, replayed, untrusted, misaddressed)

    def for_instance(self, agent: str) -> "Ubsp":
        """The protection of an instance this (card) agent spawns for a handover: the card agent's
        keys speak for it. The instance has no card, so it publishes the card agent's key metadata on
        its own event topic: a requester resolves the instance's keys like any agent's, and a
        ``jwksUri`` only a trusted host serves is what it gets (Optional Task Handover under ubsp-v1)."""
        view = copy.copy(self)
        view.agent = agent
        self.speaks_for.add(agent)
        return view

    def bind(self, session: Session, org: str, unit: str) -> None:
        """Follow the key metadata of the agents of ``org``/``unit`` through ``session`` (called by
        the agent when it starts; an instance shares its card agent's directory)."""
        self._where = (session, org, unit)
        if self.directory is None:
            self.directory = KeyDirectory(session, self.trust, org, unit)

    def card_extension(self) -> dict[str, Any]:
        """The Agent Card extension that offers ``ubsp-v1`` with this agent's key metadata."""
        return ubsp.card_extension(self.metadata)

    def announce(self) -> None:
        """Publish this agent's key metadata, retained, on its event topic (an agent without a card:
        a requester, a spawned instance, the probe; item 7). After :meth:`bind`."""
        session, org, unit = self._bound()
        session.publish(ubsp.key_metadata_message(org, unit, self.agent, self.metadata))

    def withdraw(self) -> None:
        """Clear what :meth:`announce` published (a retained message outlives the session); a session
        that can no longer publish leaves it (logged)."""
        session, org, unit = self._bound()
        try:
            session.publish(ubsp.key_metadata_message(org, unit, self.agent, None), timeout=2.0)
        except Exception as exc:  # the broker is gone, the session closed
            log.warning("%s: could not clear its key metadata: %s", self.agent, exc)

    def _bound(self) -> tuple[Session, str, str]:
        if self._where is None:
            raise RuntimeError(f"{self.agent}: bind(session, org, unit) first")
        return self._where

    def _peer_keys(self, org: str, unit: str, agent: str, wait: float = 0.0, fetch: bool = True) -> KeySet:
        """``wait``: a requester waits for a card it may not have read yet; a responder does not (the
        requester announced its keys before its request, and an inline responder runs on the network
        thread, which must not wait for itself)."""
        if self.directory is None:
            raise UntrustedKeySource(f"{self.agent} is not connected: it cannot look up {agent}'s keys")
        return self.directory.key_set(org, unit, agent, wait, fetch)

    # -- requester side -------------------------------------------------------------------------------
    def seal_request(self, msg: MqttMessage, org: str, unit: str, recipient: str, jti: Optional[str] = None) -> MqttMessage:
        """``msg`` with its payload sealed to ``recipient`` (items 5, 8); :class:`UntrustedKeySource`
        when the recipient has no trusted key (fail closed: no plaintext fallback). ``jti``: the
        request's id, which its replies must name (:meth:`open_reply`'s ``answers``)."""
        sealed = self.keys.seal(msg.payload, recipient, self._peer_keys(org, unit, recipient, wait=WAIT_S),
                                sender=self.agent, jti=jti)
        return dataclasses.replace(msg, payload=sealed.encode(), content_type=ubsp.CONTENT_TYPE, payload_format=1,
                                   user_properties=msg.user_properties + ubsp.request_properties(self.agent, recipient))

    def open_reply(self, msg: MqttMessage, org: str, unit: str,
                   answers: Optional[tuple[str, Optional[bytes], Any]] = None) -> MqttMessage:
        """A protected reply opened (item 9); :class:`SealError` when it is not one from the agent it
        names, or (``answers``: the request's ``jti``, Correlation Data and JSON-RPC id) when it is
        not bound to that request: a reply captured from another exchange."""
        problem = ubsp.response_problem(msg, self.agent)
        if problem is not None:
            raise SealError(problem)
        responder = msg.user_property(properties.RESPONDER_AGENT_ID) or ""
        def bound(claims: Mapping[str, Any], payload: bytes) -> Optional[str]:
            assert answers is not None
            return ubsp.binding_problem(claims, *answers, is_error=ubsp.is_plaintext_refusal(_json_or_none(payload)))
        return self._open(msg, responder, org, unit, wait=WAIT_S, also=bound if answers is not None else None)[0]

    def read_recorded(self, msg: MqttMessage, org: str, unit: str) -> MqttMessage:
        """A recorded protected reply sealed to this agent, opened again to be read (a notebook that
        holds the requester's keys looks into its recording): who sealed it is checked, its age and
        the replay cache are not (this agent opened it once already, live)."""
        problem = ubsp.response_problem(msg, self.agent)
        if problem is not None:
            raise SealError(problem)
        responder = msg.user_property(properties.RESPONDER_AGENT_ID) or ""
        opened = self.keys.open(msg.payload, responder, lambda who: self._peer_keys(org, unit, who, WAIT_S),
                                now=time.time(), recipient=self.agent, recorded=True)
        return dataclasses.replace(msg, payload=opened.payload, content_type=None, payload_format=None,
                                   user_properties=ubsp.without_ubsp(msg.user_properties))

    # -- responder side -------------------------------------------------------------------------------
    def open_request(self, msg: MqttMessage) -> MqttMessage:
        """A protected request opened (items 8, 11, 12): the JSON-RPC payload, and of the profile's
        properties only ``a2a-security-profile`` and ``a2a-requester-agent-id``, which tell the
        responder to seal its replies to that requester. :class:`SealError` names the problem (the
        responder answers ``transport_protocol_error``)."""
        problem = ubsp.request_problem(msg, self.agent)
        if problem is not None:
            raise SealError(problem)
        requester = msg.user_property(properties.REQUESTER_AGENT_ID) or ""
        org, unit = _org_unit(msg.response_topic)
        opened, claims = self._open(msg, requester, org, unit)
        return dataclasses.replace(opened, user_properties=opened.user_properties + (
            (properties.SECURITY_PROFILE, ubsp.PROFILE), (properties.REQUESTER_AGENT_ID, requester),
            (ubsp.OPENED_JTI, str(claims["jti"]))))

    def seal_reply(self, msg: MqttMessage, sender: str, requester: str,
                   binding: Optional[dict[str, Any]] = None, fetch: bool = True) -> MqttMessage:
        """A reply or stream item sealed by ``sender`` (this agent, or an instance it spawned and
        handed the task to) to ``requester`` (items 6, 9); ``binding``: the request it answers
        (:func:`a2a_nb.protocol.ubsp.reply_binding`), signed into it. ``fetch=False``: only with
        keys already at hand (the refusal of a request that could not be opened costs no fetch)."""
        if sender not in self.speaks_for:
            raise SealError(f"{self.agent}'s keys do not speak for {sender}")
        org, unit = _org_unit(msg.topic)
        sealed = self.keys.seal(msg.payload, requester, self._peer_keys(org, unit, requester, fetch=fetch), sender=sender,
                                binding=binding)
        props = tuple((k, v) for k, v in msg.user_properties if k != properties.RESPONDER_AGENT_ID)
        return dataclasses.replace(msg, payload=sealed.encode(), content_type=ubsp.CONTENT_TYPE, payload_format=1,
                                   user_properties=props + ubsp.response_properties(requester, sender))

    def _open(self, msg: MqttMessage, sender: str, org: str, unit: str, wait: float = 0.0,
              also: Optional[Callable[[Mapping[str, Any], bytes], Optional[str]]] = None) -> tuple[MqttMessage, dict[str, Any]]:
        try:
            opened = self.keys.open(msg.payload, sender, lambda who: self._peer_keys(org, unit, who, wait), now=time.time(),
                                    recipient=self.agent, also=also)
        except (SealError, UntrustedKeySource):
            self.refused += 1
            raise
        return dataclasses.replace(msg, payload=opened.payload, content_type=None, payload_format=None,
                                   user_properties=ubsp.without_ubsp(msg.user_properties)), opened.claims


def _json_or_none(payload: bytes) -> Any:
    try:
        return loads_bounded(payload)
    except ValueError:
        return None


def _org_unit(topic: Optional[str]) -> tuple[str, str]:
    """The org and unit of a reply topic (where a requester's metadata is looked up)."""
    info = topics.parse_topic(topic or "")
    if info is None:
        raise SealError(f"cannot tell the requester's org and unit from {topic!r}")
    return info.org, info.unit
