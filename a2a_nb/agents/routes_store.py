"""The requester's routing table on disk (SQLite), so a restarted coordinator keeps routing
follow-ups to the agent a task was handed over to (Profile: Optional Shared Subscription Dispatch
11: requesters SHOULD persist (Task.id, a2a-responder-agent-id); Optional Task Handover).

Bounded like the table in memory: the file keeps the ``max_routes`` most recently updated routes
(and their reroutes); older ones are forgotten when the store opens and every ``PRUNE_EVERY`` saves."""
from __future__ import annotations

import sqlite3
import threading
from typing import Optional

from ..protocol.routing import DEFAULT_MAX_ROUTES, Address, Reroute, Route, RoutingTable

PRUNE_EVERY = 100


def _addr(org: str, unit: str, agent: Optional[str], pool: Optional[str]) -> Address:
    return Address(org, unit, agent=agent, pool=pool)


class SqliteRoutes:
    def __init__(self, path: str, max_routes: int = DEFAULT_MAX_ROUTES):
        self.max_routes = max_routes
        self._saves = 0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS routes (task_id TEXT PRIMARY KEY, org TEXT, unit TEXT, card_agent TEXT,"
            " card_pool TEXT, cur_agent TEXT, cur_pool TEXT, updated_at REAL);"
            "CREATE TABLE IF NOT EXISTS reroutes (n INTEGER PRIMARY KEY AUTOINCREMENT, at REAL, task_id TEXT,"
            " from_agent TEXT, from_pool TEXT, to_agent TEXT, to_pool TEXT, cause TEXT, detail TEXT);")
        self._prune()

    def _prune(self) -> None:
        """Forget all but the ``max_routes`` most recently updated routes, and the reroutes of the others."""
        self._db.execute("DELETE FROM routes WHERE task_id NOT IN"
                         " (SELECT task_id FROM routes ORDER BY updated_at DESC LIMIT ?)", (self.max_routes,))
        self._db.execute("DELETE FROM reroutes WHERE task_id NOT IN (SELECT task_id FROM routes)")

    def save(self, route: Route, reroute: Optional[Reroute] = None) -> None:
        c, cur = route.card, route.current
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO routes VALUES (?,?,?,?,?,?,?,?)",
                             (route.task_id, c.org, c.unit, c.agent, c.pool, cur.agent, cur.pool, route.updated_at))
            if reroute is not None:
                f, t = reroute.from_, reroute.to
                self._db.execute(
                    "INSERT INTO reroutes (at, task_id, from_agent, from_pool, to_agent, to_pool, cause, detail)"
                    " VALUES (?,?,?,?,?,?,?,?)",
                    (reroute.at, reroute.task_id, f.agent, f.pool, t.agent, t.pool, reroute.cause, reroute.detail))
            self._saves += 1
            if self._saves % PRUNE_EVERY == 0:
                self._prune()

    def drop(self, task_id: str) -> None:
        """Forget a route (``RoutingTable.drop``)."""
        with self._lock:
            self._db.execute("DELETE FROM routes WHERE task_id = ?", (task_id,))

    def load(self) -> RoutingTable:
        table = RoutingTable()
        with self._lock:
            routes = self._db.execute("SELECT * FROM routes ORDER BY updated_at").fetchall()  # oldest first
            history = self._db.execute("SELECT at, task_id, from_agent, from_pool, to_agent, to_pool, cause, detail"
                                       " FROM reroutes ORDER BY n").fetchall()
        orgs = {}
        for task_id, org, unit, ca, cp, ua, up, at in routes:
            orgs[task_id] = (org, unit)
            table.restore(Route(task_id, _addr(org, unit, ca, cp), _addr(org, unit, ua, up), at))
        for at, task_id, fa, fp, ta, tp, cause, detail in history:
            org, unit = orgs.get(task_id, ("acme", "support"))
            table.history.append(Reroute(at, task_id, _addr(org, unit, fa, fp), _addr(org, unit, ta, tp), cause, detail))
        return table

    def close(self) -> None:
        with self._lock:
            self._db.close()
