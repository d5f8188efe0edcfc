"""The story's agents: the ticket desk (publishes the only card), the analysts it spawns, and pools.

The desk owns the card ``acme/support/ticket-desk``. On a new ticket task it may hand the task to a
spawned analyst instance (its own client ID ``acme/support/analyst-...``, no card); the instance
shares the desk's task runtime, so the desk can still serve GetTask, CancelTask and continuations
for the tasks it delegated when an analyst dies (Profile: Optional Task Handover; user story 07).

Handover plans (``handover=``): ``none`` (the desk works itself), ``first-reply`` (the first reply
already comes from the analyst), ``mid-stream`` (the desk starts, the analyst takes over),
``double`` (two handovers in one stream), ``dies`` (the analyst disappears after asking for input).

**Bounded.** The desk works on at most ``max_analysts`` tickets at once (default :data:`MAX_ANALYSTS`).
Its analysts are slots ``analyst-1`` .. ``analyst-N``: each connects once, on its first ticket, and
stays connected (at most N connections, however many tickets come), because it may own interrupted
tasks (INPUT_REQUIRED, AUTH_REQUIRED) whose continuation the requester sends to its topic. A slot is
reserved when a new task is admitted (``Responder(admit=...)``, before the task exists) and freed
when the handler returns: the task is terminal or interrupted. A new task that finds every slot taken
is answered -32004 ``responder_unavailable`` (retry-eligible) and never created (Profile: error
handling, overload), instead of opening one more MQTT connection per ticket.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from ..error_base import A2ANbError
from ..agents.context import TaskContext
from ..agents.recovery import fail_orphaned_tasks
from ..agents.responder import Responder, ResponderOptions
from ..agents.runtime import TaskRuntime
from ..agents.store import MemoryTaskStore, SqliteTaskStore
from ..mqtt.broker import ENV_CREDENTIALS, ENV_URL, BrokerEndpoint, BrokerError
from ..protocol import cards, errors, messages
from ..protocol.errors import A2AError
from ..protocol.ids import IdSource
from . import analysis, ticket_data

if TYPE_CHECKING:
    from ..ubsp.protection import Ubsp

log = logging.getLogger(__name__)

HANDOVER_PLANS = ("none", "first-reply", "mid-stream", "double", "dies")
MAX_ANALYSTS = 4
"""The desk's default capacity: tickets worked on at once, and analyst connections (``analyst-1`` ..
``analyst-4``; ``broker --secure`` pre-issues exactly these logins: ``mqtt.secure.DESK_ANALYSTS``)."""
RESERVATION_TTL_S = 30.0
"""A slot reserved by ``admit`` whose task never reached the handler (the store failed) is freed after this."""
BrokerChoice = Union[str, BrokerEndpoint, None, Callable[[str], BrokerEndpoint]]


def broker_for(broker: BrokerChoice, agent: str) -> Union[str, BrokerEndpoint, None]:
    """``broker`` as given, or, when it is a function ``agent -> BrokerEndpoint`` (a secured broker
    with one login per agent, e.g. ``SecureBroker.credentials``), the endpoint of ``agent``."""
    return broker(agent) if callable(broker) else broker


class AlreadyServed(A2ANbError, RuntimeError):
    """An agent the story would start is already live on the broker: starting it again under the same
    Client ID would take its session over (the broker disconnects the older one)."""


def desk_served(broker: BrokerChoice, org: str = "acme", unit: str = "support") -> bool:
    """Does a ticket desk serve ``org/unit`` on this broker now: is its retained card ``online``?

    Read by a short-lived client of its own (``ticket-desk-check-...``) subscribed to the desk's
    discovery topic; a second SUBSCRIBE is the fence (the broker queues a subscription's retained
    messages before it answers the next packet), so no fixed wait. Presence is advisory (Profile:
    Presence Subscriber Behavior 2): a stale ``online`` card gets the same answer. A broker this client
    cannot log in to (one login per agent) or read discovery on: False, nothing is checked."""
    from ..mqtt.session import Session, SessionError
    from ..protocol import properties, topics

    seen: list = []
    name = f"ticket-desk-check-{os.urandom(4).hex()}"
    try:
        probe = Session(org, unit, name, broker=broker_for(broker, name))
    except (SessionError, BrokerError, OSError, KeyError, ValueError) as exc:
        log.debug("ticket-desk: cannot check for a served desk (%s)", exc)
        return False
    try:
        probe.subscribe(topics.discovery_topic(org, unit, "ticket-desk"), handler=seen.append)
        probe.subscribe(topics.discovery_topic(org, unit, name))  # the fence: its SUBACK comes after the card
    except SessionError as exc:
        log.debug("ticket-desk: cannot check for a served desk (%s)", exc)
        return False
    finally:
        probe.close()
    return any(m.payload and m.user_property(properties.STATUS) == properties.ONLINE for m in seen)


REPORT_ID = "tck-4821-report"
ORDERS_CSV_ID = "tck-4821-orders.csv"  # raw artifact for requesters that ask for binary chunks


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
    """Answers with a Message; a requester that asked for native binary artifacts gets the echo as a
    ``text/plain`` binary artifact instead (Profile: Optional MQTT Native Binary Artifact Mode)."""
    if ctx.binary_requested:
        ctx.chunk("echo", f"echo: {ctx.text}".encode(), content_type="text/plain; charset=utf-8", last=True)
        ctx.complete("echo sent as a binary artifact")
        return
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
        if ctx.binary_requested:  # the requester takes raw artifacts: the affected orders as a CSV file too
            ctx.chunk(ORDERS_CSV_ID, analysis.orders_csv(report), content_type="text/csv", last=True)
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


@dataclass
class AnalystSlot:
    """One of the desk's ``max_analysts`` places: a name, the analyst connected under it (started on
    first use, kept), and whether a ticket holds it now."""

    name: str
    analyst: Optional[Responder] = None
    busy: bool = False
    last_used: int = 0  # a use counter: the least recently used free slot is taken first

    @property
    def dying(self) -> bool:
        """The analyst froze to die (``handover="dies"``) but is still connected: not usable yet."""
        return self.analyst is not None and self.analyst.frozen and self.analyst.alive


def _admission_key(message: dict) -> tuple:
    """What ties a task's handler run to the slot ``admit`` reserved for its first message: the Task.id
    the requester chose (MQTT binding) and the messageId (a repeated pair is a duplicate, never new)."""
    return message.get("taskId"), message.get("messageId")


class DeskLoginError(BrokerError):
    """The broker URL logs the desk's analysts in with somebody else's login (``hint``: what to do)."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


LOGIN_HINT = (f"drop the login from the broker URL and export {ENV_CREDENTIALS}=/path/credentials.json (the "
              "file `python -m a2a_nb broker --secure` prints): every agent then logs in as itself (in a cell: "
              "TicketDesk(broker=secure_broker.credentials))")


class TicketDesk:
    """The card agent plus its analysts (at most ``max_analysts``), sharing one task runtime (and store).

    **One login per agent.** A broker that names every client after its login (``broker --secure``:
    ``use_username_as_clientid``) would rename an analyst that connected with the desk's login to the
    desk's Client ID and close the desk's connection; the desk reconnects and closes the analyst's: a
    session takeover on every reconnect. So when the URL logs in as the desk (a username shaped like a
    Client ID, ``{org}/{unit}/ticket-desk``), the analysts take their own logins from
    ``A2A_BROKER_CREDENTIALS``; without that file the desk refuses to start (:class:`DeskLoginError`),
    as it does under another agent's login.
    """

    def __init__(self, *, org: str = "acme", unit: str = "support", broker: BrokerChoice = None,
                 handover: str = "first-reply", store_path: Optional[str] = None, pace: float = 0.05,
                 seed: Optional[int] = None, pool: Optional[str] = None, max_analysts: int = MAX_ANALYSTS,
                 ubsp: Optional["Ubsp"] = None, task_events: bool = False):
        if handover not in HANDOVER_PLANS:
            raise ValueError(f"handover must be one of {HANDOVER_PLANS}, got {handover!r}")
        if max_analysts < 1:
            raise ValueError(f"max_analysts must be at least 1, got {max_analysts}")
        self.max_analysts = max_analysts
        self.slots = [AnalystSlot(f"analyst-{i}") for i in range(1, max_analysts + 1)]
        self._reserved: dict[tuple, tuple[AnalystSlot, float]] = {}  # (taskId, messageId) -> slot admitted
        self._uses = itertools.count(1)
        self.refused = 0  # new tasks answered -32004 (at capacity)
        self.org, self.unit, self.broker = org, unit, broker
        self._analysts_broker = self._logins(broker)  # before anything connects or opens a file
        if desk_served(broker, org, unit):  # the same Client ID would knock the served desk off the broker
            raise AlreadyServed(f"ticket-desk already serves {org}/{unit} on this broker: a second TicketDesk would "
                                "take its connection over (same Client ID); use the served one "
                                "(Requester().send('ticket-desk', ...)), or stop it first")
        self.handover = handover
        self.ids = IdSource(seed)
        self.analyst = Analyst(pace=pace)
        store = SqliteTaskStore(store_path) if store_path else MemoryTaskStore()
        self.runtime = TaskRuntime(store, task_events=(org, unit) if task_events else None)  # protocol/task_events.py
        self.instances: list[Responder] = []
        self.killed: list[str] = []
        self._lock = threading.Lock()
        # A store that survived the last run may hold tasks nobody executes any more: give them their end
        # before the desk takes requests. Every task in it is the desk's or one of its analysts'.
        self.orphans_failed = fail_orphaned_tasks(self.runtime, ids=self.ids) if store_path else []
        if self.orphans_failed:
            log.info("ticket-desk: %d task(s) were running when the desk last stopped; marked failed",
                     len(self.orphans_failed))
        self.ubsp = ubsp  # ubsp-v1: the desk's keys also speak for the analysts it spawns
        self.desk = Responder("ticket-desk", self._desk_handler, org=org, unit=unit, card=desk_card(org, unit),
                              runtime=self.runtime, broker=broker_for(broker, "ticket-desk"), pool=pool,
                              options=ResponderOptions(ids=self.ids, admit=self._admit), ubsp=ubsp)

    def _logins(self, broker: BrokerChoice) -> BrokerChoice:
        """What the analysts connect with: ``broker``, or, when its URL logs in as the desk, the same URL
        without the login, so each analyst's session takes its own from ``A2A_BROKER_CREDENTIALS``
        (``mqtt.broker.resolve``). Raises :class:`DeskLoginError` when that file is not set, or when
        the login is another agent's."""
        if callable(broker):  # one endpoint per agent already (SecureBroker.credentials)
            return broker
        url = broker if isinstance(broker, str) else os.environ.get(ENV_URL) if broker is None else None
        endpoint = broker if isinstance(broker, BrokerEndpoint) else BrokerEndpoint.from_url(url) if url else None
        if endpoint is None or not endpoint.username:
            return broker
        login, desk = endpoint.username, f"{self.org}/{self.unit}/ticket-desk"
        if not endpoint.username_is_client_id and login.count("/") != 2:
            return broker  # an ordinary login (user:password): the broker keeps every agent's Client ID
        if login != desk:
            raise DeskLoginError(f"the broker URL logs in as {login}, but the desk is {desk}: a broker that names "
                                 "clients after their login would not let it read its own requests", LOGIN_HINT)
        if not os.environ.get(ENV_CREDENTIALS):
            raise DeskLoginError(
                f"the broker URL logs in as {desk}, the desk's own login: its analysts (analyst-1.."
                f"analyst-{self.max_analysts}) would log in as the desk too, and the broker would close the "
                "desk's connection for each of them (a session takeover)", LOGIN_HINT)
        return replace(endpoint, username=None, password=None, username_is_client_id=False).url_with_secret

    # -- capacity: slots reserved at admission, freed when the handler returns ---------------------------
    def _admit(self, message: dict) -> Optional[A2AError]:
        """``Responder(admit=...)``: reserve a slot for a new task, or refuse it with -32004 before it
        exists. Reserving here (under the runtime's lock, as the task is created) closes the race of
        two new tasks and the last free slot: only one of them gets it."""
        with self._lock:
            self._expire_reservations()
            slot = self._free_slot()
            if slot is None:
                self.refused += 1
                return errors.responder_unavailable(
                    f"ticket-desk is working on {self.max_analysts} tickets, its capacity (max_analysts); "
                    "retry later")
            self._reserved[_admission_key(message)] = (slot, time.monotonic())
            return None

    def _free_slot(self) -> Optional[AnalystSlot]:
        """The least recently used slot that no ticket holds (marked busy), or None; under ``_lock``."""
        free = [s for s in self.slots if not s.busy and not s.dying]
        if not free:
            return None
        slot = min(free, key=lambda s: s.last_used)
        slot.busy, slot.last_used = True, next(self._uses)
        return slot

    def _expire_reservations(self) -> None:
        now = time.monotonic()
        for key, (slot, since) in list(self._reserved.items()):
            if now - since > RESERVATION_TTL_S:
                del self._reserved[key]
                slot.busy = False

    def _reserved_slot(self, ctx: TaskContext) -> Optional[AnalystSlot]:
        """The slot ``admit`` reserved for this task's first message (None for a continuation)."""
        with self._lock:
            reserved = self._reserved.pop(_admission_key(ctx.message), None)
            return reserved[0] if reserved else None

    def _take_free_slot(self, held: list[AnalystSlot]) -> Optional[AnalystSlot]:
        with self._lock:
            slot = self._free_slot()
        if slot is not None:
            held.append(slot)
        return slot

    def _release(self, held: list[AnalystSlot]) -> None:
        with self._lock:
            for slot in held:
                slot.busy = False

    def _analyst_in(self, slot: AnalystSlot) -> Responder:
        """The slot's analyst, connected on first use (or again after it died): its own client ID
        ``{org}/{unit}/analyst-N``, no card, the desk's runtime. Two workers are enough: the desk's
        worker runs the ticket; the analyst's own only serve follow-ups sent to its topic."""
        if slot.analyst is None or not slot.analyst.alive:
            inst = Responder(slot.name, self._analyst_handler, org=self.org, unit=self.unit, runtime=self.runtime,
                             broker=broker_for(self._analysts_broker, slot.name),
                             options=ResponderOptions(ids=self.ids, workers=2),
                             ubsp=self.ubsp.for_instance(slot.name) if self.ubsp is not None else None)
            with self._lock:
                slot.analyst = inst
                self.instances.append(inst)
        return slot.analyst

    def wait_gone(self, analyst: Responder, timeout: float = 3.0) -> bool:
        """Wait until ``analyst`` has closed its session and the desk's runtime, which lists its live
        agents, has dropped it (a few milliseconds after it dies); ``True`` when it is gone."""
        deadline = time.monotonic() + timeout
        while analyst.agent in self.runtime.agents or analyst.alive:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    @property
    def analysts_connected(self) -> int:
        return sum(1 for s in self.slots if s.analyst is not None and s.analyst.alive)

    # -- the work ---------------------------------------------------------------------------------------
    def _desk_handler(self, ctx: TaskContext):
        slot = self._reserved_slot(ctx)
        held = [slot] if slot is not None else []
        try:
            return self._desk_work(ctx, held)
        finally:
            self._release(held)

    def _desk_work(self, ctx: TaskContext, held: list[AnalystSlot]):
        plan = self.handover
        if ctx.agent != self.desk.agent and ctx.agent not in self.runtime.agents:
            ctx.hand_over(self.desk)  # the analyst it was handed to is gone: the desk takes the task back
        if plan == "none" or (plan == "dies" and ctx.turn > 1):
            return self._work(ctx, "none", held)
        if plan in ("mid-stream", "double"):
            ctx.working("ticket-desk: triaging the ticket, looking for a free analyst")
            ctx.wait(self.analyst.pace)
        if not held and self._take_free_slot(held) is None:
            return self._work(ctx, "none", held)  # a continuation while every slot is taken: the desk works
        ctx.hand_over(self._analyst_in(held[0]))
        return self._work(ctx, plan, held)

    def _analyst_handler(self, ctx: TaskContext):
        held: list[AnalystSlot] = []
        try:
            return self._work(ctx, "none" if self.handover != "double" else "double", held)
        finally:
            self._release(held)

    def _work(self, ctx: TaskContext, plan: str, held: list[AnalystSlot]):
        handed_twice: list[AnalystSlot] = []

        def on_step(name: str) -> None:
            if plan == "double" and name == "report-half" and not handed_twice:
                second = self._take_free_slot(held)
                if second is not None:  # the second handover needs a free slot; at capacity it is skipped
                    handed_twice.append(second)
                    ctx.hand_over(self._analyst_in(second))
            if plan == "dies" and name == "asked-input":
                owner = self.runtime.agents.get(ctx.agent)
                if isinstance(owner, Responder) and owner is not self.desk:
                    self.killed.append(owner.agent)
                    owner.die_after_replies()

        return self.analyst(ctx, on_step)

    def stop(self) -> None:
        for inst in list(self.instances):
            inst.stop()
        self.desk.stop()

    def __enter__(self) -> "TicketDesk":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def analyst_pool(pool: str, members: int = 3, *, org: str = "acme", unit: str = "support",
                 broker: BrokerChoice = None, pace: float = 0.05,
                 seed: Optional[int] = None, unique_names: bool = False,
                 members_allowed: Optional[Iterable[str]] = None) -> list[Responder]:
    """Pool members consuming ``$share/{group_id}/.../pool/{pool}`` (or, on Mosquitto 2.0.11, the pool
    topic with claiming among the live members: a member that dies leaves its work to the others),
    each with its own store.

    Members are numbered ``analyst-{pool}-1``... (the story's cast). ``unique_names``: name them
    ``analyst-{pool}-{random}`` instead, so several ``serve analyst --pool`` processes can serve one
    pool (one client ID each) and one of them can be stopped or killed alone.
    ``members_allowed``: whose presence counts in the pool (see :func:`a2a_nb.protocol.pools.allows`);
    by default the names made here, or ``analyst-{pool}-*`` with ``unique_names`` (the other
    processes' names are not known in advance)."""
    ids = IdSource(seed)
    analyst = Analyst(pace=pace)
    names = [f"analyst-{pool}-{ids.uuid4()[:6] if unique_names else i + 1}" for i in range(members)]
    if members_allowed is None:
        members_allowed = [f"analyst-{pool}-*"] if unique_names else names
    allowed = list(members_allowed)
    return [Responder(name, analyst, org=org, unit=unit, pool=pool, members_allowed=allowed,
                      broker=broker_for(broker, name), options=ResponderOptions(ids=ids))
            for name in names]
