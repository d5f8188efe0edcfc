"""What every sub-command shares: exit statuses, the two failures a command may raise itself, option
types for argparse (``type=``), the ``--org/--unit/--broker`` options, the wait of a foreground server
(or of ``record``), what to say about an agent without a card, and the check of a file to record into."""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional
from ..error_base import A2ANbError

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class CliError(A2ANbError):
    """A failure a command has already put into words: exit ``status`` 1, with an optional ``hint``."""

    status = EXIT_FAILED

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class UsageError(CliError, ValueError):
    """The command line asks for something that cannot work (exit 2); the message says what to change."""

    status = EXIT_USAGE


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


class CaughtSignals:
    """Ctrl-C and SIGTERM caught from :meth:`start` on: each sets ``stop`` instead of interrupting
    what runs, until :meth:`restore` puts the previous handlers back. Off the main thread Python
    cannot catch signals: there ``start`` catches nothing."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.caught: list[int] = []
        self._previous: dict = {}

    def start(self) -> "CaughtSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.caught.append(signum)
        self.stop.set()

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def wait_for_signal(timeout: Optional[float] = None, then: Callable[[], object] = lambda: None,
                    stopping: str = "", ready: str = "", until: Optional[threading.Event] = None,
                    signals: Optional[CaughtSignals] = None) -> None:
    """Block until Ctrl-C or SIGTERM, or until ``timeout`` seconds have passed (None: no time limit),
    then run ``then``, the command's clean stop (agents offline, a recording flushed), always.

    ``stopping`` names what stops (``"echo"``): after a signal, stderr says ``Ctrl-C: stopping echo ...``
    at once and ``stopped`` once the clean stop is done, so a server never exits without a word.
    ``ready`` (the server's banner) is printed on stdout once the signals are caught: from the moment
    a user (or a script) reads it, Ctrl-C stops cleanly. ``signals``: signals the command caught
    earlier (:class:`CaughtSignals`, e.g. as soon as its broker runs, before its banner), so one
    that came meanwhile stops it at once.
    Signals stay caught until ``then`` is done, so an impatient second Ctrl-C cannot cut the clean
    stop short; the previous handlers are back on return. Off the main thread only the timeout (or
    ``until``) ends the wait. ``until``: an event that ends the wait as well (the command found a
    reason to stop of its own)."""
    signals = signals if signals is not None else CaughtSignals().start()
    if ready:
        print(ready, flush=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    said = False
    try:
        while not signals.stop.is_set() and not (until is not None and until.is_set()):
            left = 0.5 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            signals.stop.wait(min(left, 0.5))
        said = bool(signals.caught and stopping)
        if said:
            why = "Ctrl-C" if signals.caught[0] == signal.SIGINT else signal.Signals(signals.caught[0]).name
            print(f"{why}: stopping {stopping} ...", file=sys.stderr, flush=True)
    finally:
        try:
            then()
            if said:
                print("stopped", file=sys.stderr, flush=True)
        finally:
            signals.restore()


SERVABLE_AGENTS = ("echo", "ticket-desk")
"""The agents ``python -m a2a_nb serve NAME`` runs that have a card (``serve analyst --pool`` has none)."""


def no_card_hint(agent: str, org: str, unit: str) -> str:
    """What to do when ``agent`` has no retained card: serve it, if the kit can; else check the name
    (never suggest a ``serve`` target that does not exist)."""
    if agent in SERVABLE_AGENTS:
        return f"serve it first (`python -m a2a_nb serve {agent}{scope_options(org, unit)}`) or check the agent " \
               "name, --org and --unit"
    return (f"check the agent name, --org and --unit (the kit serves {' and '.join(SERVABLE_AGENTS)}: "
            f"`python -m a2a_nb serve ticket-desk{scope_options(org, unit)}`)")


def scope_options(org: str, unit: str) -> str:
    """`` --org ORG --unit UNIT`` for a command line printed to be copied, each only when not the default."""
    return (f" --org {org}" if org != DEFAULT_ORG else "") + (f" --unit {unit}" if unit != DEFAULT_UNIT else "")


def check_recording_target(path: str, option: str = "--out") -> None:
    """Refuse (``UsageError``, exit 2) to record into a folder or over a file that is not a recording.

    An earlier recording may be replaced; any other file is left alone. Checked before connecting,
    so a wrong path never costs a broker round trip (``record --out``, ``story --record``)."""
    from ..traffic.records import is_recording

    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {p} is a folder; give a file name such as {p / 'traffic.jsonl'}")
    if not p.exists() or p.stat().st_size == 0:
        return
    if not is_recording(p):
        raise UsageError(f"{option} {p} exists and is not a recording; choose another file "
                         "(record only replaces its own recordings)")


DEFAULT_ORG, DEFAULT_UNIT = "acme", "support"


def add_scope(p: argparse.ArgumentParser) -> None:
    """``--org``, ``--unit`` and ``--broker``: where a command's agents live."""
    p.add_argument("--org", default=DEFAULT_ORG, help=f"org_id of the topics (default {DEFAULT_ORG})")
    p.add_argument("--unit", default=DEFAULT_UNIT, help=f"unit_id of the topics (default {DEFAULT_UNIT})")
    p.add_argument("--broker", default=None, help="broker URL (default: A2A_BROKER_URL, else an embedded Mosquitto)")


def add_key_trust(p: argparse.ArgumentParser) -> None:
    """``--trust-host`` and ``--ca``: where ubsp-v1 keys may come from (``send --ubsp``, ``probe``)."""
    p.add_argument("--trust-host", action="append", default=None, metavar="HOST[:PORT]",
                   help="ubsp-v1: an HTTPS host whose jwksUri is trusted (repeatable; default: this machine's key "
                        "home, 127.0.0.1 with its CA)")
    p.add_argument("--ca", default=None, metavar="FILE",
                   help="ubsp-v1: the CA file key servers' certificates are checked against (with --trust-host)")


def key_trust(args: argparse.Namespace):
    """The ``KeyTrust`` that ``--trust-host`` / ``--ca`` describe, or None (the key home's)."""
    if not args.trust_host:
        if args.ca:
            raise UsageError("--ca goes with --trust-host (the hosts whose certificates it signs)")
        return None
    if args.ca and not os.path.isfile(args.ca):
        raise UsageError(f"--ca {args.ca}: no such file")
    from ..ubsp.trust import KeyTrust

    return KeyTrust(allowed_hosts=tuple(args.trust_host), ca_file=args.ca)


def command_broker_url(args: argparse.Namespace) -> Optional[str]:
    """The broker URL a command uses: ``--broker``, else ``A2A_BROKER_URL``, else None (its own)."""
    from ..mqtt.broker import ENV_URL

    return getattr(args, "broker", None) or os.environ.get(ENV_URL) or None


def broker_lost(args: argparse.Namespace) -> Optional[str]:
    """The printable URL of the command's broker (or list) when it no longer accepts connections, else None.

    Asked after a timeout or a session error: to a requester a silent agent and a dead broker look
    the same, a first-reply timeout (Profile: Requester Retry and Timeout Profile); one TCP connect
    tells them apart."""
    url = command_broker_url(args)
    if url is None:  # the embedded broker of this process: it lives as long as we do
        return None
    from ..mqtt.broker import BrokerEndpoint, port_accepts

    endpoint = BrokerEndpoint.from_url(url)  # with a list of brokers: lost when none of them accepts
    alive = any(port_accepts(b.host, b.port, timeout=0.5) for b in endpoint.brokers)
    return None if alive else endpoint.url
