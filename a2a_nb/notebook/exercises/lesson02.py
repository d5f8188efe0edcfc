"""Lesson 02's exercise: answer a task that waits at input-required, yourself.

The check does not trust the learner's reply alone: it asks the agent (GetTask, through the
coordinator's routing table) whether the waiting task holds a new message of the coordinator and
has completed.
"""
from __future__ import annotations

from typing import Any

from ...agents.requester import Reply, Requester, Stream
from ...protocol import messages, states
from ...story.scenarios import REPRO_TEXT
from . import Feedback, not_yet, right, unanswered

SEND_THE_ANSWER = "Send the answer yourself"


def _user_messages(task: dict) -> list[dict]:
    return [m for m in task.get("history", []) if m.get("role") == "ROLE_USER"]


def answered_on_the_same_task(answer: Any, waiting: Reply, coordinator: Requester) -> Feedback:
    """Right when ``answer`` (what the coordinator returned for the learner's request) is about the
    task of ``waiting`` and the agent now holds a second message of the coordinator on that task and
    reports it completed."""
    blank = unanswered(SEND_THE_ANSWER, answer)
    if blank is not None:
        return blank
    if answer is waiting:
        return not_yet(SEND_THE_ANSWER, "that is the reply that asked the question, not an answer to it: send a "
                                        "new request with the coordinator and keep what it returns")
    if isinstance(answer, dict) and "messageId" in answer:
        return not_yet(SEND_THE_ANSWER, "that is a message, but nobody has sent it yet: send it with the "
                                        "coordinator and keep the reply it returns")
    if not isinstance(answer, (Reply, Stream)):
        return not_yet(SEND_THE_ANSWER, f"expected what the coordinator returns for a request (a Reply), "
                                        f"got {type(answer).__name__}")
    task_id = waiting.task_id
    if task_id is None:
        return not_yet(SEND_THE_ANSWER, "waiting holds no task: run the cell again for a fresh one")
    if isinstance(answer, Stream):
        answer.wait()
    if answer.task_id != task_id:
        return not_yet(SEND_THE_ANSWER, "your request went to another task than the one that asked (compare its "
                                        "Task.id with waiting's): the answer belongs on the waiting task")
    task = coordinator.poll(task_id, timeout_s=10.0)  # ask the agent, until the task stops again
    state = task["status"]["state"]
    users = _user_messages(task)
    if len(users) < 2:
        return not_yet(SEND_THE_ANSWER, f"the task is still {states.short_name(state)} and holds only the message "
                                        "that started it: the agent took yours for a resend of that one. New "
                                        "input needs a messageId of its own")
    if messages.text_of(users[-1]).strip() != REPRO_TEXT:
        return not_yet(SEND_THE_ANSWER, "the agent took your message on the right task, but its text is not the "
                                        "reproduction steps the analyst asked for: send REPRO_TEXT as it is")
    if state != states.COMPLETED:
        return not_yet(SEND_THE_ANSWER, f"the agent has your message, but the task is {states.short_name(state)}, "
                                        "not completed: did the message carry what the analyst asked for?")
    return right(SEND_THE_ANSWER, f"the agent holds your message {users[-1]['messageId']} on the task that asked "
                                  "(same Task.id and contextId), and the task is completed")
