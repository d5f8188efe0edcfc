"""``python -m a2a_nb bridge AGENT``: the agent's card and JSON-RPC endpoint over HTTP, until Ctrl-C."""
from __future__ import annotations

import argparse
import errno
import os

from .common import CliError, add_scope, no_card_hint, tcp_port, wait_for_signal


def _allowed(what: str):
    """``type=`` for ``--allow-host`` / ``--allow-origin``: ``bridge.guard``'s check (imported only
    when the option is given: the HTTP stack loads slowly), its ValueError a usage error (exit 2)."""
    def parse(text: str) -> str:
        from ..bridge import guard

        try:
            return guard.host_entry(text) if what == "host" else guard.origin_entry(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def register(sub) -> None:
    b = sub.add_parser("bridge", help="serve an MQTT agent over HTTP JSON-RPC (its card at "
                       "/.well-known/agent-card.json) on 127.0.0.1 until Ctrl-C; prints the URL first")
    b.add_argument("agent", help="the agent to bridge (it must have a retained Agent Card), e.g. ticket-desk")
    b.add_argument("--port", type=tcp_port, default=None, help="TCP port on 127.0.0.1 (default: a free one)")
    b.add_argument("--allow-host", metavar="NAME", action="append", default=[], type=_allowed("host"),
                   help="also answer requests for Host NAME (NAME:PORT for a port-forward); by default only "
                   "127.0.0.1:PORT and localhost:PORT, so that no DNS-rebinding web page reaches the agent")
    b.add_argument("--allow-origin", metavar="ORIGIN", action="append", default=[], type=_allowed("origin"),
                   help="let web pages from ORIGIN (e.g. https://tool.example) call the bridge, with CORS headers; "
                   "by default requests from every web page are refused")
    add_scope(b)
    b.set_defaults(func=cmd_bridge)


def cmd_bridge(args: argparse.Namespace) -> int:
    from ..bridge import Bridge, NoCard
    from ..mqtt.broker import ENV_URL, resolve

    bridge = Bridge(args.agent, org=args.org, unit=args.unit, broker=resolve(args.broker).url_with_secret,
                    port=args.port or 0, allow_hosts=args.allow_host, allow_origins=args.allow_origin)
    try:
        bridge.start()
    except NoCard as exc:
        private = not args.broker and not os.environ.get(ENV_URL)
        raise CliError(str(exc), hint=f"{ENV_URL} is not set, so the bridge started a private Mosquitto with no "
                       "agents on it: point it at the broker the agent uses" if private else
                       no_card_hint(args.agent, args.org, args.unit)) from None
    except OSError as exc:  # binding the HTTP port (the broker's failures are SessionErrors, not OSErrors)
        if exc.errno == errno.EADDRINUSE:
            raise CliError(f"port {args.port} on 127.0.0.1 is already in use (another bridge, or another server)",
                           hint="pick another port with --port, or leave --port out to use a free one") from None
        if exc.errno == errno.EACCES:
            raise CliError(f"port {args.port} on 127.0.0.1 needs administrator rights (ports below 1024)",
                           hint="pick a port from 1024 up with --port, or leave --port out to use a free one") from None
        raise
    banner = (f"{bridge.url}\n# {args.org}/{args.unit}/{args.agent} over HTTP: card at {bridge.card_url}, "
              f"JSON-RPC at {bridge.url} (Ctrl-C stops it)")
    if args.allow_host or args.allow_origin:
        banner += "\n# also " + "; ".join(
            ([f"answers to Host {', '.join(args.allow_host)}"] if args.allow_host else [])
            + ([f"lets web pages from {', '.join(args.allow_origin)} call it"] if args.allow_origin else []))
    wait_for_signal(then=bridge.stop, stopping="the bridge", ready=banner)
    return 0
