"""The story's scenarios (``run_scenario``) reach their outcome, and the wire agrees.

Each scenario checks itself (``ok``: the expected reroutes, a completed task, a report). An
independent observer on ``$a2a/#`` then checks what was really published: follow-ups on the
handover target's (or pool member's) request topic with the same Task.id and new Correlation Data;
nothing rerouted without ``a2a-responder-agent-id``; after the target went silent, the requests to
the card agent. Profile: Optional Task Handover, Optional Shared Subscription Dispatch, Requester
Retry and Timeout Profile 3 and 9.
"""
from __future__ import annotations

import json

import pytest

from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.story.scenarios import run_scenario
from tests.integration._roles_support import traffic  # noqa: F401
from tests.integration.test_handover import task_id_of_reply, task_id_of_request

ORG, UNIT, DESK = "acme", "support", "ticket-desk"
PROP = "a2a-responder-agent-id"
COORD_REPLIES = f"$a2a/v1/reply/{ORG}/{UNIT}/coordinator/"


def req_topic(agent: str) -> str:
    return f"$a2a/v1/request/{ORG}/{UNIT}/{agent}"


class Recording:
    """The coordinator's requests for one task and their replies, as the observer saw them."""

    def __init__(self, traffic, task_id: str):
        self.requests = [(m, b) for m, b in traffic.requests()
                         if (m.response_topic or "").startswith(COORD_REPLIES) and isinstance(b, dict)
                         and task_id_of_request(b) == task_id]
        self._all = traffic.snapshot()
        self.task_id = task_id

    def replies(self, corr: bytes) -> list[MqttMessage]:
        return [m for m in self._all if m.topic.startswith(COORD_REPLIES) and m.correlation_data == corr]

    def steps(self) -> list[tuple[str, str]]:
        return [(m.topic, b["method"]) for m, b in self.requests]

    def common_checks(self) -> None:
        assert self.requests, "the observer saw no request for the task"
        corrs = [m.correlation_data for m, _ in self.requests]
        assert all(corrs) and len(set(corrs)) == len(corrs), "Correlation Data reused across publishes"
        assert not any(m.topic.startswith("$share") for m, _ in self.requests)
        for m, _ in self.requests:
            for r in self.replies(m.correlation_data):
                tid = task_id_of_reply(json.loads(r.payload))
                assert tid in (None, self.task_id), f"a reply changed the Task.id to {tid}"

    def named(self, corr: bytes) -> list[str]:
        """The distinct a2a-responder-agent-id values on one correlation's replies, in order."""
        out: list[str] = []
        for r in self.replies(corr):
            v = r.user_property(PROP)
            if v and (not out or out[-1] != v):
                out.append(v)
        return out


def agent_of(address: str) -> str:
    return address.rsplit("/", 1)[-1]


def play(name: str, broker_url: str):
    lines: list[str] = []
    result = run_scenario(name, broker_url, say=lines.append, pace=0.01)
    assert result.ok, f"{name}: expected {result.expected}, observed {result.observed}\n" + "\n".join(lines)
    assert len(result.task_ids) == 1
    return result


@pytest.mark.parametrize("name", ["happy", "handover"])
def test_handover_scenario_follow_ups_go_to_the_analyst(name, broker_url, traffic):
    result = play(name, broker_url)
    (reroute,) = result.reroutes
    assert reroute["cause"] == "handover" and agent_of(reroute["from"]) == DESK
    analyst = agent_of(reroute["to"])
    rec = Recording(traffic, result.task_ids[0])
    rec.common_checks()
    first, *follow = rec.requests
    assert (first[0].topic, first[1]["method"]) == (req_topic(DESK), "SendStreamingMessage")
    assert rec.named(first[0].correlation_data) == [analyst]
    # the continuation after INPUT_REQUIRED and the final GetTask, both on the analyst's topic
    assert [(m.topic, b["method"]) for m, b in follow] == [(req_topic(analyst), "SendStreamingMessage"),
                                                          (req_topic(analyst), "GetTask")]
    cont = follow[0][1]["params"]["message"]
    assert cont["messageId"] != first[1]["params"]["message"]["messageId"]
    assert cont["contextId"] == first[1]["params"]["message"]["contextId"]
    for m, _ in follow:
        assert rec.replies(m.correlation_data), f"no reply to {m.topic}"


def test_multi_handover_scenario_follows_the_latest_analyst(broker_url, traffic):
    result = play("multi-handover", broker_url)
    first_r, second_r = result.reroutes
    a1, a2 = agent_of(first_r["to"]), agent_of(second_r["to"])
    assert agent_of(first_r["from"]) == DESK and agent_of(second_r["from"]) == a1 and a1 != a2
    rec = Recording(traffic, result.task_ids[0])
    rec.common_checks()
    assert rec.steps() == [(req_topic(DESK), "SendStreamingMessage"), (req_topic(a2), "GetTask")]
    assert rec.named(rec.requests[0][0].correlation_data) == [a1, a2]


def test_no_handover_scenario_never_reroutes(broker_url, traffic):
    result = play("no-handover", broker_url)
    assert result.reroutes == []
    rec = Recording(traffic, result.task_ids[0])
    rec.common_checks()
    assert rec.steps() == [(req_topic(DESK), "SendStreamingMessage"), (req_topic(DESK), "SendStreamingMessage"),
                           (req_topic(DESK), "GetTask")]
    for m, _ in rec.requests:
        replies = rec.replies(m.correlation_data)
        assert replies and all(r.user_property(PROP) is None for r in replies)


def test_unreachable_scenario_retries_the_analyst_then_falls_back_to_the_desk(broker_url, traffic):
    result = play("handover-unreachable", broker_url)
    handover, fallback = result.reroutes
    analyst = agent_of(handover["to"])
    assert (fallback["cause"], agent_of(fallback["from"]), agent_of(fallback["to"])) == ("fallback", analyst, DESK)
    assert analyst in fallback["detail"]
    rec = Recording(traffic, result.task_ids[0])
    rec.common_checks()
    steps = rec.steps()
    assert steps[0] == (req_topic(DESK), "SendStreamingMessage")
    assert rec.named(rec.requests[0][0].correlation_data) == [analyst]
    # the continuation: every attempt on the analyst's topic, then the same message to the desk
    to_analyst = [i for i, (t, _) in enumerate(steps) if t == req_topic(analyst)]
    assert len(to_analyst) == 3 and all(steps[i][1] == "SendStreamingMessage" for i in to_analyst)
    assert to_analyst == list(range(1, 4))
    assert steps[4:] == [(req_topic(DESK), "SendStreamingMessage"), (req_topic(DESK), "GetTask")]
    message_ids = {rec.requests[i][1]["params"]["message"]["messageId"] for i in to_analyst + [4]}
    assert len(message_ids) == 1, "the fallback is the same logical request (same messageId)"
    for i in to_analyst:
        assert rec.replies(rec.requests[i][0].correlation_data) == [], "the dead analyst answered"
    for m, _ in rec.requests[4:]:
        replies = rec.replies(m.correlation_data)
        assert replies and analyst not in {r.user_property(PROP) for r in replies}


def test_pool_scenario_follow_ups_go_to_the_member_that_answered(broker_url, traffic):
    result = play("pool", broker_url)
    (assigned,) = result.reroutes
    assert assigned["cause"] == "pool-assigned" and assigned["from"].endswith("pool:analysts")
    member = agent_of(assigned["to"])
    rec = Recording(traffic, result.task_ids[0])
    rec.common_checks()
    pool = f"$a2a/v1/request/{ORG}/{UNIT}/pool/analysts"
    steps = rec.steps()
    first_direct = next(i for i, (t, _) in enumerate(steps) if t != pool)
    assert first_direct >= 1 and all(s == (pool, "SendStreamingMessage") for s in steps[:first_direct])
    assert steps[first_direct:] == [(req_topic(member), "SendStreamingMessage"), (req_topic(member), "GetTask")]
    for m, _ in rec.requests[:first_direct]:
        for r in rec.replies(m.correlation_data):
            assert r.user_property(PROP) == member, "a pooled reply without (or with another) responder id"
