"""Task events on an agent's event topic: extended observability over request/reply/event traffic.

Profile: Event Delivery 1-2 (``$a2a/v1/event/{org}/{unit}/{agent}``, QoS 0 allowed, tied to a task only
by application metadata), Conformance Levels (Extended 3). The profile names the capability and no
more; this kit's meaning of it: **an agent that offers extended observability announces every state
change of every task it answers for on its event topic**, so a watcher that sees no reply topics (a
dashboard, an operator whose ACL hides the requesters' reply topics) can follow the work of the agent:

* user properties ``a2a-event-type: task-status-update``, ``a2a-task-id``, ``a2a-context-id``, so the
  event is tied to its task without reading the payload (Event Delivery 2);
* a payload that is an A2A v1.0 ``TaskStatusUpdateEvent`` with the state and its time but **without the
  status message** (a question or an answer can hold the ticket's text: the watcher learns that a task
  moved, not what was said);
* QoS 0, not retained: an observer that misses one still sees the next, and nobody waits for it.

No events for a task that came sealed (``ubsp-v1``): its ids and states would be metadata the broker
is not meant to read. Agents announce them when asked (``Responder(options=ResponderOptions(
task_events=True))``, ``TicketDesk(task_events=True)``; ``serve`` turns it on); the probe's
``task-events`` check looks for them (``--level extended``).
"""
from __future__ import annotations

from typing import Optional

from . import messages, properties, topics
from .packet import MqttMessage, encode_json

TASK_STATUS_EVENT = "task-status-update"


def task_event(org: str, unit: str, agent: str, task_id: str, context_id: str, state: str,
               timestamp: Optional[str] = None) -> MqttMessage:
    """The event announcing that ``task_id`` is now in ``state``, on ``agent``'s event topic."""
    status = messages.task_status(state, timestamp=timestamp)
    return MqttMessage(topics.event_topic(org, unit, agent),
                       encode_json(messages.status_update(task_id, context_id, status)), qos=0,
                       user_properties=((properties.EVENT_TYPE, TASK_STATUS_EVENT), (properties.TASK_ID, task_id),
                                        (properties.CONTEXT_ID, context_id)))


def is_task_event(msg: MqttMessage) -> bool:
    return msg.user_property(properties.EVENT_TYPE) == TASK_STATUS_EVENT
