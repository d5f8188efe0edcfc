"""Lesson 09's exercise: send the ticket over HTTP yourself, then find where its follow-ups go on MQTT.

The HTTP client's answer names the task but not the analyst the desk handed it to; that is only
on the MQTT side, in the reply's ``a2a-responder-agent-id`` and so in the bridge's routing table.
The check reads the task id from the learner's HTTP answer and asks the bridge's routing table
where a follow-up of that task goes now: that topic is the right answer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ...protocol import topics
from . import Feedback, not_yet, right, unanswered

if TYPE_CHECKING:  # the bridge (uvicorn, starlette) is imported by the lesson, not by this check
    from ...bridge import Bridge

__all__ = ["FOLLOW_UP", "follow_up_topic"]

FOLLOW_UP = "Send it yourself, then follow the handover"
LOOK = ("the HTTP answer does not say where the task went: look at the desk's reply to the bridge in the tap "
        "(its a2a-responder-agent-id), or at the bridge's routing table, for your task's Task.id")


def _task_id(reply: Any) -> tuple[Optional[str], Optional[str]]:
    """(the task id of a JSON-RPC SendMessage answer, None) or (None, what is wrong with it)."""
    if hasattr(reply, "status_code") and hasattr(reply, "json"):
        return None, "that is the HTTP response itself: keep its JSON body (response.json())"
    if not isinstance(reply, dict):
        return None, f"expected the JSON of the bridge's answer (a dict), got {type(reply).__name__}"
    if "error" in reply:
        message = (reply.get("error") or {}).get("message", "")
        return None, (f"the bridge answered with an error ({message}): post a JSON-RPC SendMessage whose "
                      "params.message has a role, a messageId of your own and parts, as in step 3")
    task = (reply.get("result") or {}).get("task") if isinstance(reply.get("result"), dict) else None
    if not isinstance(task, dict) or not task.get("id"):
        return None, "that answer holds no task (result.task.id): send a SendMessage, as in step 3"
    return str(task["id"]), None


def follow_up_topic(reply: Any, topic: Any, bridge: "Bridge") -> Feedback:
    """Right when ``reply`` is the bridge's JSON answer to a SendMessage and ``topic`` is the MQTT
    request topic where the bridge now sends every follow-up of that task."""
    blank = unanswered(FOLLOW_UP, reply) or unanswered(FOLLOW_UP, topic)
    if blank is not None:
        return blank
    task_id, problem = _task_id(reply)
    if problem is not None:
        return not_yet(FOLLOW_UP, problem)
    assert task_id is not None
    routing = bridge.requester.routing if bridge.requester is not None else None
    target = routing.target(task_id) if routing is not None else None
    if target is None or routing is None:
        return not_yet(FOLLOW_UP, "the bridge never forwarded that task: post your SendMessage to bridge.url")
    card = routing.card(task_id)
    if not isinstance(topic, str):
        return not_yet(FOLLOW_UP, f"a topic is a string, got {type(topic).__name__}")
    if topic == target.topic:
        return right(FOLLOW_UP, f"the desk handed your task to {target.label}, so the bridge sends its follow-ups "
                                f"to {topic}; the HTTP client only ever sees {bridge.url}")
    if topic == target.label or topic == str(target):
        return not_yet(FOLLOW_UP, "that names the agent: the answer is its MQTT request topic "
                                  "(topics.request_topic(org, unit, agent))")
    kind = _kind(topic)
    if kind == "reply":
        return not_yet(FOLLOW_UP, "that is a reply topic, where answers come back to the bridge; a follow-up is a "
                                  "request: on which request topic?")
    if kind != "request":
        return not_yet(FOLLOW_UP, "a request topic looks like $a2a/v1/request/{org}/{unit}/{agent}")
    if card is not None and topic == card.topic and card != target:
        return not_yet(FOLLOW_UP, "that is where the first message went, to the desk. The desk handed the task over "
                                  "on its first reply: " + LOOK)
    return not_yet(FOLLOW_UP, "that is a request topic, but not the one of the agent now holding your task: " + LOOK)


def _kind(topic: str) -> Optional[str]:
    try:
        info = topics.parse_topic(topic)
    except ValueError:
        return None
    return info.kind if info is not None else None
