"""What an agent's work function sees: one incoming message on one task, and verbs to answer.

A handler is ``handler(ctx)``, called once per message that starts or continues a task (in a worker
thread). It reports progress with ``working``, streams results with ``artifact`` / ``chunk``,
interrupts with ``ask_input`` / ``ask_auth`` (the requester continues the same task later: the
handler is called again with the new message), and ends with ``complete`` / ``fail`` / ``reject``
or by returning (a returned string completes the task with that text as the agent's message).
``respond`` answers with a Message instead of a task result (a stateless agent such as echo).
"""
from __future__ import annotations

import threading
from functools import cached_property
from typing import TYPE_CHECKING, Any, Optional, Union

from ..protocol import messages, states
from ..protocol.ids import IdSource
from .runtime import TaskCanceled, TaskRuntime

if TYPE_CHECKING:
    from .responder import Responder

MessageLike = Union[str, dict, list, None]


class TaskContext:
    def __init__(self, runtime: TaskRuntime, responder: "Responder", task_id: str, message: dict, ids: IdSource):
        self.runtime = runtime
        self.responder = responder
        self.task_id = task_id
        self.message = message
        self._ids = ids
        self.response_message: Optional[dict] = None
        self._cancel: threading.Event = runtime.cancel_flag(task_id)

    # -- what came in ----------------------------------------------------------------------------------
    @property
    def task(self) -> dict:
        return self.runtime.record(self.task_id).task

    @cached_property
    def context_id(self) -> str:
        """The task's contextId (fixed for the task's life: read once, not on every streamed item)."""
        return self.task["contextId"]

    @property
    def state(self) -> str:
        return self.task["status"]["state"]

    @property
    def text(self) -> str:
        return messages.text_of(self.message)

    @property
    def data(self) -> list:
        return messages.data_of(self.message)

    @property
    def history(self) -> list[dict]:
        return list(self.task.get("history", []))

    @property
    def user_messages(self) -> list[dict]:
        return [m for m in self.history if m.get("role") == "ROLE_USER"]

    @property
    def turn(self) -> int:
        """1 for the message that created the task, 2 for the first continuation, ..."""
        return len(self.user_messages)

    @property
    def agent(self) -> str:
        """The agent executing the task now (changes on ``hand_over``)."""
        return self.runtime.owner_of(self.task_id) or self.responder.agent

    @property
    def canceled(self) -> bool:
        return self._cancel.is_set()

    def check_canceled(self) -> None:
        if self._cancel.is_set():
            raise TaskCanceled(self.task_id)

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up (raising TaskCanceled) as soon as the task is canceled."""
        if self._cancel.wait(seconds):
            raise TaskCanceled(self.task_id)

    # -- verbs -----------------------------------------------------------------------------------------
    def agent_message(self, content: MessageLike) -> Optional[dict]:
        if content is None:
            return None
        if isinstance(content, dict) and "parts" in content:
            return content
        return messages.agent_message(content, message_id=self._ids.message_id(f"{self.agent}-msg"),
                                      task_id=self.task_id, context_id=self.context_id)

    def working(self, text: MessageLike = None) -> None:
        self.runtime.update(self.task_id, state=states.WORKING, status_message=self.agent_message(text))

    def artifact(self, artifact_id: str, parts: Any, *, name: Optional[str] = None, description: Optional[str] = None,
                 append: bool = False, last_chunk: bool = False, metadata: Optional[dict] = None) -> None:
        """Stream one artifact update (JSON mode): ``append`` extends, ``last_chunk`` seals it."""
        art = messages.artifact(artifact_id, parts, name=name, description=description, metadata=metadata)
        ev = messages.artifact_update(self.task_id, self.context_id, art, append=append, last_chunk=last_chunk)
        self.runtime.update(self.task_id, artifact_event=ev)

    def chunk(self, artifact_id: str, data: bytes, *, content_type: Optional[str] = None, last: bool = False) -> None:
        """One binary chunk: raw bytes to requesters that asked for ``a2a-artifact-mode=binary``,
        base64 ``raw`` parts to the others (Profile: Optional MQTT Native Binary Artifact Mode)."""
        self.check_canceled()
        self.runtime.send_binary_chunk(self.task_id, artifact_id, data, content_type, last)

    def ask_input(self, text: MessageLike) -> None:
        self.runtime.update(self.task_id, state=states.INPUT_REQUIRED, status_message=self.agent_message(text))

    def ask_auth(self, text: MessageLike) -> None:
        self.runtime.update(self.task_id, state=states.AUTH_REQUIRED, status_message=self.agent_message(text))

    def complete(self, text: MessageLike = None) -> None:
        self.runtime.update(self.task_id, state=states.COMPLETED, status_message=self.agent_message(text))

    def fail(self, reason: MessageLike) -> None:
        self.runtime.update(self.task_id, state=states.FAILED, status_message=self.agent_message(reason))

    def reject(self, reason: MessageLike) -> None:
        self.runtime.update(self.task_id, state=states.REJECTED, status_message=self.agent_message(reason))

    def respond(self, content: MessageLike) -> None:
        """Answer with a Message (SendMessage result ``{"message": ...}``); the task completes."""
        self.response_message = self.agent_message(content)

    def hand_over(self, target: "Responder") -> None:
        """Delegate the task: from now on ``target`` (an instance sharing this runtime) answers for
        it and its replies carry ``a2a-responder-agent-id`` (Profile: Optional Task Handover)."""
        if target.runtime is not self.runtime:
            raise ValueError(f"{target.agent} does not share this agent's task runtime: it could not serve the task")
        self.runtime.hand_over(self.task_id, target.agent)
