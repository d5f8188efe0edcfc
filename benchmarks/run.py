"""``python -m benchmarks``: the kit measured against raw paho-mqtt on the same broker, same run.

Ratios, not absolute times, are what the targets speak of: the kit's SendMessage round trip within
1.5× the raw request/reply floor (and under 2 ms on loopback), stream events per second at least
0.6× a raw publish/subscribe loop.

Resources: a burst of SendMessage requests against a ticket desk (bounded: completions or -32004,
threads and fds before/after) and many echo round trips (RSS before/after: the task store and the
routing table are bounded, so memory levels off); see ``load.run_desk_burst`` / ``load.run_echo_memory``.

Bridged brokers: the same round trip on one broker and across a Mosquitto bridge (``bridged.py``).

The official a2a-sdk over MQTT: its ``Client`` and a served ``AgentExecutor`` against the kit's own
requester and responder (``sdk.py``).
"""
from __future__ import annotations

import statistics
import time
from contextlib import closing
from typing import Callable, Optional

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder
from a2a_nb.mqtt.broker import resolve

from . import bridge as bridge_bench
from . import bridged as bridged_bench
from .kit_echo import BENCH_RETRY, KitEcho
from . import probe as probe_bench
from . import raw_floor
from . import raw_load
from . import sdk as sdk_bench
from . import traffic as traffic_bench
from . import ubsp as ubsp_bench
from .load import format_load, format_resources, run_desk_burst, run_echo_memory, run_load

SEND_TARGET = 1.5  # kit SendMessage round trip at most this many times the raw request/reply floor
STREAM_TARGET = 0.6  # kit stream events/s at least this fraction of the raw publish loop
LOAD_TARGET = 0.5  # issue 26: the load run's items/s at least this fraction of the raw publish loop
SHAPE_TARGET = 0.9  # issue 40: the load run at least this fraction of bare paho in the same shape (one process; apart)
APART_LOOP_TARGET = 0.5  # issue 40: the load run with its agents apart at least this fraction of the raw publish loop


def paired_round_trips(ep, url: str, n: int = 1000, batch: int = 50, warmup: int = 50) -> tuple[dict, dict]:
    """``n`` raw and ``n`` kit round trips, both set up at once and run in alternating batches of
    ``batch``: a machine that gets busier or quieter during the run slows both alike."""
    raws: list[float] = []
    kits: list[float] = []
    with closing(raw_floor.RawEcho(ep)) as raw, closing(KitEcho(url)) as kit:  # raw closes even if kit fails to start
        for _ in range(warmup):
            raw.round_trip()
            kit.round_trip()
        while len(raws) < n:
            k = min(batch, n - len(raws))
            raws += [raw.round_trip() for _ in range(k)]
            kits += [kit.round_trip() for _ in range(k)]
    return raw_floor.percentiles(raws), raw_floor.percentiles(kits)


def kit_stream_rate(url: str, n: int = 5000) -> dict:
    """A stream of ``n`` items: 120-character chunks that differ, as real output does (a chunk repeating
    an earlier one byte for byte would carry ``a2a-stream-seq``, see ``protocol/streams.py``)."""
    def firehose(ctx):
        for i in range(n - 2):
            ctx.artifact("bulk", f"chunk {i:06d} ".ljust(120, "x"), append=i > 0)
        ctx.complete("done")

    src = Responder("bench-stream", firehose, org="bench", unit="kit", broker=url)
    req = Requester("bench-sink", org="bench", unit="kit", broker=url, retry=BENCH_RETRY)
    try:
        t, cpu = time.perf_counter(), time.process_time()
        count = sum(1 for _ in req.stream("bench-stream", "go"))
        elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    finally:
        req.close()
        src.stop()
    return {"n": count, "seconds": elapsed, "per_s": count / elapsed, "cpu_us": raw_floor.cpu_us(cpu, count)}


def load_runs(ep, url: str, tasks: int, stream_n: int, raw_loop_per_s: float, say: Callable[[str], None]) -> dict:
    """The load run (``tasks`` streams of 20 events through a desk and a pool of 4) twice: everything in
    this process, then with the agents in a process of their own (``apart``, as served agents run). Each
    is preceded by its raw paho floor in the same shape (``raw_load``); the raw publish loop is also run
    with its publisher apart. Ratios: against the raw loop of this process (``raw_loop_per_s``), the raw
    loop apart, and the raw shape."""
    out: dict = {}
    rl = out["raw_load"] = raw_load.raw_load_rate(ep, tasks=tasks, events=20)
    load = out["load"] = run_load(url, tasks=tasks, events=20, pool_members=4)
    out["load_ratio"] = load["events_per_s"] / raw_loop_per_s
    out["load_shape_ratio"] = load["events_per_s"] / rl["per_s"]
    say(format_load(load))
    say(f"  {out['load_ratio']:.2f}× the raw publish loop (target ≥ {LOAD_TARGET}×); raw paho in the same shape "
        f"{rl['per_s']:,.0f} items/s ({rl['per_s'] / raw_loop_per_s:.2f}× the loop, {rl['lost']} lost): "
        f"the kit {out['load_shape_ratio']:.2f}× that "
        f"(target ≥ {SHAPE_TARGET}×: {_met(out['load_shape_ratio'] >= SHAPE_TARGET)})")
    loop = out["raw_stream_apart"] = raw_floor.stream_rate_apart(ep, stream_n)
    rla = out["raw_load_apart"] = raw_load.raw_load_rate(ep, tasks=tasks, events=20, apart=True)
    la = out["load_apart"] = run_load(url, tasks=tasks, events=20, pool_members=4, apart=True)
    out["load_apart_ratio"] = la["events_per_s"] / raw_loop_per_s
    out["load_apart_vs_loop_apart"] = la["events_per_s"] / loop["per_s"]
    out["load_apart_shape_ratio"] = la["events_per_s"] / rla["per_s"]
    say(f"load with the agents in a process of their own: {la['events_per_s']:,.0f} items/s, completed "
        f"{la['completed']}/{la['tasks']}, lost events {la['lost_events']}, cross-talk {la['cross_talk']}, "
        f"executions {la['executions']}")
    say(f"  {out['load_apart_ratio']:.2f}× the raw publish loop (target ≥ {APART_LOOP_TARGET}×: "
        f"{_met(out['load_apart_ratio'] >= APART_LOOP_TARGET)}); {out['load_apart_vs_loop_apart']:.2f}× the raw loop "
        f"with its publisher apart ({loop['per_s']:,.0f} msg/s); raw paho in the same shape apart "
        f"{rla['per_s']:,.0f} items/s ({rla['lost']} lost): the kit {out['load_apart_shape_ratio']:.2f}× that "
        f"(target ≥ {SHAPE_TARGET}×: {_met(out['load_apart_shape_ratio'] >= SHAPE_TARGET)})")
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


def _interleaved(rounds: int, raw, kit) -> tuple[list[dict], list[dict]]:
    """Alternate raw and kit runs so a busy machine slows both alike; the caller takes medians."""
    raws, kits = [], []
    for _ in range(rounds):
        raws.append(raw())
        kits.append(kit())
    return raws, kits


def _median_run(runs: list[dict], key: str) -> dict:
    return sorted(runs, key=lambda r: r[key])[len(runs) // 2]


def run(url: Optional[str] = None, n: int = 1000, stream_n: int = 5000, rounds: int = 3, load_tasks: int = 200,
        burst: int = 400, echo_n: int = 5000, bridged_n: int = 100, say: Callable[[str], None] = print) -> dict:
    ep = resolve(url)
    url = ep.url_with_secret
    say(f"broker {ep.url}; {n} raw and {n} kit round trips in alternating batches, then {rounds} interleaved "
        f"rounds of {stream_n} stream events")
    results: dict = {"broker": ep.url, "rounds": rounds}
    results["raw_request_reply"], results["kit_send"] = paired_round_trips(ep, url, n)
    ratio = results["kit_send"]["median_ms"] / results["raw_request_reply"]["median_ms"]
    results["send_ratio"] = ratio
    say(f"raw paho request/reply     median {results['raw_request_reply']['median_ms']:.3f} ms, "
        f"p99 {results['raw_request_reply']['p99_ms']:.3f} ms")
    say(f"kit send → echo agent      median {results['kit_send']['median_ms']:.3f} ms, "
        f"p99 {results['kit_send']['p99_ms']:.3f} ms  ({ratio:.2f}× raw; target ≤ {SEND_TARGET}× and < 2 ms)")
    raws, kits = _interleaved(rounds, lambda: raw_floor.stream_rate(ep, stream_n), lambda: kit_stream_rate(url, stream_n))
    results["raw_stream"] = _median_run(raws, "per_s")
    results["kit_stream"] = _median_run(kits, "per_s")
    sratio = results["kit_stream"]["per_s"] / results["raw_stream"]["per_s"]
    results["stream_ratio"] = sratio
    say(f"raw paho publish loop      {results['raw_stream']['per_s']:,.0f} msg/s")
    say(f"kit stream events          {results['kit_stream']['per_s']:,.0f} events/s  "
        f"({sratio:.2f}× raw; target ≥ {STREAM_TARGET}×)")
    cpu = results["stream_cpu_us"] = {"raw": statistics.median(r["cpu_us"] or 0.0 for r in raws),
                                      "kit": statistics.median(k["cpu_us"] or 0.0 for k in kits)}
    if cpu["kit"]:
            say(f"  CPU of this process per event, medians: raw {cpu['raw']:.0f} µs, kit {cpu['kit']:.0f} µs "
            f"({cpu['raw'] / cpu['kit']:.2f}× raw's rate if CPU alone decided it)")
    pc = results["paho_costs"] = raw_floor.paho_costs()  # what paho's public API costs every message, kit or raw
    say(f"paho Properties per message pack + read µs: stream item {pc['pack_item_us']:.1f} + {pc['read_item_us']:.1f}, "
        f"numbered item {pc['pack_numbered_item_us']:.1f} + {pc['read_numbered_item_us']:.1f}, request "
        f"{pc['pack_request_us']:.1f} + {pc['read_request_us']:.1f}; Properties() alone {pc['new_properties_us']:.1f}")
    rec = results["recorder"] = traffic_bench.bench_recorder(url)
    say(f"recorder at full speed     {rec['received']:,} of {rec['n']:,} recorded, {rec['lost']} lost, "
        f"{rec['end_to_end_rate']:,} msg/s end to end (target: 0 lost)")
    lt = results["load_traffic"] = traffic_bench.bench_load_traffic()
    say(f"load_traffic               {lt['msgs_per_s']:,.0f} messages/s from a recording into the DataFrame, "
        f"{lt['plain_read_ratio']:.2f}× a plain json.loads + pd.DataFrame read of the same file "
        f"({lt['plain_read_msgs_per_s']:,}/s; target ≥ {lt['target_plain_read_ratio']}×); "
        f"1,000,000 messages in {lt['million_seconds']:.1f} s")
    if load_tasks:
        results.update(load_runs(ep, url, load_tasks, stream_n, results["raw_stream"]["per_s"], say))
    if burst:  # resources: a bounded desk under a burst, memory over many echo requests
        results["desk_burst"] = run_desk_burst(url, requests=burst)
        say(format_resources(burst=results["desk_burst"]))
    if echo_n:
        results["echo_memory"] = run_echo_memory(url, n=echo_n)
        say(format_resources(echo=results["echo_memory"]))
    pr = results["probe"] = probe_bench.bench_probe(url)  # the Core conformance probe against local agents
    say(probe_bench.format_probe(pr))
    br = results["bridge"] = bridge_bench.bench_bridge(url, n=min(n, 300), rounds=rounds)  # HTTP → bridge → MQTT
    say(bridge_bench.format_bridge(br))
    ub = results["ubsp"] = ubsp_bench.bench_ubsp(url, n=min(n, 300))  # the same round trip sealed end to end
    say(ubsp_bench.format_ubsp(ub))
    sd = results["sdk"] = sdk_bench.bench_sdk(url, n=min(n, 300))  # the official a2a-sdk's client and executors
    say(sdk_bench.format_sdk(sd))
    if bridged_n:  # two brokers of its own, B bridged to A: the round trip on one broker and across the bridge
        bd = results["bridged"] = bridged_bench.bench_bridged(n=bridged_n)
        say(bridged_bench.format_bridged(bd))
    results["targets_met"] = {"send_ratio": ratio <= SEND_TARGET, "send_under_2ms": results["kit_send"]["median_ms"] < 2.0,
                              "stream_ratio": sratio >= STREAM_TARGET, "recorder_lost_0": rec["lost"] == 0,
                              "load_traffic_ratio": lt["meets_target"], "ubsp_ratio": ub["meets_target"],
                              "sdk_ratio": sd["meets_target"]}
    if load_tasks:
        results["targets_met"]["load_ratio"] = results["load_ratio"] >= LOAD_TARGET
        results["targets_met"]["load_shape_ratio"] = results["load_shape_ratio"] >= SHAPE_TARGET
        results["targets_met"]["load_apart_shape_ratio"] = results["load_apart_shape_ratio"] >= SHAPE_TARGET
        results["targets_met"]["load_apart_ratio"] = results["load_apart_ratio"] >= APART_LOOP_TARGET
    return results
