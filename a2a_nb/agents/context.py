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
from typing import Any, Optional, Protocol, Union

from ..protocol import messages, states
from ..protocol.ids import IdSource
from .runtime import TaskCanceled, TaskRuntime

MessageLike = Union[str, dict, list, None]


class Agent(Protocol):
    """An agent a handler runs in, or hands its task to: its id and the task runtime it serves
    from (a :class:`~a2a_nb.agents.responder.Responder`)."""

    @property
    def agent(self) -> str: ...

    @property
    def runtime(self) -> TaskRuntime: ...


class TaskContext:
    def __init__(self, runtime: TaskRuntime, responder: Agent, task_id: str, message: dict, ids: IdSource):
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

    def _change(self, **change: Any) -> None:
        """One change of this task: the runtime decides, its outbox sends, in order."""
        outbox = self.runtime.outbox
        with outbox.in_order():
            outbox.send(self.runtime.update(self.task_id, **change).outgoing)

    def working(self, text: MessageLike = None) -> None:
        self._change(state=states.WORKING, status_message=self.agent_message(text))

    def artifact(self, artifact_id: str, parts: Any, *, name: Optional[str] = None, description: Optional[str] = None,
                 append: bool = False, last_chunk: bool = False, metadata: Optional[dict] = None) -> None:
        """Stream one artifact update (JSON mode): ``append`` extends, ``last_chunk`` seals it."""
        art = messages.artifact(artifact_id, parts, name=name, description=description, metadata=metadata)
        ev = messages.artifact_update(self.task_id, self.context_id, art, append=append, last_chunk=last_chunk)
        self._change(artifact_event=ev)

    @property
    def binary_requested(self) -> bool:
        """A requester waiting for this task asked for native binary chunks (and the responder grants them)."""
        return self.runtime.binary_requested(self.task_id)

    def chunk(self, artifact_id: str, data: bytes, *, content_type: Optional[str] = None, last: bool = False) -> None:
        """One binary chunk: raw bytes to requesters that asked for ``a2a-artifact-mode=binary``,
        base64 ``raw`` parts to the others (Profile: Optional MQTT Native Binary Artifact Mode)."""
        self.check_canceled()
        outbox = self.runtime.outbox
        with outbox.in_order():
            outbox.send(self.runtime.binary_chunk(self.task_id, artifact_id, data, content_type, last).outgoing)

    def ask_input(self, text: MessageLike) -> None:
        self._change(state=states.INPUT_REQUIRED, status_message=self.agent_message(text))

    def ask_auth(self, text: MessageLike) -> None:
        self._change(state=states.AUTH_REQUIRED, status_message=self.agent_message(text))

    def complete(self, text: MessageLike = None) -> None:
        self._change(state=states.COMPLETED, status_message=self.agent_message(text))

    def fail(self, reason: MessageLike) -> None:
        self._change(state=states.FAILED, status_message=self.agent_message(reason))

    def reject(self, reason: MessageLike) -> None:
        self._change(state=states.REJECTED, status_message=self.agent_message(reason))

    def respond(self, content: MessageLike) -> None:
        """Answer with a Message (SendMessage result ``{"message": ...}``); the task completes."""
        self.response_message = self.agent_message(content)

    def hand_over(self, target: Agent) -> None:
        """Delegate the task: from now on ``target`` (an instance sharing this runtime) answers for
        it and its replies carry ``a2a-responder-agent-id`` (Profile: Optional Task Handover).

        What the old owner already published must reach the broker first: two client connections
        have no common order, so without this wait the new owner's first items could overtake the
        old owner's last ones on the requester's reply topic."""
        if target.runtime is not self.runtime:
            raise ValueError(f"{target.agent} does not share this agent's task runtime: it could not serve the task")
        outbox = self.runtime.outbox
        old = self.runtime.owner_of(self.task_id)
        if old is not None and old != target.agent:
            outbox.wait_acked(old, 2.0)
        with outbox.in_order():
            self.runtime.hand_over(self.task_id, target.agent)
