"""``python -m a2a_nb serve-sdk MODULE:FACTORY``: an a2a-sdk ``AgentExecutor`` served on the profile
(:mod:`a2a_nb.sdk`) until Ctrl-C.

``FACTORY`` is a callable in an importable module (the current folder is on the path) returning an
``AgentExecutor``, or ``(executor, card)`` with the card as an ``AgentCard`` or its JSON. Without a card
the command writes one (the agent's name, the executor's class, streaming on). Who can send this what:
only the operator, on the command line; the module is the operator's own code, imported as given.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from .common import CliError, UsageError, add_scope, wait_for_signal


def register(sub) -> None:
    s = sub.add_parser("serve-sdk", help="serve an a2a-sdk AgentExecutor on MQTT until Ctrl-C (MODULE:FACTORY)")
    s.add_argument("factory", metavar="MODULE:FACTORY",
                   help="a callable returning an AgentExecutor, or (executor, card); e.g. my_agent:build")
    s.add_argument("--agent", default=None,
                   help="agent id of its topics (default: the card's MQTT interface, else the factory's name)")
    s.add_argument("--pool", default=None, help="also consume the shared pool request topic of this pool")
    add_scope(s)
    s.set_defaults(func=cmd_serve_sdk)


def load_factory(spec: str) -> Any:
    """What ``MODULE:FACTORY`` names, called; ``UsageError`` (one line) for a spec that names nothing callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{spec!r} is not MODULE:FACTORY (e.g. my_agent:build)")
    if "" not in sys.path:
        sys.path.insert(0, "")  # the current folder, as `python -m` has it
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"{module_name} has no callable {attr!r}")
    try:
        return factory()
    except Exception as exc:  # the operator's own code: say what it raised, in one line
        raise CliError(f"{spec}() raised {type(exc).__name__}: {exc}") from None


def cmd_serve_sdk(args: argparse.Namespace) -> int:
    from ..mqtt.broker import resolve
    from ..protocol import cards
    from ..sdk import serve

    made = load_factory(args.factory)
    executor, card = made if isinstance(made, tuple) and len(made) == 2 else (made, None)
    agent = args.agent or args.factory.partition(":")[2].replace("_", "-")
    if card is None:
        name = type(executor).__name__
        card = cards.agent_card(name=name, description=f"{name}, an a2a-sdk AgentExecutor served over MQTT by a2a_nb",
                                version="1.0.0", org=args.org, unit=args.unit, agent=agent,
                                skills=[cards.skill(agent, name, f"what {name} does", tags=["a2a-sdk"])],
                                streaming=True)
    try:
        served = serve(executor, card, agent=args.agent or (None if isinstance(made, tuple) else agent),
                       org=args.org, unit=args.unit, broker=resolve(args.broker).url_with_secret, pool=args.pool)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{args.factory}: {exc}") from None
    where = served.responder.request_topic
    wait_for_signal(then=served.stop, stopping=f"{served.agent} (its card will say offline)",
                    ready=f"{type(executor).__name__} serving as {served.agent} on {where} ({resolve(args.broker).url})")
    return 0
