"""Artifact assembly: JSON ``TaskArtifactUpdateEvent`` chunks and native binary chunks.

JSON mode (A2A v1.0 wire notes): ``append: true`` extends the artifact's parts; ``append`` false or
absent creates or replaces the artifact by ``artifactId``; ``lastChunk: true`` seals that artifact
only, never the task. Nothing is assumed about chunk counts.

Binary mode (Profile: Optional MQTT Native Binary Artifact Mode): raw chunks carry
``a2a-chunk-seqno`` and ``a2a-last-chunk``; they may arrive out of order or twice and are joined by
sequence number once the last one and every earlier one are in.
"""
from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


def _same(value: Any) -> Any:
    return value


def _parts_text(parts: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for p in parts if "text" in p)


class ArtifactSet:
    """The artifacts of one task, in first-seen order, built from artifact update events."""

    def __init__(self, artifacts: Optional[list[dict[str, Any]]] = None, copy_in: bool = True):
        self._by_id: dict[str, dict[str, Any]] = {}
        self._sealed: set[str] = set()
        for a in artifacts or []:
            self._by_id[a["artifactId"]] = copy.deepcopy(a) if copy_in else a

    def apply(self, event: dict[str, Any], copy_event: bool = True) -> dict[str, Any]:
        """Apply one ``TaskArtifactUpdateEvent`` and return the artifact as it is now.

        ``copy_event=False`` adopts the event's parts without copying them (the caller hands over
        a freshly built or freshly parsed event it will not touch again)."""
        art = event["artifact"]
        aid = art["artifactId"]
        current = self._by_id.get(aid)
        clone: Callable[[Any], Any] = copy.deepcopy if copy_event else _same
        if event.get("append") and current is not None:
            current.setdefault("parts", []).extend(clone(art.get("parts", [])))
            for key in ("name", "description", "metadata"):
                if key in art:
                    current[key] = clone(art[key])
        else:
            current = dict(art) if not copy_event else copy.deepcopy(art)
            current["parts"] = list(current.get("parts", []))
            self._by_id[aid] = current
            self._sealed.discard(aid)
        if event.get("lastChunk"):
            self._sealed.add(aid)
        return current

    def is_sealed(self, artifact_id: str) -> bool:
        return artifact_id in self._sealed

    def get(self, artifact_id: str) -> Optional[dict[str, Any]]:
        return self._by_id.get(artifact_id)

    def text(self, artifact_id: str) -> str:
        art = self._by_id.get(artifact_id)
        return _parts_text(art.get("parts", [])) if art else ""

    def data(self, artifact_id: str) -> list[Any]:
        art = self._by_id.get(artifact_id)
        return [p["data"] for p in art.get("parts", []) if "data" in p] if art else []

    def as_list(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(a) for a in self._by_id.values()]

    def shared_list(self) -> list[dict[str, Any]]:
        """The artifacts themselves, not copies (the runtime's hot path: no O(parts) work per chunk)."""
        return list(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, artifact_id: str) -> bool:
        return artifact_id in self._by_id


@dataclass
class BinaryArtifact:
    """Raw chunks of one artifact received in native binary mode, keyed by sequence number."""

    task_id: str
    artifact_id: str
    content_type: Optional[str] = None
    chunks: dict[int, bytes] = field(default_factory=dict)
    last_seqno: Optional[int] = None
    duplicates: int = 0

    def add(self, seqno: int, data: bytes, last: bool) -> bool:
        """Add one chunk; returns False for a duplicate (same seqno seen before)."""
        if seqno < 0:
            raise ValueError(f"a2a-chunk-seqno must be >= 0, got {seqno}")
        if seqno in self.chunks:
            self.duplicates += 1
            return False
        self.chunks[seqno] = bytes(data)
        if last:
            self.last_seqno = seqno
        return True

    @property
    def first_seqno(self) -> int:
        return min(self.chunks) if self.chunks else 0

    @property
    def complete(self) -> bool:
        if self.last_seqno is None:
            return False
        start = self.first_seqno
        return all(n in self.chunks for n in range(start, self.last_seqno + 1))

    @property
    def missing(self) -> list[int]:
        top = self.last_seqno if self.last_seqno is not None else (max(self.chunks) if self.chunks else -1)
        return [n for n in range(self.first_seqno, top + 1) if n not in self.chunks]

    def data(self) -> bytes:
        """The whole artifact; raises ``ValueError`` while chunks are missing."""
        if not self.complete or self.last_seqno is None:
            raise ValueError(f"artifact {self.artifact_id} is incomplete: missing chunks {self.missing[:10]}"
                             + ("" if self.last_seqno is not None else " and the last chunk"))
        return b"".join(self.chunks[n] for n in range(self.first_seqno, self.last_seqno + 1))

    def as_artifact(self) -> dict[str, Any]:
        """The assembled bytes as a v1.0 Artifact with one ``raw`` part."""
        part: dict[str, Any] = {"raw": base64.b64encode(self.data()).decode("ascii")}
        if self.content_type:
            part["mediaType"] = self.content_type
        return {"artifactId": self.artifact_id, "parts": [part]}


