"""Is this Agent Card valid? Every check of a card, in one place.

Which is normative: the A2A v1.0 ``AgentCard`` type (``a2a.types.AgentCard`` of the a2a-sdk,
generated from the specification's ``a2a.proto``). ``type_problem`` asks it (``sdk_schema``, strict);
a card it refuses is no v1.0 card, whatever the checks below say. The traffic lint's ``card-schema``
rule reports its verdict; the probe's ``card-schema`` check reports both (``card_problems(card,
sdk=True)``).

``card_problems`` is written by hand, for two reasons:

* It says what the type cannot say (marked "only here" below): text that is empty or blank, empty
  strings in a list of strings, a security scheme of no kind, a security requirement naming a scheme
  the card does not declare, a v0.3 field (and what v1.0 uses instead), and with ``require_mqtt`` the
  profile's MQTT entry naming a request topic (Discovery Interoperability 3, ``card_interface``).
* It restates the type's required fields and types, so the core (paho-mqtt alone: ``Discovery``,
  ``cards.agent_card``) tells a usable card from a broken one without the a2a-sdk, naming every
  problem where it is, in words a person can act on ("card.skills[0].tags must not be empty"; the
  SDK stops at its first error and names proto fields). Where the two differ, the type is right:
  ``LEFT_TO_THE_TYPE`` lists what only the type checks, and a unit test holds the rest to it.

Profile: Agent Card Requirements 1.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Optional

from .card_interface import request_topic_of
from .safe_text import quoted, safe_text
from .sdk_schema import validate_payload

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
LEFT_TO_THE_TYPE = (
    "the types of documentationUrl and iconUrl", "signatures", "capabilities.extensions",
    "what is inside a security scheme (its flows, fields and their types)", "a skill's securityRequirements",
)
"""What ``card_problems`` does not check and only the AgentCard type does (``type_problem``)."""


def type_problem(card: Any) -> Optional[str]:
    """None when the A2A v1.0 AgentCard type accepts ``card``, else what it refuses (the normative
    check: a2a-sdk, strict; imported on first use, the ``notebook`` extra)."""
    return validate_payload("AgentCard", card)


def _shown(value: Any, quote: bool = True) -> str:
    """A card's value in a problem: its ``repr`` (or the text itself), escaped and cut to 60
    characters (``safe_text``)."""
    return quoted(value) if quote else safe_text(value, 60)


def _check_str(problems: list[str], obj: Mapping[str, Any], key: str, where: str) -> None:
    """Required text: missing or not a string (the type says so too), empty or blank (only here)."""
    if key not in obj:
        problems.append(f"{where}.{key} is missing (required)")
    elif not isinstance(obj[key], str) or not obj[key].strip():
        problems.append(f"{where}.{key} must be a non-empty string, got {_shown(obj[key])}")


def _check_str_list(problems: list[str], obj: Mapping[str, Any], key: str, where: str,
                    required: bool) -> None:
    """A list of text: missing, empty or not a list of strings (the type says so too), or holding an
    empty string (only here)."""
    if key not in obj:
        if required:
            problems.append(f"{where}.{key} is missing (required)")
        return
    v = obj[key]
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        problems.append(f"{where}.{key} must be a list of non-empty strings, got {_shown(v)}")
    elif required and not v:
        problems.append(f"{where}.{key} must not be empty")


def _has_entries(problems: list[str], card: Mapping[str, Any], key: str) -> bool:
    """Is ``card[key]`` a non-empty list (as the type requires of interfaces and skills)?"""
    entries = card.get(key)
    if entries is None:
        problems.append(f"card.{key} is missing (required)")
    elif not isinstance(entries, list) or not entries:
        problems.append(f"card.{key} must be a non-empty list")
    return isinstance(entries, list) and bool(entries)


def _entries(problems: list[str], entries: list[Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The objects of ``entries`` with their place (``card.skills[0]``), in order; a problem for any other."""
    for i, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            yield f"{where}[{i}]", entry
        else:
            problems.append(f"{where}[{i}] must be an object")


def card_problems(card: Any, require_mqtt: bool = False, sdk: bool = False) -> list[str]:
    """Human-readable problems with an Agent Card (v1.0 shape); ``[]`` means it looks valid.

    Checks required fields (also inside skills and interfaces), types, empty lists, v0.3
    leftovers, security requirements naming undeclared schemes, and with ``require_mqtt`` that an
    MQTT interface naming a request topic exists. ``sdk=True`` adds the AgentCard type's verdict
    (``type_problem``, needs the a2a-sdk) when it refuses the card. Profile: Agent Card Requirements 1.
    """
    problems = _hand_problems(card, require_mqtt)
    refused = type_problem(card) if sdk else None
    return problems + [refused] if refused else problems


def _hand_problems(card: Any, require_mqtt: bool) -> list[str]:
    if not isinstance(card, Mapping):
        return [f"an agent card must be a JSON object, got {type(card).__name__}"]
    p: list[str] = []
    for key in ("name", "description", "version"):
        _check_str(p, card, key, "card")
    for key in sorted(set(card) - CARD_FIELDS):  # the hint for a v0.3 field: only here
        hint = _V03_HINTS.get(key, "not an A2A v1.0 AgentCard field")
        p.append(f"card.{_shown(key, quote=False)}: unknown field ({hint})")

    if _has_entries(p, card, "supportedInterfaces"):
        for where, itf in _entries(p, card["supportedInterfaces"], "card.supportedInterfaces"):
            for key in ("url", "protocolBinding", "protocolVersion"):
                _check_str(p, itf, key, where)
        if require_mqtt and request_topic_of(card) is None:  # the profile's rule: only here
            p.append("card.supportedInterfaces has no MQTT entry naming a request topic")

    caps = card.get("capabilities")
    if caps is None:
        p.append("card.capabilities is missing (required)")
    elif not isinstance(caps, Mapping):  # the type lets an empty list pass: only here
        p.append("card.capabilities must be an object")
    else:
        for key in CAPABILITY_FIELDS:
            if key in caps and not isinstance(caps[key], bool):
                p.append(f"card.capabilities.{key} must be true or false, got {_shown(caps[key])}")
        for key in sorted(set(caps) - set(CAPABILITY_FIELDS) - {"extensions"}):
            p.append(f"card.capabilities.{_shown(key, quote=False)}: unknown field")

    for key in ("defaultInputModes", "defaultOutputModes"):
        _check_str_list(p, card, key, "card", required=True)

    if _has_entries(p, card, "skills"):
        for where, s in _entries(p, card["skills"], "card.skills"):
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
    for name, sch in schemes.items():  # exactly one kind (the type refuses two; none: only here)
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
                    if name not in schemes:  # a reference to the card's own schemes: only here
                        p.append(f"{where} names scheme {_shown(name)} not declared in securitySchemes")
                    if not isinstance(scopes, Mapping) or not isinstance(scopes.get("list", []), list):
                        p.append(f"{where}.schemes[{_shown(name)}] must be {{'list': [scopes]}}")
    return p
