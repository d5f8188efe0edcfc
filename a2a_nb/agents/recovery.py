"""After a restart: tasks that were running when the agent died get a known final state.

A ``SqliteTaskStore`` keeps every task across a restart of the agent, so GetTask still answers and a
retried SendMessage is still recognised as a duplicate (Profile: Requester Retry and Timeout
Profile 4). A task that was SUBMITTED or WORKING when the process died has nobody executing it any
more: left alone it would stay "working" forever, and a requester polling it would never see an end.
:func:`fail_orphaned_tasks` marks such tasks FAILED (with a status message saying why); the
requester's stream recovery (GetTask) then sees a terminal state and can start a new task in the same
``contextId``. Interrupted tasks (INPUT_REQUIRED, AUTH_REQUIRED) are left as they are: they wait for
the requester, and the restarted agent can continue them.

Re-running the work instead would risk doing it twice (side effects); failing is the safe default.
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..protocol import messages, states
from ..protocol.ids import IdSource
from .runtime import TaskRuntime

RESTART_REASON = "the agent restarted while it was working on this task; send the request again as a new task"


def orphaned_tasks(runtime: TaskRuntime, owners: Optional[Iterable[str]] = None) -> list[str]:
    """Ids of SUBMITTED/WORKING tasks in the store (owned by one of ``owners``, when given)."""
    wanted = set(owners) if owners is not None else None
    return [r.id for r in runtime.store.list()
            if states.is_active(r.state) and (wanted is None or r.owner in wanted)]


def fail_orphaned_tasks(runtime: TaskRuntime, owners: Optional[Iterable[str]] = None,
                        reason: str = RESTART_REASON, ids: Optional[IdSource] = None) -> list[str]:
    """Mark every orphaned task FAILED (call once at start, before taking requests); returns their ids."""
    ids = ids or IdSource()
    failed = []
    for task_id in orphaned_tasks(runtime, owners):
        rec = runtime.get(task_id)
        if rec is None or not states.is_active(rec.state):
            continue
        note = messages.agent_message(reason, message_id=ids.message_id(f"{rec.owner}-restart"), task_id=task_id,
                                      context_id=rec.task.get("contextId"))
        with runtime.outbox.in_order():
            runtime.outbox.send(runtime.update(task_id, state=states.FAILED, status_message=note, force=True).outgoing)
        failed.append(task_id)
    return failed
