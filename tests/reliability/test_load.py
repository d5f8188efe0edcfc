"""Load: 50 concurrent streaming tasks x 20 events through a desk and a pool of 4 analysts.

Nothing may be lost and nothing may reach the wrong stream; every task runs exactly once.
(``benchmarks.load.run_load`` defaults to 200 tasks; the bench command runs that size.)
"""
from __future__ import annotations

from benchmarks.load import format_load, run_load


def test_fifty_concurrent_streams_lose_nothing_and_never_cross(broker_url):
    result = run_load(broker_url, tasks=50, events=20, pool_members=4, timeout_s=90)
    print("\n" + format_load(result))
    assert result["errors"] == []
    assert result["completed"] == 50 and result["lost_tasks"] == 0
    assert result["lost_events"] == 0
    assert result["cross_talk"] == 0
    assert result["executions"] == 50  # no task ran twice
    assert result["via"] == {"desk": 25, "pool": 25}
    # the desk handed its tasks over: every answer came from a pool member
    assert set(result["answered_by"]) <= {f"analyst-{i}" for i in range(1, 5)}
    assert result["latency_ms"]["n"] == 50 and result["latency_ms"]["p99"] > 0


def test_with_the_agents_in_a_process_of_their_own_nothing_is_lost_either(broker_url):
    result = run_load(broker_url, tasks=20, events=5, pool_members=4, timeout_s=90, apart=True)
    assert result["agents_apart"] is True and result["errors"] == []
    assert (result["completed"], result["lost_events"], result["cross_talk"], result["duplicates"]) == (20, 0, 0, 0)
    assert result["executions"] == 20  # counted in the agents' process, reported as it ended
    assert result["pool_mode"] in ("shared", "slot")
