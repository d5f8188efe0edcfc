"""Load: many concurrent streaming tasks through a desk and a pool of analysts, all at once.

``run_load(url, tasks=200, events=20, pool_members=4)`` starts, on one broker:

* a **desk** (the card agent) that hands every task it receives to one of the pool members
  (Optional Task Handover: replies then carry ``a2a-responder-agent-id``);
* a **pool** of ``pool_members`` analysts that share the desk's task runtime and also consume the
  pool request topic ``$a2a/v1/request/{org}/{unit}/pool/load`` (``$share`` when the broker delivers
  it on ``$`` topics, else slot claiming: see ``protocol/pools.py``);
* ``requesters`` requesters (default 4) that together open ``tasks`` SendStreamingMessage streams
  at the same moment, one thread per task: even tasks go to the desk, odd tasks to the pool.

Each task streams ``events`` artifact chunks (each chunk names its task and its index) and then
completes. Measured per task, on the requester side:

* ``lost_tasks``: tasks that did not end COMPLETED; ``lost_events``: chunks never delivered on the
  stream (a stream recovered with GetTask still has them in the task, but they count as lost here);
* ``cross_talk``: items that reached the wrong stream (another task's id or chunk) or another
  requester's reply topic (a reply with Correlation Data its requester never sent);
* latency from the request to the terminal event, and to the first event: p50 / p90 / p99 / max;
* ``events_per_s``: all stream items of all tasks over the wall time of the run.
"""
from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections import Counter
from typing import Any, Optional, Union

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.agents.runtime import TaskRuntime
from a2a_nb.mqtt.broker import BrokerEndpoint, resolve
from a2a_nb.protocol import messages, states
from a2a_nb.protocol.retry import RetryProfile

from .apart import Apart

LOAD_RETRY = RetryProfile(reply_first_timeout_s=30.0, stream_idle_timeout_s=30.0, max_attempts=2,
                          backoff_s=(0.5,))
POOL = "load"


def _pct(samples: list[float]) -> dict:
    if not samples:
        return {"n": 0}
    s = sorted(samples)

    def at(q: float) -> float:
        return round(s[min(len(s) - 1, int(round(q * (len(s) - 1))))] * 1000, 2)

    return {"n": len(s), "p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": round(s[-1] * 1000, 2),
            "mean": round(statistics.fmean(s) * 1000, 2)}


class LoadAgents:
    """The agents of the load run: a desk that hands every task over to the next of ``pool_members``
    analysts, who also serve the pool; all share one task runtime. Each task streams ``events`` chunks
    (each names its task and its index), then completes."""

    def __init__(self, endpoint: BrokerEndpoint, events: int, pool_members: int, org: str, unit: str):
        self.events = events
        self.runtime = TaskRuntime()
        self.members = [Responder(f"analyst-{i + 1}", self._work, org=org, unit=unit, runtime=self.runtime,
                                  pool=POOL, broker=endpoint, options=ResponderOptions(workers=8))
                        for i in range(pool_members)]
        self._next = 0
        self._next_lock = threading.Lock()
        self.desk = Responder("desk", self._desk, org=org, unit=unit, runtime=self.runtime, broker=endpoint,
                              options=ResponderOptions(workers=8))

    def _desk(self, ctx) -> None:
        with self._next_lock:
            member = self.members[self._next % len(self.members)]
            self._next += 1
        ctx.hand_over(member)
        self._work(ctx)

    def _work(self, ctx) -> None:
        n = self.events
        for i in range(n):
            ctx.artifact("load", [messages.text_part(f"{ctx.task_id}#{i}")], append=i > 0, last_chunk=i == n - 1)
        ctx.complete(f"{n} chunks")

    def executions(self) -> int:
        return sum(a.stats.executions for a in [self.desk, *self.members])

    def pool_mode(self) -> Optional[str]:
        return self.members[0].pool_mode if self.members else None

    def stop(self) -> None:
        for a in [self.desk, *self.members]:
            a.stop()


class _Load:
    def __init__(self, endpoint: BrokerEndpoint, tasks: int, events: int, pool_members: int, requesters: int,
                 org: str, unit: str, timeout_s: float, apart: bool = False):
        self.endpoint, self.tasks, self.events, self.pool_members = endpoint, tasks, events, pool_members
        self.org, self.unit, self.timeout_s = org, unit, timeout_s
        self.agents: Optional[LoadAgents] = None
        self.child: Optional[Apart] = None
        if apart:
            self.child = Apart("kit-agents", endpoint.url_with_secret, org, unit, str(events), str(pool_members))
        else:
            self.agents = LoadAgents(endpoint, events, pool_members, org, unit)
        self.requesters = [Requester(f"load-requester-{i + 1}", org=org, unit=unit, broker=endpoint,
                                     retry=LOAD_RETRY) for i in range(requesters)]
        self.results: list[dict] = []
        self._lock = threading.Lock()

    # -- one task (its own thread) -----------------------------------------------------------------
    def _one(self, k: int, start: threading.Barrier) -> None:
        req = self.requesters[k % len(self.requesters)]
        target = "desk" if k % 2 == 0 else f"pool:{POOL}"
        out: dict[str, Any] = {"k": k, "via": "desk" if k % 2 == 0 else "pool", "state": None, "chunks": set(), "cross_talk": 0,
               "duplicates": 0, "recoveries": 0, "first": None, "total": None, "error": None, "answered_by": None}
        try:
            start.wait(self.timeout_s)
        except threading.BrokenBarrierError:
            pass
        t0 = time.perf_counter()
        try:
            stream = req.stream(target, f"load task {k}")
            task_id = stream.task_id
            for ev in stream:
                if out["first"] is None:
                    out["first"] = time.perf_counter() - t0
                if ev.responder:
                    out["answered_by"] = ev.responder
                if ev.kind == "artifactUpdate":
                    if ev.data.get("taskId") != task_id:
                        out["cross_talk"] += 1
                        continue
                    for part in ev.data["artifact"]["parts"]:
                        owner, _, idx = part.get("text", "").partition("#")
                        if owner != task_id:
                            out["cross_talk"] += 1
                        elif idx in out["chunks"]:
                            out["duplicates"] += 1
                        else:
                            out["chunks"].add(idx)
                elif ev.kind in ("statusUpdate", "task") and ev.data.get("taskId", ev.data.get("id")) != task_id:
                    out["cross_talk"] += 1
            out["total"] = time.perf_counter() - t0
            out["state"] = stream.state
            out["recoveries"] = stream.recoveries
        except Exception as exc:  # noqa: BLE001 - a failed task is a lost task, reported in the result
            out["error"] = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self.results.append(out)

    def run(self) -> dict:
        start = threading.Barrier(self.tasks + 1)
        threads = [threading.Thread(target=self._one, args=(k, start), name=f"load-{k}", daemon=True)
                   for k in range(self.tasks)]
        for t in threads:
            t.start()
        start.wait(self.timeout_s)
        t0 = time.perf_counter()
        deadline = time.monotonic() + self.timeout_s
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        wall = time.perf_counter() - t0
        with self._lock:
            results = list(self.results)
        return self._summary(results, wall)

    def _summary(self, results: list[dict], wall: float) -> dict:
        done = [r for r in results if r["state"] == states.COMPLETED]
        lost_events = sum(self.events - len(r["chunks"]) for r in results) + (self.tasks - len(results)) * self.events
        unknown = sum(q.stats.ignored_unknown_correlation + q.stats.ignored_missing_correlation for q in self.requesters)
        handled = Counter(r["answered_by"] or ("desk" if r["via"] == "desk" else "?") for r in done)
        items = sum(len(r["chunks"]) for r in results) + 2 * len(done)  # + snapshot and final status
        return {
            "tasks": self.tasks,
            "events_per_task": self.events,
            "pool_members": self.pool_members,
            "agents_apart": self.child is not None,
            "requesters": len(self.requesters),
            "completed": len(done),
            "lost_tasks": self.tasks - len(done),
            "lost_events": lost_events,
            "cross_talk": sum(r["cross_talk"] for r in results) + unknown,
            "duplicates": sum(r["duplicates"] for r in results),
            "recovered_streams": sum(1 for r in results if r["recoveries"]),
            "errors": sorted({r["error"] for r in results if r["error"]})[:5],
            "wall_s": round(wall, 3),
            "events_per_s": round(items / wall, 1) if wall > 0 else None,
            "latency_ms": _pct([r["total"] for r in done]),
            "first_event_ms": _pct([r["first"] for r in results if r["first"] is not None]),
            "via": dict(Counter(r["via"] for r in results)),
            "answered_by": dict(sorted(handled.items())),
        }

    def finish(self, summary: dict) -> dict:
        """Stop requesters and agents; add what the agents counted (a child prints it as it ends)."""
        for q in self.requesters:
            q.close()
        if self.agents is not None:
            summary["pool_mode"], summary["executions"] = self.agents.pool_mode(), self.agents.executions()
            self.agents.stop()
        if self.child is not None:
            self.child.close()
            counts = self.child.counts or {}
            summary["pool_mode"], summary["executions"] = counts.get("pool_mode"), counts.get("executions")
        return summary



def run_load(url: Union[str, BrokerEndpoint, None] = None, tasks: int = 200, events: int = 20,
             pool_members: int = 4, *, requesters: int = 4, org: str = "load",
             unit: Optional[str] = None, timeout_s: float = 120.0, apart: bool = False) -> dict:
    """Run ``tasks`` concurrent streams of ``events`` chunks each through a desk and a pool of
    ``pool_members`` analysts; return the measurements (see the module docstring). ``apart``: the
    agents run in a process of their own (``benchmarks.apart``), as served agents do.

    ``unit`` defaults to a fresh one, so a run never meets another run's agents on a shared broker.
    """
    if tasks < 1 or events < 1 or pool_members < 1 or requesters < 1:
        raise ValueError("tasks, events, pool_members and requesters must all be >= 1")
    endpoint = url if isinstance(url, BrokerEndpoint) else resolve(url)
    load = _Load(endpoint, tasks, events, pool_members, requesters, org, unit or f"run-{uuid.uuid4().hex[:8]}",
                 timeout_s, apart)
    summary: dict = {}
    try:
        summary = load.run()
    finally:
        load.finish(summary)
    return summary


def format_load(result: dict) -> str:
    """A few lines for a terminal."""
    lat, first = result["latency_ms"], result["first_event_ms"]
    return "\n".join([
        f"load: {result['tasks']} concurrent tasks x {result['events_per_task']} stream events, desk + pool of "
        f"{result['pool_members']} ({result['pool_mode']}), {result['requesters']} requesters",
        f"  completed {result['completed']}/{result['tasks']}, lost tasks {result['lost_tasks']}, lost events "
        f"{result['lost_events']}, cross-talk {result['cross_talk']}, recovered streams {result['recovered_streams']}",
        f"  task latency ms: p50 {lat.get('p50')}  p90 {lat.get('p90')}  p99 {lat.get('p99')}  max {lat.get('max')}",
        f"  first event ms:  p50 {first.get('p50')}  p90 {first.get('p90')}  p99 {first.get('p99')}",
        f"  {result['events_per_s']} stream items/s over {result['wall_s']} s",
    ])


# -- resources: a burst against the ticket desk, many echo requests --------------------------------------
def process_resources() -> dict:
    """This process's threads, open file descriptors and resident memory (MB), from ``/proc/self``
    (Linux; elsewhere threads from ``threading`` and fds/RSS as None)."""
    import os

    def count(folder: str) -> Optional[int]:
        try:
            return len(os.listdir(folder))
        except OSError:
            return None

    rss = None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return {"threads": count("/proc/self/task") or threading.active_count(), "fds": count("/proc/self/fd"),
            "rss_mb": rss}


BURST_TEXT = "TCK-4821: order status not updating after checkout\nReproduction: pay by card, then open the order page"


def run_desk_burst(url: Union[str, BrokerEndpoint, None] = None, requests: int = 400,
                   max_analysts: Optional[int] = None, *, org: str = "acme", unit: Optional[str] = None,
                   timeout_s: float = 60.0) -> dict:
    """``requests`` SendMessage requests published at once to a ticket desk (QoS 1, one client, no
    waiting between them), then one more request once the burst is answered.

    A bounded desk answers each burst request with a completed task or with -32004
    ``responder_unavailable`` (at capacity: no task is created), keeps at most ``max_analysts``
    analyst connections, and still answers the request after the burst. Returns the counts and
    this process's threads / fds / RSS before the desk starts, after the burst, and after it stopped.
    """
    from a2a_nb.agents.requester import Requester
    from a2a_nb.mqtt.session import Session
    from a2a_nb.protocol import errors as a2a_errors
    from a2a_nb.protocol import jsonrpc, topics
    from a2a_nb.protocol.packet import MqttMessage, encode_json
    from a2a_nb.story.cast import MAX_ANALYSTS, TicketDesk

    endpoint = url if isinstance(url, BrokerEndpoint) else resolve(url)
    unit = unit or f"burst-{uuid.uuid4().hex[:8]}"
    max_analysts = max_analysts or MAX_ANALYSTS
    before = process_resources()
    desk = TicketDesk(org=org, unit=unit, broker=endpoint, handover="first-reply", pace=0.0,
                      max_analysts=max_analysts)
    client = Session(org, unit, "burst-client", broker=endpoint)
    reply_topic = topics.reply_topic(org, unit, "burst-client", uuid.uuid4().hex)
    answers: dict[bytes, dict] = {}
    done = threading.Event()
    lock = threading.Lock()

    def on_reply(msg: MqttMessage) -> None:
        if msg.correlation_data is None:
            return  # not an answer to any request of this run
        with lock:
            answers.setdefault(msg.correlation_data, json.loads(msg.payload))
            if len(answers) >= requests:
                done.set()

    try:
        client.subscribe(reply_topic, handler=on_reply)
        request_topic = topics.request_topic(org, unit, "ticket-desk")
        t0 = time.perf_counter()
        for i in range(requests):
            message = messages.user_message(BURST_TEXT, message_id=f"burst-{i}", task_id=str(uuid.uuid4()),
                                            context_id=str(uuid.uuid4()))
            body = jsonrpc.request(jsonrpc.SEND_MESSAGE, messages.send_message_params(message), f"b{i}")
            client.publish_nowait(MqttMessage(request_topic, encode_json(body), qos=1, response_topic=reply_topic,
                                              correlation_data=uuid.uuid4().bytes))
        done.wait(timeout_s)
        burst_s = time.perf_counter() - t0
        with lock:
            replies = list(answers.values())
        completed = sum(1 for r in replies
                        if (r.get("result") or {}).get("task", {}).get("status", {}).get("state") == states.COMPLETED)
        refused = sum(1 for r in replies if (r.get("error") or {}).get("code") == a2a_errors.RESPONDER_UNAVAILABLE)
        after_burst = process_resources()
        analysts_connected = desk.analysts_connected
        requester = Requester("burst-after", org=org, unit=unit, broker=endpoint, retry=LOAD_RETRY)
        try:
            after = requester.send("ticket-desk", BURST_TEXT)
            good_state = after.state
        finally:
            requester.close()
    finally:
        client.close()
        desk.stop()
    stopped = process_resources()
    return {"requests": requests, "max_analysts": max_analysts, "answered": len(replies), "completed": completed,
            "refused_32004": refused, "other": len(replies) - completed - refused, "burst_s": round(burst_s, 2),
            "analysts_connected": analysts_connected, "analysts_started": len(desk.instances),
            "after_burst_request": good_state, "before": before, "after_burst": after_burst, "after_stop": stopped}


def run_echo_memory(url: Union[str, BrokerEndpoint, None] = None, n: int = 5000, *, org: str = "bench",
                    unit: Optional[str] = None) -> dict:
    """``n`` SendMessage round trips to an echo agent (as ``serve echo`` runs it) in this process:
    RSS before and after. Each one is a task the agent stores and a route the requester keeps;
    both are bounded (``MemoryTaskStore`` keeps a bounded number of terminal tasks, the requester's
    routing table the most recent ones), so RSS levels off instead of growing with ``n``."""
    from a2a_nb.story.cast import echo_handler

    endpoint = url if isinstance(url, BrokerEndpoint) else resolve(url)
    unit = unit or f"echo-{uuid.uuid4().hex[:8]}"
    echo = Responder("echo", echo_handler, org=org, unit=unit, broker=endpoint,
                     options=ResponderOptions(inline=True))
    req = Requester("echo-client", org=org, unit=unit, broker=endpoint, retry=LOAD_RETRY)
    try:
        before = process_resources()
        half = None
        t0 = time.perf_counter()
        for i in range(n):
            req.send("echo", "ping")
            if i == n // 2:
                half = process_resources()
        elapsed = time.perf_counter() - t0
        after = process_resources()
        stored = len(echo.runtime.store.list()) if hasattr(echo.runtime.store, "list") else None
    finally:
        req.close()
        echo.stop()
    return {"n": n, "seconds": round(elapsed, 2), "per_s": round(n / elapsed), "before": before, "half": half,
            "after": after, "rss_growth_mb": _growth(before, after), "second_half_growth_mb": _growth(half, after),
            "tasks_kept": stored}


def _growth(a: Optional[dict], b: Optional[dict]) -> Optional[float]:
    if not a or not b or a.get("rss_mb") is None or b.get("rss_mb") is None:
        return None
    return round(b["rss_mb"] - a["rss_mb"], 1)


def format_resources(burst: Optional[dict] = None, echo: Optional[dict] = None) -> str:
    """A few lines for a terminal."""
    lines = []
    if burst:
        b, a, s = burst["before"], burst["after_burst"], burst["after_stop"]
        lines += [
            f"desk burst: {burst['requests']} SendMessage at once to a desk of {burst['max_analysts']} analysts: "
            f"{burst['completed']} completed, {burst['refused_32004']} refused -32004, {burst['other']} other, "
            f"{burst['requests'] - burst['answered']} unanswered ({burst['burst_s']} s); "
            f"next request {burst['after_burst_request']}",
            f"  analysts started {burst['analysts_started']}, connected {burst['analysts_connected']}; threads "
            f"{b['threads']} → {a['threads']} (stopped: {s['threads']}), fds {b['fds']} → {a['fds']} "
            f"({s['fds']}), RSS MB {b['rss_mb']} → {a['rss_mb']} ({s['rss_mb']})",
        ]
    if echo:
        lines.append(f"echo x{echo['n']:,}: {echo['per_s']:,} requests/s; RSS MB {echo['before']['rss_mb']} → "
                     f"{(echo['half'] or {}).get('rss_mb')} (half) → {echo['after']['rss_mb']}; threads "
                     f"{echo['before']['threads']} → {echo['after']['threads']}, fds {echo['before']['fds']} → "
                     f"{echo['after']['fds']}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - manual runs
    import sys

    print(json.dumps(run_load(sys.argv[1] if len(sys.argv) > 1 else None), indent=1))
