"""How long the Core conformance probe takes against local agents (target: under 10 s each).

``bench_probe`` serves echo (as ``serve echo`` runs it) and a ticket desk (as ``serve ticket-desk``
runs it: handover to analysts, input required, a streamed report), each in a unit of its own, and
probes each at the Core level. Most checks answer in milliseconds; the floor is the two checks whose
request the agent rightly drops (no Correlation Data, a Response Topic outside the reply namespace):
the probe waits its full timeout (1 s) for a reply that must not come.
"""
from __future__ import annotations

from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.probe import run_probe
from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler

TARGET_S = 10.0


def bench_probe(url: str) -> dict:
    """Seconds of the Core probe against echo and against the ticket desk, and their verdicts."""
    echo = Responder("echo", echo_handler, unit="bench-probe-echo", card=echo_card(unit="bench-probe-echo"),
                     broker=url, options=ResponderOptions(inline=True))
    try:
        echo_report = run_probe("echo", unit="bench-probe-echo", broker=url)
    finally:
        echo.stop()
    desk = TicketDesk(unit="bench-probe-desk", broker=url)
    try:
        desk_report = run_probe("ticket-desk", unit="bench-probe-desk", broker=url)
    finally:
        desk.stop()
    return {"checks": len(echo_report.rows), "target_s": TARGET_S,
            "echo_s": round(echo_report.seconds, 2), "echo_core_conformant": echo_report.core_conformant,
            "desk_s": round(desk_report.seconds, 2), "desk_core_conformant": desk_report.core_conformant,
            "target_met": max(echo_report.seconds, desk_report.seconds) < TARGET_S}


def format_probe(r: dict) -> str:
    verdict = "Core conformant" if r["echo_core_conformant"] and r["desk_core_conformant"] else "NOT conformant"
    return (f"probe (Core, {r['checks']} checks)   echo {r['echo_s']:.1f} s, ticket-desk {r['desk_s']:.1f} s, "
            f"both {verdict} (target < {r['target_s']:.0f} s each)")
