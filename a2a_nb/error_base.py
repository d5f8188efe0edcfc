"""The one base of every error the kit raises on purpose: ``except A2ANbError`` catches them all.

Each kit error also keeps the built-in class it had (``RequestTimeout`` is still a ``TimeoutError``,
``SessionError`` a ``RuntimeError``, ``InvalidIdentifier`` a ``ValueError``), so an ``except`` written
for that class goes on working. This module imports nothing, so every layer may derive from it
(:mod:`a2a_nb.protocol` included, which stays free of paho).
"""
from __future__ import annotations


class A2ANbError(Exception):
    """An error of the a2a_nb kit: a protocol error answered by an agent (``A2AError``), a request
    nobody answered (``RequestTimeout``), a broker that cannot be reached (``SessionError``), ..."""
