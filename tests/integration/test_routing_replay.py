"""One routing table for live and recorded traffic: each story scenario runs against the real
Mosquitto with a Recorder on ``$a2a/#``, and the coordinator's live ``RoutingTable`` reroutes equal
the recording replayed through the same table (``traffic.frame.reroutes``, ``protocol.routing.replay``):
same task, from, to, cause and detail. Profile: Optional Task Handover 2-4, Optional Shared
Subscription Dispatch 10-11, Requester Retry and Timeout Profile 9.
"""
from __future__ import annotations

import pytest

from a2a_nb.story.scenarios import SCENARIOS, run_scenario
from a2a_nb.traffic import Recorder, reroutes


def label(address: str) -> str:
    """``acme/support/analyst-1`` (a live table's row) -> ``analyst-1`` (a recording's)."""
    return address.rsplit("/", 1)[-1]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_recording_replays_to_the_live_routing_table(name, broker_url):
    recorder = Recorder(broker=broker_url).start()
    try:
        lines: list[str] = []
        result = run_scenario(name, broker_url, say=lines.append, pace=0.01)
        recorder.wait_idle(0.3)
    finally:
        recorder.stop()
    assert result.ok, "\n".join(lines)
    (task,) = result.task_ids
    live = [(r["task_id"], label(r["from"]), label(r["to"]), r["cause"], r["detail"]) for r in result.reroutes]
    moves = reroutes(recorder)
    moves = moves[moves["task_id"] == task]
    replayed = list(zip(moves["task_id"], moves["from"], moves["to"], moves["cause"], moves["detail"]))
    assert replayed == live
    assert [cause for *_, cause, _ in live] == SCENARIOS[name]["expect"]
