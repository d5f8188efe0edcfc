"""The requester's current picture of one task, updated as stream items and replies arrive.

State changes are kept in order (for charts); artifacts are assembled by ``artifactId`` (JSON mode)
or by ``a2a-chunk-seqno`` (binary mode). A state never flips back once terminal.
"""
from __future__ import annotations

import time
from typing import Optional

from ..protocol import messages, properties, states
from ..protocol.artifacts import ArtifactSet, BinaryArtifact
from ..protocol.packet import MqttMessage


class TaskView:
    def __init__(self, task_id: str, context_id: Optional[str] = None):
        self.task_id = task_id
        self.context_id = context_id
        self.status: dict = {}
        self.artifacts = ArtifactSet()
        self.binary: dict[str, BinaryArtifact] = {}
        self.transitions: list[tuple[float, Optional[str], Optional[str]]] = []  # (time, state, responder)
        self.message: Optional[dict] = None  # a final Message result
        self.history: list[dict] = []

    @property
    def state(self) -> Optional[str]:
        return self.status.get("state")

    def _set_status(self, status: dict, responder: Optional[str]) -> None:
        new = status.get("state")
        if self.state is not None and states.is_terminal(self.state) and new != self.state:
            return  # terminal never changes
        if new != self.state:
            self.transitions.append((time.time(), new, responder))
        self.status = status

    def apply(self, result: dict, responder: Optional[str] = None) -> None:
        """Apply one StreamResponse-shaped result (``task``, ``statusUpdate``, ``artifactUpdate``, ``message``)."""
        if "task" in result:
            t = result["task"]
            self.context_id = t.get("contextId", self.context_id)
            # A Task snapshot (GetTask after a stalled stream, SubscribeToTask) is the responder's
            # current state: it replaces what the view had, which may miss chunks sent while the
            # requester was not listening. Unchanged artifacts are left alone (and stay sealed).
            for a in t.get("artifacts", []):
                current = self.artifacts.get(a["artifactId"])
                if current is None or current.get("parts") != a.get("parts"):
                    self.artifacts.apply({"artifact": a})
            self.history = t.get("history", self.history)
            self._set_status(t["status"], responder)
        elif "statusUpdate" in result:
            self._set_status(result["statusUpdate"]["status"], responder)
        elif "artifactUpdate" in result:
            self.artifacts.apply(result["artifactUpdate"], copy_event=False)  # freshly parsed JSON
        elif "message" in result:
            self.message = result["message"]

    def add_binary_chunk(self, msg: MqttMessage) -> bool:
        aid = msg.user_property(properties.ARTIFACT_ID) or "artifact"
        art = self.binary.get(aid)
        if art is None:
            art = self.binary[aid] = BinaryArtifact(self.task_id, aid, msg.content_type)
        return art.add(int(msg.user_property(properties.CHUNK_SEQNO) or 0),
                       msg.payload, msg.user_property(properties.LAST_CHUNK) == "true")

    @property
    def status_text(self) -> str:
        m = self.status.get("message")
        return messages.text_of(m) if m else ""

    @property
    def text(self) -> str:
        """The agent's final words: a Message result, else the status message."""
        return messages.text_of(self.message) if self.message else self.status_text

    @property
    def task(self) -> dict:
        """The task as a v1.0 Task dict, artifacts assembled."""
        t = {"id": self.task_id, "contextId": self.context_id or "", "status": self.status or
             {"state": states.SUBMITTED}}
        arts = self.artifacts.as_list() + [b.as_artifact() for b in self.binary.values() if b.complete]
        if arts:
            t["artifacts"] = arts
        return t

    def __repr__(self) -> str:
        st = states.short_name(self.state) if self.state else "unknown"
        return f"<TaskView {self.task_id} {st}, {len(self.artifacts) + len(self.binary)} artifact(s)>"

    def _repr_html_(self) -> str:
        from .reprs import task_view_html

        return task_view_html(self)
