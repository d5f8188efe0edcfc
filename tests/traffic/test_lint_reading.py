"""The lint reads a recording without pandas (``lint.read_messages``) exactly as ``load_traffic``
reads it: every hand-made recording of ``test_lint`` is read both ways and must give the same
messages and reroutes; and ``python -m a2a_nb lint`` runs where pandas cannot be imported."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from a2a_nb.traffic import lint
from a2a_nb.traffic.frame import load_traffic, reroutes_by_task

from tests.without_pandas import ROOT, run_without_pandas

from . import test_lint
from ._traffic import C1, REPLY, T1, Traffic, clean_conversation

FIELDS = [f.name for f in dataclasses.fields(lint.Message) if f.name != "request"]


def as_frame_reads(records: list) -> tuple[list, dict]:
    df = load_traffic(records)
    return lint.messages_of(df), reroutes_by_task(df)


@pytest.fixture(autouse=True)
def both_readings_agree(monkeypatch):
    """Every ``read_messages`` call of a test also reads its records through the DataFrame."""
    read = lint.read_messages

    def checked(source):
        messages, moves = read(source)
        frame_messages, frame_moves = as_frame_reads(list(source) if isinstance(source, list) else source)
        assert moves == frame_moves
        assert len(messages) == len(frame_messages)
        for m, f in zip(messages, frame_messages):
            assert {n: getattr(m, n) for n in FIELDS} == {n: getattr(f, n) for n in FIELDS}
            assert (m.request and m.request.i) == (f.request and f.request.i)
        return messages, moves

    monkeypatch.setattr(lint, "read_messages", checked)


# every test of test_lint again, with both readings compared
globals().update({name: fn for name, fn in vars(test_lint).items() if name.startswith("test_")})


def faulty() -> Traffic:
    """A conversation with findings: a reply without a request, one without Correlation Data."""
    tr = clean_conversation()
    tr.result(tr.corr(), "x", Traffic.task(T1, C1), topic=REPLY)
    tr.result(None, "y", Traffic.task(T1, C1), topic=REPLY)
    return tr


def test_lint_command_runs_without_pandas(tmp_path):
    path = tmp_path / "faulty.jsonl"
    from a2a_nb.traffic.records import write_records

    write_records(faulty().records, path)
    with_pandas = subprocess.run([sys.executable, "-m", "a2a_nb", "lint", str(path)], capture_output=True,
                                 text=True, timeout=120, cwd=ROOT)
    without = run_without_pandas("lint", str(path))
    assert without.returncode == with_pandas.returncode == 1, without.stderr
    assert without.stdout == with_pandas.stdout
    assert "MUST" in without.stdout


def test_lint_command_without_pandas_still_refuses_a_broken_file(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"v": 1, "topic": "$a2a/v1/x", "qos": "one"}\n', encoding="utf-8")
    done = run_without_pandas("lint", str(path))
    assert done.returncode == 2
    assert "qos must be 0, 1 or 2" in done.stderr
