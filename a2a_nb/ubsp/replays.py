"""A replay cache that outlives its process: the ``jti`` values an agent accepted, kept beside its keys.

Profile: Optional Untrusted-Broker Security Profile 12. A sealed request can be opened by whoever
holds the recipient's private key, so the memory of what was already opened must live as long as
that key: when the key is kept in a file (:mod:`a2a_nb.ubsp.local_keys`, what ``serve`` and
``send --ubsp`` use), so is the cache, in a file next to it. A request captured on the broker and
published again after the agent restarted is then refused as a replay, with or without a task
store, whatever the clocks say.

The file is this process's own writing, but read as untrusted bytes: one line per accepted ``jti``,
``<sha256 of the jti, 32 hex> <exp>`` (the ``jti`` itself is the sender's text: never written), at
most ``MAX_FILE_BYTES`` read. Lines that do not parse are skipped. A file that cannot be read, or is
larger than that, is moved aside (named in the log), and the agent falls back to refusing requests
issued before it started (:class:`a2a_nb.protocol.ubsp.ReplayCache`'s ``not_before``). Each
accepted ``jti`` is one appended line (no fsync: it survives the process being killed, not the
machine losing power); the file is rewritten with the unexpired entries when it is opened and when
it has grown by ``max_entries`` lines. Two processes of one agent share the file: each reads it when
it starts, and a rewrite by one may drop lines the other appended meanwhile (each still remembers
them in memory).
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Optional

from ..protocol.ubsp import ReplayCache

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Largest replay file read (100,000 entries take 4.4 MB; the file is rewritten at twice that)."""

_LINE = re.compile(rb"([0-9a-f]{32}) ([0-9]{1,12})")


def digest(jti: str) -> str:
    """What the file and the cache keep of a ``jti``: fixed width, no text of the sender's."""
    return hashlib.sha256(jti.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class KeptReplayCache(ReplayCache):
    """A :class:`ReplayCache` read from ``path`` when it is made and written to it as it goes."""

    def __init__(self, path: Path, max_entries: int = 100_000, now: Optional[float] = None):
        super().__init__(max_entries)
        self.path = Path(path)
        self._appended = 0
        now = time.time() if now is None else now
        if not self._load(now):
            self.not_before = now  # no memory of what came before: refuse what was issued before
        self._rewrite(now)

    def check(self, jti: str, exp: float, now: float, iat: Optional[float] = None) -> Optional[str]:
        problem = super().check(digest(jti), exp, now, iat)
        return problem.replace(digest(jti)[:40], jti[:40]) if problem else None

    def _load(self, now: float) -> bool:
        """Read the file (absent: nothing seen yet). False when it could not be trusted to be whole."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return True
        except OSError as exc:
            return self._set_aside(f"cannot be read ({exc.strerror})")
        if len(data) > MAX_FILE_BYTES:
            return self._set_aside(f"is larger than {MAX_FILE_BYTES:,} bytes")
        entries = []
        for line in data.split(b"\n"):
            match = _LINE.fullmatch(line)
            if match is not None and int(match.group(2)) >= now - 1:
                entries.append((match.group(1).decode(), float(match.group(2))))
        for key, exp in sorted(entries, key=lambda e: e[1])[-self.max_entries:]:
            self._seen[key] = exp
        return True

    def _set_aside(self, why: str) -> bool:
        aside = self.path.with_name(self.path.name + f".damaged-{int(time.time())}")
        try:
            os.replace(self.path, aside)
            log.warning("replay cache %s %s: moved to %s; requests issued before now are refused", self.path, why, aside)
        except OSError as exc:
            log.warning("replay cache %s %s, and cannot be moved aside (%s)", self.path, why, exc.strerror)
        return False

    def _remembered(self, jti: str, exp: float) -> None:
        self._appended += 1
        if self._appended >= self.max_entries:
            self._rewrite(time.time())
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"{jti} {int(exp)}\n".encode())
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk: the memory still holds it; the next restart may not
            log.warning("replay cache %s: cannot append (%s)", self.path, exc.strerror)

    def _rewrite(self, now: float) -> None:
        """The unexpired entries, written to a new file that replaces the old one at once."""
        self._expire(now)
        self._appended = 0
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write("".join(f"{key} {int(exp)}\n" for key, exp in self._seen.items()).encode())
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("replay cache %s: cannot rewrite (%s)", self.path, exc.strerror)
