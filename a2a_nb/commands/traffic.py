"""``python -m a2a_nb record`` and ``python -m a2a_nb lint``: the traffic sub-commands."""
from __future__ import annotations

import argparse
import sys

from .common import CaughtSignals, UsageError, check_recording_target, positive_seconds, wait_for_signal


def register(sub) -> None:
    """Add ``record`` and ``lint`` to the sub-parsers of ``python -m a2a_nb``."""
    r = sub.add_parser("record", help="record all $a2a/# traffic of a broker to a JSON-lines file",
                       description="Subscribe to $a2a/# (QoS 2, Retain As Published) and write one JSON line "
                                   "per message (format: a2a_nb/traffic/FORMAT.md). Ctrl-C stops.")
    r.add_argument("--out", required=True, metavar="FILE", help="recording to write (JSON lines); - for stdout")
    r.add_argument("--seconds", type=positive_seconds, default=None, metavar="N",
                   help="stop after N seconds (default: until Ctrl-C)")
    r.add_argument("--broker", default=None, metavar="URL",
                   help="mqtt://host:port (default: A2A_BROKER_URL, else an embedded Mosquitto)")
    r.add_argument("--filter", default="$a2a/#", metavar="FILTER",
                   help="topic filter to record (default $a2a/#; must start with $a2a/)")
    r.set_defaults(func=cmd_record)

    lt = sub.add_parser("lint", help="check a recording against the A2A over MQTT profile; exit 1 on MUST violations",
                        description="Print every MUST/SHOULD finding of a recording and a one-line summary. "
                                    "Exit status: 0 clean (or SHOULD only), 1 MUST violations, 2 unreadable file.")
    lt.add_argument("file", metavar="FILE", help="a recording made by `record` or Recorder(path=...)")
    lt.add_argument("--no-schema", action="store_true", help="skip the a2a-sdk payload checks (faster)")
    lt.add_argument("--json", action="store_true", help="JSON lines: one per finding, then the summary")
    lt.set_defaults(func=cmd_lint)


def cmd_record(args: argparse.Namespace) -> int:
    from ..traffic.recorder import Recorder

    to_stdout = args.out == "-"  # as mosquitto_sub: the lines on stdout, everything else on stderr
    if not to_stdout:
        check_recording_target(args.out)
    try:
        rec = Recorder(broker=args.broker, path=None if to_stdout else args.out, org_filter=args.filter, keep=False,
                       out=sys.stdout if to_stdout else None)
    except ValueError as exc:  # a filter outside $a2a/
        raise UsageError(str(exc)) from None
    rec.start()  # an unreachable broker raises SessionError: cli.main says so (exit 1)
    url = rec.session.endpoint.url if rec.session else "?"
    until = f"for {args.seconds:g} s" if args.seconds is not None else "until Ctrl-C"
    where = "stdout" if to_stdout else args.out
    signals = CaughtSignals().start()  # from the line below on, Ctrl-C ends the recording cleanly
    print(f"# recording {args.filter} on {url} to {where} {until}", file=sys.stderr, flush=True)
    wait_for_signal(args.seconds, then=rec.stop, stopping="the recording", signals=signals)
    print(f"recorded {rec.count} messages to {where}", file=sys.stderr if to_stdout else sys.stdout, flush=True)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from ..traffic.records import existing_recording

    try:
        existing_recording(args.file)  # a missing file is said at once, before pandas loads (seconds)
    except (FileNotFoundError, IsADirectoryError) as exc:  # as main_lint says it: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from ..traffic.lint import main_lint

    if getattr(args, "json", False):
        return lint_json(args.file, schema=not args.no_schema)
    return main_lint(args.file, schema=not getattr(args, "no_schema", False))


def lint_json(path: str, schema: bool) -> int:
    """``lint --json``: each finding as one JSON line, then ``{"summary", "messages", "must", "should",
    "exit_code"}``; an unreadable file is an error line on stderr (exit 2), as without ``--json``."""
    import json

    from ..traffic.frame import load_traffic
    from ..traffic.lint import MUST, SHOULD, check_traffic, exit_code, summary

    df = load_traffic(path)
    findings = check_traffic(df, schema=schema)
    for row in findings.to_dict("records"):
        print(json.dumps(row, default=str, ensure_ascii=False))
    levels = list(findings["level"]) if len(findings) else []
    code = exit_code(findings)
    print(json.dumps({"summary": summary(findings, len(df), str(path)), "messages": len(df),
                      "must": levels.count(MUST), "should": levels.count(SHOULD), "exit_code": code}))
    return code
