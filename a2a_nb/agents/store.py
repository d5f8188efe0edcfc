"""Task stores: where a responder keeps its tasks, behind one small interface.

``MemoryTaskStore`` for notebooks and tests; ``SqliteTaskStore`` survives a restart of the agent
(Profile: Requester Retry and Timeout Profile 4: the responder must still know a Task.id to
deduplicate a retried request, and GetTask must answer after a restart). A card agent and the
instances it spawns share one store, so the card agent can serve follow-ups for tasks it delegated.

Memory is bounded: ``MemoryTaskStore`` keeps at most ``max_terminal`` finished (terminal) tasks and
forgets the oldest beyond that (a forgotten task answers like an unknown one, -32001); running and
interrupted tasks are always kept. ``SqliteTaskStore`` keeps every task on disk and only the
artifact chunks of unfinished tasks in memory.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Optional, Protocol, Union

from ..error_base import A2ANbError
from ..protocol import states


@dataclass(frozen=True)
class TaskRecord:
    """A v1.0 Task (wire shape), who owns it now (the agent that executes and answers) and who
    asked for it (the requester's identity, see ``inbound.requester_identity``; None: not recorded)."""

    task: dict
    owner: str
    updated_at: float = 0.0
    requester: Optional[str] = None

    @property
    def id(self) -> str:
        return self.task["id"]

    @property
    def state(self) -> str:
        return self.task["status"]["state"]

    def with_task(self, task: dict, at: float) -> "TaskRecord":
        return TaskRecord(task, self.owner, at, self.requester)  # every change of a task: not dataclasses.replace (slower)

    def with_owner(self, owner: str, at: float) -> "TaskRecord":
        return replace(self, owner=owner, updated_at=at)


class TaskStore(Protocol):
    def get(self, task_id: str) -> Optional[TaskRecord]: ...

    def put(self, record: TaskRecord, durable: bool = True) -> None:
        """Store the record; ``durable=False`` (artifact chunks) may be written later, with the
        next durable put: a restart loses at most the chunks of a task that was not finished."""

    def list(self, context_id: Optional[str] = None, state: Optional[str] = None) -> list[TaskRecord]: ...

    def __len__(self) -> int: ...


DEFAULT_MAX_TERMINAL = 1000


class MemoryTaskStore:
    """Tasks in a dict; at most ``max_terminal`` terminal ones (the oldest finished go first)."""

    def __init__(self, max_terminal: int = DEFAULT_MAX_TERMINAL) -> None:
        if max_terminal < 1:
            raise ValueError(f"max_terminal must be at least 1, got {max_terminal}")
        self.max_terminal = max_terminal
        self.forgotten = 0
        self._tasks: dict[str, TaskRecord] = {}
        self._terminal: "OrderedDict[str, None]" = OrderedDict()  # ids of terminal tasks, oldest first
        self._lock = threading.Lock()

    def get(self, task_id: str) -> Optional[TaskRecord]:
        with self._lock:
            return self._tasks.get(task_id)

    def put(self, record: TaskRecord, durable: bool = True) -> None:
        with self._lock:
            self._tasks[record.id] = record
            if states.is_terminal(record.state):
                self._terminal[record.id] = None
                while len(self._terminal) > self.max_terminal:
                    oldest, _ = self._terminal.popitem(last=False)
                    del self._tasks[oldest]
                    self.forgotten += 1

    def list(self, context_id: Optional[str] = None, state: Optional[str] = None) -> list[TaskRecord]:
        with self._lock:
            records = list(self._tasks.values())
        return _filter(records, context_id, state)

    def __len__(self) -> int:
        return len(self._tasks)


class TaskStoreError(A2ANbError, OSError):
    """The SQLite task store cannot be opened; the message names the file and why
    (``cannot open task store PATH: it is a folder``)."""


class SqliteTaskStore:
    """One row per task; the JSON of the Task as it is on the wire.

    Opening checks everything a first write would need (the file is an SQLite database the store can
    write, its ``tasks`` table has the store's columns), so a wrong ``path`` fails at once with
    :class:`TaskStoreError` naming it, not at the first task."""

    def __init__(self, path: Union[str, Path]):
        self.path = str(path)
        self._lock = threading.Lock()
        self._pending: dict[str, TaskRecord] = {}
        if Path(path).is_dir():
            raise TaskStoreError(f"cannot open task store {path}: it is a folder; give a file in it, for "
                                 f"example {Path(path) / 'tasks.db'}")
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise TaskStoreError(f"cannot open task store {path}: {_why(Path(path), exc)}") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, context_id TEXT, state TEXT, owner TEXT,"
                " updated_at REAL, task TEXT NOT NULL, requester TEXT)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(tasks)")}
            if "requester" not in columns:  # a store written before requesters were recorded
                self._db.execute("ALTER TABLE tasks ADD COLUMN requester TEXT")
                columns.add("requester")
            self._db.execute("BEGIN IMMEDIATE")  # takes the write lock: a read-only file fails here, not later
            self._db.execute("ROLLBACK")
        except sqlite3.Error as exc:
            self._db.close()
            raise TaskStoreError(f"cannot open task store {path}: {_why(Path(path), exc)}") from None
        missing = set(_TABLE_COLUMNS) - columns
        if missing:
            self._db.close()
            raise TaskStoreError(f"cannot open task store {path}: its table 'tasks' is not a task store's (no "
                                 f"{', '.join(sorted(missing))} column); give another file")

    def get(self, task_id: str) -> Optional[TaskRecord]:
        with self._lock:
            if task_id in self._pending:
                return self._pending[task_id]
            row = self._db.execute(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        return _record(row) if row else None

    def put(self, record: TaskRecord, durable: bool = True) -> None:
        with self._lock:
            if not durable:
                self._pending[record.id] = record
                return
            self._pending.pop(record.id, None)
            self._write(record)

    def _write(self, record: TaskRecord) -> None:
        t = record.task
        self._db.execute(
            "INSERT OR REPLACE INTO tasks (id, context_id, state, owner, updated_at, task, requester)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (t["id"], t.get("contextId"), t["status"]["state"], record.owner, record.updated_at,
             json.dumps(t, separators=(",", ":")), record.requester),
        )

    def flush(self) -> None:
        with self._lock:
            for record in self._pending.values():
                self._write(record)
            self._pending.clear()

    def list(self, context_id: Optional[str] = None, state: Optional[str] = None) -> list[TaskRecord]:
        self.flush()
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM tasks ORDER BY rowid").fetchall()
        return _filter([_record(r) for r in rows], context_id, state)

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._db.close()


_COLUMNS = "task, owner, updated_at, requester"
_TABLE_COLUMNS = ("id", "context_id", "state", "owner", "updated_at", "task", "requester")


def _why(path: Path, exc: sqlite3.Error) -> str:
    """SQLite's reason for not opening ``path``, in words that say what to change."""
    text = str(exc)
    if "not a database" in text:
        return "the file is not an SQLite database; give another file (a new one is created)"
    if "readonly" in text or "read-only" in text:
        return "the file is read-only; give a file you may write"
    folder = path.parent
    if "unable to open" in text:
        if not folder.exists():
            return f"its folder {folder} does not exist"
        if not folder.is_dir():
            return f"{folder} is not a folder"
        return f"no permission to create or write it in {folder}"
    return text


def _record(row: tuple) -> TaskRecord:
    return TaskRecord(json.loads(row[0]), row[1], row[2], row[3])


def _filter(records: Iterable[TaskRecord], context_id: Optional[str], state: Optional[str]) -> list[TaskRecord]:
    return [r for r in records
            if (context_id is None or r.task.get("contextId") == context_id) and (state is None or r.state == state)]
