"""``python -m a2a_nb check-broker [URL]``: what a broker offers and what of the profile works on it."""
from __future__ import annotations

import argparse

from .common import EXIT_FAILED, positive_seconds


def register(sub) -> None:
    c = sub.add_parser("check-broker", help="print what a broker's CONNACK offers and try the profile's traffic on "
                       "it (discovery, request/reply, wills, pools, binary mode); exit 0 when Core works")
    c.add_argument("url", nargs="?", default=None, metavar="URL",
                   help="the broker (default: A2A_BROKER_URL, else the kit's own embedded Mosquitto); URL_A,URL_B: "
                        "publish on A, read on B (bridged brokers, cluster nodes)")
    c.add_argument("--timeout", type=positive_seconds, default=3.0, help="seconds each step may wait (default 3)")
    c.add_argument("--json", action="store_true",
                   help="JSON lines: the broker and its CONNACK, one line per feature, then core_works")
    c.set_defaults(func=cmd_check_broker)


def cmd_check_broker(args: argparse.Namespace) -> int:
    from ..mqtt.broker import resolve
    from ..mqtt.broker_check import check_broker

    found = check_broker(resolve(args.url), timeout=args.timeout)
    if args.json:
        import json
        from dataclasses import asdict

        caps = found.capabilities
        print(json.dumps({"broker": found.url, "connack": caps.as_dict() if caps else None,
                          "gaps": caps.profile_gaps() if caps else []}, default=str))
        for f in found.findings:
            print(json.dumps(asdict(f), default=str, ensure_ascii=False))
        print(json.dumps({"core_works": found.core_works, "across": found.across}), flush=True)
        return 0 if found.core_works else EXIT_FAILED
    for line in found.lines():
        print(line, flush=True)
    return 0 if found.core_works else EXIT_FAILED
