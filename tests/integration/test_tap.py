"""The lessons' helpers in the package, against a real Mosquitto: the request tap (lessons 04, 05)
and ``TicketDesk.wait_gone`` (lessons 05, 06)."""
from __future__ import annotations

from a2a_nb import RequestTap, Requester, TicketDesk
from a2a_nb.protocol.states import INPUT_REQUIRED
from a2a_nb.story.scenarios import TICKET_TEXT
from tests.helpers import uid



def test_the_tap_shows_each_request_once_with_the_identifiers_sent(broker_url):
    unit = uid("tap")
    tap = RequestTap("acme", unit, uid("tap"), broker=broker_url)
    desk = TicketDesk(unit=unit, handover="none", seed=1, broker=broker_url)
    req = Requester(uid("coord"), unit=unit, broker=broker_url)
    try:
        reply = req.send("ticket-desk", TICKET_TEXT)
        rows = tap.take()
        assert [(r["to"], r["method"], r["Task.id"]) for r in rows] == [("ticket-desk", "SendMessage", reply.task_id)]
        assert rows[0]["Correlation Data"] == reply.attempts[0].correlation  # one form everywhere
        assert tap.take(wait=0.05) == []

        req.get_task(reply.task_id)
        assert [(r["method"], r["Task.id"]) for r in tap.take()] == [("GetTask", reply.task_id)]

        tap.stop_listening()
        req.get_task(reply.task_id)
        assert tap.take(wait=0.1) == [] and "not listening" in repr(tap)
    finally:
        req.close(), desk.stop(), tap.close()


def test_wait_gone_returns_when_the_analyst_that_dies_has_left(broker_url):
    unit = uid("gone")
    desk = TicketDesk(unit=unit, handover="dies", seed=2, broker=broker_url)
    req = Requester(uid("coord"), unit=unit, broker=broker_url)
    try:
        assert req.send("ticket-desk", TICKET_TEXT).state == INPUT_REQUIRED
        analyst = desk.instances[-1]
        assert desk.wait_gone(analyst) is True
        assert not analyst.alive and analyst.agent not in desk.runtime.agents
        assert desk.wait_gone(desk.desk, timeout=0.05) is False   # the desk itself stays
    finally:
        req.close(), desk.stop()
