"""A2A v1.0 Agent Cards for MQTT agents: building, checking, selecting.

Profile: Discovery Interoperability 3 (choose the MQTT entry of ``supportedInterfaces``),
Agent Card Requirements, OAuth 2.0 and OIDC over MQTT User Properties (scopes in the card).

The card names the agent's MQTT request topic in its ``supportedInterfaces`` entry. The profile
does not fix a ``protocolBinding`` URI for MQTT, so the kit uses ``MQTT_BINDING`` (the profile's
published location, versioned) and also recognises the informal spellings other implementations
use (``"MQTT5+JSONRPC"``, ``"MQTTv5+JSONRPCv2"``): see ``is_mqtt_binding``.
"""
from __future__ import annotations

from types import MappingProxyType
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union
from urllib.parse import unquote, urlsplit

from . import topics
from .bounded_json import MAX_DEPTH, loads_bounded
from .safe_text import quoted, safe_text

MQTT_BINDING = "https://github.com/emqx/mqtt-for-ai/tree/main/a2a-over-mqtt/specification/0.1"
"""``protocolBinding`` URI of the A2A over MQTT profile v0.1 (where the profile is published)."""
PROTOCOL_VERSION = "1.0"
"""A2A protocol version this kit speaks (``AgentInterface.protocolVersion``)."""
DEFAULT_MODES = ("text/plain", "application/json")

CARD_FIELDS = frozenset(
    {
        "name", "description", "supportedInterfaces", "provider", "version", "documentationUrl",
        "capabilities", "securitySchemes", "securityRequirements", "defaultInputModes",
        "defaultOutputModes", "skills", "signatures", "iconUrl",
    }
)
_V03_HINTS = MappingProxyType({
    "url": "v0.3 field; v1.0 puts endpoints in supportedInterfaces[].url",
    "preferredTransport": "v0.3 field; v1.0 uses supportedInterfaces[].protocolBinding",
    "additionalInterfaces": "v0.3 field; v1.0 uses supportedInterfaces",
    "protocolVersion": "v0.3 field; v1.0 puts it in supportedInterfaces[].protocolVersion",
    "security": "v0.3 name; v1.0 uses securityRequirements",
    "supportsAuthenticatedExtendedCard": "v0.3 field; v1.0 uses capabilities.extendedAgentCard",
})
SCHEME_KINDS = frozenset(
    {
        "apiKeySecurityScheme", "httpAuthSecurityScheme", "oauth2SecurityScheme",
        "openIdConnectSecurityScheme", "mtlsSecurityScheme",
    }
)
CAPABILITY_FIELDS = ("streaming", "pushNotifications", "extendedAgentCard")
MAX_CARD_BYTES = 64 * 1024
"""Largest Agent Card payload read from a peer (the kit's cards are 1-3 kB; ``parse_card``)."""


def is_mqtt_binding(binding: object) -> bool:
    """True for ``MQTT_BINDING`` and the informal ``MQTT...`` binding names seen in the wild."""
    return isinstance(binding, str) and (
        binding == MQTT_BINDING or binding.upper().startswith("MQTT")
    )


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


def provider(organization: str, url: str) -> dict[str, Any]:
    """AgentProvider (v1.0 requires both fields)."""
    return {"organization": _text(organization, "organization"), "url": _text(url, "provider url")}


def mqtt_interface(org: str, unit: str, agent: str, broker_url: Optional[str] = None) -> dict[str, Any]:
    """The ``supportedInterfaces`` entry for an agent's MQTT request topic.

    ``url`` is the request topic (``$a2a/v1/request/{org}/{unit}/{agent}``); with ``broker_url``
    (``mqtt://host:port``) it becomes ``mqtt://host:port/$a2a/v1/request/...``. The card is found on
    the broker it names, so the bare topic is the default.
    """
    topic = topics.request_topic(org, unit, agent)
    url = topic if broker_url is None else f"{broker_url.rstrip('/')}/{topic}"
    return {"url": url, "protocolBinding": MQTT_BINDING, "protocolVersion": PROTOCOL_VERSION}


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
    Raises ``ValueError`` when ``check_card`` finds problems, so a bad card never leaves the cell.
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
    problems = check_card(card)
    if problems:
        raise ValueError("invalid agent card:\n  - " + "\n  - ".join(problems))
    return card


# --- reading -------------------------------------------------------------------------------------

def parse_card(payload: Union[bytes, str]) -> Any:
    """A card payload from a peer, parsed within bounds: at most ``MAX_CARD_BYTES`` (64 KiB) and
    ``MAX_DEPTH`` (64) levels of nesting (``bounded_json``). Raises ``ValueError`` saying why it is
    no card ("card is not usable JSON: nested more than 64 levels deep"); ``check_card`` then says what a parsed card lacks."""
    try:
        return loads_bounded(payload, max_bytes=MAX_CARD_BYTES, max_depth=MAX_DEPTH)
    except ValueError as exc:
        raise ValueError(f"card is not usable JSON: {exc}") from None


# --- checking -----------------------------------------------------------------------------------

def _shown(value: Any, quote: bool = True) -> str:
    """A card's value in a problem: its ``repr`` (or the text itself), escaped and cut to 60
    characters (``safe_text``)."""
    return quoted(value) if quote else safe_text(value, 60)


def _check_str(problems: list[str], obj: Mapping[str, Any], key: str, where: str) -> None:
    if key not in obj:
        problems.append(f"{where}.{key} is missing (required)")
    elif not isinstance(obj[key], str) or not obj[key].strip():
        problems.append(f"{where}.{key} must be a non-empty string, got {_shown(obj[key])}")


def _check_str_list(problems: list[str], obj: Mapping[str, Any], key: str, where: str,
                    required: bool) -> None:
    if key not in obj:
        if required:
            problems.append(f"{where}.{key} is missing (required)")
        return
    v = obj[key]
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        problems.append(f"{where}.{key} must be a list of non-empty strings, got {_shown(v)}")
    elif required and not v:
        problems.append(f"{where}.{key} must not be empty")


def check_card(card: Any, require_mqtt: bool = False) -> list[str]:
    """Human-readable problems with an Agent Card (v1.0 shape); ``[]`` means it looks valid.

    Checks required fields (also inside skills and interfaces), types, empty lists, v0.3
    leftovers, security requirements naming undeclared schemes, and with ``require_mqtt`` that an
    MQTT interface naming a request topic exists. Profile: Agent Card Requirements 1.
    """
    if not isinstance(card, Mapping):
        return [f"an agent card must be a JSON object, got {type(card).__name__}"]
    p: list[str] = []
    for key in ("name", "description", "version"):
        _check_str(p, card, key, "card")
    for key in sorted(set(card) - CARD_FIELDS):
        hint = _V03_HINTS.get(key, "not an A2A v1.0 AgentCard field")
        p.append(f"card.{_shown(key, quote=False)}: unknown field ({hint})")

    ifaces = card.get("supportedInterfaces")
    if ifaces is None:
        p.append("card.supportedInterfaces is missing (required)")
    elif not isinstance(ifaces, list) or not ifaces:
        p.append("card.supportedInterfaces must be a non-empty list")
    else:
        for i, itf in enumerate(ifaces):
            where = f"card.supportedInterfaces[{i}]"
            if not isinstance(itf, Mapping):
                p.append(f"{where} must be an object")
                continue
            for key in ("url", "protocolBinding", "protocolVersion"):
                _check_str(p, itf, key, where)
        if require_mqtt and request_topic_of(card) is None:
            p.append("card.supportedInterfaces has no MQTT entry naming a request topic")

    caps = card.get("capabilities")
    if caps is None:
        p.append("card.capabilities is missing (required)")
    elif not isinstance(caps, Mapping):
        p.append("card.capabilities must be an object")
    else:
        for key in CAPABILITY_FIELDS:
            if key in caps and not isinstance(caps[key], bool):
                p.append(f"card.capabilities.{key} must be true or false, got {_shown(caps[key])}")
        for key in sorted(set(caps) - set(CAPABILITY_FIELDS) - {"extensions"}):
            p.append(f"card.capabilities.{_shown(key, quote=False)}: unknown field")

    for key in ("defaultInputModes", "defaultOutputModes"):
        _check_str_list(p, card, key, "card", required=True)

    skills = card.get("skills")
    if skills is None:
        p.append("card.skills is missing (required)")
    elif not isinstance(skills, list) or not skills:
        p.append("card.skills must be a non-empty list")
    else:
        for i, s in enumerate(skills):
            where = f"card.skills[{i}]"
            if not isinstance(s, Mapping):
                p.append(f"{where} must be an object")
                continue
            for key in ("id", "name", "description"):
                _check_str(p, s, key, where)
            _check_str_list(p, s, "tags", where, required=True)
            for key in ("examples", "inputModes", "outputModes"):
                _check_str_list(p, s, key, where, required=False)

    prov = card.get("provider")
    if prov is not None:
        if not isinstance(prov, Mapping):
            p.append("card.provider must be an object")
        else:
            for key in ("organization", "url"):
                _check_str(p, prov, key, "card.provider")

    schemes = card.get("securitySchemes", {})
    if not isinstance(schemes, Mapping):
        p.append("card.securitySchemes must be an object mapping names to schemes")
        schemes = {}
    for name, sch in schemes.items():
        kinds = [k for k in sch if k in SCHEME_KINDS] if isinstance(sch, Mapping) else []
        if not isinstance(sch, Mapping) or len(kinds) != 1 or len(sch) != 1:
            p.append(
                f"card.securitySchemes[{_shown(name)}] must hold exactly one of "
                + ", ".join(sorted(SCHEME_KINDS))
            )
    reqs = card.get("securityRequirements")
    if reqs is not None:
        if not isinstance(reqs, list):
            p.append("card.securityRequirements must be a list")
        else:
            for i, r in enumerate(reqs):
                where = f"card.securityRequirements[{i}]"
                named = r.get("schemes") if isinstance(r, Mapping) else None
                if not isinstance(named, Mapping):
                    p.append(f"{where} must look like {{'schemes': {{name: {{'list': [scopes]}}}}}}")
                    continue
                for name, scopes in named.items():
                    if name not in schemes:
                        p.append(f"{where} names scheme {_shown(name)} not declared in securitySchemes")
                    if not isinstance(scopes, Mapping) or not isinstance(scopes.get("list", []), list):
                        p.append(f"{where}.schemes[{_shown(name)}] must be {{'list': [scopes]}}")
    return p


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
    ``capabilities`` a list) matches nothing (``check_card`` says what is wrong with it).
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


def _topic_from_url(url: str) -> Optional[str]:
    if url.startswith(topics.PREFIX + "/"):
        return url
    parts = urlsplit(url)
    if parts.scheme.lower() in ("mqtt", "mqtts", "ws", "wss") and parts.path:
        path = unquote(parts.path.lstrip("/"))
        if path.startswith(topics.PREFIX + "/"):
            return path
    return None


def request_topic_of(card: Mapping[str, Any]) -> Optional[str]:
    """The request (or pool) topic named by the card's first MQTT ``supportedInterfaces`` entry.

    Accepts a bare topic or ``mqtt[s]://host:port/<topic>`` as ``url``; returns None when no MQTT
    entry names a well-formed request topic (then use the discovery topic's ids).
    """
    if not isinstance(card, Mapping):
        return None
    for itf in card.get("supportedInterfaces") or []:
        if not isinstance(itf, Mapping) or not is_mqtt_binding(itf.get("protocolBinding")):
            continue
        url = itf.get("url")
        topic = _topic_from_url(url) if isinstance(url, str) else None
        if topic is None:
            continue
        try:
            info = topics.parse_topic(topic)
        except ValueError:
            continue
        if info is not None and info.kind in ("request", "pool") and info.shared_group is None:
            return topic
    return None
