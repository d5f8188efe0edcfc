"""Lesson 08's exercises: tell the two locks (and the kit's own check) apart, and read a token's claims.

``which_lock`` looks at what each attempt got back, as the lesson teaches: an MQTT reason code of
128 or more in a CONNACK or PUBACK is the broker's refusal; a JSON-RPC error is the answer of an agent
that read the request (the desk); a ``SessionError`` without a reason code, or the requester's
``ValueError``, was raised by the kit before anything went on the wire.

``claims_to_fix`` decodes the token (without checking its signature, as the lesson's step 4 does)
and compares each claim with the desk's :class:`~a2a_nb.agents.auth.BearerPolicy`: the claims that
fail are the answer, whatever the desk's error named first.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from ...agents.auth import BearerPolicy, scopes_of
from ...mqtt.session import PublishResult, SessionError
from ...protocol.errors import A2AError
from . import Feedback, not_yet, right, unanswered

__all__ = ["WHICH_LOCK", "CLAIMS_TO_FIX", "lock_of", "describe", "which_lock", "claims_that_fail", "claims_to_fix"]

WHICH_LOCK = "Which lock said no?"
CLAIMS_TO_FIX = "Read the token, not just the error"

LOCKS = ("broker", "desk", "kit")
SAME_AS = {"mosquitto": "broker", "the broker": "broker", "agent": "desk", "the desk": "desk", "ticket-desk": "desk",
           "responder": "desk", "the agent": "desk", "the kit": "kit", "a2a_nb": "kit", "client": "kit",
           "session": "kit", "requester": "kit"}
CLAIMS = ("iss", "aud", "exp", "scope")
CLAIM_SAME_AS = {"issuer": "iss", "audience": "aud", "expiry": "exp", "expiration": "exp", "expires": "exp",
                 "scopes": "scope", "scp": "scope"}
WHERE_TO_LOOK = ("look at what came back for it, not at what was tried: a JSON-RPC error is the reply of an agent "
                 "that read the request; a reason code of 128 or more in a PUBACK or CONNACK is an MQTT answer; "
                 "an error whose reason_code is None means nothing went on the wire")


def lock_of(refusal: Any) -> Optional[str]:
    """Who refused: ``broker``, ``desk`` (any agent answering with a JSON-RPC error) or ``kit``; None
    for something that is not a refusal (an accepted publish, a reply)."""
    if isinstance(refusal, A2AError):
        return "desk"
    if isinstance(refusal, PublishResult):
        return None if refusal.accepted else "broker"
    if isinstance(refusal, SessionError):
        return "kit" if refusal.reason_code is None else "broker"
    if isinstance(refusal, ValueError):  # the requester's own check (a token on plain MQTT)
        return "kit"
    return None


def describe(refusals: Mapping[str, Any]) -> None:
    """Print what each attempt got back, one line each (what the learner reads to answer)."""
    for label, refusal in refusals.items():
        if isinstance(refusal, A2AError):
            shown = f"JSON-RPC error {refusal.code}: {refusal.message}"
        elif isinstance(refusal, PublishResult):
            shown = f"PUBACK {refusal.reason_code} {refusal.reason}"
        elif isinstance(refusal, SessionError):
            shown = f"SessionError (reason_code {refusal.reason_code}): {refusal}"
        else:
            shown = f"{type(refusal).__name__}: {refusal}"
        print(f"{label}: {shown}")


def _lock_name(answer: Any) -> Optional[str]:
    if not isinstance(answer, str):
        return None
    name = answer.strip().lower()
    name = SAME_AS.get(name, name)
    return name if name in LOCKS else None


def which_lock(answer: Any, refusals: Mapping[str, Any]) -> Feedback:
    """Right when ``answer`` maps every label of ``refusals`` to the lock that refused it."""
    blank = unanswered(WHICH_LOCK, answer)
    if blank is not None:
        return blank
    labels = sorted(refusals)
    if not isinstance(answer, Mapping) or sorted(answer) != labels:
        return not_yet(WHICH_LOCK, f"give a dict with one answer for each of {', '.join(labels)}, "
                                   f"e.g. {{{', '.join(repr(k) + ': ...' for k in labels)}}}")
    unknown = [k for k in labels if _lock_name(answer[k]) is None]
    if unknown:
        return not_yet(WHICH_LOCK, f"{', '.join(unknown)}: answer with one of {', '.join(repr(x) for x in LOCKS)} "
                                   f"(got {', '.join(repr(answer[k]) for k in unknown)})")
    wrong = [k for k in labels if _lock_name(answer[k]) != lock_of(refusals[k])]
    if wrong:
        return not_yet(WHICH_LOCK, f"{' and '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not right yet: "
                                   + WHERE_TO_LOOK)
    by_lock = {lock: [k for k in labels if lock_of(refusals[k]) == lock] for lock in LOCKS}
    return right(WHICH_LOCK, "; ".join(f"{lock}: {', '.join(ks)}" for lock, ks in by_lock.items() if ks)
                 + ". Only the broker's and the desk's refusals are locks: the kit's check only stops a mistake early")


def _names(value: Any) -> Iterable[str]:
    return [value] if isinstance(value, str) else list(value)


def claims_that_fail(token: str, policy: BearerPolicy, now: Optional[float] = None) -> set[str]:
    """The claims of ``token`` that ``policy`` refuses: ``iss``, ``aud``, ``exp``, ``scope`` (the
    signature aside). Reads the token without checking its signature, as anyone can."""
    import jwt

    claims = jwt.decode(token, options={"verify_signature": False})
    now = time.time() if now is None else now
    failing = set()
    if claims.get("iss") not in set(_names(policy.issuer)):
        failing.add("iss")
    if not set(_names(claims.get("aud") or [])) & set(_names(policy.audience)):
        failing.add("aud")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or exp <= now - policy.leeway:
        failing.add("exp")
    if policy.scope_sets and not any(needed <= scopes_of(claims) for needed in policy.scope_sets):
        failing.add("scope")
    return failing


def _claim_names(answer: Any) -> Optional[set[str]]:
    if isinstance(answer, str):
        answer = [answer]
    if isinstance(answer, Mapping) or not isinstance(answer, Iterable):
        return None
    names = set()
    for item in answer:
        if not isinstance(item, str):
            return None
        name = item.strip().lower()
        names.add(CLAIM_SAME_AS.get(name, name))
    return names


def claims_to_fix(answer: Any, token: str, policy: BearerPolicy) -> Feedback:
    """Right when ``answer`` names exactly the claims of ``token`` that the desk's ``policy`` refuses."""
    blank = unanswered(CLAIMS_TO_FIX, answer)
    if blank is not None:
        return blank
    if isinstance(answer, Mapping):
        return not_yet(CLAIMS_TO_FIX, "that looks like the claims themselves: answer with the names of the "
                                      "claims that must change, e.g. a set of strings")
    names = _claim_names(answer)
    if names is None:
        return not_yet(CLAIMS_TO_FIX, f"answer with a set of claim names, each one of {', '.join(CLAIMS)}")
    unknown = sorted(names - set(CLAIMS))
    if unknown:
        return not_yet(CLAIMS_TO_FIX, f"{', '.join(map(repr, unknown))}: the desk checks these claims: "
                                      f"{', '.join(CLAIMS)} (and the signature, which is not a claim)")
    if not names:
        return not_yet(CLAIMS_TO_FIX, "the desk refused the token, so at least one claim must change: decode "
                                      "the claims and compare each with the policy")
    failing = claims_that_fail(token, policy)
    missing, extra = failing - names, names - failing
    if extra:
        return not_yet(CLAIMS_TO_FIX, f"{', '.join(sorted(extra))} already {'passes' if len(extra) == 1 else 'pass'} "
                                      "the desk's check: compare the decoded value with the policy again")
    if missing:
        return not_yet(CLAIMS_TO_FIX, f"right so far, but {len(missing)} more claim{'s' if len(missing) > 1 else ''} "
                                      "must change: the desk's error names only the first check that failed. "
                                      "Decode every claim and compare each with the policy")
    return right(CLAIMS_TO_FIX, f"{', '.join(sorted(failing))} must change: the refusal named only the first "
                                "check that failed")
