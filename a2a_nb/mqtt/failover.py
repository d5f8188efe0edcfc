"""Several brokers for one session: ``A2A_BROKER_URL=mqtt://site-a:1883,mqtt://site-b:1883``.

A list names brokers that carry the same ``$a2a/`` tree (bridged sites, or nodes of one cluster). A
session connects to the first that answers; when its broker dies it tries it again briefly (a restart
is the common case), then moves on to the next, round the list. After every reconnect, wherever it
lands, the session renews its subscriptions and its ``on_reconnect`` hook runs: an agent republishes
its retained card and pool presence there, a requester resumes its tasks with GetTask and its streams'
re-subscription, exactly as after a reconnect to the same broker (Profile: Client Session
Requirements, reconnect; Presence and Liveness, LWT Configuration 4).

Pure: which broker an attempt goes to is a function of the attempt's number.
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
