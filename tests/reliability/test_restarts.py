"""Restarts heal (issue 12 item 6): a restarted broker shows every running agent again, an agent
restarted on its store gives the tasks it was running an end, and a pool whose member died keeps
serving.

Profile: Presence and Liveness (retained card with ``a2a-status``, Last Will), Requester Retry and
Timeout Profile (same Task.id, new Correlation Data), Optional Shared Subscription Dispatch 4, 13.
Against real Mosquitto brokers: ``private_broker`` where the broker restarts, the shared one
otherwise; agents run in this process or as ``python -m a2a_nb serve`` processes killed with SIGKILL.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from a2a_nb.agents.recovery import RESTART_REASON
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol import messages, pools, properties, topics
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import Analyst, TicketDesk, echo_card, echo_handler
from tests.waiting import wait_until
from tests.helpers import uid

CLI = [sys.executable, "-m", "a2a_nb"]
COMPLETED, FAILED = "TASK_STATE_COMPLETED", "TASK_STATE_FAILED"
INPUT_REQUIRED, WORKING = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"
TICKET = "Analyze ticket TCK-4821"
STEPS = "refresh the order page twice right after checkout"


# -- 1. cards come back after a broker restart -------------------------------------------------------------
def retained_cards(url: str, unit: str = "support", listen: float = 0.3) -> dict[str, tuple[str, str]]:
    """What a subscriber connecting now sees retained on the discovery topics:
    ``{agent: (a2a-status, a2a-status-source)}``."""
    seen: dict[str, tuple[str, str]] = {}
    with Session("acme", unit, uid("watcher"), broker=url) as s:
        def on_card(m):
            if m.retain and m.payload:
                seen[m.topic.rsplit("/", 1)[1]] = (m.user_property(properties.STATUS),
                                                   m.user_property(properties.STATUS_SOURCE))
        s.subscribe(topics.discovery_filter("acme", unit), handler=on_card)
        time.sleep(listen)
    return seen


def test_cards_are_published_again_after_a_broker_restart_without_persistence(private_broker):
    url = private_broker.url
    echo = Responder("echo", echo_handler, card=echo_card(), broker=url, options=ResponderOptions(inline=True))
    desk = TicketDesk(broker=url)
    online = {"echo": ("online", "agent"), "ticket-desk": ("online", "agent")}
    assert retained_cards(url) == online

    private_broker.restart(pause=0.2)  # `persistence false`: the broker forgets every retained card
    assert echo.session.wait_connected(10) and desk.desk.session.wait_connected(10)
    cards = wait_until(lambda: (lambda c: c if c == online else None)(retained_cards(url)), timeout=5)
    assert cards == online, "a fresh subscriber does not see every running agent online after the restart"

    private_broker.restart(pause=0.1)  # every reconnect, not only the first
    assert echo.session.wait_connected(10) and echo.session.connect_count >= 3
    assert wait_until(lambda: retained_cards(url) == online, timeout=5)
    reply = Requester(uid("coord"), broker=url).send("echo", "still there?")
    assert reply.message is not None and messages.text_of(reply.message) == "echo: still there?"


# -- 2. a desk restarted on its store: orphaned tasks fail, interrupted ones continue -------------------------

def stop_processes(procs) -> None:
    """Stop the processes a test started (SIGTERM: a graceful stop) and close their pipes."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=15)
        p.stdout.close()
        p.stderr.close()

@pytest.fixture
def serve_desk(broker_url):
    procs: list[subprocess.Popen] = []
    env = {**os.environ, "A2A_BROKER_URL": broker_url, "PYTHONUNBUFFERED": "1"}

    def serve(store, unit: str, pace: float) -> subprocess.Popen:
        p = subprocess.Popen(CLI + ["serve", "ticket-desk", "--store", str(store), "--unit", unit,
                                    "--pace", str(pace)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        procs.append(p)
        line = p.stdout.readline()
        assert "serving" in line, p.stderr.read()
        return p

    yield serve
    stop_processes(procs)


def test_a_desk_killed_mid_task_fails_it_at_restart_and_continues_interrupted_tasks(serve_desk, broker_url,
                                                                                    tmp_path):
    unit, store = uid("rs"), tmp_path / "desk.db"
    # one attempt per target: the dead analyst stays silent for 2 s, then the card agent is asked
    retry = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=5.0, max_attempts=1, backoff_s=(0.1,))
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=retry)
    desk = serve_desk(store, unit, pace=1.0)

    waiting = req.send("ticket-desk", TICKET)  # no reproduction steps yet: the analyst asks for them
    assert waiting.state == INPUT_REQUIRED
    running = req.stream("ticket-desk", f"{TICKET}\nReproduction: {STEPS}")
    for event in running:
        if event.state == WORKING:
            break
    desk.send_signal(signal.SIGKILL)  # no goodbye, no will handling of its own: the process is gone
    assert desk.wait(timeout=10) == -signal.SIGKILL

    restarted = serve_desk(store, unit, pace=0.05)  # same store
    assert restarted.stdout.readline().startswith("1 task(s) in "), "the restart did not report the failed task"
    task = req.get_task(running.task_id)
    assert task["status"]["state"] == FAILED, task["status"]
    assert messages.text_of(task["status"]["message"]) == RESTART_REASON

    done = req.continue_task(waiting, f"Reproduction: {STEPS}")
    assert done.state == COMPLETED, done.result
    assert done.task["id"] == waiting.task_id


# -- 3. a pool whose member died keeps serving -----------------------------------------------------------------
SHORT = RetryProfile(reply_first_timeout_s=0.8, stream_idle_timeout_s=2.0, max_attempts=4,
                     backoff_s=(0.05, 0.1, 0.2))


def run_pool(req: Requester, pool: str, n: int, kill, kill_after: int):
    """Send ``n`` tasks to ``pool:NAME`` concurrently; call ``kill()`` once ``kill_after`` were answered."""
    answered = threading.Semaphore(0)

    def one(i: int):
        try:
            return req.send(f"pool:{pool}", f"{TICKET}\nReproduction: job {i}")
        finally:
            answered.release()

    with ThreadPoolExecutor(10) as ex:
        futures = [ex.submit(one, i) for i in range(n)]
        for _ in range(kill_after):
            assert answered.acquire(timeout=30)
        kill()
        return [f.result(timeout=60) for f in futures]


def assert_each_completed_once(replies, n: int) -> None:
    assert len(replies) == n
    assert len({r.task_id for r in replies}) == n
    states = [r.state for r in replies]
    assert states == [COMPLETED] * n, states


@pytest.mark.parametrize("death", ["crash", "exit", "card-crash"])
def test_a_pool_keeps_serving_when_one_of_three_members_dies(broker_url, death):
    """``crash``: the broker publishes the member's will. ``exit``: its session is closed without
    ``stop()``, as ``stop_all()`` and ``atexit`` do (a clean DISCONNECT: no will). ``card-crash``: the
    member also has an Agent Card, so its will is its card's (offline)."""
    unit, pool = uid("pd"), uid("analysts")
    analyst = Analyst(pace=0.03)
    card = echo_card(unit=unit, agent="analyst-2") if death == "card-crash" else None
    members = [Responder(f"analyst-{i}", analyst, unit=unit, pool=pool, broker=broker_url,
                         card=card if i == 2 else None) for i in (1, 2, 3)]
    names = [m.agent for m in members]
    victim = members[1]
    req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)

    replies = run_pool(req, pool, 30, victim.session.close if death == "exit" else victim.crash, kill_after=6)
    assert_each_completed_once(replies, 30)
    assert not victim.alive
    if victim.pool_mode == "slot":  # Mosquitto 2.0.11: the survivors took over the victim's keys
        survivors = [m.agent for m in members if m is not victim]
        assert {m.pool_mode for m in members} == {"slot"}
        assert wait_until(lambda: all(m.live_members == set(survivors) for m in members if m is not victim))
        moved = [r for r in replies if pools.claim(r.task_id, names) == victim.agent and r.responder != victim.agent]
        assert moved, "no task of the dead member was answered by another member"
        assert all(r.responder == pools.claim(r.task_id, survivors) for r in moved)

    # the pool still serves new work, with the victim's share
    later = [req.send(f"pool:{pool}", f"{TICKET}\nReproduction: after {i}") for i in range(6)]
    assert [r.state for r in later] == [COMPLETED] * 6
    assert victim.agent not in {r.responder for r in later}


def test_a_pool_keeps_serving_when_a_member_process_is_killed(broker_url):
    """Three ``serve analyst --pool`` processes (one member each, names of their own); one is killed
    with SIGKILL in the middle of 30 concurrent tasks."""
    unit, pool = uid("pk"), uid("analysts")
    env = {**os.environ, "A2A_BROKER_URL": broker_url, "PYTHONUNBUFFERED": "1"}
    procs = [subprocess.Popen(CLI + ["serve", "analyst", "--pool", pool, "--unit", unit, "--pace", "0.03"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        lines = [p.stdout.readline() for p in procs]
        assert all("serving pool" in line for line in lines), [p.stderr.read() for p in procs]
        names = [line.split()[0] for line in lines]
        assert len(set(names)) == 3 and all(n.startswith(f"analyst-{pool}-") for n in names)
        victim = procs[1]
        req = Requester(uid("coord"), unit=unit, broker=broker_url, retry=SHORT)

        def kill() -> None:
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)

        replies = run_pool(req, pool, 30, kill, kill_after=6)
        assert_each_completed_once(replies, 30)
        assert victim.returncode == -signal.SIGKILL
        assert {r.responder for r in replies} <= set(names)
        later = [req.send(f"pool:{pool}", f"{TICKET}\nReproduction: after {i}") for i in range(6)]
        assert [r.state for r in later] == [COMPLETED] * 6
        assert names[1] not in {r.responder for r in later}
    finally:
        stop_processes(procs)


def test_a_pool_learns_its_members_again_after_a_broker_restart(private_broker):
    """The broker restarts without persistence; one member dies while it is down (no will can be
    sent then). The others forget what they knew, learn again who is there, and serve everything."""
    url, pool = private_broker.url, uid("analysts")
    analyst = Analyst(pace=0.01)
    members = [Responder(f"analyst-{i}", analyst, pool=pool, broker=url) for i in (1, 2, 3)]
    survivors, lost = members[:2], members[2]
    down = threading.Thread(target=private_broker.restart, kwargs={"pause": 1.0})
    down.start()
    assert wait_until(lambda: not lost.session.connected, timeout=5)
    lost.session.kill_socket()  # gone for good while the broker was down
    down.join(timeout=20)
    assert all(m.session.wait_connected(10) for m in survivors)
    if lost.pool_mode == "slot":
        names = {m.agent for m in survivors}
        assert wait_until(lambda: all(m.live_members == names for m in survivors), timeout=5), \
            [m.live_members for m in survivors]
    req = Requester(uid("coord"), broker=url, retry=SHORT)
    replies = [req.send(f"pool:{pool}", f"{TICKET}\nReproduction: after the restart {i}") for i in range(9)]
    assert [r.state for r in replies] == [COMPLETED] * 9
    assert {r.responder for r in replies} == {m.agent for m in survivors}
