"""The record/lint sub-commands (through their own parser) and the benchmarks (small sizes)."""
from __future__ import annotations

import argparse
import threading
import time

import pytest

from a2a_nb.commands.common import UsageError
from a2a_nb.mqtt.session import Session
from a2a_nb.protocol.packet import MqttMessage
from benchmarks.traffic import bench_load_traffic, bench_recorder, synthetic_records
from a2a_nb.commands import traffic as traffic_commands
from a2a_nb.traffic.records import read_records, write_records

from ._traffic import C1, T1, Traffic, clean_conversation
from tests.helpers import uid


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m a2a_nb")
    traffic_commands.register(p.add_subparsers(dest="command", required=True))
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    return args.func(args)


def test_record_for_n_seconds(broker_url, tmp_path, capsys):
    unit = uid("cli")
    out = tmp_path / "cli.jsonl"
    args = parse(["record", "--out", str(out), "--seconds", "0.8", "--broker", broker_url,
                  "--filter", f"$a2a/v1/+/acme/{unit}/#"])

    def publish():
        time.sleep(0.3)
        s = Session("acme", unit, "pub", broker=broker_url)
        for k in range(5):
            s.publish(MqttMessage(f"$a2a/v1/event/acme/{unit}/pub", b'{"k": %d}' % k))
        s.close()

    t = threading.Thread(target=publish)
    t.start()
    assert run(args) == 0
    t.join()
    assert f"recorded 5 messages to {out}" in capsys.readouterr().out
    assert len(read_records(out)) == 5


def test_record_reports_a_bad_filter(tmp_path):
    args = parse(["record", "--out", str(tmp_path / "x.jsonl"), "--seconds", "0.1", "--filter", "#"])
    with pytest.raises(UsageError, match=r"must start with '\$a2a/'") as refused:
        run(args)
    assert refused.value.status == 2  # what cli.main exits with, after printing "error: <message>"


def test_lint_exit_codes(tmp_path, capsys):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_records(clean_conversation().records, good)
    tr = Traffic()
    tr.send("ticket-desk", T1, C1, reply=None)
    write_records(tr.records, bad)
    assert run(parse(["lint", str(good)])) == 0
    assert run(parse(["lint", str(bad), "--no-schema"])) == 1
    out = capsys.readouterr().out
    assert "request-reply-path" in out and "FAIL" in out
    assert run(parse(["lint", str(tmp_path / "none.jsonl")])) == 2


def test_bench_load_traffic_small():
    r = bench_load_traffic(20_000, million_budget_s=0)
    assert r["n"] == 20_000 and r["msgs_per_s"] > 0 and r["million_measured"] is False
    assert r["million_seconds"] > 0
    # the figure is a ratio against reading the same file plainly (json.loads + pd.DataFrame), same run
    assert r["plain_read_msgs_per_s"] > 0 and r["plain_read_ratio"] > 0 and r["target_plain_read_ratio"] == 0.5
    assert r["meets_target"] == (r["plain_read_ratio"] >= 0.5)


def test_synthetic_records_are_clean_traffic():
    from a2a_nb.traffic.lint import check_traffic

    recs = synthetic_records(400)
    assert len(recs) == 400 and synthetic_records(400) == recs
    f = check_traffic(recs)
    assert f.empty, f


def test_bench_recorder_loses_nothing(broker_url):
    r = bench_recorder(broker_url, n=2000, idle_s=0.2)
    assert r["lost"] == 0 and r["duplicates"] == 0 and r["received"] == 2000 and r["refused"] == 0
    assert r["record_rate"] > 0
