"""``python -m a2a_nb``: the command line (broker, check-broker, serve, serve-sdk, send, story, record, lint, bridge,
probe).

Every command honours ``A2A_BROKER_URL``; without it the ones that need a broker start the embedded
Mosquitto. Commands print what a learner needs; a failure is one ``error: ...`` line on stderr (plus a
hint), never a traceback unless ``--debug`` comes before the command. Exit status: 0 success, 1 an
expected failure (timeout, agent error, broker unreachable or lost, lint MUST violation, scenario not
reached), 2 a usage mistake (bad option value, bad broker URL, a file that is not a recording), 130 Ctrl-C.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import Optional

from .commands import bridge, broker, check_broker, probe, roles, sdk, traffic
from .commands.common import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CliError, UsageError, broker_lost,
                              command_broker_url)


def program_name() -> str:
    """How the user started the command line: ``a2a-nb`` (the console script) or ``python -m a2a_nb``."""
    return "a2a-nb" if os.path.basename(sys.argv[0] or "") == "a2a-nb" else "python -m a2a_nb"


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog=program_name(), description="A2A over MQTT v5 teaching kit",
                                epilog="Exit status: 0 success, 1 expected failure (timeout, agent error, broker "
                                       "unreachable or lost, lint MUST violation), 2 usage mistake, 130 Ctrl-C.")
    p.add_argument("--debug", "-v", action="store_true", help="show the Python traceback of a failure and every "
                   "log line (before or after COMMAND)")
    p.add_argument("--version", action="version", version=f"a2a_nb {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for group in (broker, check_broker, roles, sdk, traffic, bridge, probe):
        group.register(sub)
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)  # its own usage for its own mistakes (parse_args)
        # `send echo hi --debug` as well as `--debug send echo hi`; SUPPRESS keeps the top-level value
        command.add_argument("--debug", "-v", action="store_true", default=argparse.SUPPRESS,
                             help="show the Python traceback of a failure and every log line")
    return p


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """The command line, parsed. An option the command does not know is reported with that command's
    usage (``python -m a2a_nb send: error: unrecognized arguments: --bogus``): argparse's own
    ``parse_args`` leaves unknown options to the top-level parser, whose usage lists only commands."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


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


_BROKER_HINT = "start one with `python -m a2a_nb broker` and point A2A_BROKER_URL (or --broker) at the URL it prints"
def extras_hint() -> str:
    """What to run when a command needs a library an extra brings (the kit is not on a public index:
    :func:`a2a_nb.installed.install_extra_command` names the checkout or file it was installed from)."""
    from .installed import install_extra_command

    return (f"this command needs a library the kit's core install leaves out: `{install_extra_command('notebook')}` "
            "adds them all (or only [bridge] for the bridge, [secure] for broker --secure)")


def explain(exc: BaseException, args: argparse.Namespace, debug_usage: str = "") -> tuple[int, str, str]:
    """``(exit status, message, hint)`` for a failure of a command: the one place that maps the kit's
    exceptions to what a learner reads. The hint may be empty; an unexpected failure's hint names
    ``debug_usage``, the command line that shows the traceback (default ``python -m a2a_nb --debug COMMAND ...``)."""
    from .agents.requester import RequestTimeout
    from .mqtt.broker import BrokerEndpoint, BrokerError
    from .mqtt.session import ConnectFailed, SessionError
    from .protocol.errors import A2AError, classify

    if isinstance(exc, CliError):
        return exc.status, str(exc), exc.hint
    if isinstance(exc, A2AError):
        return EXIT_FAILED, f"the agent answered error {exc.code} ({classify(exc).name}): {exc.message}", ""
    if isinstance(exc, (RequestTimeout, SessionError)):
        lost = broker_lost(args)
        if lost is not None and not isinstance(exc, ConnectFailed):  # a first connection lost nothing
            return EXIT_FAILED, f"lost the broker at {lost} ({exc})", "start it again, then rerun the command"
        if isinstance(exc, RequestTimeout):
            hint = ("is the agent served? (`python -m a2a_nb serve ...`); --timeout waits longer"
                    if args.command == "send" else "")
            return EXIT_FAILED, f"timeout: {exc}", hint
        return EXIT_FAILED, str(exc), ""
    if isinstance(exc, BrokerError):
        return EXIT_FAILED, str(exc), ""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        url = command_broker_url(args)
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
    if isinstance(exc, ModuleNotFoundError):  # pyproject.toml: the core is paho-mqtt alone
        return EXIT_FAILED, str(exc), extras_hint()
    debug = debug_usage or f"python -m a2a_nb --debug {args.command} ..."
    return EXIT_FAILED, f"{type(exc).__name__}: {exc}", f"unexpected; `{debug}` shows where it happened"


SLOW_CONNECT_S = 0.5
"""How long a first connection may wait for the broker's CONNACK before the command says so."""


def announce_slow_connect(args: argparse.Namespace) -> threading.Event:
    """Say ``connecting to URL ...`` on stderr once the command's first connection to its broker has
    waited ``SLOW_CONNECT_S`` without an answer, so a host that never answers is not seconds of
    silence before the error (``Session.connect``'s timeout). A broker that answers at once never
    shows the line. Set the returned event to end the watch."""
    done = threading.Event()
    url = command_broker_url(args) if hasattr(args, "broker") else None
    if url is None:  # no broker, or the embedded one of this process
        return done
    from .mqtt.broker import BrokerEndpoint
    from .mqtt.session import connected_sessions, live_sessions

    shown = BrokerEndpoint.from_url(url).url  # never the password

    def watch() -> None:
        waited = 0.0
        while not done.wait(0.05) and not connected_sessions():
            if live_sessions():  # a session is connecting (registered, no CONNACK yet)
                waited += 0.05
            if waited >= SLOW_CONNECT_S:
                print(f"connecting to {shown} ...", file=sys.stderr, flush=True)
                return

    threading.Thread(target=watch, name="connect-notice", daemon=True).start()
    return done


def _run(args: argparse.Namespace) -> int:
    """The command itself, with :func:`announce_slow_connect` watching its first connection."""
    watching = announce_slow_connect(args)
    try:
        return args.func(args)
    finally:
        watching.set()


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
    request, a publish that failed) as one line each for the servers (``serve``, ``broker``, ``bridge``), and only
    errors for the commands that print their own result."""
    handler = logging.StreamHandler(sys.stderr)
    if args.debug:
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s: %(message)s"))
        level = logging.DEBUG
    else:
        handler.setFormatter(_NoTraceback("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        level = logging.WARNING if args.command in ("serve", "broker", "bridge") else logging.ERROR
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("paho").setLevel(max(level, logging.WARNING))


def main(argv: Optional[list[str]] = None) -> int:
    """Run one command. Failures print ``error: ...`` (and ``hint: ...``) on stderr and return the exit
    status of :func:`explain`; with ``--debug`` they raise, traceback included."""
    return run_command(parse_args(argv))


def run_command(args: argparse.Namespace, debug_usage: str = "") -> int:
    """Run a parsed command line (``args.func``, ``args.command``, ``args.debug``) as :func:`main` does.

    ``python -m benchmarks`` (outside the package) runs its own parser's result here, so its failures
    read like every command's; ``debug_usage`` is its ``--debug`` command line (see :func:`explain`)."""
    configure_logging(args)
    if args.debug:
        check_broker_url(args)
        return _run(args)
    try:
        check_broker_url(args)
        return _run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        status, message, hint = explain(exc, args, debug_usage)
        print(f"error: {message}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return status
