"""Several brokers for one session: ``A2A_BROKER_URL=mqtt://site-a:1883,mqtt://site-b:1883``.

A list names brokers that carry the same ``$a2a/`` tree (bridged sites, or nodes of one cluster). A
session connects to the first that answers; when its broker dies it tries it again briefly (a restart
is the common case), then moves on to the next, round the list. After every reconnect, wherever it
lands, the session renews its subscriptions and its ``on_reconnect`` hook runs: an agent republishes
its retained card and pool presence there, a requester resumes its tasks with GetTask and its streams'
re-subscription, exactly as after a reconnect to the same broker (Profile: Client Session
Requirements, reconnect; Presence and Liveness, LWT Configuration 4).

A node of the list may take the TCP connection and never answer (a hung broker, a hostile port): each
attempt has its own deadline, TCP and TLS handshakes and CONNACK together (:func:`attempt_timeout`),
and an attempt that runs out of it moves on to the next broker at once (a stalled node is not
restarting). The first connect has one deadline for the whole list (the session's connect timeout).

Pure: which broker an attempt goes to, and how long it may take, are functions of the attempt's number.
"""
from __future__ import annotations

ATTEMPTS_PER_BROKER = 2
"""Reconnect attempts on one broker before the next is tried (the network loop waits 0.05 s, then 0.1 s,
... between attempts: a broker that is not back within about a quarter of a second is left)."""


def split_urls(text: str) -> list[str]:
    """The URLs of a comma-separated list (empty items ignored). A comma inside a password is written
    ``%2C``, as every reserved character of a URL's user or password."""
    return [part.strip() for part in text.split(",") if part.strip()]


def broker_for_attempt(attempt: int, first: int, count: int) -> int:
    """Which broker (an index into the list) reconnect attempt ``attempt`` (1, 2, ...) goes to, when the
    connection to broker ``first`` was lost: ``ATTEMPTS_PER_BROKER`` on it, then as many on each next one."""
    if count <= 1 or attempt < 1:
        return first
    return (first + (attempt - 1) // ATTEMPTS_PER_BROKER) % count


ATTEMPT_TIMEOUT_S = 1.0
"""How long one attempt on one broker of a list may take on the first pass round the list (a CONNACK
on loopback takes about a millisecond, over a continent with TLS well under a second); it doubles on
each further pass, so a slow network still gets in, up to the session's connect timeout. Before, a
node that stalled cost the connect timeout (10 s) at connect and the keep-alive (30 s) per reconnect attempt."""


def attempt_timeout(attempt: int, count: int, cap: float) -> float:
    """The deadline of reconnect attempt ``attempt`` (1, 2, ...) over a list of ``count`` brokers."""
    passes = max(0, attempt - 1) // (ATTEMPTS_PER_BROKER * max(1, count))
    return min(cap, ATTEMPT_TIMEOUT_S * 2 ** min(passes, 16))


def last_attempt_on_broker(attempt: int) -> int:
    """The last attempt of the run on one broker that ``attempt`` belongs to: after an attempt that ran
    out of time, the next one goes to the next broker."""
    return (max(0, attempt - 1) // ATTEMPTS_PER_BROKER + 1) * ATTEMPTS_PER_BROKER
