"""Lesson 07's exercises: find things in the recording's DataFrame, as the lesson did.

Both checks compute what is right from the DataFrame the learner loaded (``load_traffic``), with
the same functions the lesson shows (``routing_view``, ``latency_view``), so they stay right when
the recordings are made again. The hints say where to look, never the answer.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

import pandas as pd

from ...protocol import routing
from ...traffic.frame import REQUEST_KINDS, latency_view, routing_view
from . import Feedback, not_yet, right, unanswered

FALLBACK = "Find the fallback"
SLOWEST = "The slowest first reply"


def _fallbacks(df: pd.DataFrame, names: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(scenario, agent before, agent after) of every reroute whose cause is ``fallback``."""
    rv = routing_view(df)  # in recorded order
    found = []
    for k, (task, cause, target) in enumerate(zip(rv["task_id"], rv["cause"], rv["target"])):
        if cause != routing.FALLBACK:
            continue
        before = rv.iloc[:k]
        before = before[before["task_id"] == task]
        found.append((names.get(task, task), str(before["target"].iloc[-1]) if len(before) else "", str(target)))
    return found


def fallback(answer: Any, df: pd.DataFrame, names: Mapping[str, str]) -> Feedback:
    """``answer`` is ``(scenario, from_agent, to_agent)`` of the fallback: the reroute whose cause
    is ``fallback`` in ``routing_view(df)``, the agent the task's previous operation went to, and
    the agent the fallback went to. ``names`` maps Task.ids to scenarios (the lesson's ``TASKS``)."""
    waiting = unanswered(FALLBACK, answer)
    if waiting:
        return waiting
    expected = _fallbacks(df, names)
    if not expected:
        return not_yet(FALLBACK, "this recording has no reroute whose cause is 'fallback': load full.jsonl")
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        return not_yet(FALLBACK, "give three things: (scenario, the agent the task came from, the agent it went to)")
    scenario, came_from, went_to = (str(a) for a in answer)
    if tuple(answer) in expected:
        return right(FALLBACK, f"in {scenario}, the coordinator gave up on {came_from} (no reply) and went back "
                               f"to {went_to}, the card agent")
    match = [e for e in expected if e[0] == scenario]
    if not match:
        causes = _causes(df, names, scenario)
        if causes is None:
            return not_yet(FALLBACK, f"{scenario!r} is not a scenario of the recording: name it as TASKS does")
        if causes:
            return not_yet(FALLBACK, f"{scenario}'s reroutes are {', '.join(sorted(causes))}, not a fallback: "
                                     "keep the rows of routing_view whose cause is 'fallback'")
        return not_yet(FALLBACK, f"{scenario} has no reroute at all: keep the rows of routing_view whose cause "
                                 "is 'fallback'")
    _, want_from, want_to = match[0]
    if came_from == "coordinator" or went_to == "coordinator":
        return not_yet(FALLBACK, "the coordinator is the requester: name the agents the task was sent to")
    if came_from != want_from:
        if came_from == want_to:
            return not_yet(FALLBACK, "the right scenario, but you gave the agent the task went to as the one it "
                                     "came from: 'from' is the target of the task's operation before the fallback")
        return not_yet(FALLBACK, "the right scenario; 'from' is the target of the task's last operation before "
                                 "the fallback row (the one that got no reply)")
    return not_yet(FALLBACK, "the right scenario and 'from'; 'to' is the target of the fallback row itself")


def _causes(df: pd.DataFrame, names: Mapping[str, str], scenario: str) -> Optional[set]:
    """The reroute causes of ``scenario``'s task (None: no such scenario)."""
    tasks = [t for t, n in names.items() if n == scenario]
    if not tasks:
        return None
    rv = routing_view(df)
    sub = rv[rv["task_id"].isin(tasks) & rv["reroute"]]
    return set(sub["cause"].dropna())


def slowest_first_reply(answer: Any, df: pd.DataFrame) -> Feedback:
    """``answer`` is ``(i, method)``: the row of the request that waited longest for its first
    reply (``latency_view(df)``, answered requests only) and its method."""
    waiting = unanswered(SLOWEST, answer)
    if waiting:
        return waiting
    lat = latency_view(df)
    answered = lat[lat["latency_s"].notna()]
    if answered.empty:
        return not_yet(SLOWEST, "no request in this recording got a reply: load full.jsonl")
    slowest = answered.loc[answered["latency_s"].idxmax()]
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return not_yet(SLOWEST, "give a pair: (the request's row i, its method)")
    i, method = answer
    try:
        row = int(i)
    except (TypeError, ValueError):
        return not_yet(SLOWEST, f"the first item should be a row number (the i column), not {i!r}")
    if row == int(slowest["i"]):
        if str(method) == str(slowest["method"]):
            return right(SLOWEST, f"request #{row} ({method}) waited {slowest['latency_s'] * 1000:.1f} ms for its "
                                  "first reply, the longest of the recording")
        return not_yet(SLOWEST, f"the right request, but #{row} is not a {method}: read its method column")
    kinds = dict(zip(df["i"], df["kind"]))
    if row not in kinds:
        return not_yet(SLOWEST, f"there is no row #{row} in the recording")
    if kinds[row] not in REQUEST_KINDS:
        return not_yet(SLOWEST, f"#{row} is a {kinds[row]}, not a request: give the row of a request (the i column "
                                "of latency_view)")
    mine = lat[lat["i"] == row]["latency_s"]
    waited = float(mine.iloc[0]) if len(mine) else math.nan
    if math.isnan(waited):
        return not_yet(SLOWEST, f"request #{row} never got a reply (its latency is NaN): look among the answered "
                                "ones")
    if str(method) == str(slowest["method"]):
        return not_yet(SLOWEST, f"the right method, but request #{row} waited {waited * 1000:.1f} ms and another one "
                                "of that method waited longer: sort by latency_s")
    return not_yet(SLOWEST, f"request #{row} waited {waited * 1000:.1f} ms; at least one request waited longer: "
                            "sort latency_view by latency_s")
