"""Benchmarks of the traffic pipeline: is the recorder lossless, is ``load_traffic`` fast?

``bench_recorder`` publishes QoS 1 messages as fast as the kit's ``Session.publish_nowait`` allows
while a ``Recorder`` runs, then counts what arrived (target: nothing lost; the profile asks QoS 1
for requests and replies, QoS Guidance 1-3). ``bench_load_traffic`` feeds synthetic but realistic
records (cards, requests, streams with status and artifact updates, errors) to ``load_traffic``.
"""
from __future__ import annotations

import json
import random
import secrets
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Optional


ORG, UNIT = "acme", "support"


def synthetic_records(n: int, seed: int = 4821, t0: float = 1_700_000_000.0) -> list[dict[str, Any]]:
    """``n`` v1 records of plausible traffic: per task a SendStreamingMessage to one of a few
    agents, a Task snapshot, working, artifact chunks, a terminal state; some GetTask calls, error
    replies and retained cards. Deterministic for a given seed."""
    rng = random.Random(seed)
    agents = ["ticket-desk", "analyst-1", "analyst-2", "echo"]
    out: list[dict[str, Any]] = []
    t = t0

    def rec(topic, payload, *, rt=None, corr=None, props=(), retain=False, qos=1):
        nonlocal t
        t += 0.0005
        return {"v": 1, "t": t, "topic": topic, "qos": qos, "retain": retain, "response_topic": rt,
                "correlation": corr, "user_properties": [list(p) for p in props],
                "content_type": "application/json", "message_expiry": None, "payload_format": 1,
                "payload_json": payload, "payload_b64": None, "size": 200}

    for a in agents:
        card = {"name": a, "description": f"{a} of the synthetic recording", "version": "1.0.0",
                "supportedInterfaces": [{"url": f"$a2a/v1/request/{ORG}/{UNIT}/{a}", "protocolBinding": "urn:mqtt",
                                         "protocolVersion": "1.0"}],
                "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "rca", "name": "RCA", "description": "root cause", "tags": ["tickets"]}]}
        out.append(rec(f"$a2a/v1/discovery/{ORG}/{UNIT}/{a}", card, props=[("a2a-status", "online"),
                                                                              ("a2a-status-source", "agent")],
                       retain=True))
    reply = f"$a2a/v1/reply/{ORG}/{UNIT}/coordinator/{rng.getrandbits(64):016x}"
    k = 0
    while len(out) < n:
        k += 1
        agent = agents[k % len(agents)]
        task = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        ctx = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        corr = f"{rng.getrandbits(128):032x}"
        rid = f"r{k}"
        msg = {"messageId": f"coordinator-{k}", "contextId": ctx, "taskId": task, "role": "ROLE_USER",
               "parts": [{"text": "Why is TCK-4821 not updating after checkout?"}]}
        out.append(rec(f"$a2a/v1/request/{ORG}/{UNIT}/{agent}",
                       {"jsonrpc": "2.0", "id": rid, "method": "SendStreamingMessage", "params": {"message": msg}},
                       rt=reply, corr=corr))

        def item(result):  # no a2a-stream-seq: the kit numbers only an item that repeats an earlier one
            return rec(reply, {"jsonrpc": "2.0", "id": rid, "result": result}, corr=corr)

        status = {"state": "TASK_STATE_SUBMITTED", "timestamp": "2025-01-02T03:04:05.000Z"}
        out.append(item({"task": {"id": task, "contextId": ctx, "status": status, "history": [msg]}}))
        out.append(item({"statusUpdate": {"taskId": task, "contextId": ctx,
                                          "status": {"state": "TASK_STATE_WORKING"}}}))
        for c in range(rng.randint(1, 4)):
            art = {"artifactId": "report", "parts": [{"text": f"chunk {c}"}]}
            out.append(item({"artifactUpdate": {"taskId": task, "contextId": ctx, "artifact": art,
                                                "append": c > 0, "lastChunk": False}}))
        final = "TASK_STATE_COMPLETED" if k % 7 else "TASK_STATE_FAILED"
        out.append(item({"statusUpdate": {"taskId": task, "contextId": ctx, "status": {"state": final}}}))
        if k % 5 == 0:
            corr2 = f"{rng.getrandbits(128):032x}"
            out.append(rec(f"$a2a/v1/request/{ORG}/{UNIT}/{agent}",
                           {"jsonrpc": "2.0", "id": f"g{k}", "method": "GetTask", "params": {"id": task}},
                           rt=reply, corr=corr2))
            if k % 10 == 0:
                out.append(rec(reply, {"jsonrpc": "2.0", "id": f"g{k}", "error": {
                    "code": -32004, "message": "Responder temporarily unavailable",
                    "data": {"a2a_error": "responder_unavailable"}}}, corr=corr2))
            else:
                out.append(rec(reply, {"jsonrpc": "2.0", "id": f"g{k}", "result": {
                    "id": task, "contextId": ctx, "status": {"state": final}}}, corr=corr2))
    return out[:n]


PLAIN_READ_TARGET = 0.5  # load_traffic reads a recording file at least this fraction as fast as a plain read


def plain_read(path: Path) -> "Any":
    """The floor ``load_traffic`` is measured against: the same file read with ``json.loads`` per line
    into ``pd.DataFrame`` (no checks, no derived columns, no reply pairing)."""
    import pandas as pd

    with open(path, "rb") as fh:
        return pd.DataFrame([json.loads(line) for line in fh if line.strip()])


def bench_load_traffic(n: int = 50_000, seed: int = 4821, million_budget_s: float = 10.0,
                       repeats: int = 3) -> dict[str, Any]:
    """Time ``load_traffic`` on ``n`` synthetic records written as a recording file (record generation
    not timed), beside a plain read of the same file (``plain_read``) in the same run; the median of
    ``repeats`` interleaved timings each, as one sub-second timing on a shared machine is mostly noise.

    Also loads 1,000,000 records when the measured rate says it takes under ``million_budget_s``
    seconds; otherwise reports the extrapolated time (``million_measured`` False).
    """
    from a2a_nb.traffic.frame import load_traffic
    from a2a_nb.traffic.records import write_records

    recs = synthetic_records(n, seed)
    load_traffic(recs[:2000])  # warm-up (imports, caches)
    with tempfile.TemporaryDirectory(prefix="a2a-bench-traffic-") as folder:
        path = Path(folder) / "traffic.jsonl"
        write_records(recs, path)
        timings, plain = [], []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            df = load_traffic(path)
            timings.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plain_read(path)
            plain.append(time.perf_counter() - t0)
    secs, plain_secs = statistics.median(timings), statistics.median(plain)
    rate = n / secs if secs > 0 else float("inf")
    ratio = plain_secs / secs if secs > 0 else float("inf")
    out: dict[str, Any] = {"n": n, "seconds": round(secs, 4), "msgs_per_s": round(rate), "columns": df.shape[1],
                           "plain_read_msgs_per_s": round(n / plain_secs) if plain_secs > 0 else None,
                           "plain_read_ratio": round(ratio, 3), "target_plain_read_ratio": PLAIN_READ_TARGET,
                           "meets_target": ratio >= PLAIN_READ_TARGET}
    m = 1_000_000
    estimate = m / rate
    if n >= m:
        out.update(million_seconds=round(secs * m / n, 3), million_measured=n == m)
    elif estimate < million_budget_s:
        big = recs * (m // n) + recs[: m % n]
        del df
        t0 = time.perf_counter()
        load_traffic(big)
        out.update(million_seconds=round(time.perf_counter() - t0, 3), million_measured=True)
    else:
        out.update(million_seconds=round(estimate, 3), million_measured=False)
    return out


def bench_recorder(broker_url: Optional[str] = None, n: int = 20_000, payload_size: int = 200,
                   idle_s: float = 1.0, timeout_s: float = 60.0, qos: int = 1) -> dict[str, Any]:
    """Publish ``n`` QoS 1 messages with one ``Session.publish_nowait`` publisher while a
    ``Recorder`` runs; report messages lost (target 0), duplicates and rates.

    Publisher and recorder share this process (and its GIL), so the rate is a floor: a recorder
    in its own process keeps up with a QoS 1 publisher's PUBACK pace and records well over
    10,000 QoS 0 messages per second.

    The messages go to a bench agent's event topic (``$a2a/v1/event/acme/support/bench-...``), so
    no agent of a running lesson reacts to them.
    """
    from a2a_nb.mqtt.session import Session
    from a2a_nb.protocol.packet import MqttMessage
    from a2a_nb.traffic.recorder import Recorder

    tag = secrets.token_hex(3)
    topic = f"$a2a/v1/event/{ORG}/{UNIT}/bench-{tag}"
    rec = Recorder(broker=broker_url, org_filter=f"$a2a/v1/event/{ORG}/{UNIT}/bench-{tag}").start()
    pub = Session(ORG, UNIT, f"bench-pub-{tag}", broker=broker_url)
    try:
        pad = "x" * max(0, payload_size - 40)
        msgs = [MqttMessage(topic, f'{{"seq":{k},"pad":"{pad}"}}'.encode(), qos=qos, payload_format=1,
                            content_type="application/json", correlation_data=k.to_bytes(4, "big"))
                for k in range(n)]
        t0 = time.perf_counter()
        pending = [pub.publish_nowait(m) for m in msgs]
        t_published = time.perf_counter() - t0
        refused = 0
        for p in pending:
            if not p.result(timeout=timeout_s).accepted:
                refused += 1
        t_acked = time.perf_counter() - t0
        rec.wait_for(n, timeout=timeout_s)
        t_received = time.perf_counter() - t0
        rec.wait_idle(idle_s, timeout=timeout_s)
    finally:
        pub.close()
        rec.stop()
    seqs = [r["payload_json"]["seq"] for r in rec.records if isinstance(r.get("payload_json"), dict)]
    got = set(seqs)
    lost = n - len(got & set(range(n)))
    times = [r["t"] for r in rec.records]
    span = (max(times) - min(times)) if len(times) > 1 else 0.0
    return {
        "n": n, "received": len(seqs), "lost": lost, "duplicates": len(seqs) - len(got), "refused": refused,
        "publish_s": round(t_published, 3), "all_acked_s": round(t_acked, 3), "all_received_s": round(t_received, 3),
        "publish_rate": round(n / t_published) if t_published else None,
        "record_rate": round(len(seqs) / span) if span else None,
        "end_to_end_rate": round(len(seqs) / t_received) if t_received else None,
        "payload_size": payload_size, "qos": qos,
    }
