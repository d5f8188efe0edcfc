"""The command line as a user runs it: serve echo / ticket-desk, send, story, bench (real broker)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

CLI = [sys.executable, "-m", "a2a_nb"]


def run(args, env, timeout=60):
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def env(broker_url):
    e = dict(os.environ)
    e["A2A_BROKER_URL"] = broker_url
    return e


@pytest.fixture
def served(env):
    procs = []

    def serve(*args, unit="cli"):
        p = subprocess.Popen(CLI + ["serve", *args, "--unit", unit], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        procs.append(p)
        line = p.stdout.readline()
        assert "serving" in line, p.stderr.read()
        return p

    yield serve
    for p in procs:
        p.terminate()
        assert p.wait(timeout=15) == 0


def test_serve_echo_and_send_print_reply_state_and_round_trip(served, env):
    served("echo", unit="cli1")
    out = run(["send", "echo", "hello there", "--unit", "cli1"], env)
    assert out.returncode == 0, out.stderr
    assert "echo: hello there" in out.stdout
    assert "round trip" in out.stdout and "ms" in out.stdout


def test_serve_ticket_desk_and_send_a_ticket(served, env):
    served("ticket-desk", "--handover", "first-reply", unit="cli2")
    out = run(["send", "ticket-desk", "Analyze ticket TCK-4821", "--unit", "cli2"], env)
    assert out.returncode == 0, out.stderr
    assert "input-required" in out.stdout
    assert "routing: handover acme/cli2/ticket-desk → acme/cli2/analyst-" in out.stdout
    streamed = run(["send", "ticket-desk", "Analyze ticket TCK-4821\nReproduction: refresh the page twice",
                    "--unit", "cli2", "--stream"], env)
    assert streamed.returncode == 0, streamed.stderr
    assert "artifactUpdate" in streamed.stdout
    assert any(line.startswith("task ") and line.endswith("completed") for line in streamed.stdout.splitlines())


def test_send_to_nobody_fails_with_exit_1(env):
    out = run(["send", "nobody-home", "hi", "--unit", "cli3", "--timeout", "0.3"], env)
    assert out.returncode == 1 and "no card for nobody-home in acme/cli3" in out.stderr


def test_story_exit_code_and_recording(tmp_path, env):
    rec = tmp_path / "story.jsonl"
    out = run(["story", "--scenario", "no-handover", "--record", str(rec), "--pace", "0"], env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK  no-handover" in out.stdout
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert any(r["topic"].startswith("$a2a/v1/request/acme/support/ticket-desk") for r in lines)
    lint = run(["lint", str(rec)], env)
    assert lint.returncode == 0, lint.stdout


def test_unknown_scenario_is_refused(env):
    out = run(["story", "--scenario", "nope"], env)
    assert out.returncode == 2 and "unknown scenario" in out.stderr


def test_bench_json_reports_ratios(env):
    out = run(["bench", "--json", "-n", "50", "--stream-n", "300", "--rounds", "1", "--load-tasks", "20"], env, timeout=240)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["kit_send"]["n"] == 50 and res["raw_request_reply"]["n"] == 50
    assert res["send_ratio"] > 0 and res["stream_ratio"] > 0
    assert res["kit_stream"]["n"] == 300
    assert set(res["targets_met"]) >= {"send_ratio", "send_under_2ms", "stream_ratio", "recorder_lost_0"}
    assert res["recorder"]["lost"] == 0
    assert res["load"]["tasks"] == 20 and res["load"]["lost_tasks"] == 0 and res["load"]["cross_talk"] == 0


def test_send_continues_an_interrupted_task_with_task(served, env):
    served("ticket-desk", "--pace", "0.01", unit="cli6")
    first = run(["send", "ticket-desk", "Analyze ticket TCK-4821", "--unit", "cli6"], env)
    assert first.returncode == 0, first.stderr
    task_id = next(line.split()[1].rstrip(":") for line in first.stdout.splitlines() if line.startswith("task "))
    assert f"--task {task_id}" in first.stdout  # the output says how to answer
    answer = run(["send", "ticket-desk", "pay by card, then reload the order page", "--unit", "cli6",
                  "--task", task_id, "--stream"], env)
    assert answer.returncode == 0, answer.stderr
    assert f"task {task_id}: completed" in answer.stdout
    chunks = [line for line in answer.stdout.splitlines() if "artifactUpdate" in line]
    assert len(chunks) == 4 and '"rootCause"' in chunks[0] and "Root cause" in chunks[-1]  # each chunk in full


def test_story_does_not_knock_a_served_desk_off_the_broker(private_broker):
    env = dict(os.environ, A2A_BROKER_URL=private_broker.url)
    desk = subprocess.Popen(CLI + ["serve", "ticket-desk", "--pace", "0.01"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in desk.stdout.readline()
        refused = run(["story", "--scenario", "happy"], env)
        assert refused.returncode == 1 and "ticket-desk already serves this broker" in refused.stderr
        assert "--served" in refused.stderr
        told = run(["story", "--scenario", "happy", "--served"], env)
        assert told.returncode == 0, told.stdout + told.stderr
        assert desk.poll() is None  # still serving, never taken over
    finally:
        desk.terminate()
        assert desk.wait(timeout=15) == 0


def test_send_says_when_it_started_a_private_broker():
    env = {k: v for k, v in os.environ.items() if k != "A2A_BROKER_URL"}
    out = run(["send", "echo", "hi", "--timeout", "0.5"], env)
    assert out.returncode == 1  # nobody serves on a broker of its own
    assert "A2A_BROKER_URL is not set, so this command started a private Mosquitto" in out.stderr
