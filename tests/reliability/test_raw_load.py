"""The load run's shape in bare paho (``benchmarks.raw_load``): the floor the bench compares the kit's
load run with. Every reply reaches its own task's queue; two runs on one broker never share topics."""
from __future__ import annotations

import threading

import pytest

from a2a_nb.mqtt.broker import resolve
from benchmarks.raw_load import raw_load_rate


def test_every_task_gets_all_its_replies(broker_url):
    result = raw_load_rate(resolve(broker_url), tasks=12, events=5)
    assert result["tasks"] == 12
    assert result["items"] == 12 * 7 and result["lost"] == 0  # events + snapshot + final status, as the kit's run
    assert result["extra"] == 0
    assert result["per_s"] > 0


def test_two_runs_at_once_do_not_cross(broker_url):
    ep = resolve(broker_url)
    results: list[dict] = []
    runs = [threading.Thread(target=lambda: results.append(raw_load_rate(ep, tasks=8, events=3))) for _ in range(2)]
    for t in runs:
        t.start()
    for t in runs:
        t.join(60)
    assert [(r["items"], r["extra"]) for r in results] == [(8 * 5, 0), (8 * 5, 0)]  # shared topics: each request answered twice


def test_bad_sizes_are_refused(broker_url):
    with pytest.raises(ValueError, match="tasks must be >= 1"):
        raw_load_rate(resolve(broker_url), tasks=0)


def test_responders_apart_answer_every_request_once(broker_url):
    result = raw_load_rate(resolve(broker_url), tasks=10, events=3, apart=True)
    assert result["apart"] is True
    assert (result["items"], result["lost"], result["extra"]) == (10 * 5, 0, 0)
    assert result["requests"] == 10  # counted by the child, reported as it ended


def test_the_raw_loop_apart_delivers_every_message(broker_url):
    from benchmarks.raw_floor import stream_rate_apart

    result = stream_rate_apart(resolve(broker_url), n=500)
    assert result["n"] == 500 and result["per_s"] > 0


def test_a_child_that_cannot_play_its_role_is_named(broker_url):
    from benchmarks.apart import Apart

    with pytest.raises(RuntimeError, match="benchmark child 'juggler' did not start"):
        Apart("juggler", broker_url)
