"""``python -m benchmarks``: the bench's own command line, next to the package (no broker needed here)."""
from __future__ import annotations

import os

from benchmarks.__main__ import PROG, build_parser, main
from tests.bench_command import run_bench


def test_help_runs_from_the_repository_root():
    out = run_bench(["--help"], dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: {PROG} ")
    for option in ("--json", "-n N", "--stream-n", "--rounds", "--load-tasks", "--burst", "--echo-n", "--bridged-n", "--broker",
                   "--debug"):
        assert option in out.stdout, option


def test_the_defaults_are_the_full_run():
    args = build_parser().parse_args([])
    assert (args.n, args.stream_n, args.rounds, args.load_tasks, args.burst, args.echo_n, args.bridged_n) == \
        (1000, 5000, 3, 200, 400, 5000, 100)
    assert not args.json and args.broker is None and args.command == "bench"


def test_an_unexpected_failure_names_the_benchmarks_debug_command(monkeypatch, capsys):
    def fails(args):
        raise KeyError("oops")

    monkeypatch.setattr("benchmarks.__main__.bench", fails)  # build_parser binds func when called
    assert main(["--load-tasks", "0"]) == 1
    err = capsys.readouterr().err
    assert "error: KeyError: 'oops'" in err and f"`{PROG} --debug ...` shows where it happened" in err
