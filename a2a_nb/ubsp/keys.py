"""An agent's key pair for ``ubsp-v1``, and sealing and opening payloads with it (``joserfc``).

Profile: Optional Untrusted-Broker Security Profile 4-6, 12. A sealed payload is a JWE (compact
serialization, MQTT Content Type ``application/jose``) encrypted to the recipient's encryption key
(``ECDH-ES+A256KW`` with ``A256GCM``): the broker cannot read it, and any change to it makes the
decryption fail. Inside is a JWS (``ES256``) by the sender's signing key, whose protected header
holds the claims (``iss``, ``aud``, ``jti``, ``iat``, ``exp``: :func:`a2a_nb.protocol.ubsp.claims`;
a reply's also ``req``, the request it answers: :func:`a2a_nb.protocol.ubsp.reply_binding`) and
whose payload is the JSON-RPC message, byte for byte. Why sign as well as encrypt: anyone can
encrypt to a public key, the broker included; only the sender can sign, so a recipient knows who
sealed what it opens (the profile asks for encryption; the signature is this kit's choice).

Library: ``joserfc`` (pinned in requirements.txt), a maintained JOSE implementation with JWE and
JWS in compact form, built on ``cryptography``, which the kit already uses; no cryptography is
written here, only the choice of algorithms and claims. (Until issue 40 the kit used ``jwcrypto``:
same algorithms and wire format, about twice the cost per seal, measured by ``python -m benchmarks``.)
Only the compact serialization is opened (``application/jose``).

Before anything is decrypted, the JWE's headers are read (bounded) and must name exactly the
algorithms above and no ``zip``: a compressed payload would be inflated after the decryption (which
anyone can make succeed: the key is public) and before the signature is checked, so 132 KiB of
``zip: DEF`` could become 99 MB (:func:`jwe_header_problem`).
"""
from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from joserfc import jwe, jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet

from ..error_base import A2ANbError
from ..protocol import ubsp
from ..protocol.bounded_json import loads_bounded

SIGN_ALG = "ES256"
KEY_ALG = "ECDH-ES+A256KW"
CONTENT_ALG = "A256GCM"
MAX_SEALED_BYTES = 4 * 1024 * 1024
"""A sealed payload above this size is refused before it is parsed."""
MAX_HEADER_BYTES = 4 * 1024
"""A JWE protected header above this size (base64url) is refused before it is decoded."""
_JWS = jws.JWSRegistry(algorithms=[SIGN_ALG], strict_check_header=False)  # the claims ride in the protected header
_JWE = jwe.JWERegistry(algorithms=[KEY_ALG, CONTENT_ALG])
_FAILED = (JoseError, ValueError, KeyError, TypeError, UnicodeDecodeError)
"""What a malformed, tampered or mis-keyed JWE or JWS raises in ``joserfc``."""


class SealError(A2ANbError, ValueError):
    """A payload could not be sealed or opened; the message says why in one line."""


@dataclass(frozen=True)
class Opened:
    """An opened payload: the JSON-RPC bytes and the claims they were sealed with."""

    payload: bytes
    claims: dict[str, Any]

    @property
    def sender(self) -> str:
        return str(self.claims["iss"])


class AgentKeys:
    """One agent's signing and encryption keys (EC P-256), made fresh, or loaded from a private JWK Set."""

    def __init__(self, agent: str, private_jwks: Optional[Mapping[str, Any]] = None,
                 replays: Optional[ubsp.ReplayCache] = None):
        """``replays``: where the ``jti`` values already opened are remembered; by default in memory,
        and, for keys loaded (which outlive the process), with requests issued before now refused
        (:class:`a2a_nb.protocol.ubsp.ReplayCache`; :mod:`a2a_nb.ubsp.replays` keeps one on disk)."""
        self.agent = agent
        if private_jwks is None:
            tag = uuid.uuid4().hex[:8]
            self.signing = ECKey.generate_key("P-256", {"kid": f"{agent}-sig-{tag}", "use": "sig", "alg": SIGN_ALG})
            self.encryption = ECKey.generate_key("P-256", {"kid": f"{agent}-enc-{tag}", "use": "enc", "alg": KEY_ALG})
        else:
            keys = KeySet.import_key_set({"keys": list(dict(private_jwks)["keys"])})
            self.signing = _one(keys, "sig")
            self.encryption = _one(keys, "enc")
        self._replays = replays if replays is not None else ubsp.ReplayCache(
            not_before=None if private_jwks is None else time.time())
        self._lock = threading.Lock()

    @property
    def encryption_kid(self) -> str:
        return str(self.encryption.get("kid"))

    def public_jwks(self) -> dict[str, Any]:
        """The public JWK Set others encrypt to and verify with (what a ``jwksUri`` serves)."""
        return {"keys": [self.signing.as_dict(private=False), self.encryption.as_dict(private=False)]}

    def private_jwks(self) -> dict[str, Any]:
        """Both private keys, to keep the agent's identity across restarts (store it like a password)."""
        return {"keys": [self.signing.as_dict(private=True), self.encryption.as_dict(private=True)]}

    def seal(self, payload: bytes, recipient: str, recipient_jwks: "Mapping[str, Any] | KeySet", *,
             sender: Optional[str] = None, now: Optional[float] = None, jti: Optional[str] = None,
             binding: Optional[Mapping[str, Any]] = None) -> str:
        """``payload`` signed with these keys and encrypted to ``recipient``'s encryption key.
        ``sender``: the agent named as its author (``iss``), when these keys speak for an instance
        the agent spawned (see :meth:`a2a_nb.ubsp.protection.Ubsp.for_instance`). ``jti``: the
        payload's id (default: a fresh one); ``binding``: more claims, e.g. a reply's
        :func:`a2a_nb.protocol.ubsp.reply_binding`."""
        enc = _one(_key_set(recipient_jwks, recipient), "enc")
        header = {"alg": SIGN_ALG, "kid": self.signing.kid, **(binding or {}),
                  **ubsp.claims(sender or self.agent, recipient, jti or str(uuid.uuid4()), now)}
        try:
            inner = jws.serialize_compact(header, bytes(payload), self.signing, registry=_JWS)
            return jwe.encrypt_compact({"alg": KEY_ALG, "enc": CONTENT_ALG, "kid": enc.kid, "cty": "JWS"},
                                       inner.encode(), enc, registry=_JWE)
        except _FAILED as exc:
            raise SealError(f"cannot seal to {recipient}: {_why(exc)}") from None

    def open(self, sealed: bytes, sender: str, sender_jwks: "Callable[[str], Mapping[str, Any] | KeySet]", *,
             now: float, recipient: Optional[str] = None, recorded: bool = False,
             also: Optional[Callable[[Mapping[str, Any], bytes], Optional[str]]] = None) -> Opened:
        """Decrypt with this agent's key, verify ``sender``'s signature (its keys from ``sender_jwks``,
        called only after the decryption worked), check the claims (sealed for ``recipient``, by
        default this agent), ``also`` (a further check of the claims and payload: whether a reply
        answers the request it should, :meth:`a2a_nb.ubsp.protection.Ubsp.open_reply`), then the
        replay cache. ``recorded``: a message read again from a recording (a notebook holding the key): sender,
        recipient and signature are checked, its age and the replay cache are not. Never for a
        message that is to be acted on."""
        if len(sealed) > MAX_SEALED_BYTES:
            raise SealError(f"sealed payload of {len(sealed):,} bytes, above {MAX_SEALED_BYTES:,}")
        problem = jwe_header_problem(sealed)
        if problem is not None:
            raise SealError(problem)
        try:
            plain = jwe.decrypt_compact(bytes(sealed), self.encryption, registry=_JWE).plaintext
            inner = jws.extract_compact(plain or b"")
        except _FAILED as exc:
            raise SealError(f"cannot decrypt: {_why(exc)}") from None
        header = inner.protected if isinstance(inner.protected, dict) else {}
        if header.get("alg") != SIGN_ALG:
            raise SealError(f"inner signature algorithm {header.get('alg')!r} is not {SIGN_ALG}")
        try:
            keys = _key_set(sender_jwks(sender), sender)
            valid = jws.validate_compact(inner, _one(keys, "sig", header.get("kid")), registry=_JWS)
        except _FAILED as exc:
            raise SealError(f"signature of {sender} not valid: {_why(exc)}") from None
        if not valid:
            raise SealError(f"signature of {sender} not valid: the signature does not match")
        checked_at = float(header.get("iat", now)) if recorded and isinstance(header.get("iat"), (int, float)) else now
        problem = ubsp.claims_problem(header, sender, recipient or self.agent, checked_at)
        if problem is None and also is not None:
            problem = also(header, bytes(inner.payload))
        if problem is None and not recorded:
            with self._lock:
                problem = self._replays.check(header["jti"], float(header["exp"]), now, float(header["iat"]))
        if problem is not None:
            raise SealError(problem)
        return Opened(bytes(inner.payload), {k: header[k] for k in ("iss", "aud", "jti", "iat", "exp", ubsp.BINDING_CLAIM)
                                             if k in header})


def jwe_header_problem(sealed: bytes) -> Optional[str]:
    """Why a sealed payload's JWE headers are not the kit's (``alg`` ``ECDH-ES+A256KW``, ``enc``
    ``A256GCM``, no ``zip`` in any header), read before anything is decrypted or inflated; None when
    they are. Compact serialization (``application/jose``) or JSON (``application/jose+json``)."""
    data = bytes(sealed).lstrip()
    if data.startswith(b"{"):
        try:
            outer = loads_bounded(data, max_bytes=MAX_SEALED_BYTES)
            headers = [outer.get("unprotected"), outer.get("header"),
                       *[r.get("header") for r in outer.get("recipients", ()) if isinstance(r, dict)]]
            protected = outer.get("protected")
        except (ValueError, AttributeError, TypeError):
            return "not a JWE in JSON serialization"
    else:
        protected, dot, _ = data[:MAX_HEADER_BYTES + 1].partition(b".")
        if not dot:
            return "not a JWE in compact serialization (no protected header within 4 KiB)"
        headers = []
    try:
        raw = protected.encode("ascii") if isinstance(protected, str) else protected
        if not isinstance(raw, bytes) or len(raw) > MAX_HEADER_BYTES:
            return "no JWE protected header of at most 4 KiB"
        headers.append(loads_bounded(base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))))
    except (ValueError, UnicodeError):
        return "the JWE protected header is not base64url JSON"
    merged: dict[str, Any] = {}
    for header in headers:
        if header is None:
            continue
        if not isinstance(header, dict):
            return "a JWE header is not a JSON object"
        if "zip" in header:
            return f"compressed JWE (zip {str(header['zip'])[:20]!r}) refused: ubsp-v1 payloads are never compressed"
        merged.update(header)
    if merged.get("alg") != KEY_ALG or merged.get("enc") != CONTENT_ALG:
        return f"JWE alg/enc {str(merged.get('alg'))[:30]!r}/{str(merged.get('enc'))[:30]!r} is not {KEY_ALG}/{CONTENT_ALG}"
    return None


MAX_PARSED_SETS = 256
"""Peer key sets kept parsed (by content; the least recently used dropped first)."""
_parsed: "OrderedDict[str, KeySet]" = OrderedDict()
_parsed_lock = threading.Lock()


def parse_key_set(jwks: Mapping[str, Any]) -> KeySet:
    """``jwks`` parsed, from a bounded cache keyed by its content: a peer's set is parsed once, not
    on every seal and open (the parse builds the EC keys: most of a small message's cost). The
    parsed set is shared: nobody changes it. :class:`SealError` when it is not a JWK Set."""
    try:
        text = json.dumps(dict(jwks), sort_keys=True)
        with _parsed_lock:
            found = _parsed.get(text)
            if found is not None:
                _parsed.move_to_end(text)
                return found
        found = KeySet.import_key_set(json.loads(text))
    except _FAILED as exc:
        raise SealError(f"not a JWK Set: {_why(exc)}") from None
    with _parsed_lock:
        _parsed[text] = found
        while len(_parsed) > MAX_PARSED_SETS:
            _parsed.popitem(last=False)
    return found


def _key_set(keys: "Mapping[str, Any] | KeySet", owner: str) -> KeySet:
    """A peer's keys as given (parsed already by :meth:`a2a_nb.ubsp.trust.KeyTrust.key_set_for`), or parsed."""
    if isinstance(keys, KeySet):
        return keys
    try:
        return parse_key_set(keys)
    except SealError as exc:
        raise SealError(f"the key set of {owner} is {exc}") from None


def _one(keys: KeySet, use: str, kid: Optional[str] = None) -> ECKey:
    """The key for ``use`` (``sig`` or ``enc``) in a set, by ``kid`` when one is named."""
    for key in keys:
        if key.get("use") == use and (kid is None or key.kid == kid) and isinstance(key, ECKey):
            return key
    raise SealError(f"no {use} key" + (f" with kid {kid!r}" if kid else "") + " in the key set")


def _why(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0][:200]
