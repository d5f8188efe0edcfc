"""Lesson 04's exercises: continue a waiting task with the right identifiers; name the error a
finished task answers.

Both checks ask the agent: the first reads the task's history (GetTask), looks at the learner's
message, then sends it and reports how the task ends; the second sends one more message to the
finished task and compares the agent's error with the learner's answer.
"""
from __future__ import annotations

from typing import Any, Union

from ...agents.requester import Reply, Requester, Stream
from ...protocol import errors, states
from ...protocol.errors import A2AError
from . import Feedback, not_yet, right, unanswered

CONTINUE = "Exercise 1: continue the task"
WHICH_ERROR = "Exercise 2: which -32004?"

TaskLike = Union[Stream, Reply]


def continues_the_task(continuation: Any, question: TaskLike, coordinator: Requester) -> Feedback:
    """Right when ``continuation`` is a message for the task of ``question`` (same Task.id and
    contextId) with a messageId the task has not seen, and sending it completes the task."""
    blank = unanswered(CONTINUE, continuation)
    if blank is not None:
        return blank
    if isinstance(continuation, (Reply, Stream)):
        return not_yet(CONTINUE, "that already sent something: this exercise wants the message itself (a dict from "
                                 "coordinator.new_message), so the check can read its identifiers before it goes "
                                 "out. Run the cell again for a fresh task")
    if not isinstance(continuation, dict) or "messageId" not in continuation:
        return not_yet(CONTINUE, f"expected a message (a dict made by coordinator.new_message), got "
                                 f"{type(continuation).__name__}")
    if question.task_id is None:
        return not_yet(CONTINUE, "question holds no task: run the cell again for a fresh one")
    task = coordinator.get_task(question.task_id)
    state = task["status"]["state"]
    if not states.is_interrupted(state):
        return not_yet(CONTINUE, f"the task of question is {states.short_name(state)} already, it waits for nothing: "
                                 "run the cell again for a fresh task that asks")
    if continuation.get("taskId") != task["id"]:
        return not_yet(CONTINUE, "your message names another Task.id than the task that asked: the agent would "
                                 "start a new task with it instead of continuing this one")
    if continuation.get("contextId") != task["contextId"]:
        return not_yet(CONTINUE, "the Task.id is right, but the contextId is not the task's: the agent refuses such "
                                 "a message (step 7)")
    seen = [m["messageId"] for m in task.get("history", [])]
    if continuation["messageId"] in seen:
        return not_yet(CONTINUE, f"the task has seen messageId {continuation['messageId']!r} before: the agent takes "
                                 "the message for a resend and ignores it. New input needs a messageId of its own")
    try:
        reply = coordinator.send(None, message=continuation)
    except A2AError as err:
        return not_yet(CONTINUE, f"the identifiers look right, but the agent refused the message: error {err.code}: "
                                 f"{err.message}")
    if reply.state != states.COMPLETED:
        now = states.short_name(reply.state) if reply.state else "not in the reply"
        return not_yet(CONTINUE, f"the agent took your message, and the task's state is {now}: "
                                 "did the message carry what the analyst asked for?")
    return right(CONTINUE, "same Task.id and contextId, a messageId of its own; sent as a new request (fresh "
                           "Correlation Data), it completed the task")


def finished_task_error(code: Any, profile_error: Any, finished: TaskLike, coordinator: Requester) -> Feedback:
    """Right when ``code`` and ``profile_error`` are the code of the error the agent answers to one
    more message on the finished task, and whether that error carries the profile's ``a2a_error``."""
    for answer in (code, profile_error):
        blank = unanswered(WHICH_ERROR, answer)
        if blank is not None:
            return blank
    if not isinstance(code, int) or isinstance(code, bool):
        return not_yet(WHICH_ERROR, f"the code is a negative int, as error codes are, not a {type(code).__name__}")
    if not isinstance(profile_error, bool):
        return not_yet(WHICH_ERROR, f"profile_error is True or False, not {profile_error!r}")
    if finished.task_id is None:
        return not_yet(WHICH_ERROR, "that holds no task: pass the re-check of step 6")
    task = coordinator.get_task(finished.task_id)
    if not states.is_terminal(task["status"]["state"]):
        return not_yet(WHICH_ERROR, f"that task is {states.short_name(task['status']['state'])}, not finished: pass "
                                    "the re-check of step 6")
    try:
        coordinator.continue_task(task, "one more thing about TCK-4821")
    except A2AError as err:
        truth = err
    else:
        return not_yet(WHICH_ERROR, "the agent took one more message on this task without an error: is it finished?")
    marked = errors.classify(truth).binding
    if code != truth.code:
        if code == errors.INVALID_PARAMS:
            return not_yet(WHICH_ERROR, f"{code} answers a message whose contextId is not the task's; this message "
                                        "has the task's own contextId")
        if code == errors.TASK_NOT_FOUND:
            return not_yet(WHICH_ERROR, f"{code} means no such task (or not yours); this task exists and is yours")
        return not_yet(WHICH_ERROR, f"the agent answers another code than {code}: send one more message to the "
                                    "finished task and read the error it raises")
    if profile_error != marked:
        return not_yet(WHICH_ERROR, f"right code; now look at the error's data: is the a2a_error marker in it? "
                                    f"(you said {profile_error})")
    return right(WHICH_ERROR, f"{truth.code} {'with' if marked else 'without'} the a2a_error marker: "
                              f"{errors.classify(truth).name}, and retrying the same message would not help")
