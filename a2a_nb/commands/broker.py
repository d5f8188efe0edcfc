"""``python -m a2a_nb broker [--secure | --bridge-to URL]``: an embedded Mosquitto in the foreground.

``--bridge-to URL`` comes from whoever runs the command, and ``ps`` shows a command line to every user of
the machine: the URL carries no password (one there is refused); the password comes from
``A2A_BRIDGE_PASSWORD``, a file (``--bridge-password-file``) or a prompt. Every URL part is data,
never config (``bridge_config``), and a bridge that brings messages back is stopped (``LoopGuard``).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

from .common import CaughtSignals, tcp_port, wait_for_signal


ENV_BRIDGE_PASSWORD = "A2A_BRIDGE_PASSWORD"
"""The remote broker's password for ``--bridge-to`` (an environment is readable by its user only)."""

PASSWORD_FILE_MAX_BYTES = 65536


def register(sub) -> None:
    b = sub.add_parser("broker", help="run an embedded Mosquitto in the foreground; prints its mqtt:// (or mqtts://) URL first")
    b.add_argument("--port", type=tcp_port, default=None, help="TCP port (default: a free one)")
    b.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    b.add_argument("--secure", action="store_true", help="TLS only, a password per agent and topic ACLs; prints "
                   "the mqtts:// URL first, then where the CA and the credentials are")
    b.add_argument("--bridge-to", metavar="URL", default=None,
                   help="bridge this broker to another one (mqtt://[user@]host:port or mqtts://...?ca=FILE): "
                   "$a2a/# and the pool claims cross both ways, MQTT v5, QoS 1. The URL carries no password "
                   f"(ps shows command lines to every user): it comes from {ENV_BRIDGE_PASSWORD}, else "
                   "--bridge-password-file, else a prompt when a terminal is attached. A bridge that brings "
                   "messages back (to itself, or to a broker bridged back to this one) stops the broker")
    b.add_argument("--bridge-password-file", metavar="FILE", default=None,
                   help="the remote broker's password for --bridge-to: the first line of FILE")
    b.add_argument("--no-broker-status", action="store_true",
                   help="leave agents' cards as they publish them (default: the a2a_status plugin marks each card "
                   "a2a-status-source=broker, online while its agent is connected, offline when it is gone)")
    b.set_defaults(func=cmd_broker)


def cmd_broker(args: argparse.Namespace) -> int:
    from ..mqtt.broker import BrokerError, EmbeddedBroker
    from ..mqtt.bridged import BridgedBroker
    from ..mqtt.secure import SecureBroker

    if args.secure and args.bridge_to:
        print("error: --secure and --bridge-to do not go together yet: bridge a plain broker", file=sys.stderr)
        return 2
    try:
        secure = SecureBroker(port=args.port, host=args.host) if args.secure else None
        bridged = BridgedBroker(bridge_remote(args.bridge_to, args.bridge_password_file), port=args.port,
                                host=args.host) if args.bridge_to else None
        plain = None if secure or bridged else EmbeddedBroker(port=args.port, host=args.host,
                                                             broker_status=not args.no_broker_status)
        chosen = secure or bridged or plain
        assert chosen is not None  # one of the three is always made
        broker = chosen.start()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    signals = CaughtSignals().start()  # from the URL on, Ctrl-C or SIGTERM stops the broker cleanly
    try:
        guard, looped = announce(broker, plain or secure, bridged, secure, signals)
    except BaseException:  # the banner or the bridge's set-up failed: stop what runs
        signals.restore()
        broker.stop()
        raise
    wait_for_signal(then=broker.stop, stopping="the broker", until=guard.looped if guard else None, signals=signals)
    if guard is not None:
        guard.stop()
    if looped:
        print(f"error: the bridge to {bridged.remote.url if bridged else '?'} brings messages back (one probe "
              f"arrived {looped[0]} times): this broker is bridged to itself, or to a broker bridged back to it; "
              "stopped", file=sys.stderr, flush=True)
        return 2
    return 0


def announce(broker, managed, bridged, secure, signals: CaughtSignals):
    """The broker command's banner: the URL on stdout, then on stderr what runs and how to reach it;
    for a bridged broker, whether the bridge came up, and its loop guard. Returns the guard (None
    without one) and the list a loop it finds is recorded in. ``managed``: the kit's own Mosquitto,
    with the a2a_status plugin where it builds."""
    from dataclasses import replace

    print(broker.url, flush=True)
    print(f"# Mosquitto running (config and log in {broker.workdir}); Ctrl-C stops it.", file=sys.stderr, flush=True)
    if managed is not None and managed.broker_status:
        from ..mqtt.status_plugin import plugin_path

        if plugin_path():  # when it could not be built, the log's warning has said why (once)
            print("# broker-managed status: on (a2a_status plugin: cards say a2a-status-source=broker)",
                  file=sys.stderr, flush=True)
    looped: list[int] = []
    guard = None
    if bridged is not None:
        print(f"# {bridged.describe()}", file=sys.stderr, flush=True)
        up = bridged.wait_connected(timeout=5.0, cancel=signals.stop)
        if not signals.stop.is_set():  # (a Ctrl-C meanwhile: straight to the clean stop)
            print(f"# the bridge is up ({bridged.state_topic} says 1)" if up else
                  f"# the bridge is not up yet (is {bridged.remote.url} running?); Mosquitto keeps retrying, "
                  f"see {broker.log_path}", file=sys.stderr, flush=True)
            guard = start_loop_guard(bridged, looped)
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
    return guard, looped


def bridge_remote(url: str, password_file: "str | None"):
    """The remote broker of ``--bridge-to``: the URL (which must carry no password), its password from
    ``A2A_BRIDGE_PASSWORD``, else ``password_file``, else a prompt on a terminal (else none)."""
    from dataclasses import replace

    from ..mqtt.broker import BrokerEndpoint, BrokerError

    remote = BrokerEndpoint.from_url(url)
    if remote.alternates:
        raise BrokerError("--bridge-to takes one broker URL, not a list")
    if remote.password is not None:
        raise BrokerError(f"--bridge-to {remote.url} carries a password, which `ps` shows to every user of this "
                          f"machine: give mqtt://USER@HOST:PORT and the password in {ENV_BRIDGE_PASSWORD} or "
                          "--bridge-password-file FILE")
    password = os.environ.get(ENV_BRIDGE_PASSWORD) or None
    if password is None and password_file:
        password = read_password_file(password_file)
    if password is None and remote.username and sys.stdin.isatty():
        import getpass

        password = getpass.getpass(f"password of {remote.username} on {remote.url}: ") or None
    return replace(remote, password=password) if password else remote


def read_password_file(path: str) -> str:
    """The first line of ``path`` (its line end removed), read up to 64 KiB."""
    from ..mqtt.broker import BrokerError

    try:
        with open(path, "rb") as f:
            head = f.read(PASSWORD_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise BrokerError(f"--bridge-password-file {path}: cannot read it ({exc.strerror or exc})") from None
    line = head.split(b"\n", 1)[0]
    if len(line) > PASSWORD_FILE_MAX_BYTES:
        raise BrokerError(f"--bridge-password-file {path}: its first line is longer than {PASSWORD_FILE_MAX_BYTES} bytes")
    try:
        return line.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError:
        raise BrokerError(f"--bridge-password-file {path}: its first line is not UTF-8 text") from None


def start_loop_guard(bridged, looped: list):
    """A :class:`~a2a_nb.mqtt.bridged.LoopGuard` on ``bridged``: a loop is recorded in ``looped`` and
    ends the broker command's wait; None when the guard cannot connect (the broker is gone)."""
    from ..mqtt.bridged import LoopGuard
    from ..mqtt.session import ConnectFailed, SessionError

    try:
        return LoopGuard(bridged, on_loop=looped.append).start()
    except (ConnectFailed, SessionError) as exc:
        print(f"# no loop guard ({exc})", file=sys.stderr, flush=True)
        return None


def export_line(name: str, value: str) -> str:
    """``export NAME=VALUE`` to paste into bash or zsh: VALUE quoted when the shell would read it
    otherwise (zsh takes the ``?`` of ``?inflight=0`` for a wildcard and refuses the line)."""
    return f"export {name}={shlex.quote(value)}"
