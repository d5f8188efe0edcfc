"""What every sub-command shares: exit statuses, the two failures a command may raise itself, option
types for argparse (``type=``), the ``--org/--unit/--broker`` options and the wait of a foreground server."""
from __future__ import annotations

import argparse
import math
import signal
import threading
from typing import Callable

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CliError(Exception):
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


def wait_for_signal() -> None:
    """Block until Ctrl-C or SIGTERM (foreground servers)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


def add_scope(p: argparse.ArgumentParser) -> None:
    """``--org``, ``--unit`` and ``--broker``: where a command's agents live."""
    p.add_argument("--org", default="acme", help="org_id of the topics (default acme)")
    p.add_argument("--unit", default="support", help="unit_id of the topics (default support)")
    p.add_argument("--broker", default=None, help="broker URL (default: A2A_BROKER_URL, else an embedded Mosquitto)")
