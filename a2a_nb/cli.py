"""``python -m a2a_nb``: the command line (broker, serve, send, story, record, lint, bench).

Every command honours ``A2A_BROKER_URL``; without it the ones that need a broker start the embedded
Mosquitto. Commands print what a learner needs and exit non-zero on failure.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Callable, Optional

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn

    return register


def _wait_for_signal() -> None:
    """Block until Ctrl-C or SIGTERM (foreground servers)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


@command("broker")
def cmd_broker(args: argparse.Namespace) -> int:
    from .mqtt.broker import BrokerError, EmbeddedBroker

    try:
        if getattr(args, "secure", False):
            from .mqtt.secure import SecureBroker

            broker = SecureBroker(port=args.port, host=args.host).start()
        else:
            broker = EmbeddedBroker(port=args.port, host=args.host).start()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(broker.url, flush=True)
    print(f"# Mosquitto running (config and log in {broker.workdir}); Ctrl-C stops it.", file=sys.stderr, flush=True)
    if getattr(args, "secure", False):
        f = broker.files
        print(f"# TLS only; CA certificate to trust: {f['ca']}", file=sys.stderr)
        print(f"# one login per agent, username = client id = {{org}}/{{unit}}/{{agent}}; passwords (mode 0600): "
              f"{f['credentials']}", file=sys.stderr)
        print(f"# Mosquitto password file: {f['passwd']}; topic rights (ACL): {f['acl']}", file=sys.stderr)
        print(f"# e.g. the coordinator: {broker.credentials('coordinator').url} (password in the file above)",
              file=sys.stderr, flush=True)
    else:
        print(f"# In another shell: export A2A_BROKER_URL={broker.url}", file=sys.stderr, flush=True)
    try:
        _wait_for_signal()
    finally:
        broker.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m a2a_nb", description="A2A over MQTT v5 teaching kit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("broker", help="run an embedded Mosquitto in the foreground; prints its mqtt:// (or mqtts://) URL first")
    b.add_argument("--port", type=int, default=None, help="TCP port (default: a free one)")
    b.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    b.add_argument("--secure", action="store_true", help="TLS only, a password per agent and topic ACLs; prints "
                   "the mqtts:// URL first, then where the CA and the credentials are")

    from . import cli_agents  # registers serve/send/story/record/lint/bench when present

    cli_agents.add_parsers(sub)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)
