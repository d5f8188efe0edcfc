"""Bearer tokens on the responder side: check ``a2a-authorization: Bearer <JWT>`` before any work.

Profile: OAuth 2.0 and OIDC over MQTT User Properties 2-6 (a token on each request; validate ``exp``,
``iss``, ``aud`` and the required scopes before processing; TLS only; never echo the token),
Client Session Requirements 6, Responder Behavior 8. User story 01.

``Responder(..., auth=BearerPolicy(...))`` runs :meth:`BearerPolicy.check` on every request that has
a reply path, before the request is parsed any further or dispatched. A request that fails is never
processed: no task is created or changed, no handler runs. It is answered with a JSON-RPC error:

===================================  ========  ======================  =============================
what is wrong                        code      ``data[0].reason``      HTTP/gRPC equivalent
===================================  ========  ======================  =============================
no token, not ``Bearer``, bad JWT,   -32600    ``UNAUTHENTICATED``     401 / UNAUTHENTICATED
bad signature, expired, not yet
valid, wrong ``iss``/``aud``, or the
responder's connection is not TLS
token valid, a required scope        -32600    ``PERMISSION_DENIED``   403 / PERMISSION_DENIED
missing
two ``a2a-authorization`` values     -32005    (``data.a2a_error`` =   (binding metadata invalid)
                                               transport_protocol_error)
===================================  ========  ======================  =============================

Why -32600 ("Invalid Request"): A2A v1.0 defines no JSON-RPC code for authentication (its HTTP and
gRPC bindings use 401/403 and UNAUTHENTICATED/PERMISSION_DENIED, outside JSON-RPC), and the MQTT
binding only says to follow core A2A/JSON-RPC. -32600 is the standard code for "this request object
is not acceptable", it is not retry-eligible for a requester (``errors.classify``), and it cannot be
confused with A2A's -32001..-32009 or the binding's -32003..-32005. The ``data`` member is a list with
one ``google.rpc.ErrorInfo`` (the shape A2A v1.0 uses for error details) in the domain ``a2a_nb``
naming the reason, the scheme, the required scopes and the HTTP status an HTTP binding would use.

Why not a task in ``TASK_STATE_AUTH_REQUIRED``: that state is for a *task* that needs more
authorization while it runs (the agent asks, the requester continues the task later); creating or
touching a task on behalf of a caller whose token failed would be processing it. A handler can still
use ``ctx.ask_auth(...)`` for in-task authorization (for example a downstream system's consent).

Tokens are never echoed: error messages name only which check failed (never the token, its claims or
the exception text of the JWT library), and replies carry no ``a2a-authorization`` property.
The token of a request that arrives while the responder itself is not on TLS is refused (the
responder cannot see the requester's connection; it refuses when its own is not TLS, since then the
broker path is plain text on at least one side).

:class:`LocalIssuer` is a stand-in authorization server for notebooks and tests (EC P-256, ES256).
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ..error_base import A2ANbError
from ..protocol import errors, inbound, properties
from ..protocol.errors import A2AError
from ..protocol.packet import MqttMessage

UNAUTHENTICATED = "UNAUTHENTICATED"
PERMISSION_DENIED = "PERMISSION_DENIED"
AUTH_ERROR_CODE = errors.INVALID_REQUEST
AUTH_DOMAIN = "a2a_nb"
TOKEN_SCHEME_KINDS = ("httpAuthSecurityScheme", "oauth2SecurityScheme", "openIdConnectSecurityScheme")
DEFAULT_ASYMMETRIC = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")


class AuthError(A2ANbError):
    """One failed check; ``reason`` is UNAUTHENTICATED or PERMISSION_DENIED, ``detail`` is safe to show."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def auth_error(reason: str, detail: str, *, required_scopes: Sequence[str] = (), scheme: str = "bearer") -> A2AError:
    """The JSON-RPC error a refused request gets (see the module docstring)."""
    meta = {"scheme": scheme, "httpStatus": "401" if reason == UNAUTHENTICATED else "403"}
    if required_scopes:
        meta["requiredScopes"] = " ".join(required_scopes)
    label = "unauthenticated" if reason == UNAUTHENTICATED else "permission denied"
    return A2AError(AUTH_ERROR_CODE, f"Invalid request: {label}: {detail}",
                    [{"@type": errors.ERROR_INFO_TYPE, "reason": reason, "domain": AUTH_DOMAIN, "metadata": meta}])


def auth_reason(error: Union[A2AError, Mapping[str, Any]]) -> Optional[str]:
    """UNAUTHENTICATED / PERMISSION_DENIED for an error made by :func:`auth_error`, else None."""
    data = error.data if isinstance(error, A2AError) else error.get("data")
    if isinstance(data, list):
        for d in data:
            if isinstance(d, Mapping) and d.get("domain") == AUTH_DOMAIN:
                return d.get("reason")
    return None


def scopes_of(claims: Mapping[str, Any]) -> set[str]:
    """Scopes granted by a token: ``scope`` (RFC 8693/9068, space-separated) and/or ``scp`` (list)."""
    held: set[str] = set()
    for key in ("scope", "scp"):
        value = claims.get(key)
        if isinstance(value, str):
            held.update(value.split())
        elif isinstance(value, (list, tuple)):
            held.update(v for v in value if isinstance(v, str))
    return held


def scope_alternatives(required: Union[Iterable[str], Iterable[Iterable[str]], None]) -> list[frozenset[str]]:
    """``["a", "b"]`` (all of them) or ``[["a"], ["b", "c"]]`` (any one set) -> a list of sets."""
    if not required:
        return []
    items = list(required)
    if all(isinstance(i, str) for i in items):
        return [frozenset(str(i) for i in items)]
    return [frozenset([i]) if isinstance(i, str) else frozenset(i) for i in items]


def required_scopes_from_card(card: Mapping[str, Any]) -> list[frozenset[str]]:
    """The scope sets of the card's ``securityRequirements`` that name token schemes (any one of
    them suffices, as in OpenAPI); scopes of several token schemes in one requirement are merged."""
    schemes = card.get("securitySchemes") or {}
    token_schemes = {name for name, s in schemes.items()
                     if isinstance(s, Mapping) and any(k in s for k in TOKEN_SCHEME_KINDS)}
    out: list[frozenset[str]] = []
    for req in card.get("securityRequirements") or []:
        named = req.get("schemes", {}) if isinstance(req, Mapping) else {}
        if not named or not all(name in token_schemes for name in named):
            continue
        needed: set[str] = set()
        for scopes in named.values():
            needed.update((scopes or {}).get("list", []) if isinstance(scopes, Mapping) else [])
        out.append(frozenset(needed))
    return out


def _jwt():
    """PyJWT, imported on first use: it loads ``cryptography`` (about 0.16 s), which an agent
    without bearer tokens never needs."""
    import jwt

    return jwt


def _algorithms_for(key: Any) -> tuple[str, ...]:
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    if isinstance(key, (ec.EllipticCurvePublicKey, ec.EllipticCurvePrivateKey)):
        return {256: ("ES256",), 384: ("ES384",), 521: ("ES512",)}.get(key.curve.key_size, ("ES256",))
    if isinstance(key, (rsa.RSAPublicKey, rsa.RSAPrivateKey)):
        return ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return ("EdDSA",)
    if isinstance(key, (bytes, str)):
        return ("HS256",)
    return DEFAULT_ASYMMETRIC


def _load_key(key: Any) -> Any:
    """A PEM string/bytes becomes a key object (so the algorithm family follows the key type);
    other strings/bytes stay an HMAC secret."""
    if isinstance(key, (str, bytes)):
        raw = key.encode() if isinstance(key, str) else key
        if raw.lstrip().startswith(b"-----BEGIN"):
            from cryptography.hazmat.primitives import serialization

            if b"PRIVATE KEY" in raw:
                return serialization.load_pem_private_key(raw, password=None).public_key()
            return serialization.load_pem_public_key(raw)
    return key


@dataclass
class BearerPolicy:
    """What a responder demands of the token on every request.

    ``key``: the issuer's public key (PEM or a ``cryptography`` key) or an HMAC secret; or ``jwks``:
    a JWK Set dict (``{"keys": [...]}``, the token's ``kid`` picks the key). ``issuer`` and
    ``audience`` must match ``iss`` / ``aud``; ``exp`` must be present and in the future (``leeway``
    seconds of clock skew allowed). ``required_scopes``: scopes that must all be held, or a list of
    alternative scope sets (see :meth:`from_card`). ``require_tls``: refuse tokens unless the
    responder's own connection is TLS (the profile's MUST; switch off only to demonstrate the refusal).
    """

    issuer: Union[str, Sequence[str]]
    audience: Union[str, Sequence[str]]
    key: Any = None
    jwks: Optional[Mapping[str, Any]] = None
    required_scopes: Union[Sequence[str], Sequence[Sequence[str]]] = ()
    algorithms: Optional[Sequence[str]] = None
    leeway: float = 0.0
    require_tls: bool = True
    scheme: str = "bearer"
    checked: int = field(default=0, init=False)
    refused: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if (self.key is None) == (self.jwks is None):
            raise ValueError("give the issuer's key (key=...) or its JWK Set (jwks=...), exactly one of them")
        self._key = _load_key(self.key) if self.key is not None else None
        self._jwks = None
        if self.jwks is not None:
            self._jwks = _jwt().PyJWKSet.from_dict(dict(self.jwks))
        self._alternatives = scope_alternatives(self.required_scopes)
        if self.algorithms is not None and any(a.lower() == "none" for a in self.algorithms):
            raise ValueError("the 'none' algorithm would accept unsigned tokens")

    @classmethod
    def from_card(cls, card: Mapping[str, Any], *, issuer: Union[str, Sequence[str]],
                  audience: Union[str, Sequence[str]], **kw) -> "BearerPolicy":
        """A policy whose required scopes are the card's ``securityRequirements`` for token schemes."""
        return cls(issuer=issuer, audience=audience, required_scopes=[sorted(s) for s in required_scopes_from_card(card)],
                   **kw)

    @property
    def scope_sets(self) -> list[frozenset[str]]:
        return list(self._alternatives)

    # -- checks ------------------------------------------------------------------------------------
    def _key_for(self, token: str) -> tuple[Any, Sequence[str]]:
        jwt = _jwt()
        if self._jwks is None:
            return self._key, tuple(self.algorithms or _algorithms_for(self._key))
        kid = jwt.get_unverified_header(token).get("kid")
        for k in self._jwks.keys:
            if kid is None or k.key_id == kid:
                algs = self.algorithms or ((k.algorithm_name,) if k.algorithm_name else _algorithms_for(k.key))
                return k.key, tuple(algs)
        raise AuthError(UNAUTHENTICATED, "the token's key id is not in the issuer's key set")

    def validate(self, token: str) -> dict:
        """The token's claims if it passes every check; raises :class:`AuthError` otherwise."""
        jwt = _jwt()
        from jwt import exceptions as jx

        try:
            key, algorithms = self._key_for(token)
            claims = jwt.decode(
                token, key, algorithms=list(algorithms), audience=self.audience, issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except AuthError:
            raise
        except jx.ExpiredSignatureError:
            raise AuthError(UNAUTHENTICATED, "the token has expired (exp)") from None
        except jx.ImmatureSignatureError:
            raise AuthError(UNAUTHENTICATED, "the token is not valid yet (nbf/iat)") from None
        except jx.InvalidIssuerError:
            raise AuthError(UNAUTHENTICATED, "the token was issued by an issuer this agent does not trust (iss)") from None
        except jx.InvalidAudienceError:
            raise AuthError(UNAUTHENTICATED, "the token is meant for another audience (aud)") from None
        except jx.MissingRequiredClaimError as e:
            raise AuthError(UNAUTHENTICATED, f"the token has no '{e.claim}' claim") from None
        except jx.InvalidSignatureError:
            raise AuthError(UNAUTHENTICATED, "the token's signature does not verify") from None
        except jx.InvalidAlgorithmError:
            raise AuthError(UNAUTHENTICATED, "the token is signed with an algorithm this agent does not accept") from None
        except jx.DecodeError:
            raise AuthError(UNAUTHENTICATED, "the bearer value is not a well-formed JWT") from None
        except (jx.PyJWTError, ValueError, TypeError, KeyError):
            raise AuthError(UNAUTHENTICATED, "the token is not valid") from None
        if self._alternatives:
            held = scopes_of(claims)
            if not any(alt <= held for alt in self._alternatives):
                missing = sorted(min(self._alternatives, key=lambda a: len(a - held)) - held)
                raise AuthError(PERMISSION_DENIED, f"the token lacks the required scope(s) {' '.join(missing)}")
        return claims

    def check(self, msg: MqttMessage, tls: bool) -> Optional[A2AError]:
        """None when ``msg`` may be processed, else the error to answer with (module docstring)."""
        outcome = self.authenticate(msg, tls)
        return outcome if isinstance(outcome, A2AError) else None

    def authenticate(self, msg: MqttMessage, tls: bool) -> Union[A2AError, dict]:
        """The valid token's claims (its ``sub`` names the caller), or the error to answer with."""
        self.checked += 1
        outcome = self._check(msg, tls)
        if isinstance(outcome, A2AError):
            self.refused += 1
        return outcome

    def _check(self, msg: MqttMessage, tls: bool) -> Union[A2AError, dict]:
        repeated = inbound.repeated_authorization(msg)
        if repeated is not None:
            return repeated
        value = msg.user_property(properties.AUTHORIZATION)
        if self.require_tls and not tls:
            return self._error(UNAUTHENTICATED, "this agent accepts bearer tokens over TLS only and its own broker "
                               "connection is not TLS (Profile: OAuth 2.0 and OIDC over MQTT 5); treat a token "
                               "sent here as exposed")
        if value is None:
            return self._error(UNAUTHENTICATED, "this agent requires an a2a-authorization user property "
                               "'Bearer <access_token>' on each request")
        try:
            token = properties.parse_bearer(value)
        except ValueError:
            return self._error(UNAUTHENTICATED, "a2a-authorization must be 'Bearer <access_token>'")
        try:
            return self.validate(token)
        except AuthError as e:
            return self._error(e.reason, e.detail)

    def _error(self, reason: str, detail: str) -> A2AError:
        scopes = sorted(self._alternatives[0]) if len(self._alternatives) == 1 else []
        return auth_error(reason, detail, required_scopes=scopes, scheme=self.scheme)


class LocalIssuer:
    """A stand-in OAuth 2.0 authorization server: one EC P-256 key, ES256 access tokens (JWT).

    ``token(audience, scopes)`` is what a requester would get from the token endpoint out of band;
    ``policy(audience, ...)`` is the matching :class:`BearerPolicy` for the responder.
    """

    def __init__(self, issuer: str = "https://auth.acme.example", kid: Optional[str] = None):
        from cryptography.hazmat.primitives.asymmetric import ec

        self.issuer = issuer
        self.kid = kid or uuid.uuid4().hex[:8]
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self._key.public_key()

    def token(self, audience: Union[str, Sequence[str]], scopes: Iterable[str] = (), *, subject: str = "coordinator",
              lifetime_s: float = 300.0, issuer: Optional[str] = None, now: Optional[float] = None,
              **claims: Any) -> str:
        now = time.time() if now is None else now
        body = {"iss": issuer or self.issuer, "sub": subject, "aud": audience, "iat": int(now),
                "exp": int(now + lifetime_s), "jti": uuid.uuid4().hex}
        scopes = list(scopes)
        if scopes:
            body["scope"] = " ".join(scopes)
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return _jwt().encode(body, self._key, algorithm="ES256", headers={"kid": self.kid})

    def jwks(self) -> dict:
        """The public JWK Set (what ``jwks_uri`` would serve)."""
        jwt = _jwt()
        import json

        jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.public_key))
        jwk.update({"kid": self.kid, "use": "sig", "alg": "ES256"})
        return {"keys": [jwk]}

    def policy(self, audience: Union[str, Sequence[str]], required_scopes=(), *, use_jwks: bool = False,
               **kw) -> BearerPolicy:
        if use_jwks:
            return BearerPolicy(issuer=self.issuer, audience=audience, jwks=self.jwks(),
                                required_scopes=required_scopes, **kw)
        return BearerPolicy(issuer=self.issuer, audience=audience, key=self.public_key,
                            required_scopes=required_scopes, **kw)
