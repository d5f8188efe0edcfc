"""The kit's side of a round trip, shared by the benchmark's parts (``run.py``, ``bridged.py``)."""
from __future__ import annotations

import time
from typing import Optional

from a2a_nb.agents.requester import Requester
from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.protocol.retry import RetryProfile

BENCH_RETRY = RetryProfile(reply_first_timeout_s=5, stream_idle_timeout_s=10)


class KitEcho:
    """The kit's SendMessage round trip: a Requester and an echo agent run as ``serve echo`` runs it
    (handler on the network thread). ``round_trip()`` times one ``send``."""

    def __init__(self, url: str, requester_url: Optional[str] = None, unit: str = "kit"):
        """The echo agent on ``url``, the requester there too or on ``requester_url`` (a broker
        bridged to ``url``); ``unit`` keeps two such pairs apart."""
        self.echo = Responder("bench-echo", lambda ctx: ctx.respond(ctx.text), org="bench", unit=unit, broker=url,
                              options=ResponderOptions(inline=True))
        self.req = Requester("bench-req", org="bench", unit=unit, broker=requester_url or url, retry=BENCH_RETRY)

    def round_trip(self) -> float:
        t = time.perf_counter()
        self.req.send("bench-echo", "ping")
        return time.perf_counter() - t

    def close(self) -> None:
        self.req.close()
        self.echo.stop()
