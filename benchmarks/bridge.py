"""The bridge's round trip next to the MQTT one: HTTP client → bridge → MQTT agent → back.

``bench_bridge`` serves echo (as ``serve echo`` runs it, with its card) in a unit of its own, puts a
``Bridge`` in front of it and measures, in interleaved rounds, SendMessage round trips straight over
MQTT (the kit's Requester, as a notebook sends) and through the bridge (one keep-alive HTTP client
posting JSON-RPC). The difference is what the HTTP hop costs: an HTTP request and response on
loopback, JSON-RPC parsing and the params check, the Task.id rule, the hand-off to a worker thread,
then the same MQTT round trip the bridge's own Requester makes.
"""
from __future__ import annotations

import time
import uuid

import httpx

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.bridge import Bridge
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import echo_card, echo_handler

from . import raw_floor

UNIT = "bench-bridge"
RETRY = RetryProfile(reply_first_timeout_s=5, stream_idle_timeout_s=10)


def _mqtt_round_trips(req: Requester, n: int, warmup: int) -> dict:
    samples = []
    for i in range(n + warmup):
        t = time.perf_counter()
        req.send("echo", "ping")
        if i >= warmup:
            samples.append(time.perf_counter() - t)
    return raw_floor.percentiles(samples)


def _http_round_trips(http: httpx.Client, url: str, n: int, warmup: int) -> dict:
    samples = []
    for i in range(n + warmup):
        body = {"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {"message": {
            "role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "ping"}]}}}
        t = time.perf_counter()
        reply = http.post(url, json=body)
        if i >= warmup:
            samples.append(time.perf_counter() - t)
        if "result" not in reply.json():
            raise RuntimeError(f"the bridge answered an error: {reply.text}")
    return raw_floor.percentiles(samples)


def bench_bridge(url: str, n: int = 300, warmup: int = 30, rounds: int = 3) -> dict:
    """Median round trips (ms) over MQTT and through the bridge, the median of ``rounds`` each."""
    echo = Responder("echo", echo_handler, unit=UNIT, card=echo_card(unit=UNIT), broker=url,
                     options=ResponderOptions(inline=True))
    mqtt_runs, http_runs = [], []
    try:
        with Bridge("echo", unit=UNIT, broker=url, retry=RETRY) as bridge, \
                Requester("bench-direct", unit=UNIT, broker=url, retry=RETRY) as req, \
                httpx.Client(timeout=10) as http:
            for _ in range(rounds):  # interleaved, so a busy machine slows both alike
                mqtt_runs.append(_mqtt_round_trips(req, n, warmup))
                http_runs.append(_http_round_trips(http, bridge.url, n, warmup))
    finally:
        echo.stop()
    mqtt = sorted(mqtt_runs, key=lambda r: r["median_ms"])[len(mqtt_runs) // 2]
    via_http = sorted(http_runs, key=lambda r: r["median_ms"])[len(http_runs) // 2]
    return {"n": n, "rounds": rounds, "mqtt": mqtt, "bridge": via_http,
            "overhead_ms": via_http["median_ms"] - mqtt["median_ms"],
            "ratio": via_http["median_ms"] / mqtt["median_ms"]}


def format_bridge(r: dict) -> str:
    return (f"bridge HTTP → MQTT echo    median {r['bridge']['median_ms']:.3f} ms, p99 {r['bridge']['p99_ms']:.3f} ms "
            f"vs {r['mqtt']['median_ms']:.3f} ms straight over MQTT: +{r['overhead_ms']:.3f} ms "
            f"({r['ratio']:.2f}×) for the HTTP hop")
