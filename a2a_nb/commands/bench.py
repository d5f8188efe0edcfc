"""``python -m a2a_nb bench``: the kit against raw paho-mqtt on the same broker, in one run."""
from __future__ import annotations

import argparse
import json

from .common import CliError, non_negative_int, positive_int


def register(sub) -> None:
    b = sub.add_parser("bench", help="the kit against raw paho-mqtt on the same broker, in one run")
    b.add_argument("--json", action="store_true", help="print the results as JSON")
    b.add_argument("-n", type=positive_int, default=1000,
                   help="round trips of each, raw and kit, in alternating batches of 50 (default 1000)")
    b.add_argument("--stream-n", type=positive_int, default=5000, help="stream events (default 5000)")
    b.add_argument("--rounds", type=positive_int, default=3, help="interleaved raw/kit stream rounds; medians reported (default 3)")
    b.add_argument("--load-tasks", type=non_negative_int, default=200,
                   help="concurrent tasks × 20 stream events through a desk and a pool of 4 (0 = skip; default 200)")
    b.add_argument("--burst", type=non_negative_int, default=400,
                   help="SendMessage requests at once to a ticket desk of 4 analysts: completions or -32004, "
                        "threads/fds/RSS before and after (0 = skip; default 400)")
    b.add_argument("--echo-n", type=non_negative_int, default=5000,
                   help="echo round trips with RSS sampled before and after (0 = skip; default 5000; "
                        "the issue's figure is 30000, about 25 s)")
    b.add_argument("--broker", default=None)
    b.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    bench = _benchmarks()
    results = bench.run(args.broker, n=args.n, stream_n=args.stream_n, rounds=args.rounds, load_tasks=args.load_tasks,
                        burst=args.burst, echo_n=args.echo_n, say=(lambda s: None) if args.json else print)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def _benchmarks():
    """``benchmarks.run`` from the repository the kit was installed from (the benchmarks are not part of
    the installed package: ``pip install -e .`` of a clone, or running from the clone, finds them).

    Only a missing ``benchmarks`` folder becomes the ``CliError`` below; any other import error (a
    module the benchmarks need, such as httpx, not installed) keeps its own message."""
    import importlib
    import sys
    from pathlib import Path

    clone = Path(__file__).resolve().parents[2]
    if (clone / "benchmarks" / "run.py").is_file() and str(clone) not in sys.path:
        sys.path.append(str(clone))
    try:
        return importlib.import_module("benchmarks.run")
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing != "benchmarks" and not missing.startswith("benchmarks."):
            raise  # the benchmarks are there, a module they import is not: its own message names it
        raise CliError("the benchmarks live in the repository's benchmarks/ folder, next to a2a_nb/, and are not "
                       "installed with the package", hint="run `python -m a2a_nb bench` (or `make bench`) "
                       "from a clone of the repository") from None
