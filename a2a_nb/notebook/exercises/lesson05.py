"""Lesson 05's exercises: find a reroute's cause in the routing table, and send a follow-up after a
handover yourself.

Both checks read what is right from the coordinator the learner has: its routing table's history
(the reroutes and their causes) and the stream of the handed-over task (the
``a2a-responder-agent-id`` its replies carried). Nothing is typed into them.
"""
from __future__ import annotations

from typing import Any, Optional

from ...agents.requester import Reply, Requester, Stream
from ...protocol import topics
from . import Feedback, not_yet, right, unanswered

REROUTE_CAUSE = "The reroute's cause"
FOLLOW_UP_TOPIC = "The follow-up's topic"


def reroute_cause(cause: Any, coordinator: Requester, task_id: str) -> Feedback:
    """Right when ``cause`` is the cause the routing table recorded for the last reroute of
    ``task_id``: the one that took the task away from the agent it had been handed to."""
    blank = unanswered(REROUTE_CAUSE, cause)
    if blank is not None:
        return blank
    moves = [h for h in coordinator.routing.history if h.task_id == task_id]
    if not moves:
        return not_yet(REROUTE_CAUSE, "the routing table has no reroute of this task: is it the task of the "
                                      "unreachable case?")
    last = moves[-1]
    if hasattr(cause, "iloc"):
        return not_yet(REROUTE_CAUSE, f"that is a whole {type(cause).__name__}: select the one row you mean, then "
                                      "take one value of its cause column (e.g. with .iloc[0])")
    if not isinstance(cause, str):
        return not_yet(REROUTE_CAUSE, f"give the cause as the text the cause column holds, not a "
                                      f"{type(cause).__name__}")
    answer = cause.strip().lower()
    if answer == last.cause:
        return right(REROUTE_CAUSE, f"{last.from_.label} → {last.to.label} was a {last.cause}: {last.detail}")
    earlier = [h for h in moves[:-1] if h.cause == answer]
    if earlier:
        h = earlier[-1]
        return not_yet(REROUTE_CAUSE, f"that is the cause of the reroute {h.from_.label} → {h.to.label}, which "
                                      f"brought the task to {h.to.label}; the reroute you need starts there: its "
                                      f"from is {last.from_.label}")
    return not_yet(REROUTE_CAUSE, f"no reroute of this task was recorded as {cause!r}: copy the value from the "
                                  f"cause column of the row whose from is {last.from_.label}")


def _named(task: Any) -> list[str]:
    """The ``a2a-responder-agent-id`` values the task's replies carried, in order."""
    events = getattr(task, "events", None)
    if events is not None:
        return [e.responder for e in events if e.responder]
    responder = getattr(task, "responder", None)
    return [responder] if responder else []


def _task_id(task: Any) -> Optional[str]:
    if isinstance(task, (Stream, Reply)):
        return task.task_id
    return getattr(task, "task_id", None)


def follow_up_topic(topic: Any, task: Any, coordinator: Requester) -> Feedback:
    """Right when ``topic`` is where a follow-up about ``task`` (the stream that was handed over)
    goes: the request topic of the agent its replies named last in ``a2a-responder-agent-id``."""
    blank = unanswered(FOLLOW_UP_TOPIC, topic)
    if blank is not None:
        return blank
    if not isinstance(topic, str):
        return not_yet(FOLLOW_UP_TOPIC, f"give the topic as text, not a {type(topic).__name__}: each attempt in "
                                        "a reply's .attempts has a .topic")
    task_id = _task_id(task)
    route = coordinator.routing.routes.get(task_id) if task_id else None
    if route is None:
        return not_yet(FOLLOW_UP_TOPIC, "the coordinator's routing table does not know this task: pass the "
                                        "stream of the ticket you sent in this step")
    named = _named(task)
    agent = named[-1] if named else route.card.label
    expected = topics.request_topic(coordinator.org, coordinator.unit, agent)
    topic = topic.strip()
    if topic == expected:
        return right(FOLLOW_UP_TOPIC, f"{agent}'s own request topic: its replies named it in "
                                      "a2a-responder-agent-id, so the coordinator sends everything about the task "
                                      "there (same Task.id, new Correlation Data)")
    if topic.startswith("$a2a/v1/reply/"):
        return not_yet(FOLLOW_UP_TOPIC, "that is a reply topic: the coordinator reads answers there. A follow-up "
                                        "is a request, published on an agent's request topic")
    if topic == route.card.topic:
        return not_yet(FOLLOW_UP_TOPIC, "that is the card agent's request topic, where the ticket went first. "
                                        "After a handover the follow-up goes elsewhere: which agent did the "
                                        "replies name in a2a-responder-agent-id?")
    try:
        info = topics.parse_topic(topic)
    except ValueError:
        info = None
    if info is not None and info.kind == "request" and info.agent:
        return not_yet(FOLLOW_UP_TOPIC, f"that is the request topic of {info.agent}, but no reply about this task "
                                        f"named {info.agent}: look at the a2a-responder-agent-id of the stream's "
                                        "items")
    return not_yet(FOLLOW_UP_TOPIC, "that is no agent's request topic: request topics read "
                                    "$a2a/v1/request/{org}/{unit}/{agent}")
