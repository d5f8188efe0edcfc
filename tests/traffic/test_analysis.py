"""A chart reads its recording once: one call loads the traffic once and derives the state
transitions, task steps and routing replay once, however many helpers ask for them."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from a2a_nb.traffic import charts, frame  # noqa: E402

FULL = Path(__file__).resolve().parents[2] / "a2a_nb" / "data" / "recordings" / "full.jsonl"


def counted(monkeypatch, module, name: str) -> dict:
    calls = {"n": 0}
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_state_timeline_loads_and_derives_once(monkeypatch):
    from pandas.core.groupby import DataFrameGroupBy

    loads = counted(monkeypatch, frame, "load_traffic")
    replays = counted(monkeypatch, frame, "replay")  # the routing replay
    checked = counted(monkeypatch, frame, "_allowed")  # state transitions: one check per state item
    steps = counted(monkeypatch, DataFrameGroupBy, "cumcount")  # task steps
    df = frame.load_traffic(str(FULL))
    frame.state_transitions(df)
    once = checked["n"]
    assert once > 0
    loads["n"] = checked["n"] = 0
    plt.close(charts.state_timeline(str(FULL)))
    assert loads["n"] == 1
    assert replays["n"] == 1
    assert checked["n"] == once
    assert steps["n"] == 1


def test_nothing_is_kept_between_calls():
    df = frame.load_traffic(str(FULL))
    before = frame.state_transitions(df)
    df.loc[df["state"].notna(), "state"] = None  # a learner changes the frame in place
    assert len(before) and frame.state_transitions(df).empty
