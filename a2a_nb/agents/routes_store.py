"""The requester's routing table on disk (SQLite), so a restarted coordinator keeps routing
follow-ups to the agent a task was handed over to (Profile: Optional Shared Subscription Dispatch
11: requesters SHOULD persist (Task.id, a2a-responder-agent-id); Optional Task Handover).

Who writes into it: the requester, from the ``a2a-responder-agent-id`` of every reply and stream
item, so any responder (or anyone who can publish on the reply topic with the right Correlation Data)
decides what rows are written; and anything that can write the file (a crash, a full disk, another
program). So, bounded like the table in memory:

* routes: the ``max_routes`` most recently updated ones (10,000), pruned when the store opens and every
  ``PRUNE_EVERY`` saves;
* reroutes: at most ``MAX_REROUTES_PER_TASK`` (50) per task, its first ones (the route itself
  always follows the latest responder), and ``max_routes`` rows in all, the most recent;
* a damaged file (not SQLite, another schema, an unreadable page) is moved aside as
  ``NAME.damaged-TIMESTAMP`` (kept for a look, never deleted) and a fresh one is started, with one
  warning line naming both (:func:`set_aside_if_damaged`); one that fails later, while sends write
  it, is left alone after one warning: the table goes on in memory.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Optional

from ..protocol.routing import DEFAULT_MAX_ROUTES, MAX_REROUTES_PER_TASK, Address, Reroute, Route, RoutingTable

log = logging.getLogger(__name__)

PRUNE_EVERY = 100

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS routes (task_id TEXT PRIMARY KEY, org TEXT, unit TEXT, card_agent TEXT,"
    " card_pool TEXT, cur_agent TEXT, cur_pool TEXT, updated_at REAL);"
    "CREATE TABLE IF NOT EXISTS reroutes (n INTEGER PRIMARY KEY AUTOINCREMENT, at REAL, task_id TEXT,"
    " from_agent TEXT, from_pool TEXT, to_agent TEXT, to_pool TEXT, cause TEXT, detail TEXT);"
    "CREATE INDEX IF NOT EXISTS reroutes_of_task ON reroutes (task_id);")
_COLUMNS = {
    "routes": ["task_id", "org", "unit", "card_agent", "card_pool", "cur_agent", "cur_pool", "updated_at"],
    "reroutes": ["n", "at", "task_id", "from_agent", "from_pool", "to_agent", "to_pool", "cause", "detail"],
}


def _addr(org: str, unit: str, agent: Optional[str], pool: Optional[str]) -> Address:
    return Address(org, unit, agent=agent, pool=pool)


def _open(path: str) -> sqlite3.Connection:
    """The routes file, opened, checked (``quick_check``, the two tables' columns) and set up; raises
    ``sqlite3.DatabaseError`` when it is damaged."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash loses no committed row, a power cut the last few
        checked = db.execute("PRAGMA quick_check").fetchone()
        if not checked or checked[0] != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {checked[0] if checked else 'no answer'}")
        db.executescript(_SCHEMA)
        for table, columns in _COLUMNS.items():
            found = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            if found != columns:
                raise sqlite3.DatabaseError(f"table {table} has the columns {found}, not {columns}")
    except sqlite3.Error:
        db.close()
        raise
    return db


def _damaged(exc: sqlite3.Error) -> bool:
    """The file itself is bad (not a database, corrupt, another schema), not merely busy or unreadable
    (a file locked by another ``send`` for longer than the 5 s SQLite waits is not damaged)."""
    name = getattr(exc, "sqlite_errorname", None)  # None: raised by _open's own checks
    return name is None or name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT"))


def set_aside_if_damaged(path: str) -> Optional[str]:
    """If the routes file ``path`` is damaged, move it aside (with its ``-wal``/``-shm`` files) and return
    the one warning line that says so; None when it is fine (or does not exist yet: it is made)."""
    try:
        _open(path).close()
        return None
    except sqlite3.Error as exc:
        why = str(exc) or type(exc).__name__
        if not _damaged(exc):  # busy, locked, unreadable: not the file's fault, never moved
            return f"warning: cannot use the routes file {path} ({why}): routes are kept in memory only for this run"
    aside = f"{path}.damaged-{time.strftime('%Y%m%dT%H%M%S')}"
    try:
        os.replace(path, aside)
    except OSError as exc:
        return (f"warning: the routes file {path} is damaged ({why}) and cannot be moved aside "
                f"({exc.strerror or exc}): routes are kept in memory only for this run")
    for suffix in ("-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    try:  # the new file readable by its owner only, like the one it replaces
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    except OSError:
        pass
    return (f"warning: the routes file {path} was damaged ({why}): moved aside to {aside}; "
            "starting a new one (follow-ups of earlier tasks go to the agent you name)")


class SqliteRoutes:
    """The routes file of one requester (see the module docstring); ``warning``: the line said when
    the file was damaged and set aside, else None."""

    def __init__(self, path: str, max_routes: int = DEFAULT_MAX_ROUTES):
        self.path, self.max_routes = path, max_routes
        self._saves = 0
        self._lock = threading.Lock()
        self.warning = set_aside_if_damaged(path)
        if self.warning:
            log.warning("%s", self.warning)
        try:
            self._db: Optional[sqlite3.Connection] = _open(path)
        except sqlite3.Error:  # busy, or could not be moved aside: in memory only (the warning said so)
            self._db = _open(":memory:")
        self._prune()

    def _prune(self) -> None:
        """Forget all but the ``max_routes`` most recently updated routes, the reroutes of the others,
        and all but the ``max_routes`` most recent reroutes."""
        self._write("DELETE FROM routes WHERE task_id NOT IN"
                    " (SELECT task_id FROM routes ORDER BY updated_at DESC LIMIT ?)", (self.max_routes,))
        self._write("DELETE FROM reroutes WHERE task_id NOT IN (SELECT task_id FROM routes)", ())
        self._write("DELETE FROM reroutes WHERE n NOT IN (SELECT n FROM reroutes ORDER BY n DESC LIMIT ?)",
                    (self.max_routes,))

    def _write(self, sql: str, values: tuple) -> None:
        """One statement; a file that fails now (damaged or full while in use) is given up after one
        warning: the routing table goes on in memory."""
        if self._db is None:
            return
        try:
            self._db.execute(sql, values)
        except sqlite3.Error as exc:
            log.warning("the routes file %s cannot be written (%s): routes are kept in memory only from now on",
                        self.path, exc)
            self._db.close()
            self._db = None

    def save(self, route: Route, reroute: Optional[Reroute] = None) -> None:
        c, cur = route.card, route.current
        with self._lock:
            self._write("INSERT OR REPLACE INTO routes VALUES (?,?,?,?,?,?,?,?)",
                        (route.task_id, c.org, c.unit, c.agent, c.pool, cur.agent, cur.pool, route.updated_at))
            if reroute is not None:
                f, t = reroute.from_, reroute.to
                self._write(
                    "INSERT INTO reroutes (at, task_id, from_agent, from_pool, to_agent, to_pool, cause, detail)"
                    " SELECT ?,?,?,?,?,?,?,? WHERE (SELECT COUNT(*) FROM reroutes WHERE task_id = ?) < ?",
                    (reroute.at, reroute.task_id, f.agent, f.pool, t.agent, t.pool, reroute.cause, reroute.detail,
                     reroute.task_id, MAX_REROUTES_PER_TASK))
            self._saves += 1
            if self._saves % PRUNE_EVERY == 0:
                self._prune()

    def drop(self, task_id: str) -> None:
        """Forget a route (``RoutingTable.drop``)."""
        with self._lock:
            self._write("DELETE FROM routes WHERE task_id = ?", (task_id,))

    def load(self) -> RoutingTable:
        table = RoutingTable()
        with self._lock:
            if self._db is None:
                return table
            routes = self._db.execute("SELECT * FROM routes ORDER BY updated_at").fetchall()  # oldest first
            history = self._db.execute("SELECT at, task_id, from_agent, from_pool, to_agent, to_pool, cause, detail"
                                       " FROM reroutes ORDER BY n").fetchall()
        orgs, skipped = {}, 0
        for task_id, org, unit, ca, cp, ua, up, at in routes:
            try:
                table.restore(Route(str(task_id), _addr(org, unit, ca, cp), _addr(org, unit, ua, up), float(at)))
            except (ValueError, TypeError):  # no identifier, no number: a row nobody could route by
                skipped += 1
                continue
            orgs[task_id] = (org, unit)
        for at, task_id, fa, fp, ta, tp, cause, detail in history:
            if task_id not in orgs:
                continue
            org, unit = orgs[task_id]
            try:
                table.remember(Reroute(float(at), str(task_id), _addr(org, unit, fa, fp), _addr(org, unit, ta, tp),
                                       str(cause), str(detail)))
            except (ValueError, TypeError):
                skipped += 1
        if skipped:
            log.warning("the routes file %s has %d row(s) that name no valid agent: skipped", self.path, skipped)
        return table

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
