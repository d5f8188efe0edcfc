"""The requester's routing table: which agent answers for each task (handover and pools).

Profile: Optional Task Handover (user story 07), Optional Shared Subscription Dispatch (10, 11),
Requester Retry and Timeout Profile (9). Rules kept here, and only here:

* a task starts routed to the agent (or pool) the first request went to: the card agent;
* ``a2a-responder-agent-id`` on ANY reply or stream item reroutes the task to that agent (same org
  and unit); the most recent value wins; Task.id never changes;
* a reply without the property leaves the route as it is (no handover);
* when the handover target stops answering, the requester falls back to the card agent and the
  reason is recorded (not for pooled tasks: they stay with the member that answered);
* a pooled task is routed to the pool until a responder is known, then to that responder.

Every reroute names its cause: ``HANDOVER``, ``POOL_ASSIGNED`` or ``FALLBACK``.

Pure data: the caller passes the time; persistence is done by the agents layer from ``rows()``.
Bounded: the table keeps the ``max_routes`` most recently used routes (and as many reroutes), so
a requester that sends for days does not grow without end; a forgotten task needs ``to=`` again.
One task keeps at most ``MAX_REROUTES_PER_TASK`` reroutes in the history (its first ones): a
responder that names a new agent on every stream item still moves the route each time (the most
recent value wins), but cannot fill the history (or the routes file) with its task alone; the
reroutes not kept are counted in ``reroutes_not_kept``.

A recording is replayed through the same table: ``replay`` feeds it the recorded requests and
replies of each task and returns the reroutes the requester's table made (``traffic.frame.reroutes``
gives them as a DataFrame; the frame's views, the charts and the lint rule read that).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Optional, Union

from .ids import validate_identifier
from .topics import pool_topic, request_topic

HANDOVER = "handover"
"""Cause of a reroute: a reply or stream item named another agent in ``a2a-responder-agent-id``
(Optional Task Handover 2-4)."""
POOL_ASSIGNED = "pool-assigned"
"""Cause of a reroute: a reply to a pooled request named the member that took the task (Optional
Shared Subscription Dispatch 10-11)."""
FALLBACK = "fallback"
"""Cause of a reroute: the handover target stopped answering, the task went back to its card agent
(Requester Retry and Timeout Profile 9)."""
CAUSES = (HANDOVER, POOL_ASSIGNED, FALLBACK)
"""Every cause a reroute can have."""


def new_responder_cause(pooled: bool) -> str:
    """Why a reply naming a new responder moves a task: ``POOL_ASSIGNED`` when the task was routed to
    a pool (``pooled``), else ``HANDOVER`` (Optional Task Handover 2; Shared Subscription Dispatch 10)."""
    return POOL_ASSIGNED if pooled else HANDOVER


def silence_reason(label: str, attempts: int, nobody_subscribed: bool = False) -> str:
    """The detail of a ``FALLBACK``: ``label`` did not answer ``attempts`` requests (``nobody_subscribed``:
    a PUBACK said 16, no matching subscribers; Requester Retry and Timeout Profile 6)."""
    hint = " (PUBACK 16: nobody subscribed)" if nobody_subscribed else ""
    return f"{label} did not answer {attempts} attempts{hint}"


@dataclass(frozen=True)
class Address:
    """An agent (``pool is None``) or a pool in one org/unit."""

    org: str
    unit: str
    agent: Optional[str] = None
    pool: Optional[str] = None

    def __post_init__(self) -> None:
        validate_identifier(self.org, "org_id")
        validate_identifier(self.unit, "unit_id")
        if self.agent is not None and self.pool is None:
            validate_identifier(self.agent, "agent_id")
        elif self.pool is not None and self.agent is None:
            validate_identifier(self.pool, "pool_id")
        else:
            raise ValueError("an address names exactly one of agent or pool")

    @classmethod
    def parse(cls, target: str, org: str, unit: str) -> "Address":
        """``"ticket-desk"`` → that agent; ``"pool:analysts"`` → that pool (both in ``org``/``unit``)."""
        if target.startswith("pool:"):
            return cls(org, unit, pool=target[len("pool:"):])
        return cls(org, unit, agent=target)

    @cached_property  # built (and its identifiers checked) once per address, not per request
    def topic(self) -> str:
        """Where requests for this address are published (never ``$share/...``)."""
        if self.pool is not None:
            return pool_topic(self.org, self.unit, self.pool)
        return request_topic(self.org, self.unit, str(self.agent))

    @property
    def label(self) -> str:
        return f"pool:{self.pool}" if self.pool else str(self.agent)

    def __str__(self) -> str:
        return f"{self.org}/{self.unit}/{self.label}"


@dataclass(frozen=True)
class Reroute:
    """One change of route: ``cause`` is one of ``CAUSES`` (``HANDOVER``, ``POOL_ASSIGNED``, ``FALLBACK``)."""

    at: float
    task_id: str
    from_: Address
    to: Address
    cause: str
    detail: str = ""


@dataclass
class Route:
    task_id: str
    card: Address
    current: Address
    updated_at: float = 0.0
    kept_reroutes: int = 0
    """How many of this task's reroutes the history took (at most ``MAX_REROUTES_PER_TASK``)."""


DEFAULT_MAX_ROUTES = 10_000
MAX_REROUTES_PER_TASK = 50
"""Reroutes kept per task (the first ones; later moves still change the route). A handover chain
of the story has 1-3; a hostile stream that names a new agent on each of 20,000 items kept 20,000."""


@dataclass
class RoutingTable:
    """Task.id → current responder, the card agent as fallback, and every reroute (the most recent
    ``max_routes`` of each)."""

    routes: dict[str, Route] = field(default_factory=dict)
    history: list[Reroute] = field(default_factory=list)
    max_routes: int = DEFAULT_MAX_ROUTES
    forgotten: int = 0
    reroutes_not_kept: int = 0

    def start(self, task_id: str, target: Address, at: float) -> Route:
        """Route a new task to the agent or pool its first request goes to (idempotent)."""
        route = self.routes.get(task_id)
        if route is None:
            route = Route(task_id, target, target, at)
            self._keep(route)
        return route

    def _keep(self, route: Route) -> None:
        """Store ``route`` as the most recently used one; forget the oldest beyond ``max_routes``."""
        self.routes.pop(route.task_id, None)
        self.routes[route.task_id] = route
        while len(self.routes) > self.max_routes:
            del self.routes[next(iter(self.routes))]
            self.forgotten += 1

    def drop(self, task_id: str) -> None:
        """Forget the route of a task that never started (its first request found no agent)."""
        self.routes.pop(task_id, None)

    def target(self, task_id: str) -> Optional[Address]:
        route = self.routes.get(task_id)
        return route.current if route else None

    def card(self, task_id: str) -> Optional[Address]:
        route = self.routes.get(task_id)
        return route.card if route else None

    def observe(self, task_id: str, responder_agent_id: Optional[str], at: float) -> Optional[Reroute]:
        """Apply the ``a2a-responder-agent-id`` of one reply or stream item for ``task_id``.

        Returns the reroute it caused, or None (no property, same agent, or unknown task).
        """
        route = self.routes.get(task_id)
        if route is None or not responder_agent_id:
            return None
        current, card = route.current, route.card
        if (current.agent == responder_agent_id and current.pool is None and current.org == card.org
                and current.unit == card.unit):
            return None  # the agent that answers already (every item of a stream): nothing to check or build
        validate_identifier(responder_agent_id, "a2a-responder-agent-id")
        new = Address(route.card.org, route.card.unit, agent=responder_agent_id)
        if new == route.current:
            return None
        return self._move(route, new, at, new_responder_cause(route.current.pool is not None),
                          f"a2a-responder-agent-id={responder_agent_id}")

    def fall_back(self, task_id: str, at: float, reason: str) -> Optional[Reroute]:
        """The current target stopped answering: route back to the card agent. Never back to a
        pool: once its member is known, follow-ups and their retries stay on the member's direct
        topic (Profile: Requester Retry and Timeout Profile 9); another member would not know the task."""
        route = self.routes.get(task_id)
        if route is None or route.current == route.card or route.card.pool is not None:
            return None
        return self._move(route, route.card, at, FALLBACK, reason)

    def _move(self, route: Route, to: Address, at: float, cause: str, detail: str) -> Reroute:
        event = Reroute(at, route.task_id, route.current, to, cause, detail)
        route.current = to
        route.updated_at = at
        self._keep(route)
        self.remember(event)
        return event

    def remember(self, event: Reroute) -> bool:
        """Put ``event`` in the history, within ``MAX_REROUTES_PER_TASK`` for its task and ``max_routes``
        in all (a store restores its reroutes through here); False when it was not kept."""
        route = self.routes.get(event.task_id)
        if route is not None:
            if route.kept_reroutes >= MAX_REROUTES_PER_TASK:
                self.reroutes_not_kept += 1
                return False
            route.kept_reroutes += 1
        self.history.append(event)
        del self.history[:-self.max_routes]
        return True

    def reroutes(self, task_id: Optional[str] = None) -> list[Reroute]:
        return [r for r in self.history if task_id is None or r.task_id == task_id]

    def rows(self) -> list[dict[str, Any]]:
        """One row per task (for a DataFrame or a store)."""
        return [
            {"task_id": r.task_id, "card": str(r.card), "current": str(r.current),
             "reroutes": sum(1 for h in self.history if h.task_id == r.task_id), "updated_at": r.updated_at}
            for r in self.routes.values()
        ]

    def history_rows(self) -> list[dict[str, Any]]:
        return [{"at": h.at, "task_id": h.task_id, "from": str(h.from_), "to": str(h.to), "cause": h.cause,
                 "detail": h.detail} for h in self.history]

    def restore(self, route: Route) -> None:
        self._keep(replace(route))


# -- a recording, replayed through the table ---------------------------------------------------------

@dataclass(frozen=True)
class Sent:
    """A recorded request for ``task_id``: it went to ``to`` at ``at``; ``answered``: a reply came back."""

    task_id: str
    to: Address
    at: float
    answered: bool = True


@dataclass(frozen=True)
class Replied:
    """A recorded reply or stream item for ``task_id``, with its ``a2a-responder-agent-id`` (or None)."""

    task_id: str
    responder: Optional[str]
    at: float


def replay(steps: Iterable[Union[Sent, Replied]]) -> list[Optional[Reroute]]:
    """The reroutes a requester's ``RoutingTable`` made, worked out from its recorded traffic: one
    entry per step, in order (None: that step moved nothing).

    The same table and the same rules as live: a task's first request starts its route; each
    reply goes through ``observe`` (the latest ``a2a-responder-agent-id`` wins; one that is no
    identifier moves nothing); a request back to the card agent while the task is routed
    elsewhere, after at least one unanswered request to that target, is the requester's fallback
    (``fall_back``: never back to a pool; live, it comes only after the retries went unanswered),
    its detail counting those unanswered requests (``silence_reason``). Any other request leaves
    the route as it is: that requester did not follow its table.
    """
    table = RoutingTable(max_routes=sys.maxsize)
    silent: dict[str, int] = {}  # Task.id -> unanswered requests to its current target since it last moved
    out: list[Optional[Reroute]] = []
    for step in steps:
        if isinstance(step, Replied):
            try:
                moved = table.observe(step.task_id, step.responder, step.at)
            except ValueError:  # not an identifier: no requester can route to it
                moved = None
        else:
            moved = _sent(table, step, silent.get(step.task_id, 0))
        if moved is not None:
            silent[step.task_id] = 0
        if isinstance(step, Sent) and step.to == table.target(step.task_id):
            silent[step.task_id] = 0 if step.answered else silent.get(step.task_id, 0) + 1
        out.append(moved)
    return out


def _sent(table: RoutingTable, step: Sent, silent: int) -> Optional[Reroute]:
    """Apply one recorded request to ``table``: a new task starts at its target; a request to the card
    agent of a task routed elsewhere falls back when ``silent`` (unanswered requests to its target) > 0."""
    route = table.routes.get(step.task_id)
    if route is None:
        table.start(step.task_id, step.to, step.at)
        return None
    if step.to == route.current or step.to != route.card or silent == 0:
        return None
    return table.fall_back(step.task_id, step.at, silence_reason(route.current.label, silent))
