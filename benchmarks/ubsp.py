"""What ubsp-v1 costs: the SendMessage round trip sealed end to end next to the plain one.

``bench_ubsp`` serves two echo agents in a unit of its own, one plain and one with ubsp-v1 keys, and
times ``send`` to each from a plain requester and a ubsp-v1 requester, in alternating batches. A
sealed round trip seals twice and opens twice (request and reply): each seal is an ES256 signature
plus an ECDH-ES key agreement, each open the reverse (jwcrypto on ``cryptography``). The keys are
inline and trusted (``KeyTrust(trust_inline=True)``): a ``jwksUri`` is fetched once and cached, so
after the warm-up it would cost the same.
"""
from __future__ import annotations

import time
import uuid

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.ubsp.keys import AgentKeys
from a2a_nb.ubsp.protection import Ubsp
from a2a_nb.ubsp.trust import KeyTrust

from . import raw_floor

RETRY = RetryProfile(reply_first_timeout_s=5, stream_idle_timeout_s=10)


def bench_ubsp(url: str, n: int = 300, batch: int = 25, warmup: int = 20) -> dict:
    unit = f"bench-ubsp-{uuid.uuid4().hex[:6]}"
    trust = KeyTrust(trust_inline=True)

    def echo(ctx) -> None:
        ctx.respond(ctx.text)

    agents = [Responder("plain-echo", echo, org="bench", unit=unit, broker=url, options=ResponderOptions(inline=True)),
              Responder("sealed-echo", echo, org="bench", unit=unit, broker=url, options=ResponderOptions(inline=True),
                        ubsp=Ubsp(AgentKeys("sealed-echo"), trust))]
    plain = Requester("plain-req", org="bench", unit=unit, broker=url, retry=RETRY)
    sealed = Requester("sealed-req", org="bench", unit=unit, broker=url, retry=RETRY,
                       ubsp=Ubsp(AgentKeys("sealed-req"), trust))
    try:
        def one(req: Requester, to: str) -> float:
            t = time.perf_counter()
            req.send(to, "ping")
            return time.perf_counter() - t

        for _ in range(warmup):
            one(plain, "plain-echo")
            one(sealed, "sealed-echo")
        plains: list[float] = []
        seals: list[float] = []
        while len(plains) < n:
            k = min(batch, n - len(plains))
            plains += [one(plain, "plain-echo") for _ in range(k)]
            seals += [one(sealed, "sealed-echo") for _ in range(k)]
        p, s = raw_floor.percentiles(plains), raw_floor.percentiles(seals)
        return {"plain": p, "ubsp": s, "ratio": round(s["median_ms"] / p["median_ms"], 2),
                "extra_ms": round(s["median_ms"] - p["median_ms"], 3), "refused": sealed.stats.refused}
    finally:
        plain.close()
        sealed.close()
        for a in agents:
            a.stop()


def format_ubsp(r: dict) -> str:
    return (f"ubsp-v1 send (JWE both ways) median {r['ubsp']['median_ms']:.3f} ms, p99 {r['ubsp']['p99_ms']:.3f} ms "
            f"vs plain {r['plain']['median_ms']:.3f} ms: {r['ratio']:.2f}× (+{r['extra_ms']:.3f} ms for two seals "
            f"and two opens)")
