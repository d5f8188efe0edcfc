"""One session per ``send``: each running ``python -m a2a_nb send`` takes a sender name of its own.

The profile gives every client one Client ID, ``{org}/{unit}/{agent}`` (Client Session Requirements
3), and a broker closes the older of two connections with the same Client ID (a *session takeover*,
MQTT v5 §3.1.4). Ten ``send`` commands started at once by one user, all as ``cli``, took each other
over: 5-8 of 10 failed. So each ``send`` claims a *slot* for as long as it runs: the first free name
of ``cli``, ``cli-2``, ``cli-3``, ... A slot is an exclusive lock (``flock``) on a file in the state
folder (``$XDG_STATE_HOME/a2a_nb/senders/``, the folder of the routes file); the operating system
releases it when the process ends, however it ends, so a crashed ``send`` never holds a name.

Which names a ``send`` may use:

* an open broker: any, up to :data:`OPEN_SLOTS` at once;
* ``broker --secure`` (logins from ``A2A_BROKER_CREDENTIALS``): the broker renames every client after
  its login, so only the ``cli`` logins the credentials file holds (the secure broker issues
  ``cli`` and ``cli-2`` .. ``cli-8``, :data:`a2a_nb.mqtt.secure.CLI_LOGINS`); each one's ACL lets it
  read its own reply topics only;
* a login in the broker URL (``user:pass@``): that login alone, so parallel sends with it take turns.

When every name is taken, ``send`` says so once and waits for one (at most :data:`WAIT_S` s). On a
system without ``fcntl`` (Windows), or without a state folder, every ``send`` is ``cli`` as before.
Who can interfere: only processes of the same user can open the lock files (folder mode 0700); a
process that holds a lock only makes the next ``send`` take the next name, or wait.
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import IO, Callable, Optional

OPEN_SLOTS = 64
"""Sends at once on an open broker (``cli`` .. ``cli-64``): a bound on the names (and on the ubsp-v1
key files a ``--ubsp`` send keeps per name in its key home)."""
WAIT_S = 60.0
"""How long a ``send`` waits for a free name when every one is taken."""
POLL_S = 0.1


class SenderSlot:
    """The name a ``send`` uses, held until :meth:`release` (or the process ends)."""

    def __init__(self, agent: str, lock: Optional[IO[bytes]] = None):
        self.agent, self._lock = agent, lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the file releases the flock
            self._lock = None


def slot_names(base: str, logins: Optional[set[str]] = None, limit: int = OPEN_SLOTS) -> list[str]:
    """The names a send may use, in the order it tries them: ``base``, ``base-2``, ... ``base-{limit}``;
    with ``logins`` (the agents a credentials file holds) only those among them."""
    names = [base] + [f"{base}-{n}" for n in range(2, limit + 1)]
    return [n for n in names if logins is None or n in logins]


def credential_agents(path: str, org: str, unit: str) -> set[str]:
    """The agent names of ``org``/``unit`` that have a login in the credentials file ``path`` (empty
    when it cannot be read: the session's own look-up then says why)."""
    import json

    try:
        users = json.loads(Path(path).read_text())["users"]
        prefix = f"{org}/{unit}/"
        return {u[len(prefix):] for u in users if isinstance(u, str) and u.startswith(prefix)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def claim(folder: Optional[Path], org: str, unit: str, names: list[str], *, wait: float = WAIT_S,
          say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)) -> SenderSlot:
    """The first of ``names`` no other ``send`` of this user holds now, locked; waits up to ``wait`` s
    for one when all are taken (saying so once), then raises ``TimeoutError``."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one name, as before
        return SenderSlot(names[0])
    if folder is None:
        return SenderSlot(names[0])
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return SenderSlot(names[0])
    deadline, told = time.monotonic() + wait, False
    while True:
        for name in names:
            path = folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", f"{org}.{unit}.{name}") + ".lock")
            try:
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
            except OSError:
                return SenderSlot(names[0])
            f = os.fdopen(fd, "r+b")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # another send holds it
                f.close()
                continue
            return SenderSlot(name, f)
        if time.monotonic() >= deadline:
            raise TimeoutError(f"every sender name ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}: "
                               f"{len(names)}) was in use by other sends for {wait:g} s")
        if not told:
            say(f"note: {len(names)} send(s) of yours are running as {', '.join(names[:3])}"
                f"{', ...' if len(names) > 3 else ''}; this one waits for one of them to finish")
            told = True
        time.sleep(POLL_S)
