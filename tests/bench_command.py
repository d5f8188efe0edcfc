"""``python -m benchmarks`` as a user runs it: a subprocess in the repository root (``make bench``),
since the benchmarks sit next to the package and are not installed with it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = [sys.executable, "-m", "benchmarks"]


def run_bench(args: list[str], env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(BENCH + args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
