"""Two AgentExecutors written as the a2a-sdk's documentation writes them (nothing of the kit):
``EchoExecutor`` answers with a Message; ``ReportExecutor`` makes a task, asks for input on the first
turn, then streams a two-chunk artifact and completes (``TaskUpdater``, the SDK's helper)."""
from __future__ import annotations

import asyncio

from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, TaskState


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message) if context.message else ""
        await event_queue.enqueue_event(new_text_message(f"echo: {text}", context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("nothing to cancel: echo answers at once")


class ReportExecutor(AgentExecutor):
    """``slow`` seconds of work before the report (so a cancel can arrive while it runs)."""

    def __init__(self, slow: float = 0.0):
        self.slow = slow
        self.cancelled: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            await updater.submit()
            await updater.requires_input(updater.new_agent_message([Part(text="which version?")]))
            return
        await updater.start_work(updater.new_agent_message([Part(text="writing the report")]))
        await asyncio.sleep(self.slow)
        await updater.add_artifact([Part(text="part one")], artifact_id="report", name="report", last_chunk=False)
        await updater.add_artifact([Part(text="part two")], artifact_id="report", append=True, last_chunk=True)
        await updater.complete(updater.new_agent_message([Part(text=f"done for {get_message_text(context.message)}")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).update_status(TaskState.TASK_STATE_CANCELED)
