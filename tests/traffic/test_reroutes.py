"""``reroutes``: the requester's routing table replayed from a recording (``protocol.routing.replay``),
and the views, charts and lint rule that read it.

The committed recordings (data/recordings/) replay to the reroutes each scenario's coordinator
recorded live (``SCENARIOS[name]["expect"]``); tests/integration/test_routing_replay.py compares
the live table with the replay of a fresh recording, reroute by reroute.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from a2a_nb.protocol import jsonrpc, messages, states
from a2a_nb.protocol.routing import CAUSES, FALLBACK, HANDOVER, POOL_ASSIGNED
from a2a_nb.story.scenarios import SCENARIOS
from a2a_nb.traffic import reroutes
from a2a_nb.traffic.charts import route_marks
from a2a_nb.traffic.frame import REROUTE_COLUMNS, handovers, load_traffic, new_responders, routing_view
from a2a_nb.traffic.lint import check_traffic

from ._traffic import C1, T1, Traffic

RECORDINGS = Path(__file__).resolve().parents[2] / "a2a_nb" / "data" / "recordings"


@pytest.fixture(scope="module")
def frames() -> dict:
    return {name: load_traffic(RECORDINGS / f"{name}.jsonl") for name in [*SCENARIOS, "full"]}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_recording_replays_to_the_reroutes_its_coordinator_recorded(frames, name):
    moves = reroutes(frames[name])
    assert list(moves.columns) == REROUTE_COLUMNS
    assert list(moves["cause"]) == SCENARIOS[name]["expect"]
    assert set(moves["cause"]) <= set(CAUSES)
    assert list(moves["from"].iloc[1:]) == list(moves["to"].iloc[:-1]), "each reroute starts where the last went"
    first = moves.iloc[0] if len(moves) else None
    if name == "pool":
        assert (first["from"], first["cause"]) == ("pool:analysts", POOL_ASSIGNED)
    elif first is not None:
        assert (first["from"], first["cause"]) == ("ticket-desk", HANDOVER)
        assert first["detail"] == f"a2a-responder-agent-id={first['to']}"
    if name == "handover-unreachable":
        back = moves.iloc[-1]
        assert (back["to"], back["detail"]) == ("ticket-desk", f"{back['from']} did not answer 3 attempts")


def test_the_full_recording_replays_every_scenario_in_order(frames):
    full = reroutes(frames["full"])
    columns = ["from", "to", "cause", "detail"]
    assert full[columns].values.tolist() == [row for name in SCENARIOS
                                             for row in reroutes(frames[name])[columns].values.tolist()]


@pytest.mark.parametrize("name", ["full", "multi-handover", "pool"])
def test_the_views_read_the_replayed_table(frames, name):
    df = frames[name]
    moves = reroutes(df)
    # routing_view: a request that went somewhere new gives the cause of the table's latest reroute
    rv = routing_view(df)
    for i, task, target, cause in zip(rv["i"], rv["task_id"], rv["target"], rv["cause"]):
        if isinstance(cause, str):
            latest = moves[(moves["task_id"] == task) & (moves["i"] <= i)].iloc[-1]
            assert (latest["to"], latest["cause"]) == (target, cause)
    # the reply that moved a task: new_responders, the stars of the charts, handovers' first row per responder
    named = moves[moves["cause"] != FALLBACK]
    assert new_responders(df) == {int(i): (c, to) for i, c, to in zip(named["i"], named["cause"], named["to"])}
    marks = route_marks(df)
    assert list(marks[marks["mark"].isin(CAUSES)]["mark"]) == list(moves["cause"])
    hv = handovers(df)
    first = hv.drop_duplicates(["task_id", "responder"])
    assert list(zip(first["i"], first["cause"], first["responder"])) == list(zip(named["i"], named["cause"], named["to"]))


def test_a_request_back_to_the_silent_agent_after_the_fallback_is_not_what_the_table_says():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, Traffic.status(T1, C1, states.INPUT_REQUIRED), props=[("a2a-responder-agent-id", "analyst-1")])
    tr.send("analyst-1", T1, C1, "order 991")  # 2: no reply, analyst-1 went silent
    c, r = tr.send("ticket-desk", T1, C1, "order 991")  # 3: the fallback
    tr.result(c, r, Traffic.task(T1, C1, states.INPUT_REQUIRED))
    c, r = tr.request("analyst-1", jsonrpc.GET_TASK, messages.get_task_params(T1))  # 5: back to analyst-1
    tr.result(c, r, Traffic.bare_task(T1, C1))
    moves = reroutes(tr.records)
    assert list(zip(moves["i"], moves["cause"])) == [(1, HANDOVER), (3, FALLBACK)]
    f = check_traffic(tr.records, schema=False)
    assert list(zip(f["rule"], f["i"])) == [("follow-latest-responder", 5)]
    assert "fell back to ticket-desk at row 3" in f["explanation"].iloc[0]


def test_a_part_of_a_recording_keeps_its_rows(frames):
    """``scenario_frames`` cuts a recording into parts that keep their ``i``: each part replays to the
    whole recording's reroutes of its task, at the same rows."""
    from a2a_nb.traffic.charts import scenario_frames

    whole = reroutes(frames["full"])
    for task, piece in scenario_frames(frames["full"]):
        part = reroutes(piece)
        assert part.values.tolist() == whole[whole["task_id"] == task].values.tolist()
