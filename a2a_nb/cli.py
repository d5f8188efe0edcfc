"""``python -m a2a_nb``: the command line (broker, serve, send, story, record, lint, bench).

Every command honours ``A2A_BROKER_URL``; without it the ones that need a broker start the embedded
Mosquitto. Commands print what a learner needs; a failure is one ``error: ...`` line on stderr (plus a
hint), never a traceback unless ``--debug`` comes before the command. Exit status: 0 success, 1 an
expected failure (timeout, agent error, broker unreachable or lost, lint MUST violation, scenario not
reached), 2 a usage mistake (bad option value, bad broker URL, a file that is not a recording), 130 Ctrl-C.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import threading
from typing import Callable, Optional

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn

    return register


# -- option values: argparse turns a ValueError/ArgumentTypeError here into "usage error" + exit 2 -------
def _number(text: str, kind: type, what: str, minimum: float, strict: bool):
    """``text`` as ``kind``, finite and at least ``minimum`` (above it when ``strict``); else a message
    that says ``what`` to give."""
    try:
        value = kind(text)
    except ValueError:
        kind_name = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind_name}; give {what}") from None
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        raise argparse.ArgumentTypeError(f"{text} is out of range; give {what}")
    return value


def positive_int(text: str) -> int:
    """``type=`` for counts that must be at least 1 (-n, --members, --rounds, ...)."""
    return _number(text, int, "a whole number of at least 1", 0, strict=True)


def non_negative_int(text: str) -> int:
    """``type=`` for counts where 0 means "none" (--load-tasks 0 skips the load test)."""
    return _number(text, int, "a whole number, 0 or more", 0, strict=False)


def positive_seconds(text: str) -> float:
    """``type=`` for timeouts and durations: a number of seconds greater than 0."""
    return _number(text, float, "a number of seconds greater than 0 (for example 2.5)", 0, strict=True)


def non_negative_seconds(text: str) -> float:
    """``type=`` for pauses, where 0 means "no pause"."""
    return _number(text, float, "a number of seconds, 0 or more", 0, strict=False)


def tcp_port(text: str) -> int:
    """``type=`` for ``broker --port``: 1-65535."""
    port = _number(text, int, "a TCP port between 1 and 65535", 0, strict=True)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{text} is out of range; give a TCP port between 1 and 65535")
    return port


def one_of(names: tuple[str, ...], what: str) -> Callable[[str], str]:
    """``type=`` for a name from a fixed list, with a message that names the list
    (used together with ``choices=names`` so ``--help`` shows them too)."""
    def check(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; choose from {', '.join(names)}")
        return text

    check.__name__ = what  # argparse names the type in some messages
    return check


def _wait_for_signal() -> None:
    """Block until Ctrl-C or SIGTERM (foreground servers)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


@command("broker")
def cmd_broker(args: argparse.Namespace) -> int:
    from dataclasses import replace

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
        print("# In other shells, every agent logs in as itself from the credentials file:", file=sys.stderr)
        print(f"#   export A2A_BROKER_URL='{broker.url}'", file=sys.stderr)
        print(f"#   export A2A_BROKER_CREDENTIALS={f['credentials']}", file=sys.stderr)
        print("#   python -m a2a_nb serve ticket-desk      # and in a third shell:", file=sys.stderr)
        print('#   python -m a2a_nb send ticket-desk "TCK-4821: order status not updating after checkout" --stream',
              file=sys.stderr)
        coordinator = replace(broker.credentials("coordinator"), password="PASSWORD")
        print(f"# or one login in the URL, e.g. the coordinator's (PASSWORD: its entry in the credentials file):\n"
              f"#   export A2A_BROKER_URL='{coordinator.url_with_secret}'", file=sys.stderr, flush=True)
    else:
        print(f"# In another shell: export A2A_BROKER_URL={broker.url}", file=sys.stderr, flush=True)
    try:
        _wait_for_signal()
    finally:
        broker.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m a2a_nb", description="A2A over MQTT v5 teaching kit",
                                epilog="Exit status: 0 success, 1 expected failure (timeout, agent error, broker "
                                       "unreachable or lost, lint MUST violation), 2 usage mistake, 130 Ctrl-C.")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of a failure (before COMMAND)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("broker", help="run an embedded Mosquitto in the foreground; prints its mqtt:// (or mqtts://) URL first")
    b.add_argument("--port", type=tcp_port, default=None, help="TCP port (default: a free one)")
    b.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    b.add_argument("--secure", action="store_true", help="TLS only, a password per agent and topic ACLs; prints "
                   "the mqtts:// URL first, then where the CA and the credentials are")

    from . import cli_agents  # registers serve/send/story/record/lint/bench when present

    cli_agents.add_parsers(sub)
    return p


class CliError(Exception):
    """A failure a command has already put into words: exit ``status`` 1, with an optional ``hint``."""

    status = EXIT_FAILED

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class UsageError(CliError, ValueError):
    """The command line asks for something that cannot work (exit 2); the message says what to change."""

    status = EXIT_USAGE


def check_broker_url(args: argparse.Namespace) -> None:
    """Refuse a malformed broker URL before anything connects (exit 2, not a traceback later).

    Only commands with a ``--broker`` option look at the URL, so a stray ``A2A_BROKER_URL`` never
    stops ``lint`` (which needs no broker)."""
    if not hasattr(args, "broker"):
        return
    from .mqtt.broker import ENV_URL, BrokerEndpoint, BrokerError

    url = args.broker or os.environ.get(ENV_URL)
    if not url:
        return
    try:
        BrokerEndpoint.from_url(url)
    except BrokerError as exc:
        where = "--broker" if args.broker else ENV_URL
        raise UsageError(f"{where}: {exc}") from None


def _broker_url(args: argparse.Namespace) -> Optional[str]:
    from .mqtt.broker import ENV_URL

    return getattr(args, "broker", None) or os.environ.get(ENV_URL) or None


def broker_lost(args: argparse.Namespace) -> Optional[str]:
    """The printable URL of the command's broker when it no longer accepts connections, else None.

    Asked after a timeout or a session error: to a requester a silent agent and a dead broker look
    the same, a first-reply timeout (Profile: Requester Retry and Timeout Profile); one TCP connect
    tells them apart."""
    url = _broker_url(args)
    if url is None:  # the embedded broker of this process: it lives as long as we do
        return None
    from .mqtt.broker import BrokerEndpoint, port_accepts

    endpoint = BrokerEndpoint.from_url(url)
    return None if port_accepts(endpoint.host, endpoint.port, timeout=0.5) else endpoint.url


_BROKER_HINT = "start one with `python -m a2a_nb broker` and point A2A_BROKER_URL (or --broker) at the URL it prints"


def explain(exc: BaseException, args: argparse.Namespace) -> tuple[int, str, str]:
    """``(exit status, message, hint)`` for a failure of a command: the one place that maps the kit's
    exceptions to what a learner reads. The hint may be empty."""
    from .agents.requester import RequestTimeout
    from .mqtt.broker import BrokerEndpoint, BrokerError
    from .mqtt.session import SessionError
    from .protocol.errors import A2AError, classify

    if isinstance(exc, CliError):
        return exc.status, str(exc), exc.hint
    if isinstance(exc, A2AError):
        return EXIT_FAILED, f"the agent answered error {exc.code} ({classify(exc).name}): {exc.message}", ""
    if isinstance(exc, (RequestTimeout, SessionError)):
        lost = broker_lost(args)
        never_connected = str(exc).startswith("cannot reach")  # Session.connect's message: not "lost"
        if lost is not None and not never_connected:
            return EXIT_FAILED, f"lost the broker at {lost} ({exc})", "start it again, then rerun the command"
        if isinstance(exc, RequestTimeout):
            hint = ("is the agent served? (`python -m a2a_nb serve ...`); --timeout waits longer"
                    if args.command == "send" else "")
            return EXIT_FAILED, f"timeout: {exc}", hint
        return EXIT_FAILED, str(exc), ""
    if isinstance(exc, BrokerError):
        return EXIT_FAILED, str(exc), ""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        url = _broker_url(args)
        where = BrokerEndpoint.from_url(url).url if url else "the broker"  # never print a password
        return EXIT_FAILED, f"cannot reach the MQTT broker at {where}: {exc}", _BROKER_HINT
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError, FileExistsError,
                        PermissionError)):
        text = f"{exc.filename}: {exc.strerror.lower()}" if exc.filename and exc.strerror else str(exc)
        return EXIT_USAGE, text, ""
    if isinstance(exc, ValueError):
        return EXIT_USAGE, str(exc), ""
    if isinstance(exc, OSError):
        return EXIT_FAILED, str(exc), ""
    debug = f"python -m a2a_nb --debug {args.command} ..."
    return EXIT_FAILED, f"{type(exc).__name__}: {exc}", f"unexpected; `{debug}` shows where it happened"


class _NoTraceback(logging.Formatter):
    """Log lines that name an exception instead of printing its traceback (``--debug`` prints it)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info:
            exc = record.exc_info[1]
            record = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None,
                                            "msg": f"{record.getMessage()} ({type(exc).__name__}: {exc})",
                                            "args": ()})
        return super().format(record)


def configure_logging(args: argparse.Namespace) -> None:
    """What the agents log reaches stderr: every detail with ``--debug``; otherwise warnings (a dropped
    request, a publish that failed) as one line each for the servers (``serve``, ``broker``), and only
    errors for the commands that print their own result."""
    handler = logging.StreamHandler(sys.stderr)
    if args.debug:
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s: %(message)s"))
        level = logging.DEBUG
    else:
        handler.setFormatter(_NoTraceback("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        level = logging.WARNING if args.command in ("serve", "broker") else logging.ERROR
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("paho").setLevel(max(level, logging.WARNING))


def main(argv: Optional[list[str]] = None) -> int:
    """Run one command. Failures print ``error: ...`` (and ``hint: ...``) on stderr and return the exit
    status of :func:`explain`; with ``--debug`` they raise, traceback included."""
    args = build_parser().parse_args(argv)
    configure_logging(args)
    if args.debug:
        check_broker_url(args)
        return COMMANDS[args.command](args)
    try:
        check_broker_url(args)
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        status, message, hint = explain(exc, args)
        print(f"error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return status
