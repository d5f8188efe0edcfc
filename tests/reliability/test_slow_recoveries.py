"""Issue [14] item 7: slow recoveries made visible, and shorter where the requester can know better.

``send --stream`` while its broker is killed with ``kill -9`` (a broker each test starts itself, never
the session broker), restarted, or while the agent is killed and restarted without ``--store``.
Before: 30-34 s of silence, then one line (``lost the broker``, ``Task not found``, or the result).
Now ``send`` says on stderr what happens while it waits (``broker gone ... reconnecting (attempt 1)``,
``broker back after ...``, ``its card says offline``, ``asking ... (GetTask, recovery 1 of 3)``,
each unanswered attempt), recovers as soon as the agent announces itself again instead of at the
stream idle timeout, and ends within the worst case the retry profile allows (docs/command-line.md,
"While send waits").
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk

CLI = [sys.executable, "-m", "a2a_nb"]
TICKET = "TCK-4821: order status not updating after checkout\nReproduction: pay by card, then open the order page"


class Command:
    """A command in the background; its stdout and stderr lines are collected as they come."""

    def __init__(self, args: list[str], env: dict):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(CLI + args, env=dict(env, PYTHONUNBUFFERED="1"), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(s, into), daemon=True)
                         for s, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self._readers:
            t.start()

    def _read(self, stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def wait_for(self, text: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.out + self.err):
                return
            if self.proc.poll() is not None and not any(t.is_alive() for t in self._readers):
                break
            time.sleep(0.02)
        pytest.fail(f"{text!r} not printed; stdout: {''.join(self.out)}; stderr: {''.join(self.err)}")

    def end(self, timeout: float) -> tuple[int, float]:
        """Exit status and seconds since start; fails if the command is still running after ``timeout``."""
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"still running after {timeout} s; stderr: {''.join(self.err)}")
        for t in self._readers:
            t.join(5)
        return status, time.monotonic() - self.started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    @property
    def stderr(self) -> str:
        return "".join(self.err)


@pytest.fixture
def env(private_broker, tmp_path):
    return dict(os.environ, A2A_BROKER_URL=private_broker.url, XDG_STATE_HOME=str(tmp_path / "state"))


def kill_9(broker) -> None:
    broker.crash()  # SIGKILL: the broker dies without a word


def test_broker_killed_mid_stream_is_said_and_send_ends_within_the_profiles_worst_case(private_broker, env):
    retry = RetryProfile(reply_first_timeout_s=1.0, stream_idle_timeout_s=2.0)
    # broker gone: each GetTask attempt is refused at once, so only the backoffs add to the idle timeout
    worst = retry.stream_idle_timeout_s + sum(retry.backoff_bounds(i)[1] for i in range(1, retry.max_attempts))
    with TicketDesk(unit="kill-9", broker=private_broker.url, handover="none", pace=1.0):
        send = Command(["send", "ticket-desk", TICKET, "--stream", "--unit", "kill-9", "--timeout", "1",
                        "--idle-timeout", "2"], env)
        try:
            send.wait_for("working")
            killed = time.monotonic()
            kill_9(private_broker)
            status, _ = send.end(timeout=worst + 10)
        finally:
            send.stop()
    took = time.monotonic() - killed
    assert status == 1 and "Traceback" not in send.stderr, send.stderr
    assert took <= worst + 2.5, f"{took:.1f} s, the profile's worst case is {worst:.1f} s"
    err = send.stderr
    assert f"broker gone (connection lost): reconnecting to mqtt://127.0.0.1:{private_broker.port}" in err, err
    assert "(attempt 1) ..." in err
    assert "no stream item for 2 s (the stream idle timeout): asking ticket-desk for task" in err
    assert "(GetTask, recovery 1 of 3) ..." in err
    assert "attempt 1 to ticket-desk: not sent: no connection to the broker" in err
    assert f"error: lost the broker at mqtt://127.0.0.1:{private_broker.port}" in err


def test_broker_restarted_mid_stream_the_stream_recovers_without_waiting_its_idle_timeout(private_broker, env):
    with TicketDesk(unit="restart", broker=private_broker.url, handover="none", pace=0.5):
        send = Command(["send", "ticket-desk", TICKET, "--stream", "--unit", "restart"], env)
        try:
            send.wait_for("working")
            kill_9(private_broker)
            send.wait_for("broker gone (connection lost)")
            private_broker.restart(pause=0.5)  # same port; without persistence it forgot every card
            status, took = send.end(timeout=20)  # the stream idle timeout alone is 30 s
        finally:
            send.stop()
    assert status == 0, send.stderr
    assert "task " in send.out[-1] and ": completed;" in send.out[-1], send.out
    assert "broker back after" in send.stderr
    assert "ticket-desk: its card says online again" in send.stderr
    assert "ticket-desk announced itself again: asking ticket-desk for task" in send.stderr
    assert took < 15, took


def test_agent_restarted_without_its_store_is_said_at_once(env):
    desk = Command(["serve", "ticket-desk", "--unit", "amnesia", "--handover", "none", "--pace", "1"], env)
    again = None
    try:
        desk.wait_for("ticket-desk serving on")
        send = Command(["send", "ticket-desk", TICKET, "--stream", "--unit", "amnesia"], env)
        send.wait_for("working")
        desk.proc.kill()  # kill -9: the broker publishes the desk's last will
        desk.end(timeout=5)
        again = Command(["serve", "ticket-desk", "--unit", "amnesia", "--handover", "none"], env)
        status, took = send.end(timeout=20)  # the stream idle timeout alone is 30 s
    finally:
        desk.stop()
        if again is not None:
            again.stop()
    assert status == 1 and "Traceback" not in send.stderr, send.stderr
    assert "ticket-desk: its card says offline" in send.stderr
    assert "ticket-desk: its card says online again" in send.stderr
    assert "error: the agent answered error -32001 (TaskNotFound) when the stream was recovered" in send.stderr
    assert "hint: the agent no longer knows the task: it restarted without its tasks (`serve ticket-desk --store " \
           "FILE` keeps them across a restart)" in send.stderr
    assert took < 15, took
