"""HTTP JSON-RPC in front of an MQTT agent: ``Bridge("ticket-desk")`` (``python -m a2a_nb bridge``).

Modules: ``card`` (the retained card with an HTTP interface added), ``forward`` (each JSON-RPC
method as a Requester call: Task.id rules, routing, tokens, errors), ``sse`` (a reply stream as
Server-Sent Events, saying what happens while the broker is away), ``guard`` (who may call: Host,
Origin, JSON media type, CORS), ``connections`` (a cap on open connections, a deadline for each
request, refusals logged once per interval), ``app`` (the Starlette routes and their limits),
``server`` (``Bridge``: uvicorn on a free loopback port, bounded start and stop).
"""
from .server import Bridge, NoCard

__all__ = ["Bridge", "NoCard"]
