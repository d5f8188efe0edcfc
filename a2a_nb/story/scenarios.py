"""The coordinator's side of the story, as scenarios a terminal, a test or a notebook can run.

Each scenario starts the agents it needs (unless told they are already served), plays the
walkthrough (discover by skill, send the ticket, answer INPUT_REQUIRED on the same task, stream the
report, read the result) and checks that the expected outcome happened: who answered, which
reroutes the routing table recorded, and the final task state. ``ok`` is False otherwise.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..agents.discovery import AgentEntry, Discovery
from ..agents.requester import Requester
from ..protocol import messages, pools, states
from ..protocol.packet import MqttMessage
from ..protocol.ids import IdSource
from ..protocol.retry import RetryProfile
from ..protocol.routing import FALLBACK, HANDOVER, POOL_ASSIGNED
from .cast import REPORT_ID, AlreadyServed, BrokerChoice, TicketDesk, analyst_pool, broker_for, desk_served

STORY_RETRY = RetryProfile(reply_first_timeout_s=1.0, stream_idle_timeout_s=3.0, max_attempts=3,
                           backoff_s=(0.1, 0.2, 0.4))
TICKET_TEXT = "Analyze ticket TCK-4821: customer reports order status not updating after checkout"
REPRO_TEXT = "Reproduction: refresh the order page twice within 30 s of placing the order"
CONTEXT_ID = "ctx-tck4821"


@dataclass
class ScenarioResult:
    name: str
    ok: bool = False
    expected: str = ""
    observed: str = ""
    task_ids: list[str] = field(default_factory=list)
    reroutes: list[dict] = field(default_factory=list)
    final_state: Optional[str] = None
    report: Optional[dict] = None
    conclusion: str = ""
    steps: list[str] = field(default_factory=list)


SCENARIOS: dict[str, dict] = {
    "happy": {"handover": "first-reply", "expect": [HANDOVER],
              "about": "the desk hands the ticket to an analyst at once; follow-ups go to the analyst"},
    "handover": {"handover": "mid-stream", "expect": [HANDOVER],
                 "about": "the desk starts the stream itself, an analyst takes over mid-stream"},
    "no-handover": {"handover": "none", "expect": [],
                    "about": "no a2a-responder-agent-id: everything stays with the card agent"},
    "multi-handover": {"handover": "double", "expect": [HANDOVER, HANDOVER], "steps_first": True,
                       "about": "two handovers in one stream: the latest a2a-responder-agent-id wins"},
    "handover-unreachable": {"handover": "dies", "expect": [HANDOVER, FALLBACK],
                             "about": "the analyst dies after asking for input: retries, then fallback to the desk"},
    "pool": {"pool": "analysts", "expect": [POOL_ASSIGNED],
             "about": "a pool of 3 analysts behind a shared subscription; follow-ups go to the member that answered"},
}


class Narrator:
    def __init__(self, say: Callable[[str], None]):
        self.say = say
        self.n = 0
        self.lines: list[str] = []

    def __call__(self, text: str) -> None:
        self.n += 1
        line = f"[{self.n:02d}] {text}"
        self.lines.append(line)
        self.say(line)


def run_scenario(name: str, broker: BrokerChoice = None, *, say: Callable[[str], None] = print,
                 served: bool = False, pace: float = 0.05, seed: Optional[int] = 4821,
                 retry: RetryProfile = STORY_RETRY) -> ScenarioResult:
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}: choose one of {', '.join(SCENARIOS)}")
    spec = SCENARIOS[name]
    step = Narrator(say)
    result = ScenarioResult(name, expected=" → ".join(spec["expect"]) or "no reroute")
    step(f"scenario {name}: {spec['about']}")
    with ExitStack() as stack:
        pool = spec.get("pool")
        if not served:
            refuse_if_served(broker, pool)
            if pool:
                for member in analyst_pool(pool, 3, broker=broker, pace=pace, seed=seed):
                    stack.callback(member.stop)
            else:
                desk = TicketDesk(broker=broker, handover=spec["handover"], pace=pace, seed=seed)
                stack.callback(desk.stop)
        ids = IdSource(seed if not served else None)  # served agents keep their tasks: each run new task ids
        coordinator = Requester("coordinator", broker=broker_for(broker, "coordinator"), retry=retry, ids=ids, seed=seed)
        stack.callback(coordinator.close)
        target = f"pool:{pool}" if pool else _discover(broker, step)
        text = TICKET_TEXT + ("\n" + REPRO_TEXT if spec.get("steps_first") else "")
        message = coordinator.new_message(text, context_id=CONTEXT_ID, message_id=ids.message_id("coord-tck4821-m"))
        step(f"coordinator → {target}: SendStreamingMessage, Task.id {message['taskId'][:8]}…, "
             f"messageId {message['messageId']}, contextId {CONTEXT_ID}")
        stream = coordinator.stream(target, message=message)
        _follow(stream, step)
        task_id = stream.task_id
        result.task_ids.append(task_id)
        if stream.state == states.INPUT_REQUIRED:
            step(f"the analyst needs input: “{stream.view.status_text}”")
            step(f"coordinator → {coordinator.target_of(task_id).label}: the reproduction steps, new messageId, "
                 "same Task.id and contextId")
            stream = coordinator.continue_task(stream, REPRO_TEXT, stream=True,
                                               message_id=ids.message_id("coord-tck4821-m"))
            _follow(stream, step)
        final = coordinator.get_task(task_id)
        result.final_state = final["status"]["state"]
        step(f"GetTask → {coordinator.target_of(task_id).label}: task is {states.short_name(result.final_state)}")
        report = _report_of(final)
        result.report = report
        if report:
            step(f"report: root cause with {report['confidence']:.0%} confidence, "
                 f"{len(report['affectedOrders'])} affected orders")
        result.conclusion = messages.text_of(final["status"].get("message") or {"parts": []})
        if result.conclusion:
            step(f"conclusion for the user: {result.conclusion}")
        result.reroutes = [r for r in coordinator.routing.history_rows() if r["task_id"] == task_id]
        for r in result.reroutes:
            step(f"routing: {r['cause']} {r['from']} → {r['to']} ({r['detail']})")
        observed = [r["cause"] for r in result.reroutes]
        result.observed = " → ".join(observed) or "no reroute"
        result.ok = observed == spec["expect"] and result.final_state == states.COMPLETED and report is not None
        step(f"expected {result.expected}; observed {result.observed}; "
             f"{'OK' if result.ok else 'NOT the expected outcome'}")
    result.steps = step.lines
    return result


def refuse_if_served(broker: BrokerChoice, pool: Optional[str], wait: float = 0.3) -> None:
    """Raise :class:`AlreadyServed` when the desk's retained card says ``online`` (``cast.desk_served``)
    or, for the pool scenario, a pool member's presence does, e.g. next to ``python -m a2a_nb serve
    ticket-desk``. Presence is advisory (Profile: Presence Subscriber Behavior 2): a stale ``online``
    gets the same answer, and ``--served`` or a fresh broker is the way out."""
    from ..mqtt.session import Session

    if not pool:
        live = ["ticket-desk"] if desk_served(broker) else []
    else:
        seen: list[MqttMessage] = []
        probe = Session("acme", "support", "coordinator-discovery", broker=broker_for(broker, "coordinator-discovery"))
        try:
            probe.subscribe(pools.presence_filter("acme", "support"), handler=seen.append)
            time.sleep(wait)  # retained messages arrive right after the SUBACK
        finally:
            probe.close()
        live = sorted(p.agent for p in map(pools.read_presence, seen) if p and p.pool == pool and p.online)
    if live:
        raise AlreadyServed(f"{', '.join(live)} already serve{'s' if len(live) == 1 else ''} this broker; starting "
                            f"the story's own would knock {'it' if len(live) == 1 else 'them'} off (same Client ID)")


def _discover(broker: BrokerChoice, step: Narrator) -> str:
    with Discovery(broker=broker_for(broker, "coordinator-discovery"), agent="coordinator-discovery") as disco:
        deadline = time.time() + 5
        found: list[AgentEntry] = []
        while time.time() < deadline and not found:
            found = disco.find(tags=["root-cause-analysis"], capabilities=["streaming"], online_only=True)
            if not found:
                time.sleep(0.05)
        if not found:
            raise RuntimeError("no online agent with a root-cause-analysis skill on the discovery topics")
        entry = found[0]
        step(f"discovery: {entry.agent} ({entry.card['name']}) is {entry.status}, skill tags "
             f"{', '.join(entry.card['skills'][0]['tags'])}, streaming {entry.card['capabilities'].get('streaming')}")
        return entry.agent


def _follow(stream, step: Narrator) -> None:
    for att in stream.attempts:
        if att.outcome != "answered" or len(stream.attempts) > 1:
            step(f"attempt {att.number} → {att.topic} (correlation {att.correlation[:8]}…): {att.outcome}")
    for ev in stream:
        who = ev.responder or stream.target.label
        if ev.reroute is not None:
            step(f"handover: replies now carry a2a-responder-agent-id={ev.reroute.to.label}; "
                 f"follow-ups for this task go to {ev.reroute.to.topic}")
        if ev.kind in ("statusUpdate", "task", "recovered"):
            msg = ev.data["status"].get("message") if ev.kind != "recovered" else None
            text = f": {messages.text_of(msg)}" if msg else ""
            step(f"{who} → coordinator: {ev.kind} {states.short_name(ev.state)}{text}")
        elif ev.kind == "artifactUpdate":
            a = ev.data
            step(f"{who} → coordinator: artifact {a['artifact']['artifactId']} chunk "
                 f"({'append' if a.get('append') else 'new'}{', last' if a.get('lastChunk') else ''})")
        elif ev.kind == "message":
            step(f"{who} → coordinator: message {messages.text_of(ev.data)}")


def _report_of(task: dict) -> Optional[dict]:
    for art in task.get("artifacts", []):
        if art["artifactId"] == REPORT_ID:
            merged: dict = {}
            for d in messages.data_of(art):
                merged.update(d)
            return merged if "rootCause" in merged else None
    return None


