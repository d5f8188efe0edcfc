"""The routing table view of lesson 05, without a browser, against the real Mosquitto and a real desk.

Each test uses a unit of its own, so its agents never meet those of other tests. Widgets run with
ipywidgets' dummy comm (no kernel): traits are set, buttons clicked, the rendered HTML read.
"""
from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.waiting import wait_until

from a2a_nb.agents import Requester
from a2a_nb.notebook import RoutingSnapshot as ExportedSnapshot
from a2a_nb.notebook import RoutingTableView as ExportedView
from a2a_nb.notebook import routing_snapshot as exported_snapshot
from a2a_nb.notebook import routing_table_view as exported_factory
from a2a_nb.notebook.routing_table import RoutingSnapshot, RoutingTableView, clock, routing_snapshot, routing_table_view
from a2a_nb.notebook.widgets import WIDGET_MIME
from a2a_nb.protocol import states
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.protocol.routing import Address, RoutingTable
from a2a_nb.story.cast import TicketDesk
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.helpers import QUICK


@pytest.fixture
def coordinator(broker_url, unit):
    req = Requester("coordinator", unit=unit, broker=broker_url, retry=QUICK, seed=5)
    yield req
    req.close()


def desk_of(broker_url, unit, plan):
    return TicketDesk(unit=unit, broker=broker_url, handover=plan, seed=7, pace=0.01)


def test_exported_lazily_from_the_notebook_package():
    assert ExportedView is RoutingTableView
    assert exported_factory is routing_table_view
    assert ExportedSnapshot is RoutingSnapshot
    assert exported_snapshot is routing_snapshot


def test_clock_format():
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", clock(time.time()))


def test_refuses_what_has_no_routing_table():
    with pytest.raises(TypeError, match="Requester or a RoutingTable"):
        routing_table_view(object())


def test_empty_table(coordinator):
    view = routing_table_view(coordinator)
    assert view.rows() == []
    assert "no task in the routing table yet" in view.html.value
    assert "0 task(s), 0 reroute(s)" in view.caption.value
    assert repr(view) == "<RoutingTableView 0 task(s), 0 routed away from their card agent>"
    view.close()


def test_handover_shows_card_current_and_reroute(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "first-reply")
    try:
        view = routing_table_view(coordinator)
        stream = coordinator.stream("ticket-desk", TICKET_TEXT)
        stream.wait()
        assert stream.state == states.INPUT_REQUIRED
        analyst = desk.instances[0].agent

        # the view shows what the table held at its last refresh: nothing yet
        assert view.rows() and "no task" in view.html.value
        before = view.refreshes
        view.refresh()
        assert view.refreshes == before + 1

        [row] = view.rows()
        assert row["task_id"] == stream.task_id
        assert (row["card"], row["current"], row["rerouted"]) == ("ticket-desk", analyst, True)
        [move] = row["reroutes"]
        assert (move["cause"], move["from"], move["to"]) == ("handover", "ticket-desk", analyst)
        assert move["detail"] == f"a2a-responder-agent-id={analyst}"
        assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", move["time"])

        html = view.html.value
        assert stream.task_id[:8] in html and f"title='{stream.task_id}'" in html
        assert "<code" in html and f">{analyst}</code>" in html and ">ticket-desk</code>" in html
        assert ">handover</span>" in html
        assert f"a2a-responder-agent-id={analyst}" in html
        assert f"$a2a/v1/request/acme/{unit}/{analyst}" in html  # the topic follow-ups go to (tooltip)
        assert "1 task(s), 1 reroute(s)" in view.caption.value
        assert repr(view) == "<RoutingTableView 1 task(s), 1 routed away from their card agent>"
        view.close()
    finally:
        desk.stop()


def test_no_property_no_reroute(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "none")
    try:
        stream = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT)
        stream.wait()
        assert stream.state == states.COMPLETED
        view = routing_table_view(coordinator)
        [row] = view.rows()
        assert (row["card"], row["current"], row["rerouted"], row["reroutes"]) == (
            "ticket-desk", "ticket-desk", False, [])
        assert "<i>no reroute</i>" in view.html.value
        view.close()
    finally:
        desk.stop()


def test_two_handovers_latest_wins(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "double")
    try:
        stream = coordinator.stream("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT)
        stream.wait()
        first, second = (inst.agent for inst in desk.instances)
        view = routing_table_view(coordinator)
        [row] = view.rows()
        assert row["current"] == second
        assert [(m["from"], m["to"]) for m in row["reroutes"]] == [("ticket-desk", first), (first, second)]
        assert view.html.value.count(">handover</span>") == 2
        view.close()
    finally:
        desk.stop()


def test_fallback_records_the_reason(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "dies")
    try:
        stream = coordinator.stream("ticket-desk", TICKET_TEXT)
        stream.wait()
        analyst = desk.instances[-1]
        assert wait_until(lambda: not analyst.alive)
        coordinator.continue_task(stream, REPRO_TEXT, return_immediately=True)

        view = routing_table_view(coordinator)
        [row] = view.rows()
        assert row["current"] == "ticket-desk" and row["rerouted"] is False
        causes = [m["cause"] for m in row["reroutes"]]
        assert causes == ["handover", "fallback"]
        fallback = row["reroutes"][1]
        assert (fallback["from"], fallback["to"]) == (analyst.agent, "ticket-desk")
        assert fallback["detail"].startswith(f"{analyst.agent} did not answer 3 attempts")
        assert ">fallback</span>" in view.html.value
        assert "did not answer 3 attempts" in view.html.value
        view.close()
    finally:
        desk.stop()


def test_button_and_task_filter(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "first-reply")
    try:
        one = coordinator.stream("ticket-desk", TICKET_TEXT)
        one.wait()
        two = coordinator.stream("ticket-desk", TICKET_TEXT)
        two.wait()
        view = RoutingTableView(coordinator, task_ids=[two.task_id])
        assert [r["task_id"] for r in view.rows()] == [two.task_id]
        assert one.task_id[:8] not in view.html.value
        before = view.refreshes
        view.button.click()
        assert view.refreshes == before + 1
        view.close()
    finally:
        desk.stop()


def test_auto_refresh_follows_the_table(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "first-reply")
    try:
        view = routing_table_view(coordinator, interval_s=0.05)
        assert not view.auto_running
        view.auto.value = True  # the checkbox starts the watcher
        assert view.auto_running
        stream = coordinator.stream("ticket-desk", TICKET_TEXT)
        stream.wait()
        assert wait_until(lambda: "handover" in view.html.value, timeout=3)
        assert stream.task_id[:8] in view.html.value

        view.set_auto(False)
        assert view.auto.value is False and not view.auto_running
        count = view.refreshes
        coordinator.routing.start("0" * 8 + "-0000-4000-8000-" + "0" * 12, Address("acme", unit, agent="x"), 0.0)
        time.sleep(0.2)
        assert view.refreshes == count  # no watcher, no refresh

        view.set_auto(True)
        assert view.auto_running and view.auto.value is True
        view.close()
        assert not view.auto_running
    finally:
        desk.stop()


def test_auto_from_the_constructor_and_a_plain_table():
    table = RoutingTable()
    view = RoutingTableView(table, auto=True, interval_s=0.05)
    try:
        assert view.auto_running
        table.start("t-1", Address("acme", "support", agent="ticket-desk"), 1.0)
        assert wait_until(lambda: "t-1" in view.html.value, timeout=3)
        table.observe("t-1", "analyst-1", 2.0)
        assert wait_until(lambda: "analyst-1" in view.html.value, timeout=3)
        assert view.rows()[0]["reroutes"][0]["at"] == 2.0
    finally:
        view.close()


def test_html_is_escaped():
    table = RoutingTable()
    table.start("<t>", Address("acme", "support", agent="ticket-desk"), 1.0)
    assert table.fall_back("<t>", 2.0, "nothing") is None  # already at the card agent
    table.observe("<t>", "analyst-1", 3.0)
    table.fall_back("<t>", 4.0, "<script>alert(1)</script>")
    view = RoutingTableView(table)
    html = view.last_html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;t&gt;" in html
    view.close()


def test_mimebundle_without_a_kernel_is_html_only(coordinator):
    view = routing_table_view(coordinator)
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert WIDGET_MIME not in bundle
    assert bundle["text/html"] == view.last_html
    view.close()


# -- snapshots: the table as it was, for a lesson's steps ----------------------------------------------
CLOCK = re.compile(r"\d\d:\d\d:\d\d\.\d{3}")


def test_snapshot_keeps_the_table_as_it_was_when_taken():
    table = RoutingTable()
    empty = routing_snapshot(table)
    assert (empty.tasks, empty.reroutes, empty.rows) == (0, 0, ())
    assert "no task in the routing table yet" in empty._repr_html_()
    assert repr(empty) == "<routing table snapshot: 0 task(s), 0 reroute(s)>"

    table.start("t-1", Address("acme", "support", agent="ticket-desk"), 1.0)
    before = routing_snapshot(table)
    table.observe("t-1", "analyst-1", 2.0)
    after = routing_snapshot(table)
    table.observe("t-1", "analyst-2", 3.0)

    assert empty.tasks == 0, "a snapshot never changes with the table"
    assert (before.tasks, before.reroutes) == (1, 0) and "<i>no reroute</i>" in before.html
    assert before.rows[0]["current"] == "ticket-desk" and before.rows[0]["rerouted"] is False
    assert (after.tasks, after.reroutes) == (1, 1)
    assert after.rows[0]["current"] == "analyst-1" and "analyst-2" not in after.html
    assert ">handover</span>" in after.html and "a2a-responder-agent-id=analyst-1" in after.html
    assert "<b><code" in after.html  # routed away from its card agent: in bold
    assert not CLOCK.search(after.html), "numbered, not timed: the same HTML on every run"
    assert "<th style='text-align:left'>#</th>" in after.html
    assert "1 task(s), 1 reroute(s) (it does not change afterwards)" in after._repr_html_()
    assert repr(after) == ("<routing table snapshot: 1 task(s), 1 reroute(s)>\n"
                           "  t-1… card ticket-desk, now analyst-1: handover ticket-desk → analyst-1")


def test_snapshot_of_a_view_and_of_a_requester(broker_url, unit, coordinator):
    desk = desk_of(broker_url, unit, "first-reply")
    try:
        one = coordinator.stream("ticket-desk", TICKET_TEXT)
        one.wait()
        two = coordinator.stream("ticket-desk", TICKET_TEXT)
        two.wait()
        whole = routing_snapshot(coordinator)
        assert [r["task_id"] for r in whole.rows] == [one.task_id, two.task_id] and whole.reroutes == 2
        view = RoutingTableView(coordinator, task_ids=[two.task_id])
        mine = view.snapshot()
        assert [r["task_id"] for r in mine.rows] == [two.task_id]
        assert one.task_id[:8] not in mine.html
        assert CLOCK.search(view.html.value) and not CLOCK.search(mine.html)  # the live view keeps its times
        view.close()
    finally:
        desk.stop()
