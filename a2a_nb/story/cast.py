"""The story's agents: the ticket desk (publishes the only card), the analysts it spawns, and pools.

The desk owns the card ``acme/support/ticket-desk``. On a new ticket task it may hand the task to a
spawned analyst instance (its own client ID ``acme/support/analyst-...``, no card); the instance
shares the desk's task runtime, so the desk can still serve GetTask, CancelTask and continuations
for the tasks it delegated when an analyst dies (Profile: Optional Task Handover; user story 07).

Handover plans (``handover=``): ``none`` (the desk works itself), ``first-reply`` (the first reply
already comes from the analyst), ``mid-stream`` (the desk starts, the analyst takes over),
``double`` (two handovers in one stream), ``dies`` (the analyst disappears after asking for input).
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional, Union

from ..agents.context import TaskContext
from ..agents.recovery import fail_orphaned_tasks
from ..agents.responder import Responder
from ..agents.runtime import TaskRuntime
from ..agents.store import MemoryTaskStore, SqliteTaskStore
from ..mqtt.broker import BrokerEndpoint
from ..protocol import cards, messages
from ..protocol.ids import IdSource
from . import analysis, ticket_data

log = logging.getLogger(__name__)

HANDOVER_PLANS = ("none", "first-reply", "mid-stream", "double", "dies")
BrokerChoice = Union[str, BrokerEndpoint, None, Callable[[str], BrokerEndpoint]]


def broker_for(broker: BrokerChoice, agent: str) -> Union[str, BrokerEndpoint, None]:
    """``broker`` as given, or, when it is a function ``agent -> BrokerEndpoint`` (a secured broker
    with one login per agent, e.g. ``SecureBroker.credentials``), the endpoint of ``agent``."""
    return broker(agent) if callable(broker) else broker
REPORT_ID = "tck-4821-report"


def desk_card(org: str = "acme", unit: str = "support") -> dict:
    return cards.agent_card(
        name="Ticket desk", description="Takes support tickets and finds their root cause; hands each ticket "
        "to a specialist analyst instance.", version="1.0.0", org=org, unit=unit, agent="ticket-desk",
        skills=[cards.skill("ticket-root-cause", "Ticket root-cause analysis",
                            "Finds the root cause of a support ticket from orders and order-status events, "
                            "with confidence, affected orders and recommended actions.",
                            tags=["ticket", "root-cause-analysis", "support"],
                            examples=["Analyze ticket TCK-4821: order status not updating after checkout"])],
        streaming=True, provider=cards.provider("ACME Support", "https://support.acme.example"))


def echo_card(org: str = "acme", unit: str = "support", agent: str = "echo") -> dict:
    return cards.agent_card(name="Echo", description="Answers every message with the same text.", version="1.0.0",
                            org=org, unit=unit, agent=agent,
                            skills=[cards.skill("echo", "Echo", "Repeats what you send", tags=["echo", "test"])],
                            streaming=True)


def echo_handler(ctx: TaskContext) -> None:
    ctx.respond(f"echo: {ctx.text}")


class Analyst:
    """The story's real work, step by step; ``pace`` seconds between steps make streams visible."""

    def __init__(self, dataset: Optional[ticket_data.Dataset] = None, pace: float = 0.05, chunk_count: int = 4):
        self.dataset = dataset or ticket_data.load()
        self.pace = pace
        self.chunk_count = chunk_count

    def __call__(self, ctx: TaskContext, on_step=None) -> Optional[str]:
        step = on_step or (lambda name: None)
        ticket_id = ticket_data.TICKET_ID if ticket_data.TICKET_ID in ctx.text or not ctx.text else _ticket_in(ctx.text)
        ticket = self.dataset.ticket(ticket_id)
        steps = ticket["reproduction_steps"] or _steps_from(ctx)
        if not steps:
            ctx.working(f"{ctx.agent}: reading ticket {ticket_id} ({ticket['subject']})")
            ctx.wait(self.pace)
            ctx.ask_input(f"To confirm the root cause of {ticket_id} I need the reproduction steps: what does "
                          "the customer do right after checkout?")
            step("asked-input")
            return None
        ctx.working(f"{ctx.agent}: reproduction steps received: {steps}")
        ctx.wait(self.pace)
        step("scanning")
        ctx.working(f"{ctx.agent}: scanning {len(self.dataset.orders)} orders and "
                    f"{len(self.dataset.events)} order-status events")
        report = analysis.analyse(self.dataset, ticket_id, steps)
        ctx.wait(self.pace)
        pieces = [
            messages.data_part({"ticket": report["ticket"], "rootCause": report["rootCause"],
                                "confidence": report["confidence"]}),
            messages.data_part({"affectedOrders": report["affectedOrders"], "evidence": report["evidence"]}),
            messages.data_part({"recommendedActions": report["recommendedActions"]}),
            messages.text_part(analysis.summary_text(report)),
        ]
        for i, part in enumerate(pieces):
            if i == 2:
                step("report-half")
            ctx.artifact(REPORT_ID, [part], name=f"Root-cause report {ticket_id}", append=i > 0,
                         last_chunk=i == len(pieces) - 1)
            ctx.wait(self.pace)
        ctx.complete(f"{ticket_id}: {analysis.summary_text(report)} Recommended first: "
                     f"{report['recommendedActions'][0].lower()}.")
        return None


def _ticket_in(text: str) -> str:
    for word in text.replace(":", " ").split():
        if word.startswith("TCK-"):
            return word
    return ticket_data.TICKET_ID


def _steps_from(ctx: TaskContext) -> str:
    """Reproduction steps: the continuation after INPUT_REQUIRED, or a ``Reproduction:`` line in
    the first message."""
    users = ctx.user_messages
    if len(users) > 1:
        return messages.text_of(users[-1])
    text = ctx.text
    return text.split("Reproduction:", 1)[1].strip() if "Reproduction:" in text else ""


class TicketDesk:
    """The card agent plus its spawned analysts, sharing one task runtime (and store)."""

    def __init__(self, *, org: str = "acme", unit: str = "support", broker: BrokerChoice = None,
                 handover: str = "first-reply", store_path: Optional[str] = None, pace: float = 0.05,
                 seed: Optional[int] = None, pool: Optional[str] = None):
        if handover not in HANDOVER_PLANS:
            raise ValueError(f"handover must be one of {HANDOVER_PLANS}, got {handover!r}")
        self.org, self.unit, self.broker = org, unit, broker
        self.handover = handover
        self.ids = IdSource(seed)
        self.analyst = Analyst(pace=pace)
        store = SqliteTaskStore(store_path) if store_path else MemoryTaskStore()
        self.runtime = TaskRuntime(store)
        self.instances: list[Responder] = []
        self.killed: list[str] = []
        self._lock = threading.Lock()
        # A store that survived the last run may hold tasks nobody executes any more: give them their end
        # before the desk takes requests. Every task in it is the desk's or one of its analysts'.
        self.orphans_failed = fail_orphaned_tasks(self.runtime, ids=self.ids) if store_path else []
        if self.orphans_failed:
            log.info("ticket-desk: %d task(s) were running when the desk last stopped; marked failed",
                     len(self.orphans_failed))
        self.desk = Responder("ticket-desk", self._desk_handler, org=org, unit=unit, card=desk_card(org, unit),
                              runtime=self.runtime, broker=broker_for(broker, "ticket-desk"), ids=self.ids, pool=pool)

    def spawn(self) -> Responder:
        """A new analyst instance: its own client ID, no card, the desk's runtime."""
        with self._lock:
            name = f"analyst-{self.ids.uuid4()[:6]}"
            inst = Responder(name, self._analyst_handler, org=self.org, unit=self.unit, runtime=self.runtime,
                             broker=broker_for(self.broker, name), ids=self.ids)
            self.instances.append(inst)
            return inst

    def _desk_handler(self, ctx: TaskContext):
        plan = self.handover
        if ctx.agent != self.desk.agent and ctx.agent not in self.runtime.agents:
            ctx.hand_over(self.desk)  # the analyst it was handed to is gone: the desk takes the task back
        if plan == "none" or (plan == "dies" and ctx.turn > 1):
            return self._work(ctx, plan="none")
        if plan in ("mid-stream", "double"):
            ctx.working("ticket-desk: triaging the ticket, looking for a free analyst")
            ctx.wait(self.analyst.pace)
        ctx.hand_over(self.spawn())
        return self._work(ctx, plan)

    def _analyst_handler(self, ctx: TaskContext):
        return self._work(ctx, plan="none" if self.handover != "double" else "double")

    def _work(self, ctx: TaskContext, plan: str):
        def on_step(name: str) -> None:
            if plan == "double" and name == "report-half" and len(self.instances) < 2:
                ctx.hand_over(self.spawn())
            if plan == "dies" and name == "asked-input":
                owner = self.runtime.agents.get(ctx.agent)
                if owner is not None and owner is not self.desk:
                    self.killed.append(owner.agent)
                    owner.die_after_replies()

        return self.analyst(ctx, on_step)

    def stop(self) -> None:
        for inst in self.instances:
            inst.stop()
        self.desk.stop()

    def __enter__(self) -> "TicketDesk":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def analyst_pool(pool: str, members: int = 3, *, org: str = "acme", unit: str = "support",
                 broker: BrokerChoice = None, pace: float = 0.05,
                 seed: Optional[int] = None) -> list[Responder]:
    """Pool members consuming ``$share/{group_id}/.../pool/{pool}`` (or, on Mosquitto 2.0.11, the pool
    topic with claiming among the live members: a member that dies leaves its work to the others),
    each with its own store."""
    ids = IdSource(seed)
    analyst = Analyst(pace=pace)
    return [Responder(f"analyst-{pool}-{i + 1}", analyst, org=org, unit=unit, pool=pool,
                      broker=broker_for(broker, f"analyst-{pool}-{i + 1}"), ids=ids) for i in range(members)]
