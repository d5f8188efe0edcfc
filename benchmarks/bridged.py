"""SendMessage round trips on one broker and across a bridge, same run (``a2a_nb.mqtt.bridged``).

``bench_bridged`` starts a :class:`~a2a_nb.mqtt.bridged.BridgedPair` (B bridged to A) and times, in
alternating batches, four round trips, each echo agent on A: raw paho and the kit with the requester
on A (one broker), then raw paho and the kit with the requester on B (across the bridge). Raw and
kit are set up at once, so a busier machine slows all four alike; the ratios are what to read.

Back to back, a bridged round trip pays Nagle's algorithm on the bridge's own socket: Mosquitto
2.0.11 sets TCP_NODELAY (``set_tcp_nodelay true``) on the sockets it accepts, not on the one its
bridge opens. The bridging broker's PUBACK of a reply is still unacknowledged (the other broker
delays its TCP ACK up to 40 ms) when the next request follows, so that request waits. A request
sent on its own, ``spaced_s`` after the last, does not: ``raw_bridged_spaced`` / ``kit_bridged_spaced``.
"""
from __future__ import annotations

import time
from contextlib import ExitStack, closing
from typing import Protocol

from a2a_nb.mqtt.bridged import BridgedPair

from . import raw_floor
from .kit_echo import KitEcho


class RoundTrip(Protocol):
    def round_trip(self) -> float: ...


def bench_bridged(n: int = 100, batch: int = 25, warmup: int = 10, spaced_n: int = 20, spaced_s: float = 0.06) -> dict:
    with BridgedPair() as pair, ExitStack() as stack:
        a, b = pair.a, pair.b
        pairs: dict[str, RoundTrip] = {
            "raw_one_broker": stack.enter_context(closing(raw_floor.RawEcho(a.endpoint, unit="raw-one"))),
            "kit_one_broker": stack.enter_context(closing(KitEcho(a.url, unit="kit-one"))),
            "raw_bridged": stack.enter_context(closing(raw_floor.RawEcho(a.endpoint, b.endpoint, unit="raw-bridged"))),
            "kit_bridged": stack.enter_context(closing(KitEcho(a.url, b.url, unit="kit-bridged"))),
        }
        samples: dict[str, list[float]] = {name: [] for name in pairs}
        for echo in pairs.values():
            for _ in range(warmup):
                echo.round_trip()
        while len(samples["kit_bridged"]) < n:
            k = min(batch, n - len(samples["kit_bridged"]))
            for name, echo in pairs.items():
                samples[name] += [echo.round_trip() for _ in range(k)]
        for name in ("raw_bridged", "kit_bridged"):
            samples[f"{name}_spaced"] = []
            for _ in range(spaced_n):
                time.sleep(spaced_s)
                samples[f"{name}_spaced"].append(pairs[name].round_trip())
    out: dict = {name: raw_floor.percentiles(s) for name, s in samples.items()}
    out["spaced_s"] = spaced_s
    med = {name: r["median_ms"] for name, r in out.items() if isinstance(r, dict)}
    out["kit_over_raw_one_broker"] = med["kit_one_broker"] / med["raw_one_broker"]
    out["kit_over_raw_bridged"] = med["kit_bridged"] / med["raw_bridged"]
    out["bridged_over_one_broker"] = med["kit_bridged"] / med["kit_one_broker"]
    out["spaced_bridged_over_one_broker"] = med["kit_bridged_spaced"] / med["kit_one_broker"]
    return out


def format_bridged(r: dict) -> str:
    ms = {name: v["median_ms"] for name, v in r.items() if isinstance(v, dict)}
    return (f"one broker vs bridged      median round trip: raw {ms['raw_one_broker']:.3f} ms / kit "
            f"{ms['kit_one_broker']:.3f} ms on one broker ({r['kit_over_raw_one_broker']:.2f}× raw); across the bridge "
            f"raw {ms['raw_bridged']:.3f} ms / kit {ms['kit_bridged']:.3f} ms ({r['kit_over_raw_bridged']:.2f}× raw, "
            f"{r['bridged_over_one_broker']:.1f}× one broker: Nagle on Mosquitto's bridge socket); a request "
            f"{r['spaced_s'] * 1000:.0f} ms after the last: raw {ms['raw_bridged_spaced']:.3f} ms / kit "
            f"{ms['kit_bridged_spaced']:.3f} ms ({r['spaced_bridged_over_one_broker']:.1f}× one broker)")
