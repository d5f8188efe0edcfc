"""The committed recordings in a2a_nb/data/recordings/ (made by ``make recordings``) are fit to teach from.

Lesson 07 and the step-through player replay them without a broker, so each one must load, pass
the profile's MUST checks, and show the reroutes its scenario is about: the broker saw the same
story the coordinator's routing table told.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from a2a_nb.story.scenarios import SCENARIOS
from a2a_nb.traffic import check_traffic, handovers, load_traffic, read_records, routing_view, state_transitions
from a2a_nb.traffic.lint import MUST, format_findings

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "a2a_nb" / "data" / "recordings"
NAMES = [*SCENARIOS, "full"]
MAX_BYTES = 200_000  # they are committed: keep them small

_spec = importlib.util.spec_from_file_location("make_recordings", ROOT / "scripts" / "make_recordings.py")
make_recordings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_recordings)

# what routing_view shows for each scenario's task: (cause of every reroute, how many new responders
# the replies announced through a2a-responder-agent-id)
EXPECTED = {
    "happy": (["handover"], 1),
    "handover": (["handover"], 1),
    "no-handover": ([], 0),
    # both handovers happen inside the first stream; the next operation (GetTask) goes to the latest
    "multi-handover": (["handover"], 2),
    "handover-unreachable": (["handover", "fallback"], 1),
    "pool": (["pool-assigned"], 1),
}


@pytest.fixture(scope="module")
def frames() -> dict:
    return {name: load_traffic(RECORDINGS / f"{name}.jsonl") for name in NAMES}


def test_every_scenario_is_recorded():
    assert set(EXPECTED) == set(SCENARIOS), "a new scenario needs its expectation here and `make recordings`"
    for name in NAMES:
        path = RECORDINGS / f"{name}.jsonl"
        assert path.exists(), f"{path} is missing: run `make recordings`"
        assert 0 < path.stat().st_size < MAX_BYTES, f"{path.name}: {path.stat().st_size} bytes"


@pytest.mark.parametrize("name", NAMES)
def test_loads_and_lints_without_must_findings(frames, name):
    df = frames[name]
    assert len(df) == len(read_records(RECORDINGS / f"{name}.jsonl"))
    assert set(df["kind"]) <= {"discovery", "request", "pool", "reply", "event"}, "only profile topics"
    findings = check_traffic(df)
    must = findings[findings["level"] == MUST]
    assert must.empty, format_findings(must)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_shows_its_reroutes(frames, name):
    df = frames[name]
    causes, responders = EXPECTED[name]
    rv = routing_view(df)
    assert rv["task_id"].nunique() == 1, "one scenario, one task"
    assert list(rv.loc[rv["reroute"], "cause"]) == causes
    hv = handovers(df)
    assert hv["responder"].nunique() == responders
    want_cause = "pool-assigned" if name == "pool" else "handover"
    assert set(hv["cause"]) <= {want_cause}
    # the story the coordinator's routing table told (SCENARIOS[name]["expect"])
    assert make_recordings.recorded_reroutes(df) == SCENARIOS[name]["expect"]
    # every scenario ends with the ticket analysed
    tr = state_transitions(df)
    assert tr["state"].iloc[-1] == "TASK_STATE_COMPLETED"
    assert "TASK_STATE_INPUT_REQUIRED" in set(tr["state"]) or name == "multi-handover"


def test_handover_scenarios_in_detail(frames):
    # handover: the desk itself streams first, the analyst takes over mid-stream
    df = frames["handover"]
    first = handovers(df)["i"].min()
    early = df[(df["kind"] == "reply") & (df["i"] < first)]
    assert "ticket-desk" in set(early["from_agent"]) and "TASK_STATE_WORKING" in set(early["state"])
    # handover-unreachable: the follow-ups to the dead analyst go unanswered, then the desk answers
    rv = routing_view(frames["handover-unreachable"])
    silent = rv[~rv["answered"]]
    assert len(silent) >= 2 and silent["target"].str.startswith("analyst-").all()
    fallback = rv[rv["cause"] == "fallback"].iloc[0]
    assert fallback["target"] == "ticket-desk" and fallback["answered"]
    # pool: the request went to the pool topic; the follow-up straight to the member that answered
    rv = routing_view(frames["pool"])
    assert rv["target"].iloc[0] == "pool:analysts"
    assert rv.loc[rv["cause"] == "pool-assigned", "target"].iloc[0] == handovers(frames["pool"])["responder"].iloc[0]


def test_full_recording_is_all_scenarios_in_order(frames):
    full = frames["full"]
    assert make_recordings.recorded_reroutes(full) == [c for n in SCENARIOS for c in SCENARIOS[n]["expect"]]
    # the same seeds in both files: the same Task.ids, in the order of SCENARIOS
    tasks = [frames[n]["task_id"].dropna().iloc[0] for n in SCENARIOS]
    assert list(full["task_id"].dropna().unique()) == tasks
    rv = routing_view(full)
    assert rv["task_id"].nunique() == len(SCENARIOS)


SHAPE = ["kind", "method", "event", "state", "agent", "from_agent", "to_agent", "responder_agent_id", "status"]
"""What a recording shows a learner, without times, ids or Correlation Data (those change every run)."""


def _shape(path) -> list[tuple]:
    df = load_traffic(str(path))
    return [tuple(None if v != v else v for v in row) for row in df[SHAPE].itertuples(index=False)]


@pytest.mark.parametrize("name", ["happy", "handover", "multi-handover", "handover-unreachable", "pool"])
def test_the_committed_recording_is_what_the_kit_records_today(name, tmp_path):
    """Lesson 07 and the player replay a2a_nb/data/recordings/: recording the scenario again must give the same
    messages, kinds, methods, states and responders (else: `make recordings` and rebuild lesson 07)."""
    fresh = tmp_path / f"{name}.jsonl"
    make_recordings.record(fresh, [name], 0.05, lambda line: None)
    assert _shape(fresh) == _shape(ROOT / "a2a_nb" / "data" / "recordings" / f"{name}.jsonl")
