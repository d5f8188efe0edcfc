"""a2a_nb: learn the A2A protocol over MQTT v5 in Jupyter notebooks.

The front door: what a lesson or a first script needs, importable from ``a2a_nb`` itself::

    from a2a_nb import Requester, Responder, TicketDesk, Recorder, load_traffic, stop_all

=================  =============================================================================
``Responder``      an agent: publishes its card, answers requests (``ResponderOptions`` tunes it)
``Requester``      sends messages and streams, tracks tasks, follows handovers
``TicketDesk``     the story's ticket desk with its analysts (a ready-made ``Responder``)
``Discovery``      watches the retained Agent Cards of a unit
``Recorder``       records broker traffic as JSON lines; ``load_traffic`` loads it into pandas
``RequestTap``     shows the requests on a unit's request topics, as a lesson's spy
``Session``        one MQTT v5 client (the I/O edge); ``SessionError`` when it cannot connect
``RetryProfile``   the requester's timeouts and retries
``A2ANbError``     the base of every error the kit raises (each keeps its built-in class too)
``A2AError``       an A2A JSON-RPC error (its ``code`` and ``message``)
``RequestTimeout`` a request no agent answered within the retry profile
``UnknownAgent``   a ``RequestTimeout`` at once: a new task's agent has no card and nobody serves it
``run_probe``      checks an agent against the profile (Core and Standard conformance)
``as_described``   the lessons' checks: ``as_described(said("words of the text", actual, expected))``
``Bridge``         the HTTP+JSON binding in front of an MQTT agent (needs the ``bridge`` extra)
``stop_all``       stops every agent, requester and session this kernel started
=================  =============================================================================

Each name loads its module on first use, so ``import a2a_nb`` imports neither paho, pandas nor
matplotlib. The layers behind the door: protocol rules as pure functions in
:mod:`a2a_nb.protocol`, the MQTT edge in :mod:`a2a_nb.mqtt`, the roles in :mod:`a2a_nb.agents`,
the story's cast in :mod:`a2a_nb.story`, recordings and charts in :mod:`a2a_nb.traffic`. The plan
of the house (principles, layers, what the lessons import and what only operators use) is
docs/architecture.md in the repository.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy_names import lazy_names

__version__ = "0.1.0"

if TYPE_CHECKING:  # the table of the door: a type checker reads these lines, lazy_names loads each on first use
    from .agents.discovery import Discovery
    from .agents.requester import Requester, RequestTimeout, UnknownAgent
    from .agents.responder import Responder, ResponderOptions
    from .bridge.server import Bridge
    from .error_base import A2ANbError
    from .mqtt.session import Session, SessionError, stop_all
    from .notebook.claims import as_described, said
    from .notebook.tap import RequestTap
    from .probe.runner import run_probe
    from .protocol.errors import A2AError
    from .protocol.retry import RetryProfile
    from .story.cast import TicketDesk
    from .traffic.frame import load_traffic
    from .traffic.recorder import Recorder

__getattr__, __dir__, _names = lazy_names(__name__)
__all__ = sorted([*_names, "__version__"])
