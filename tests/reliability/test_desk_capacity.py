"""The ticket desk is bounded: at most ``max_analysts`` tickets at once, one analyst connection per
slot (``analyst-1`` .. ``analyst-N``, reused), and -32004 ``responder_unavailable`` for a new task
beyond that, before the task exists (Profile: error handling; ``Responder(admit=...)``)."""
from __future__ import annotations

import threading
import time

import pytest

from a2a_nb.agents.requester import Requester
from benchmarks.load import format_resources, run_desk_burst
from a2a_nb.cli import build_parser
from a2a_nb.mqtt import secure
from a2a_nb.protocol import errors, states
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import MAX_ANALYSTS, TicketDesk
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT
from tests.helpers import uid

NO_RETRY = RetryProfile(reply_first_timeout_s=10.0, stream_idle_timeout_s=10.0, max_attempts=1)


def fresh_unit() -> str:
    return uid("cap")


def test_a_burst_of_400_gets_completions_or_32004_and_the_desk_stays_bounded(broker_url):
    result = run_desk_burst(broker_url, requests=400, timeout_s=60)
    print("\n" + format_resources(result))
    assert result["answered"] == 400, result
    assert result["completed"] + result["refused_32004"] == 400 and result["other"] == 0
    assert result["completed"] >= 1 and result["refused_32004"] >= 1
    assert result["after_burst_request"] == states.COMPLETED  # the desk still works after the burst
    # one MQTT connection per slot, not per task
    assert result["analysts_started"] <= MAX_ANALYSTS and result["analysts_connected"] <= MAX_ANALYSTS
    before, during = result["before"], result["after_burst"]
    assert during["threads"] < 100, during  # a thread (or a connection) per task would pass 400
    assert during["threads"] - before["threads"] <= 40, (before, during)
    if during["fds"] is not None:
        assert during["fds"] - before["fds"] <= 40, (before, during)


def test_admission_reserves_the_last_slot_for_exactly_one_of_two_racing_tasks(broker_url):
    with TicketDesk(unit=fresh_unit(), broker=broker_url, handover="none", pace=0.0, max_analysts=1) as desk:
        start = threading.Barrier(8)
        verdicts: list = []

        def admit(i: int) -> None:
            start.wait(5)
            verdicts.append(desk._admit({"messageId": f"m{i}"}))

        threads = [threading.Thread(target=admit, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        admitted = [v for v in verdicts if v is None]
        refused = [v for v in verdicts if v is not None]
        assert len(admitted) == 1 and len(refused) == 7
        assert all(e.code == errors.RESPONDER_UNAVAILABLE for e in refused)
        assert "capacity" in refused[0].message


def test_an_analyst_is_reused_and_a_task_beyond_capacity_is_refused_before_it_exists(broker_url):
    unit = fresh_unit()
    with TicketDesk(unit=unit, broker=broker_url, handover="first-reply", pace=0.0, max_analysts=1) as desk:
        req = Requester(uid("cap"), unit=unit, broker=broker_url, retry=NO_RETRY)
        try:
            a = req.send("ticket-desk", TICKET_TEXT)  # the analyst asks for input: the slot is free again
            assert a.state == states.INPUT_REQUIRED and a.responder == "analyst-1"
            b = req.send("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT)
            assert b.state == states.COMPLETED and b.responder == "analyst-1"
            done = req.continue_task(a, REPRO_TEXT)  # analyst-1 still serves its interrupted task
            assert done.state == states.COMPLETED and done.target.agent == "analyst-1"
            assert [i.agent for i in desk.instances] == ["analyst-1"]  # one connection for three turns

            # the only slot taken by a ticket in progress: a new task is refused, and none is stored
            desk.slots[0].busy = True
            tasks_before = len(desk.runtime.store.list())
            with pytest.raises(A2AError) as refused:  # max_attempts=1: the retry-eligible error is not retried
                req.send("ticket-desk", TICKET_TEXT)
            assert refused.value.code == errors.RESPONDER_UNAVAILABLE
            assert len(desk.runtime.store.list()) == tasks_before
            assert desk.refused >= 1
            desk.slots[0].busy = False
            assert req.send("ticket-desk", TICKET_TEXT + "\n" + REPRO_TEXT).state == states.COMPLETED
        finally:
            req.close()


def test_the_default_capacity_matches_the_cli_and_the_secure_brokers_logins():
    args = build_parser().parse_args(["serve", "ticket-desk"])
    assert args.max_analysts == MAX_ANALYSTS
    assert secure.DESK_ANALYSTS == tuple(f"analyst-{i}" for i in range(1, MAX_ANALYSTS + 1))
    assert set(secure.DESK_ANALYSTS) | {"ticket-desk", "cli", "coordinator"} <= set(secure.CAST)
    assert build_parser().parse_args(["serve", "ticket-desk", "--max-analysts", "2"]).max_analysts == 2
    with pytest.raises(ValueError):
        TicketDesk(max_analysts=0)


def test_a_slot_whose_analyst_died_gets_a_new_analyst_under_the_same_name(broker_url):
    unit = fresh_unit()
    with TicketDesk(unit=unit, broker=broker_url, handover="dies", pace=0.0, max_analysts=1) as desk:
        req = Requester(uid("cap"), unit=unit, broker=broker_url, retry=NO_RETRY)
        try:
            a = req.send("ticket-desk", TICKET_TEXT)
            assert a.state == states.INPUT_REQUIRED and a.responder == "analyst-1"
            first = desk.instances[0]
            deadline = time.monotonic() + 5
            while first.alive and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not first.alive and desk.killed == ["analyst-1"]
            b = req.send("ticket-desk", TICKET_TEXT)  # the slot is free again: a fresh analyst-1
            assert b.responder == "analyst-1"
            assert [i.agent for i in desk.instances] == ["analyst-1", "analyst-1"]
            assert desk.instances[1] is not first and desk.analysts_connected <= 1
        finally:
            req.close()
