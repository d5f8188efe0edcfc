"""Extended conformance the broker and the watchers see: broker-managed status and task events
(``--level extended``).

Profile: Optional Broker-Managed Status via MQTT User Properties 1-2, Event Delivery 1-2, Conformance
Levels (Extended 2-3). Both are about what a third party learns without asking the agent: the broker's
word on its connection (on the retained card), and its tasks' state changes on its event topic
(``protocol/task_events.py`` says what this kit means by extended observability).
"""
from __future__ import annotations

import threading
import time
from typing import Optional

from ..protocol import properties, states, task_events, topics
from ..protocol.safe_text import quoted
from ..protocol.sdk_schema import validate_payload
from ..protocol.streams import event_state
from .client import bounded, json_of
from .rules import EXTENDED, SHOULD, Outcome, check, failed, not_applicable, passed
from .probe_run import ProbeRun

MAX_EVENTS = 100
"""Task events the probe keeps while it listens (an agent that floods its event topic is cut here)."""


@check("broker-status", "broker-status", "the broker marks the agent's card a2a-status=online, "
       "a2a-status-source=broker while the agent is connected", conformance=EXTENDED, level=SHOULD,
       section="Optional Broker-Managed Status 1-2; Conformance Levels (Extended 2)")
def broker_status(run: ProbeRun) -> Outcome:
    m = run.card_message
    status, source = m.user_property(properties.STATUS), m.user_property(properties.STATUS_SOURCE)
    got = f"a2a-status={status}, a2a-status-source={source}"
    sent = f"subscribe {topics.discovery_filter(run.org, run.unit)}"
    if source != properties.SOURCE_BROKER:
        return not_applicable(f"not offered: the card says a2a-status-source={quoted(source)}; broker-managed status "
                              "is the broker's feature (the kit's embedded Mosquitto has it: the a2a_status plugin)",
                              sent, got)
    if status != properties.ONLINE:
        return failed(sent, got, "the broker says the agent is not online while the agent answers the probe")
    return passed(sent, got + ": the broker tracks the agent's connection")


@check("task-events", "task-events", "the agent announces its tasks' state changes on its event topic, each tied "
       "to its task by a2a-task-id (extended observability)", conformance=EXTENDED, level=SHOULD,
       section="Event Delivery 1-2; Conformance Levels (Extended 3)")
def task_events_announced(run: ProbeRun) -> Outcome:
    watched = topics.event_filter(run.org, run.unit)
    seen: list = []
    lock = threading.Lock()

    def collect(msg) -> None:
        if task_events.is_task_event(msg):
            with lock:
                if len(seen) < MAX_EVENTS:
                    seen.append(bounded(msg))
                    run.client.keep(seen[-1])

    run.client.session.subscribe(watched, handler=collect)
    try:
        s = run.send(run.message())
        if s.task_id is None:
            return not_applicable("the agent answered with a Message: no task whose events could be followed")
        deadline = time.monotonic() + run.client.timeout
        while time.monotonic() < deadline:  # QoS 0 events may trail the reply
            with lock:
                mine = [m for m in seen if m.user_property(properties.TASK_ID) == s.task_id]
            last = _state(mine[-1]) if mine else None
            if last is not None and not states.is_active(last):
                break
            time.sleep(0.02)
    finally:
        run.client.session.unsubscribe(watched, handler=collect)  # the probe's key directory may read it too
    sent = f"subscribe {watched}; SendMessage"
    with lock:
        mine = [m for m in seen if m.user_property(properties.TASK_ID) == s.task_id]
    if not mine:
        return not_applicable(f"not offered: no {task_events.TASK_STATUS_EVENT} event for the task on {watched} "
                              f"within {run.client.timeout:g} s", sent)
    problems = []
    for m in mine:
        body = json_of(m)
        bad = validate_payload("TaskStatusUpdateEvent", body) if isinstance(body, dict) else "not a JSON object"
        if bad:
            problems.append(f"not a TaskStatusUpdateEvent: {bad}")
        elif body.get("contextId") != m.user_property(properties.CONTEXT_ID):
            problems.append("a2a-context-id differs from the payload's contextId")
    got = (f"{len(mine)} event(s) on {mine[0].topic}: "
           + " → ".join(_shown(_state(m)) for m in mine[:8]))
    if problems:
        return failed(sent, got, problems[0])
    return passed(sent, got)


def _state(msg) -> Optional[str]:
    """The state a task event names (a ``TaskStatusUpdateEvent``), or None for anything else."""
    body = json_of(msg)
    return event_state({"statusUpdate": body}) if isinstance(body, dict) else None


def _shown(state: Optional[str]) -> str:
    """A state as the report shows it: the short name of a known one, else quoted as it came."""
    return states.short_name(state) if state is not None and states.is_state(state) else quoted(state)
