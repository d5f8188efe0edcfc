"""Identifiers: the profile's id format, MQTT client ids, UUIDv4 task/context ids, correlation data.

Profile: Identifier Format; Client Session Requirements 3-4; Request/Reply Mapping 5-6;
Multi-Turn Conversation Patterns (Context Identifier Semantics 2).

``IdSource`` is the one place ids come from. Unseeded it uses the OS random source; seeded it is
deterministic (a notebook tested with nbval shows the same ids on every run) while every id keeps
the shape the profile asks for (UUIDv4, 16-hex-char reply suffix, 32-hex-digit correlation data).

Two values are never seeded: Correlation Data and the reply-topic suffix. They are what a requester
uses to accept a reply, so whoever can guess them can forge one (a "COMPLETED" task the agent never
sent). They always come from ``secrets``; notebooks stay stable under nbval by sanitising them.
"""
from __future__ import annotations

import itertools
import random
import re
import secrets
from typing import Optional
from ..error_base import A2ANbError

IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
"""Profile: Identifier Format (``org_id``, ``unit_id``, ``agent_id``, ``pool_id``, ``group_id``)."""

_UUID4_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.IGNORECASE
)
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


class InvalidIdentifier(A2ANbError, ValueError):
    """An id that the profile's ``^[A-Za-z0-9_.-]+$`` rule rejects (Profile: Identifier Format)."""


def validate_identifier(value: str, what: str = "identifier") -> str:
    """Return ``value`` if it is a valid profile identifier, else raise ``InvalidIdentifier``.

    ``what`` names the id in the message ("org_id", "agent_id", ...) so a learner sees which
    argument was wrong and which characters to remove. Profile: Identifier Format.
    """
    if not isinstance(value, str):
        raise InvalidIdentifier(
            f"{what} must be a string, got {type(value).__name__} {value!r} "
            "(Profile: Identifier Format)"
        )
    if value == "":
        raise InvalidIdentifier(
            f"{what} must not be empty: use letters, digits, '_', '.' or '-' "
            "(Profile: Identifier Format)"
        )
    if IDENTIFIER_RE.fullmatch(value) is None:
        bad = "".join(dict.fromkeys(c for c in value if c not in _ALLOWED))
        shown = ", ".join(repr(c) for c in bad)
        hint = ""
        if "/" in bad or "+" in bad or "#" in bad:
            hint = " ('/', '+' and '#' would change the MQTT topic structure)"
        raise InvalidIdentifier(
            f"{what} {value!r} contains characters not allowed by the A2A over MQTT profile: "
            f"{shown}{hint}. Use only letters, digits, '_', '.' and '-' "
            "(Profile: Identifier Format)"
        )
    return value


def client_id(org: str, unit: str, agent: str) -> str:
    """The MQTT Client ID ``{org_id}/{unit_id}/{agent_id}`` (Profile: Client Session Requirements 3)."""
    validate_identifier(org, "org_id")
    validate_identifier(unit, "unit_id")
    validate_identifier(agent, "agent_id")
    return f"{org}/{unit}/{agent}"


def parse_client_id(s: str) -> tuple[str, str, str]:
    """Split a Client ID into ``(org_id, unit_id, agent_id)``; raise ``InvalidIdentifier`` if malformed."""
    if not isinstance(s, str):
        raise InvalidIdentifier(f"client id must be a string, got {type(s).__name__}")
    parts = s.split("/")
    if len(parts) != 3:
        raise InvalidIdentifier(
            f"client id {s!r} must have the form '{{org_id}}/{{unit_id}}/{{agent_id}}' "
            f"(3 parts separated by '/', got {len(parts)}) (Profile: Client Session Requirements 3)"
        )
    org, unit, agent = parts
    validate_identifier(org, "org_id")
    validate_identifier(unit, "unit_id")
    validate_identifier(agent, "agent_id")
    return org, unit, agent


def is_uuid4(s: object) -> bool:
    """True for a canonical hyphenated UUIDv4 (version nibble 4, variant 8/9/a/b; hex in any case).

    The profile requires requester-generated ``Task.id`` values to be UUIDv4
    (Profile: Request/Reply Mapping 6, Responder Behavior 4).
    """
    return isinstance(s, str) and _UUID4_RE.fullmatch(s) is not None


def readable_correlation(data: bytes, width: Optional[int] = None) -> str:
    """Correlation Data as a person reads it, the one form every view of the kit shows: the text
    itself when it is printable ASCII (the kit's own are 32 hex digits, sent as those 32 ASCII
    characters; most implementations send text), else ``0x`` and its hex digits. ``width``: at
    most that many characters, then ``…`` (a short form for tables)."""
    shown = data.decode("ascii") if data and all(0x20 < b < 0x7F for b in data) else "0x" + data.hex()
    if width is not None and len(shown) > width:
        return shown[:max(width, 1)] + "…"
    return shown


_VERSION_4 = 0x4 << 76  # the version nibble (RFC 9562, section 4.2)
_VARIANT = 0b10 << 62  # the variant bits 10 (RFC 9562, section 4.1)
_NOT_VERSION_OR_VARIANT = ~(0xF << 76 | 0b11 << 62)


def uuid4_text(bits: int) -> str:
    """128 random bits as a canonical UUIDv4 string: version 4 and variant bits set, what
    ``str(uuid.UUID(int=bits, version=4))`` gives, without building a ``UUID`` object (two
    thirds of the time; a requester makes three per request)."""
    h = f"{bits & _NOT_VERSION_OR_VARIANT | _VERSION_4 | _VARIANT:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class IdSource:
    """Makes every id the kit needs; deterministic when seeded.

    ``IdSource()`` draws from the OS random source (``secrets``). ``IdSource(seed=7)``
    draws from ``random.Random(7)`` for the ids a lesson displays (Task.id, contextId, messageId,
    agent names): same ids on every run, still valid UUIDv4 and still unique within the source.
    ``correlation()`` and ``reply_suffix()`` ignore the seed: they must stay unguessable.
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        self._seed = seed
        self._rng: Optional[random.Random] = None if seed is None else random.Random(seed)
        self._counter = itertools.count(1)  # next() on a count is atomic in CPython

    @property
    def seed(self) -> Optional[int]:
        return self._seed

    def __repr__(self) -> str:
        return f"IdSource(seed={self._seed!r})"

    def _bits(self, n: int) -> int:
        if self._rng is None:
            return secrets.randbits(n)
        return self._rng.getrandbits(n)

    def uuid4(self) -> str:
        """A lowercase canonical UUIDv4 string."""
        return uuid4_text(self._bits(128))

    def task_id(self) -> str:
        """A new ``Task.id``: UUIDv4, made by the requester (Profile: Request/Reply Mapping 6)."""
        return self.uuid4()

    def context_id(self) -> str:
        """A new ``Task.context_id``: UUIDv4 (Profile: Context Identifier Semantics 2)."""
        return self.uuid4()

    def message_id(self, prefix: Optional[str] = None) -> str:
        """A ``Message.messageId`` unique within this source.

        With a prefix: ``"{prefix}-{n}"`` where ``n`` is a counter shared by all prefixes of this
        source (so ``"TCK-4821-1"``, ``"TCK-4821-2"``, ...); without: a UUIDv4.
        """
        if prefix is None:
            return self.uuid4()
        if not isinstance(prefix, str) or prefix == "":
            raise ValueError(f"message id prefix must be a non-empty string, got {prefix!r}")
        return f"{prefix}-{next(self._counter)}"

    def correlation(self) -> bytes:
        """MQTT Correlation Data, new for every publish including retries: the 32 ASCII hex digits
        of 16 random bytes (128 bits, as unguessable as the raw bytes).

        Profile: Request/Reply Mapping 2 and 5, Requester Retry and Timeout Profile 3.
        Always from ``secrets``, seeded or not: a guessable value would let anyone forge a reply.
        Valid UTF-8 on purpose: other implementations of the profile decode Correlation Data as
        text and fail on arbitrary bytes. The kit itself accepts any bytes (it compares them as
        bytes, never decodes them).
        """
        return secrets.token_hex(16).encode("ascii")

    def reply_suffix(self) -> str:
        """A collision-resistant ``reply_suffix``: 16 lowercase hex chars from 64 random bits.

        Profile: Client Session Requirements 4 (it is also a valid identifier). Always from
        ``secrets``, seeded or not: whoever knows the topic can read or spoof replies on a broker
        without per-client ACLs.
        """
        return secrets.token_hex(8)

    def jsonrpc_id(self) -> str:
        """A JSON-RPC request ``id`` (a UUIDv4 string)."""
        return self.uuid4()
