"""The routes file of ``send`` (``a2a_nb/agents/routes_store.py``) under attack (issue 18 item 10):
a damaged file is named, moved aside and replaced, and ``send`` goes on with one warning line (before:
every ``send`` failed with a bare ``DatabaseError``); one hostile stream that names a new responder on
each item keeps at most ``MAX_REROUTES_PER_TASK`` reroutes of its task, in memory and on disk
(before: one row per item, 2,000 here, 20,000 measured)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from a2a_nb.agents import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.agents.routes_store import SqliteRoutes
from a2a_nb.protocol.routing import MAX_REROUTES_PER_TASK, Address, Route, RoutingTable
from a2a_nb.story.cast import echo_card, echo_handler
from a2a_nb.protocol.states import COMPLETED, SUBMITTED, WORKING

from tests.integration.test_handover import SHORT, ScriptedAgents, raw_status, raw_task, task_id_of_request
from tests.helpers import uid

GARBAGE = b"this is not SQLite\x00" + os.urandom(4000)


def test_send_moves_a_damaged_routes_file_aside_and_goes_on(broker_url, tmp_path):
    unit = uid("routes")
    echo = Responder("echo", echo_handler, org="acme", unit=unit, card=echo_card("acme", unit), broker=broker_url,
                     options=ResponderOptions(inline=True))
    state = tmp_path / "state"
    routes = state / "a2a_nb" / "routes.sqlite"
    routes.parent.mkdir(parents=True)
    routes.write_bytes(GARBAGE)
    env = dict(os.environ, A2A_BROKER_URL=broker_url, XDG_STATE_HOME=str(state))
    try:
        out = subprocess.run([sys.executable, "-m", "a2a_nb", "send", "echo", "hi", "--unit", unit], env=env,
                             capture_output=True, text=True, timeout=120)
        again = subprocess.run([sys.executable, "-m", "a2a_nb", "send", "echo", "again", "--unit", unit], env=env,
                               capture_output=True, text=True, timeout=120)
    finally:
        echo.stop()
    assert out.returncode == 0, out.stderr
    assert "echo: hi" in out.stdout
    warnings = [line for line in out.stderr.splitlines() if "routes file" in line]
    assert len(warnings) == 1, out.stderr
    assert str(routes) in warnings[0] and "moved aside" in warnings[0], warnings
    assert "Traceback" not in out.stderr and "DatabaseError" not in out.stderr
    (aside,) = [p for p in routes.parent.iterdir() if ".damaged-" in p.name]
    assert aside.read_bytes() == GARBAGE, "the damaged file is kept, never deleted"
    assert str(aside) in warnings[0]
    assert os.stat(routes).st_mode & 0o077 == 0, "the new routes file is private, like the old one"
    assert again.returncode == 0 and "routes file" not in again.stderr, again.stderr  # the new file works


@pytest.mark.parametrize("damage", ["garbage", "another schema", "bad rows"])
def test_the_store_opens_whatever_is_in_the_file(tmp_path, damage):
    path = tmp_path / "routes.sqlite"
    if damage == "garbage":
        path.write_bytes(GARBAGE)
    else:
        db = sqlite3.connect(path)
        if damage == "another schema":
            db.execute("CREATE TABLE routes (x)")
        else:  # the right tables, with values nobody could route by
            SqliteRoutes(str(path)).close()
            db.execute("INSERT INTO routes VALUES ('t1', 'a/b', 'u', 'x', NULL, 'x', NULL, 1.0)")
            db.execute("INSERT INTO routes VALUES ('t2', 'acme', 'u', 'desk', NULL, 'analyst', NULL, 'soon')")
            db.execute("INSERT INTO routes VALUES ('t3', 'acme', 'u', 'desk', NULL, 'analyst', NULL, 2.0)")
        db.commit()
        db.close()
    store = SqliteRoutes(str(path))
    table = store.load()
    if damage == "bad rows":
        assert store.warning is None and list(table.routes) == ["t3"]  # the good row, not the bad ones
    else:
        assert store.warning and str(path) in store.warning and "moved aside" in store.warning
        assert table.routes == {}
    route = Route("t9", Address("acme", "u", agent="desk"), Address("acme", "u", agent="desk"), 3.0)
    store.save(route)
    store.close()
    assert SqliteRoutes(str(path)).load().target("t9") == Address("acme", "u", agent="desk")


ITEMS = 2000


def test_a_hostile_stream_cannot_fill_the_routes_file(broker_url, tmp_path):
    """A responder names a new agent on each of 2,000 stream items: the route follows the last one, the
    history and the file keep the task's first ``MAX_REROUTES_PER_TASK`` reroutes."""
    unit = uid("reroutes")

    def script(agent: str, body: dict):
        tid, ctx = task_id_of_request(body), "ctx-hostile"
        items = [({"task": raw_task(tid, ctx, SUBMITTED)}, None)]
        items += [(raw_status(tid, ctx, WORKING), f"inst-{i % 2}") for i in range(ITEMS)]
        return items + [(raw_status(tid, ctx, COMPLETED), "inst-last")]

    ScriptedAgents(broker_url, unit, ["front"], script)
    routes = str(tmp_path / "routes.sqlite")
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT, routes_path=routes)
    try:
        first = req.new_message("hi", context_id="ctx-hostile")
        events = list(req.stream("front", message=first))
        tid = first["taskId"]
    finally:
        req.close()
    assert len(events) == ITEMS + 2 and events[-1].state == COMPLETED
    assert req.routing.target(tid).agent == "inst-last"  # the latest responder always wins
    assert len(req.routing.reroutes(tid)) == MAX_REROUTES_PER_TASK
    assert req.routing.reroutes_not_kept == ITEMS + 1 - MAX_REROUTES_PER_TASK
    db = sqlite3.connect(routes)
    rows = db.execute("SELECT COUNT(*) FROM reroutes WHERE task_id = ?", (tid,)).fetchone()[0]
    db.close()
    assert rows == MAX_REROUTES_PER_TASK
    restored = SqliteRoutes(routes).load()
    assert restored.target(tid).agent == "inst-last" and len(restored.reroutes(tid)) == MAX_REROUTES_PER_TASK


def test_the_table_in_memory_keeps_a_tasks_first_reroutes_only():
    table = RoutingTable()
    desk = Address("acme", "u", agent="desk")
    table.start("t", desk, 0.0)
    moved = [table.observe("t", f"a{i % 2}", float(i)) for i in range(200)]
    assert all(m is not None for m in moved)  # every move is reported to the caller
    assert len(table.reroutes("t")) == MAX_REROUTES_PER_TASK and table.reroutes_not_kept == 200 - MAX_REROUTES_PER_TASK
    assert table.target("t").agent == "a1"
