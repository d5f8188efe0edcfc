"""``python -m a2a_nb broker [--secure | --bridge-to URL]``: an embedded Mosquitto in the foreground."""
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
    b.add_argument("--bridge-to", metavar="URL", default=None,
                   help="bridge this broker to another one (mqtt://[user:pass@]host:port or mqtts://...?ca=FILE): "
                   "$a2a/# and the pool claims cross both ways, MQTT v5, QoS 1")
    b.add_argument("--no-broker-status", action="store_true",
                   help="leave agents' cards as they publish them (default: the a2a_status plugin marks each card "
                   "a2a-status-source=broker, online while its agent is connected, offline when it is gone)")
    b.set_defaults(func=cmd_broker)


def cmd_broker(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..mqtt.broker import BrokerEndpoint, BrokerError, EmbeddedBroker
    from ..mqtt.bridged import BridgedBroker
    from ..mqtt.secure import SecureBroker

    if args.secure and args.bridge_to:
        print("error: --secure and --bridge-to do not go together yet: bridge a plain broker", file=sys.stderr)
        return 2
    try:
        secure = SecureBroker(port=args.port, host=args.host) if args.secure else None
        bridged = BridgedBroker(BrokerEndpoint.from_url(args.bridge_to), port=args.port, host=args.host) \
            if args.bridge_to else None
        plain = None if secure or bridged else EmbeddedBroker(port=args.port, host=args.host,
                                                             broker_status=not args.no_broker_status)
        chosen = secure or bridged or plain
        assert chosen is not None  # one of the three is always made
        broker = chosen.start()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(broker.url, flush=True)
    print(f"# Mosquitto running (config and log in {broker.workdir}); Ctrl-C stops it.", file=sys.stderr, flush=True)
    managed = plain or secure  # the kit's own Mosquitto, with the a2a_status plugin where it builds
    if managed is not None and managed.broker_status:
        from ..mqtt.status_plugin import plugin_path

        if plugin_path():  # when it could not be built, the log's warning has said why (once)
            print("# broker-managed status: on (a2a_status plugin: cards say a2a-status-source=broker)",
                  file=sys.stderr, flush=True)
    if bridged is not None:
        print(f"# {bridged.describe()}", file=sys.stderr, flush=True)
        up = bridged.wait_connected(timeout=5.0)
        print(f"# the bridge is up ({bridged.state_topic} says 1)" if up else
              f"# the bridge is not up yet (is {bridged.remote.url} running?); Mosquitto keeps retrying, "
              f"see {broker.log_path}", file=sys.stderr, flush=True)
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
