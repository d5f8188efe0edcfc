"""A2A v1.0 Agent Cards for MQTT agents: building, reading, selecting.

Profile: Agent Card Requirements, Discovery Subscriber Behavior (reading a card message),
Discovery Interoperability 3 (the MQTT entry of ``supportedInterfaces``), OAuth 2.0 and OIDC over
MQTT User Properties (scopes in the card).

The card names the agent's MQTT request topic in its ``supportedInterfaces`` entry
(``card_interface``: ``mqtt_interface`` writes it, ``request_topic_of`` finds it, ``MQTT_BINDING``
and ``is_mqtt_binding`` name it; this module offers them too, as the card's own vocabulary).
Whether a card is valid is said in one place, ``card_schema`` (``card_problems``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import properties, topics
from .bounded_json import MAX_DEPTH, loads_bounded
from .card_interface import MQTT_BINDING, PROTOCOL_VERSION, is_mqtt_binding, mqtt_interface, request_topic_of
from .card_schema import card_problems
from .properties import UserProperties

__all__ = [
    "MQTT_BINDING", "PROTOCOL_VERSION", "DEFAULT_MODES", "MAX_CARD_BYTES", "is_mqtt_binding", "mqtt_interface",
    "request_topic_of", "bearer_scheme", "oauth2_scheme", "openid_connect_scheme", "requirement", "skill",
    "provider", "agent_card", "parse_card", "CardMessage", "read_card_message", "card_matches",
]

DEFAULT_MODES = ("text/plain", "application/json")
MAX_CARD_BYTES = 64 * 1024
"""Largest Agent Card payload read from a peer (the kit's cards are 1-3 kB; ``parse_card``)."""


def _strs(values: Optional[Iterable[str]], what: str, required: bool = False) -> Optional[list[str]]:
    if values is None:
        if required:
            raise ValueError(f"{what} is required")
        return None
    if isinstance(values, str):
        values = [values]
    out = list(values)
    for v in out:
        if not isinstance(v, str) or not v:
            raise ValueError(f"each entry of {what} must be a non-empty string, got {v!r}")
    if required and not out:
        raise ValueError(f"{what} must not be empty")
    return out


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


# --- security -----------------------------------------------------------------------------------

def bearer_scheme(description: Optional[str] = None, bearer_format: Optional[str] = "JWT") -> dict[str, Any]:
    """SecurityScheme: HTTP bearer token, sent over MQTT as ``a2a-authorization: Bearer <t>``."""
    s: dict[str, Any] = {"scheme": "Bearer"}
    if bearer_format:
        s["bearerFormat"] = bearer_format
    if description:
        s["description"] = description
    return {"httpAuthSecurityScheme": s}


def oauth2_scheme(token_url: str, scopes: Mapping[str, str], *, flow: str = "client_credentials",
                  authorization_url: Optional[str] = None, refresh_url: Optional[str] = None,
                  description: Optional[str] = None,
                  metadata_url: Optional[str] = None) -> dict[str, Any]:
    """SecurityScheme: OAuth 2.0 with one flow (``client_credentials`` or ``authorization_code``).

    ``scopes`` maps scope name -> human description and must not be empty.
    Profile: OAuth 2.0 and OIDC over MQTT User Properties 1 (tokens are acquired out of band).
    """
    if not isinstance(scopes, Mapping) or not scopes:
        raise ValueError("oauth2_scheme needs at least one scope, e.g. {'tickets.read': 'Read tickets'}")
    f: dict[str, Any] = {}
    if flow == "authorization_code":
        f["authorizationUrl"] = _text(authorization_url, "authorization_url")
        key = "authorizationCode"
    elif flow == "client_credentials":
        key = "clientCredentials"
    else:
        raise ValueError(f"flow must be 'client_credentials' or 'authorization_code', got {flow!r}")
    f["tokenUrl"] = _text(token_url, "token_url")
    if refresh_url:
        f["refreshUrl"] = refresh_url
    f["scopes"] = {str(k): str(v) for k, v in scopes.items()}
    s: dict[str, Any] = {"flows": {key: f}}
    if description:
        s["description"] = description
    if metadata_url:
        s["oauth2MetadataUrl"] = metadata_url
    return {"oauth2SecurityScheme": s}


def openid_connect_scheme(openid_connect_url: str, description: Optional[str] = None) -> dict[str, Any]:
    """SecurityScheme: OpenID Connect discovery URL."""
    s: dict[str, Any] = {"openIdConnectUrl": _text(openid_connect_url, "openid_connect_url")}
    if description:
        s["description"] = description
    return {"openIdConnectSecurityScheme": s}


def requirement(scheme: str, scopes: Iterable[str] = ()) -> dict[str, Any]:
    """SecurityRequirement ``{"schemes": {scheme: {"list": [scopes...]}}}``."""
    return {"schemes": {_text(scheme, "scheme"): {"list": _strs(scopes, "scopes") or []}}}


# --- building -----------------------------------------------------------------------------------

def skill(id: str, name: str, description: str, tags: Union[str, Iterable[str]],
          examples: Optional[Iterable[str]] = None, input_modes: Optional[Iterable[str]] = None,
          output_modes: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """AgentSkill; ``tags`` must not be empty (requesters select agents by them)."""
    s: dict[str, Any] = {
        "id": _text(id, "skill id"),
        "name": _text(name, "skill name"),
        "description": _text(description, "skill description"),
        "tags": _strs(tags, "skill tags", required=True),
    }
    for key, values, what in (("examples", examples, "examples"),
                              ("inputModes", input_modes, "input_modes"),
                              ("outputModes", output_modes, "output_modes")):
        vs = _strs(values, what)
        if vs:
            s[key] = vs
    return s


def with_extension(card: dict[str, Any], extension: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``card`` whose ``capabilities.extensions`` declares ``extension`` (replacing one with
    the same ``uri``; Agent Card Requirements 2: transport metadata in extension fields)."""
    caps = dict(card.get("capabilities") or {})
    caps["extensions"] = [e for e in caps.get("extensions") or [] if e.get("uri") != extension["uri"]] + [extension]
    return {**card, "capabilities": caps}


def provider(organization: str, url: str) -> dict[str, Any]:
    """AgentProvider (v1.0 requires both fields)."""
    return {"organization": _text(organization, "organization"), "url": _text(url, "provider url")}


def agent_card(name: str, description: str, version: str, org: str, unit: str, agent: str,
               skills: Sequence[Mapping[str, Any]], streaming: bool = True,
               push_notifications: bool = False, provider: Optional[Mapping[str, str]] = None,
               security_schemes: Optional[Mapping[str, Mapping[str, Any]]] = None,
               security_requirements: Optional[Sequence[Mapping[str, Any]]] = None,
               default_input_modes: Iterable[str] = DEFAULT_MODES,
               default_output_modes: Iterable[str] = DEFAULT_MODES,
               documentation_url: Optional[str] = None, broker_url: Optional[str] = None,
               icon_url: Optional[str] = None) -> dict[str, Any]:
    """A v1.0 AgentCard whose only interface is the agent's MQTT request topic.

    Published retained at ``$a2a/v1/discovery/{org}/{unit}/{agent}`` (Profile: Discovery Topic).
    Raises ``ValueError`` when ``card_schema.card_problems`` finds problems, so a bad card never
    leaves the cell.
    """
    card: dict[str, Any] = {
        "name": _text(name, "name"),
        "description": _text(description, "description"),
        "supportedInterfaces": [mqtt_interface(org, unit, agent, broker_url)],
    }
    if provider is not None:
        card["provider"] = dict(provider)
    card["version"] = _text(version, "version")
    if documentation_url:
        card["documentationUrl"] = documentation_url
    card["capabilities"] = {
        "streaming": bool(streaming),
        "pushNotifications": bool(push_notifications),
        "extendedAgentCard": False,
    }
    if security_schemes:
        card["securitySchemes"] = {k: dict(v) for k, v in security_schemes.items()}
    if security_requirements:
        card["securityRequirements"] = [dict(r) for r in security_requirements]
    card["defaultInputModes"] = _strs(default_input_modes, "default_input_modes", required=True)
    card["defaultOutputModes"] = _strs(default_output_modes, "default_output_modes", required=True)
    card["skills"] = [dict(s) for s in skills]
    if icon_url:
        card["iconUrl"] = icon_url
    problems = card_problems(card)
    if problems:
        raise ValueError("invalid agent card:\n  - " + "\n  - ".join(problems))
    return card


# --- reading -------------------------------------------------------------------------------------

def parse_card(payload: Union[bytes, str]) -> Any:
    """A card payload from a peer, parsed within bounds: at most ``MAX_CARD_BYTES`` (64 KiB) and
    ``MAX_DEPTH`` (64) levels of nesting (``bounded_json``). Raises ``ValueError`` saying why it is
    no card ("card is not usable JSON: nested more than 64 levels deep"); ``card_schema.card_problems``
    then says what a parsed card lacks."""
    try:
        return loads_bounded(payload, max_bytes=MAX_CARD_BYTES, max_depth=MAX_DEPTH)
    except ValueError as exc:
        raise ValueError(f"card is not usable JSON: {exc}") from None


@dataclass(frozen=True)
class CardMessage:
    """What one message on an agent's discovery topic says.

    ``registered`` is False for an empty payload: the agent unregistered (then there is no card).
    Otherwise ``card`` is the card object, or None with ``error`` saying why the payload is no card
    (``parse_card``'s reason, or "card is a JSON list, not an object"). ``status`` and
    ``status_source`` are the message's ``a2a-status`` and ``a2a-status-source`` (None when absent).
    """

    org: str
    unit: str
    agent: str
    registered: bool
    card: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    status: Optional[str] = None
    status_source: Optional[str] = None


def read_card_message(topic: str, payload: Union[bytes, str],
                      user_properties: UserProperties = ()) -> Optional[CardMessage]:
    """Read a message from ``$a2a/v1/discovery/{org}/{unit}/{agent}``; None when ``topic`` is no
    agent's discovery topic (another kind, or malformed).

    Profile: Discovery Subscriber Behavior 2-4 (a retained card is the current registration, a later
    one replaces it, an empty one unregisters), Presence and Liveness 1 (``a2a-status``,
    ``a2a-status-source``; advisory). The payload is a peer's bytes, parsed within bounds
    (``parse_card``); whether the card is valid is ``card_schema.card_problems``' business.
    """
    try:
        info = topics.parse_topic(topic)
    except ValueError:
        return None
    if info is None or info.kind != "discovery" or info.agent is None:
        return None
    if not payload:
        return CardMessage(info.org, info.unit, info.agent, registered=False)
    status = properties.get(user_properties, properties.STATUS)
    source = properties.get(user_properties, properties.STATUS_SOURCE)
    card: Optional[dict[str, Any]] = None
    try:
        parsed = parse_card(payload)
    except ValueError as exc:
        error: Optional[str] = str(exc)
    else:
        card = parsed if isinstance(parsed, dict) else None
        error = None if card is not None else f"card is a JSON {type(parsed).__name__}, not an object"
    return CardMessage(info.org, info.unit, info.agent, True, card, error, status, source)


# --- selecting ----------------------------------------------------------------------------------

def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _list(value: Any) -> list[Any]:
    """``value`` when it is a list, else no items (a peer's card may hold anything)."""
    return value if isinstance(value, list) else []


def _satisfied(req: Mapping[str, Any], held: Union[set[str], Mapping[str, Iterable[str]]]) -> bool:
    named = req.get("schemes", {}) if isinstance(req, Mapping) else {}
    if not isinstance(named, Mapping):
        return False
    for name, scopes in named.items():
        if name not in held:
            return False
        if isinstance(held, Mapping):
            listed = scopes.get("list", []) if isinstance(scopes, Mapping) else []
            if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
                return False  # scopes nobody can hold
            if not set(listed) <= set(held[name]):
                return False
    return True


def card_matches(card: Mapping[str, Any], tags: Iterable[str] = (),
                 capabilities: Iterable[str] = (),
                 schemes: Optional[Union[Iterable[str], Mapping[str, Iterable[str]]]] = None) -> bool:
    """Does this card fit the requester?

    * ``tags``: some skill carries all of them (case-insensitive);
    * ``capabilities``: each is true in ``card.capabilities`` (``"streaming"``,
      ``"push_notifications"`` or ``"pushNotifications"``);
    * ``schemes``: the scheme names the requester can satisfy (or a mapping name -> scopes held,
      which also checks scopes). At least one of the card's ``securityRequirements`` must be
      satisfied; a card without requirements matches. None skips the security check.

    Any JSON value is answered, never raised on: a field of the wrong type (``skills`` a string,
    ``capabilities`` a list) matches nothing (``card_schema.card_problems`` says what is wrong with it).
    """
    if not isinstance(card, Mapping):
        return False
    wanted = {t.lower() for t in ([tags] if isinstance(tags, str) else tags)}
    if wanted:
        ok = False
        for s in _list(card.get("skills")):
            have = {t.lower() for t in _list(s.get("tags")) if isinstance(t, str)} if isinstance(s, Mapping) else set()
            if wanted <= have:
                ok = True
                break
        if not ok:
            return False
    caps = card.get("capabilities")
    caps = caps if isinstance(caps, Mapping) else {}
    for cap in [capabilities] if isinstance(capabilities, str) else capabilities:
        if caps.get(_camel(cap)) is not True:
            return False
    if schemes is not None:
        reqs = card.get("securityRequirements") or []
        if not isinstance(reqs, list):
            return False  # requirements nobody can read cannot be met
        if reqs:
            held: Union[set[str], Mapping[str, Iterable[str]]]
            held = schemes if isinstance(schemes, Mapping) else set(
                [schemes] if isinstance(schemes, str) else schemes)
            if not any(_satisfied(r, held) for r in reqs):
                return False
    return True
