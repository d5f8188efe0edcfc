"""Lesson 07's exercise checks, on the committed recording the lesson replays (no broker needed):
the reference answer is right, the placeholder and typical wrong answers get a hint that does not
give the answer away."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from a2a_nb.notebook.exercises import lesson07
from a2a_nb.story.scenarios import SCENARIOS
from a2a_nb.traffic import latency_view, load_traffic, routing_view

FULL = Path(__file__).resolve().parents[2] / "a2a_nb" / "data" / "recordings" / "full.jsonl"


@pytest.fixture(scope="module")
def df():
    return load_traffic(FULL)


@pytest.fixture(scope="module")
def tasks(df):
    return dict(zip(df["task_id"].dropna().unique(), SCENARIOS))


@pytest.fixture(scope="module")
def fallback_answer(df, tasks):
    """The lesson's reference answer, computed as the learner would."""
    rv = routing_view(df)
    row = rv[rv["cause"] == "fallback"].iloc[0]
    before = rv[(rv["task_id"] == row["task_id"]) & (rv["i"] < row["i"])].iloc[-1]
    return tasks[row["task_id"]], before["target"], row["target"]


@pytest.fixture(scope="module")
def slowest_answer(df):
    lat = latency_view(df)
    slowest = lat.loc[lat["latency_s"].idxmax()]
    return int(slowest["i"]), slowest["method"]


def hides(feedback, *answer) -> None:
    """A 'not yet' whose hint names none of the answer's parts (beyond what the learner typed)."""
    assert not feedback.right, feedback
    for part in answer:
        named = re.search(rf"(?<![\w-]){re.escape(str(part))}(?![\w-])", feedback.message)
        assert not named, f"the hint gives {part!r} away: {feedback}"


# -- find the fallback ------------------------------------------------------------------------------

def test_fallback_reference_answer_is_right(df, tasks, fallback_answer):
    assert fallback_answer == ("handover-unreachable", "analyst-1", "ticket-desk")  # the story's recording
    feedback = lesson07.fallback(fallback_answer, df, tasks)
    assert feedback.right, feedback
    assert lesson07.fallback(list(fallback_answer), df, tasks).right  # a list is fine too


def test_fallback_placeholder(df, tasks):
    feedback = lesson07.fallback(..., df, tasks)
    assert not feedback.right and "replace the ..." in feedback.message


def test_fallback_wrong_scenario(df, tasks, fallback_answer):
    scenario, came_from, went_to = fallback_answer
    feedback = lesson07.fallback(("pool", came_from, went_to), df, tasks)
    hides(feedback, scenario)
    assert "pool-assigned" in feedback.message and "fallback" in feedback.message
    feedback = lesson07.fallback(("no-handover", came_from, went_to), df, tasks)
    hides(feedback, scenario)
    assert "no reroute" in feedback.message
    hides(lesson07.fallback(("nowhere", came_from, went_to), df, tasks), scenario)


def test_fallback_from_and_to_swapped(df, tasks, fallback_answer):
    scenario, came_from, went_to = fallback_answer
    feedback = lesson07.fallback((scenario, went_to, came_from), df, tasks)
    hides(feedback)
    assert "right scenario" in feedback.message and "before the fallback" in feedback.message


def test_fallback_wrong_agents(df, tasks, fallback_answer):
    scenario, came_from, went_to = fallback_answer
    feedback = lesson07.fallback((scenario, "analyst-2", went_to), df, tasks)
    hides(feedback, came_from)
    feedback = lesson07.fallback((scenario, came_from, "analyst-2"), df, tasks)
    hides(feedback, went_to)
    assert "target of the fallback row" in feedback.message
    feedback = lesson07.fallback((scenario, "coordinator", went_to), df, tasks)
    hides(feedback, came_from)
    assert "requester" in feedback.message


def test_fallback_answer_of_the_wrong_shape(df, tasks, fallback_answer):
    hides(lesson07.fallback(fallback_answer[0], df, tasks), *fallback_answer[1:])
    hides(lesson07.fallback(fallback_answer[:2], df, tasks), fallback_answer[2])


def test_fallback_on_a_recording_without_one(tasks, fallback_answer):
    happy = load_traffic(FULL.with_name("happy.jsonl"))
    feedback = lesson07.fallback(fallback_answer, happy, tasks)
    assert not feedback.right and "full.jsonl" in feedback.message


# -- the slowest first reply -------------------------------------------------------------------------

def test_slowest_reference_answer_is_right(df, slowest_answer):
    feedback = lesson07.slowest_first_reply(slowest_answer, df)
    assert feedback.right, feedback
    lat = latency_view(df)
    assert lat.loc[lat["i"] == slowest_answer[0], "latency_s"].iloc[0] == lat["latency_s"].max()


def test_slowest_placeholder(df):
    feedback = lesson07.slowest_first_reply(..., df)
    assert not feedback.right and "replace the ..." in feedback.message


def test_slowest_unanswered_request(df, slowest_answer):
    lat = latency_view(df)
    silent = int(lat.loc[lat["latency_s"].isna(), "i"].iloc[0])
    feedback = lesson07.slowest_first_reply((silent, "SendStreamingMessage"), df)
    hides(feedback, f"#{slowest_answer[0]}")
    assert "never got a reply" in feedback.message


def test_slowest_runner_up(df, slowest_answer):
    """The second slowest request (of another method here): close, but not it."""
    lat = latency_view(df).dropna(subset=["latency_s"]).sort_values("latency_s", ascending=False)
    second = lat.iloc[1]
    feedback = lesson07.slowest_first_reply((int(second["i"]), second["method"]), df)
    hides(feedback, f"#{slowest_answer[0]}")
    assert "waited longer" in feedback.message
    same_method = lat[(lat["method"] == slowest_answer[1]) & (lat["i"] != slowest_answer[0])].iloc[0]
    feedback = lesson07.slowest_first_reply((int(same_method["i"]), slowest_answer[1]), df)
    hides(feedback, f"#{slowest_answer[0]}")
    assert "the right method" in feedback.message


def test_slowest_reply_row_or_wrong_method(df, slowest_answer):
    i, method = slowest_answer
    reply = int(df[(df["kind"] == "reply") & (df["request_i"] == i)]["i"].iloc[0])
    feedback = lesson07.slowest_first_reply((reply, method), df)
    hides(feedback, f"#{i}")
    assert "not a request" in feedback.message
    feedback = lesson07.slowest_first_reply((i, "GetTask" if method != "GetTask" else "SendMessage"), df)
    assert not feedback.right and "the right request" in feedback.message and method not in feedback.message


def test_slowest_answer_of_the_wrong_shape(df, slowest_answer):
    hides(lesson07.slowest_first_reply(slowest_answer[1], df), f"#{slowest_answer[0]}")
    hides(lesson07.slowest_first_reply(("first", slowest_answer[1]), df), f"#{slowest_answer[0]}")
    hides(lesson07.slowest_first_reply((10_000, slowest_answer[1]), df), f"#{slowest_answer[0]}")
