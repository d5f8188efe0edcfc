"""``python -m a2a_nb probe AGENT``: check a live agent against the A2A over MQTT profile."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .common import CliError, UsageError, add_key_trust, add_scope, key_trust, one_of, positive_seconds

LEVELS = ("core", "extended")
"""Same as ``probe.runner.LEVELS`` (spelled out so the parser does not import the probe)."""


def register(sub) -> None:
    p = sub.add_parser("probe", help="check a live agent against the profile (Core or Extended); exit 1 on a MUST "
                                     "failure",
                       description="Read the agent's retained card, then send it requests (good and bad) and report "
                                   "each rule it keeps or breaks, by rule id. Exit status: 0 no MUST failure, "
                                   "1 a MUST failure (or no card), 2 usage mistake.")
    p.add_argument("agent", help="the agent_id whose card is on $a2a/v1/discovery/{org}/{unit}/AGENT")
    p.add_argument("--level", default="core", choices=LEVELS, type=one_of(LEVELS, "level"),
                   help="core (default) or extended (also pools, native binary artifacts, ubsp-v1 and trusted JKU)")
    p.add_argument("--pool", default=None, metavar="NAME", help="a pool the agent serves (pooled-reply check)")
    p.add_argument("--token", default=None, help="bearer token sent with every request (mqtts:// brokers only)")
    p.add_argument("--as", dest="probe_as", default=None, metavar="AGENT",
                   help="the probe's own agent_id (default probe-<random>); on `broker --secure`, an agent with a "
                        "login in A2A_BROKER_CREDENTIALS, such as cli")
    p.add_argument("--timeout", type=positive_seconds, default=1.0,
                   help="seconds each check waits for a reply (default 1); an exchange, a stream too, ends "
                        "after 10 timeouts at most")
    p.add_argument("--deadline", type=positive_seconds, default=None, metavar="SECONDS",
                   help="seconds the whole probe may take (default 60 timeouts); checks left then are skipped")
    add_key_trust(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON (instead of text)")
    p.add_argument("--junit", default=None, metavar="FILE", help="also write the report as JUnit XML to FILE")
    add_scope(p)
    p.set_defaults(func=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    from ..mqtt.broker import ENV_URL
    from ..probe import ProbeError, run_probe

    if args.junit and Path(args.junit).is_dir():
        raise UsageError(f"--junit {args.junit} is a folder; give a file name such as {Path(args.junit) / 'probe.xml'}")
    try:
        report = run_probe(args.agent, org=args.org, unit=args.unit, broker=args.broker, level=args.level,
                           pool=args.pool, token=args.token, timeout=args.timeout, probe_as=args.probe_as,
                           deadline=args.deadline, trust=key_trust(args))
    except ProbeError as exc:
        hint = exc.hint
        if not args.broker and not os.environ.get(ENV_URL):
            hint = (f"{ENV_URL} is not set, so the probe started a private Mosquitto where no agent runs: export "
                    f"{ENV_URL}=<the URL `python -m a2a_nb broker` prints>")
        raise CliError(str(exc), hint) from None
    if args.junit:
        Path(args.junit).write_text(report.junit(), encoding="utf-8")
    if args.json:
        print(report.to_json())
    else:
        print(report.text())
        if args.junit:
            print(f"JUnit report: {args.junit}", file=sys.stderr)
    return report.exit_code()

