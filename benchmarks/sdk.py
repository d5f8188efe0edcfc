"""The official a2a-sdk over MQTT against the kit's own roles, same broker, same run (issue [22] item 5).

Two comparisons, each in alternating batches so a machine that gets busier slows both sides alike:

* client: the SDK's ``Client`` (``a2a_nb.sdk.connect``, blocking ``send_message``) → the kit's echo
  agent, against the kit's ``Requester.send`` → the same agent;
* server: the kit's ``Requester.send`` → an SDK ``AgentExecutor`` served by ``a2a_nb.sdk.serve``,
  against the same requester → a kit ``Responder`` with the same options answering the same text.

Target: each at most 1.5× the kit's own round trip (median).
"""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Callable

from a2a.client import ClientConfig
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types import Message, Part, Role, SendMessageRequest

from a2a_nb import sdk
from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.story.cast import echo_card, echo_handler

from . import raw_floor
from .kit_echo import BENCH_RETRY

TARGET = 1.5  # the SDK's side at most this many times the kit's own round trip
ORG = "bench"


class EchoExecutor(AgentExecutor):
    """An executor as the SDK's documentation writes one: a Message with the text it got."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message) if context.message else ""
        await event_queue.enqueue_event(new_text_message(f"echo: {text}", context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def _alternating(a: Callable[[], float], b: Callable[[], float], n: int, batch: int = 25,
                 warmup: int = 20) -> tuple[dict, dict]:
    for _ in range(warmup):
        a()
        b()
    times_a: list[float] = []
    times_b: list[float] = []
    while len(times_a) < n:
        k = min(batch, n - len(times_a))
        times_a += [a() for _ in range(k)]
        times_b += [b() for _ in range(k)]
    return raw_floor.percentiles(times_a), raw_floor.percentiles(times_b)


def _timed(call: Callable[[], object]) -> Callable[[], float]:
    def once() -> float:
        t = time.perf_counter()
        call()
        return time.perf_counter() - t
    return once


def bench_client(url: str, n: int) -> dict:
    """The SDK ``Client`` and the kit's ``Requester``, each sending ``n`` messages to one echo agent."""
    unit = "bench-sdk-client"
    echo = Responder("echo", echo_handler, org=ORG, unit=unit, card=echo_card(ORG, unit), broker=url,
                     options=ResponderOptions(inline=True))
    req = Requester("bench-kit", org=ORG, unit=unit, broker=url, retry=BENCH_RETRY)
    loop = asyncio.new_event_loop()
    client = sdk.connect(echo_card(ORG, unit), ClientConfig(streaming=False), broker=url)

    async def sdk_send() -> None:
        message = Message(role=Role.ROLE_USER, parts=[Part(text="ping")], message_id=uuid.uuid4().hex)
        async for _ in client.send_message(SendMessageRequest(message=message)):
            pass

    try:
        kit, via_sdk = _alternating(_timed(lambda: req.send("echo", "ping")),
                                    _timed(lambda: loop.run_until_complete(sdk_send())), n)
    finally:
        loop.run_until_complete(client.close())
        loop.close()
        req.close()
        echo.stop()
    return {"kit": kit, "sdk": via_sdk, "ratio": via_sdk["median_ms"] / kit["median_ms"]}


def bench_server(url: str, n: int) -> dict:
    """The kit's ``Requester`` sending ``n`` messages to a served SDK executor and ``n`` to a kit
    ``Responder`` (default options, as ``sdk.serve`` uses) that answers the same way."""
    unit = "bench-sdk-server"
    served = sdk.serve(EchoExecutor(), echo_card(ORG, unit, "sdk-echo"), broker=url)
    kit_echo = Responder("kit-echo", lambda ctx: ctx.respond(f"echo: {ctx.text}"), org=ORG, unit=unit,
                         card=echo_card(ORG, unit, "kit-echo"), broker=url)
    req = Requester("bench-kit", org=ORG, unit=unit, broker=url, retry=BENCH_RETRY)
    try:
        kit, via_sdk = _alternating(_timed(lambda: req.send("kit-echo", "ping")),
                                    _timed(lambda: req.send("sdk-echo", "ping")), n)
    finally:
        req.close()
        kit_echo.stop()
        served.stop()
    return {"kit": kit, "sdk": via_sdk, "ratio": via_sdk["median_ms"] / kit["median_ms"]}


def bench_sdk(url: str, n: int = 300) -> dict:
    client, server = bench_client(url, n), bench_server(url, n)
    return {"n": n, "target": TARGET, "client": client, "server": server,
            "meets_target": client["ratio"] <= TARGET and server["ratio"] <= TARGET}


def format_sdk(r: dict) -> str:
    c, s = r["client"], r["server"]

    def met(ratio: float) -> str:
        return "met" if ratio <= r["target"] else "missed"
    return (f"a2a-sdk over MQTT ({r['n']} round trips each, medians)\n"
            f"  SDK Client → kit echo        {c['sdk']['median_ms']:.3f} ms vs kit Requester {c['kit']['median_ms']:.3f} ms: "
            f"{c['ratio']:.2f}× (target ≤ {r['target']}×: {met(c['ratio'])})\n"
            f"  kit Requester → SDK executor {s['sdk']['median_ms']:.3f} ms vs kit Responder {s['kit']['median_ms']:.3f} ms: "
            f"{s['ratio']:.2f}× (target ≤ {r['target']}×: {met(s['ratio'])})")
