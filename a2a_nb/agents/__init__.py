"""The two roles (requester, responder), their task store, and the story's cast."""
from .context import TaskContext
from .requester import ProtocolError, Reply, Requester, RequestTimeout, Stream, StreamEvent
from .responder import Responder, ResponderOptions
from .runtime import TaskCanceled, TaskRuntime
from .store import MemoryTaskStore, SqliteTaskStore, TaskRecord
from .task_view import TaskView

__all__ = ["TaskContext", "ProtocolError", "Reply", "Requester", "RequestTimeout", "Stream", "StreamEvent",
           "Responder", "ResponderOptions", "TaskCanceled", "TaskRuntime", "MemoryTaskStore", "SqliteTaskStore", "TaskRecord", "TaskView"]
