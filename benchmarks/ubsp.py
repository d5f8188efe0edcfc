"""What ubsp-v1 costs: the SendMessage round trip sealed end to end next to the plain one.

``bench_ubsp`` serves two echo agents in a unit of its own, one plain and one with ubsp-v1 keys, and
times ``send`` to each from a plain requester and a ubsp-v1 requester, in alternating batches. A
sealed round trip seals twice and opens twice (request and reply): each seal is an ES256 signature
plus an ECDH-ES key agreement, each open the reverse (joserfc on ``cryptography``). The keys are
inline and trusted (``KeyTrust(trust_inline=True)``): a ``jwksUri`` is fetched once and cached, so
after the warm-up it would cost the same.

``seal_open_costs`` times the kit's seal and open of one small payload (``AgentKeys.seal`` /
``AgentKeys.open``, in this process) beside ``crypto_floor``: the bare ``cryptography`` operations
they need, measured in the same run (a seal: an ephemeral P-256 key, ECDH with the recipient's key,
Concat KDF, AES key wrap of a fresh content key, AES-GCM, and one ES256 signature; an open: the
ECDH, KDF, unwrap and AES-GCM decryption, and one ES256 verification). The difference is what the
JOSE layer and the kit add.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import Callable

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.ubsp.keys import AgentKeys
from a2a_nb.ubsp.protection import Ubsp
from a2a_nb.ubsp.trust import KeyTrust

from . import raw_floor

RETRY = RetryProfile(reply_first_timeout_s=5, stream_idle_timeout_s=10)
UBSP_TARGET = 2.0  # issue 40: a ubsp-v1 send at most this many times a plain send (same run, same broker)
PAYLOAD = b'{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m-1",' \
          b'"role":"ROLE_USER","parts":[{"text":"ping"}]}}}'


def _per_op_us(op: Callable[[], object], n: int) -> float:
    """Median of five batches of ``n // 5`` calls, in µs per call (a busy machine's spikes left out)."""
    k = max(1, n // 5)
    per = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(k):
            op()
        per.append((time.perf_counter() - t) / k * 1e6)
    return sorted(per)[2]


def crypto_floor(n: int = 500) -> dict:
    """What one seal and one open cost in bare ``cryptography`` (OpenSSL), no JOSE: the floor the
    kit's seal and open are measured against. µs per operation."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap
    from cryptography.hazmat.primitives.kdf.concatkdf import ConcatKDFHash

    recipient = ec.generate_private_key(ec.SECP256R1())
    signer = ec.generate_private_key(ec.SECP256R1())
    other = b"\x00\x00\x00\x0eECDH-ES+A256KW" + b"\x00" * 8 + (256).to_bytes(4, "big")  # RFC 7518 4.6.2

    def kek(shared: bytes) -> bytes:
        return ConcatKDFHash(hashes.SHA256(), 32, other).derive(shared)

    def seal() -> tuple:
        signature = signer.sign(PAYLOAD, ec.ECDSA(hashes.SHA256()))
        eph = ec.generate_private_key(ec.SECP256R1())
        cek, iv = os.urandom(32), os.urandom(12)
        wrapped = aes_key_wrap(kek(eph.exchange(ec.ECDH(), recipient.public_key())), cek)
        return eph.public_key(), wrapped, iv, AESGCM(cek).encrypt(iv, PAYLOAD + signature, b"header"), signature

    epk, wrapped, iv, box, signature = seal()

    def open_() -> None:
        cek = aes_key_unwrap(kek(recipient.exchange(ec.ECDH(), epk)), wrapped)
        AESGCM(cek).decrypt(iv, box, b"header")
        signer.public_key().verify(signature, PAYLOAD, ec.ECDSA(hashes.SHA256()))

    return {"seal_us": round(_per_op_us(seal, n), 1), "open_us": round(_per_op_us(open_, n), 1)}


def seal_open_costs(n: int = 500) -> dict:
    """The kit's ``AgentKeys.seal`` and ``AgentKeys.open`` of :data:`PAYLOAD` (µs each, peer key sets
    already parsed, as in a conversation), beside :func:`crypto_floor` measured now."""
    requester, responder = AgentKeys("bench-req"), AgentKeys("bench-resp")
    keys = {"bench-req": requester.public_jwks(), "bench-resp": responder.public_jwks()}
    sealed = [requester.seal(PAYLOAD, "bench-resp", keys["bench-resp"]).encode() for _ in range(n)]
    it = iter(sealed)

    def open_() -> None:
        responder.open(next(it), "bench-req", keys.__getitem__, now=time.time())  # each jti opened once

    floor = crypto_floor(n)
    seal_us = _per_op_us(lambda: requester.seal(PAYLOAD, "bench-resp", keys["bench-resp"]), n)
    open_us = _per_op_us(open_, n)
    return {"seal_us": round(seal_us, 1), "open_us": round(open_us, 1), "floor": floor,
            "seal_floor_ratio": round(seal_us / floor["seal_us"], 2), "open_floor_ratio": round(open_us / floor["open_us"], 2)}


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
        ratio = s["median_ms"] / p["median_ms"]
        return {"plain": p, "ubsp": s, "ratio": round(ratio, 2), "target_ratio": UBSP_TARGET,
                "meets_target": ratio <= UBSP_TARGET, "extra_ms": round(s["median_ms"] - p["median_ms"], 3),
                "refused": sealed.stats.refused, "costs": seal_open_costs(min(n, 500))}
    finally:
        plain.close()
        sealed.close()
        for a in agents:
            a.stop()


def format_ubsp(r: dict) -> str:
    c, f = r["costs"], r["costs"]["floor"]
    return (f"ubsp-v1 send (JWE both ways) median {r['ubsp']['median_ms']:.3f} ms, p99 {r['ubsp']['p99_ms']:.3f} ms "
            f"vs plain {r['plain']['median_ms']:.3f} ms: {r['ratio']:.2f}× (target ≤ {r['target_ratio']}×: "
            f"{'met' if r['meets_target'] else 'missed'}; +{r['extra_ms']:.3f} ms for two seals and two opens)\n"
            f"  per seal {c['seal_us']:.0f} µs, per open {c['open_us']:.0f} µs; bare cryptography for the same "
            f"operations {f['seal_us']:.0f} µs and {f['open_us']:.0f} µs ({c['seal_floor_ratio']:.2f}× and "
            f"{c['open_floor_ratio']:.2f}× the floor)")
