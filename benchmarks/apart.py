"""One side of a benchmark in a process of its own: the agents apart from the requesters.

In one Python process every thread shares one interpreter lock, so a desk, its pool and 200 task
threads take turns on one core while the broker has the other. Real agents run apart from the
programs that call them (``python -m a2a_nb serve ...``), so the load run is also measured that way,
and so is its raw paho floor, and the raw publish loop: each with its two sides in two processes.

The parent starts ``python -m benchmarks.apart_roles ROLE URL ...`` (:class:`Apart`); the child sets
its side up, prints ``ready``, runs until its standard input closes, then prints one JSON line (what it
counted) and ends. The roles are in ``apart_roles``.
"""
from __future__ import annotations

import json
import select
import subprocess
import sys
from typing import Any, Optional

READY_S = 30.0
"""How long a child may take to import, connect and subscribe."""


class Apart:
    """A child process playing ``role``; ``with Apart(...) as child:`` ends it (and reads its counts)."""

    def __init__(self, role: str, url: str, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.apart_roles", role, url, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.counts: Optional[dict[str, Any]] = None
        line = self._line(READY_S)
        if line != "ready":
            self.close()
            raise RuntimeError(f"benchmark child {role!r} did not start: {line or 'no output'}")

    def _line(self, timeout: float) -> str:
        """The child's next line ("" when it wrote none within ``timeout`` s, or ended)."""
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            return ""
        return self.proc.stdout.readline().strip()

    def say(self, word: str) -> None:
        """A line to the child (the raw publisher starts on ``go``)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        """Close its standard input (it stops), read its counts, and wait for it (killed after 10 s)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        line = self._line(10.0)
        try:
            self.counts = json.loads(line) if line else None
        except ValueError:
            self.counts = None
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "Apart":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
