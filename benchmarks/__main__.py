"""``python -m benchmarks`` (from the repository root; ``make bench``): the kit against raw paho-mqtt
on the same broker, in one run (``run.run``), printed as it goes or as JSON (``--json``).

The benchmarks live next to the package, not in it: ``a2a_nb`` ships nothing it cannot import.
Failures read as the kit's commands' do (``a2a_nb.cli.run_command``): one ``error: ...`` line and a
hint, exit status 1 (2 for a bad option), no traceback unless ``--debug``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

from a2a_nb.cli import run_command
from a2a_nb.commands.common import non_negative_int, positive_int

PROG = "python -m benchmarks"


def build_parser() -> argparse.ArgumentParser:
    b = argparse.ArgumentParser(prog=PROG, description="the kit against raw paho-mqtt on the same broker, in one run")
    b.add_argument("--json", action="store_true", help="print the results as JSON")
    b.add_argument("-n", type=positive_int, default=1000,
                   help="round trips of each, raw and kit, in alternating batches of 50 (default 1000)")
    b.add_argument("--stream-n", type=positive_int, default=5000, help="stream events (default 5000)")
    b.add_argument("--rounds", type=positive_int, default=3,
                   help="interleaved raw/kit stream rounds; medians reported (default 3)")
    b.add_argument("--load-tasks", type=non_negative_int, default=200,
                   help="concurrent tasks × 20 stream events through a desk and a pool of 4 (0 = skip; default 200)")
    b.add_argument("--burst", type=non_negative_int, default=400,
                   help="SendMessage requests at once to a ticket desk of 4 analysts: completions or -32004, "
                        "threads/fds/RSS before and after (0 = skip; default 400)")
    b.add_argument("--echo-n", type=non_negative_int, default=5000,
                   help="echo round trips with RSS sampled before and after (0 = skip; default 5000; "
                        "the issue's figure is 30000, about 25 s)")
    b.add_argument("--bridged-n", type=non_negative_int, default=100,
                   help="round trips of each on one broker and across a bridge (two brokers of its own; 0 = skip; "
                        "default 100)")
    b.add_argument("--broker", default=None, help="broker URL (default: A2A_BROKER_URL, else an embedded Mosquitto)")
    b.add_argument("--debug", action="store_true", help="show the Python traceback of a failure")
    b.set_defaults(func=bench, command="bench")
    return b


def bench(args: argparse.Namespace) -> int:
    from .run import run  # imported here, so --help and a bad option answer at once

    results = run(args.broker, n=args.n, stream_n=args.stream_n, rounds=args.rounds, load_tasks=args.load_tasks,
                  burst=args.burst, echo_n=args.echo_n, bridged_n=args.bridged_n, say=(lambda s: None) if args.json else print)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return run_command(build_parser().parse_args(argv), debug_usage=f"{PROG} --debug ...")


if __name__ == "__main__":
    sys.exit(main())
