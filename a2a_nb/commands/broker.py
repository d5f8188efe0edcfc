"""``python -m a2a_nb broker [--secure]``: an embedded Mosquitto in the foreground."""
from __future__ import annotations

import argparse
import shlex
import sys

from .common import tcp_port, wait_for_signal


def register(sub) -> None:
    b = sub.add_parser("broker", help="run an embedded Mosquitto in the foreground; prints its mqtt:// (or mqtts://) URL first")
    b.add_argument("--port", type=tcp_port, default=None, help="TCP port (default: a free one)")
    b.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    b.add_argument("--secure", action="store_true", help="TLS only, a password per agent and topic ACLs; prints "
                   "the mqtts:// URL first, then where the CA and the credentials are")
    b.set_defaults(func=cmd_broker)


def cmd_broker(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..mqtt.broker import BrokerError, EmbeddedBroker
    from ..mqtt.secure import SecureBroker

    try:
        secure = SecureBroker(port=args.port, host=args.host) if args.secure else None
        broker = (secure or EmbeddedBroker(port=args.port, host=args.host)).start()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(broker.url, flush=True)
    print(f"# Mosquitto running (config and log in {broker.workdir}); Ctrl-C stops it.", file=sys.stderr, flush=True)
    if secure is not None:
        f = secure.files
        print(f"# TLS only; CA certificate to trust: {f['ca']}", file=sys.stderr)
        print(f"# one login per agent, username = client id = {{org}}/{{unit}}/{{agent}}; passwords (mode 0600): "
              f"{f['credentials']}", file=sys.stderr)
        print(f"# Mosquitto password file: {f['passwd']}; topic rights (ACL): {f['acl']}", file=sys.stderr)
        print("# In other shells, every agent logs in as itself from the credentials file:", file=sys.stderr)
        print(f"#   {export_line('A2A_BROKER_URL', broker.url)}", file=sys.stderr)
        print(f"#   {export_line('A2A_BROKER_CREDENTIALS', str(f['credentials']))}", file=sys.stderr)
        print("#   python -m a2a_nb serve ticket-desk      # and in a third shell:", file=sys.stderr)
        print('#   python -m a2a_nb send ticket-desk "TCK-4821: order status not updating after checkout" --stream',
              file=sys.stderr)
        coordinator = replace(secure.credentials("coordinator"), password="PASSWORD")
        print(f"# or one login in the URL, e.g. the coordinator's (PASSWORD: its entry in the credentials file):\n"
              f"#   {export_line('A2A_BROKER_URL', coordinator.url_with_secret)}", file=sys.stderr, flush=True)
    else:
        print(f"# In another shell: {export_line('A2A_BROKER_URL', broker.url)}", file=sys.stderr, flush=True)
    wait_for_signal(then=broker.stop, stopping="the broker")
    return 0


def export_line(name: str, value: str) -> str:
    """``export NAME=VALUE`` to paste into bash or zsh: VALUE quoted when the shell would read it
    otherwise (zsh takes the ``?`` of ``?inflight=0`` for a wildcard and refuses the line)."""
    return f"export {name}={shlex.quote(value)}"
