"""The two A2A roles over MQTT, and what they keep (each agent talks through one
:class:`a2a_nb.mqtt.session.Session`; the rules they apply are the pure functions of :mod:`a2a_nb.protocol`).

================  ==================================================================================
``responder``     ``Responder``: publishes its card with presence, takes requests, answers on the
                  reply path (Profile: Discovery Publisher Behavior, Request/Reply Mapping)
``context``       ``TaskContext``: what a handler sees, one message on one task, and its verbs to answer
``runtime``       ``TaskRuntime``: the tasks of an agent and the instances it spawns (state changes,
                  who listens to each task, which agent answers for it now)
``outbox``        publishes what the runtime decided, from the connection of the agent answering for the task
``store``         ``MemoryTaskStore``, ``SqliteTaskStore``: where a responder keeps its tasks; ``recovery``
                  gives the tasks a restart interrupted their final state
``auth``          bearer tokens checked before any work (Profile: OAuth 2.0 and OIDC over MQTT)
``requester``     ``Requester``: sends, matches replies, retries, streams, follows handovers
``task_view``     ``TaskView``: the requester's picture of one task
``routes_store``  the requester's routing table on disk, kept across a restart
``discovery``     ``Discovery``: the live registry of the Agent Cards of a unit
``reprs``         the agents' own HTML in a notebook (presentation only)
================  ==================================================================================

The story's cast built from these roles (the ticket desk, its analysts, the pools) lives in
:mod:`a2a_nb.story`.
"""
from .context import TaskContext
from .requester import ProtocolError, Reply, Requester, RequestTimeout, Stream, StreamEvent, UnknownAgent
from .responder import Responder, ResponderOptions
from .runtime import TaskCanceled, TaskRuntime
from .store import MemoryTaskStore, SqliteTaskStore, TaskRecord
from .task_view import TaskView

__all__ = ["TaskContext", "ProtocolError", "Reply", "Requester", "RequestTimeout", "Stream", "StreamEvent",
           "UnknownAgent", "Responder", "ResponderOptions", "TaskCanceled", "TaskRuntime", "MemoryTaskStore",
           "SqliteTaskStore", "TaskRecord", "TaskView"]
