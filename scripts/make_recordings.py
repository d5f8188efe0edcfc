#!/usr/bin/env python3
"""Record the story's scenarios into a2a_nb/data/recordings/ (shipped in the package), the traffic that
lesson 07 and the player replay.

    .venv/bin/python scripts/make_recordings.py                 # every scenario, then full.jsonl
    .venv/bin/python scripts/make_recordings.py happy pool      # only these (no full.jsonl)
    .venv/bin/python scripts/make_recordings.py --out /tmp/rec  # somewhere else

Each recording is made against a fresh embedded Mosquitto (``EmbeddedBroker``), so nothing retained
by an earlier run (an Agent Card marked offline) leaks into it: ``{scenario}.jsonl`` holds exactly one
scenario, ``full.jsonl`` all of them in one run, in the order of ``SCENARIOS``. A ``Recorder`` on
``$a2a/#`` writes every message with all its MQTT v5 properties (format: a2a_nb/traffic/FORMAT.md).

Seeds follow ``python -m a2a_nb story --scenario full``: the k-th scenario of ``SCENARIOS`` runs with
seed ``4821 + k``, in its own file and in ``full.jsonl`` alike, so Task.ids, messageIds, Correlation
Data and analyst names are the same on every run and in both files (only times and timestamps change).

Every recording must tell its scenario's story (``recorded_reroutes`` equals the scenario's expected
reroutes) and lint with 0 MUST findings (``check_traffic``); otherwise the script exits 1 and leaves
``a2a_nb/data/recordings/`` untouched (the new files stay in a temporary folder, named in the output).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "a2a_nb" / "data" / "recordings"
FIRST_SEED = 4821  # as commands.roles.cmd_story: enumerate(names, start=4821)
FULL = "full"


def seed_of(name: str) -> int:
    """The seed ``python -m a2a_nb story --scenario full`` gives scenario ``name``."""
    from a2a_nb.story.scenarios import SCENARIOS

    return FIRST_SEED + list(SCENARIOS).index(name)


def recorded_reroutes(df) -> list[str]:
    """The causes of the reroutes a recording shows, in order: the coordinator's routing table replayed
    from the recorded requests and replies (``reroutes``). For one scenario this is the list its
    coordinator's live table recorded (``SCENARIOS[name]["expect"]``): the broker saw the same story
    the requester told."""
    from a2a_nb.traffic import reroutes

    return list(reroutes(df)["cause"])


def record(path: Path, names: list[str], pace: float, say: Callable[[str], None]) -> list:
    """Run ``names`` against a fresh Mosquitto with a Recorder writing ``path``; the scenario results."""
    from a2a_nb.mqtt.broker import EmbeddedBroker
    from a2a_nb.story.scenarios import run_scenario
    from a2a_nb.traffic import Recorder

    results = []
    with EmbeddedBroker() as broker:
        recorder = Recorder(broker=broker.url, path=path, agent="recorder").start()
        try:
            for name in names:
                results.append(run_scenario(name, broker.url, say=say, pace=pace, seed=seed_of(name)))
        finally:
            recorder.wait_idle(0.3)
            recorder.stop()
    return results


def check(path: Path, names: list[str], results: list) -> list[str]:
    """Problems of one recording (empty when it is fine): failed scenarios, MUST findings, a
    story the recording does not show."""
    from a2a_nb.story.scenarios import SCENARIOS
    from a2a_nb.traffic import check_traffic, load_traffic
    from a2a_nb.traffic.lint import MUST, format_findings

    problems = [f"scenario {r.name}: expected {r.expected}, observed {r.observed}, final {r.final_state}"
                for r in results if not r.ok]
    df = load_traffic(path)
    findings = check_traffic(df)
    must = findings[findings["level"] == MUST]
    if len(must):
        problems.append(f"{len(must)} MUST finding(s):\n{format_findings(must)}")
    want = [cause for n in names for cause in SCENARIOS[n]["expect"]]
    got = recorded_reroutes(df)
    if got != want:
        problems.append(f"the recording shows the reroutes {got}, the scenarios expect {want}")
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    from a2a_nb.story.scenarios import SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help=f"scenarios to record (default: all, plus {FULL}); "
                        f"choose from {', '.join(SCENARIOS)}, {FULL}")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the recordings (default a2a_nb/data/recordings)")
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between the analyst's steps (default 0.05)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the story as it runs")
    args = parser.parse_args(argv)
    unknown = [n for n in args.only if n not in SCENARIOS and n != FULL]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}, {FULL}")
    jobs = {n: [n] for n in (args.only or SCENARIOS) if n != FULL}
    if not args.only or FULL in args.only:
        jobs[FULL] = list(SCENARIOS)

    say = print if args.verbose else (lambda line: None)
    tmp = Path(tempfile.mkdtemp(prefix="a2a-nb-recordings-"))
    failed = False
    for name, names in jobs.items():
        path = tmp / f"{name}.jsonl"
        started = time.perf_counter()
        results = record(path, names, args.pace, say)
        problems = check(path, names, results)
        lines = sum(1 for _ in path.open(encoding="utf-8"))
        print(f"{name + '.jsonl':28s} {lines:4d} messages {path.stat().st_size / 1024:6.1f} KiB "
              f"{time.perf_counter() - started:5.1f} s  {'FAIL' if problems else 'OK'}", flush=True)
        for p in problems:
            print("    " + p.replace("\n", "\n    "))
        failed = failed or bool(problems)
    if failed:
        print(f"not written to {args.out}: the new recordings are in {tmp}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name in jobs:
        shutil.move(str(tmp / f"{name}.jsonl"), args.out / f"{name}.jsonl")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
