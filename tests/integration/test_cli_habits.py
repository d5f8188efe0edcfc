"""The command line keeps mosquitto_pub/sub habits (real Mosquitto): ``send AGENT -`` reads stdin,
``record --out -`` writes the recording to stdout, ``--debug``/``-v`` also after the command, and
``lint`` says a file is missing before it loads pandas."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "a2a_nb"]


@pytest.fixture
def env(broker_url, tmp_path):
    return dict(os.environ, A2A_BROKER_URL=broker_url, XDG_STATE_HOME=str(tmp_path / "state"),
                A2A_UBSP_DIR=str(tmp_path / "ubsp"))


@pytest.fixture
def echo(env):
    p = subprocess.Popen(CLI + ["serve", "echo", "--unit", "habits"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert "serving" in p.stdout.readline()
    yield p
    p.terminate()
    assert p.wait(timeout=15) == 0


def test_send_dash_reads_the_text_from_stdin(echo, env):
    out = subprocess.run(CLI + ["send", "echo", "-", "--unit", "habits"], input="hello from a pipe\n", env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "echo: hello from a pipe" in out.stdout


@pytest.mark.parametrize("stdin, words", [(b"", "no text on stdin"), (b"\xff\xfe", "not UTF-8"),
                                          (b"x" * (256 * 1024 + 1), "longer than 256 KiB")])
def test_send_dash_refuses_what_is_no_text(env, stdin, words):
    out = subprocess.run(CLI + ["send", "echo", "-", "--unit", "habits"], input=stdin, env=env,
                         capture_output=True, timeout=60)
    assert out.returncode == 2 and words in out.stderr.decode(), out.stderr


def test_record_out_dash_writes_json_lines_to_stdout(echo, env, tmp_path):
    out = subprocess.run(CLI + ["record", "--out", "-", "--seconds", "1", "--filter", "$a2a/v1/discovery/acme/habits/+"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines and lines[0]["topic"] == "$a2a/v1/discovery/acme/habits/echo"  # the echo's retained card
    assert "recorded 1 messages to stdout" in out.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("flag", ["--debug", "-v"])
def test_debug_is_taken_after_the_command_too(tmp_path, flag):
    """A failure after the flag's parse: without the flag one line, with it Python's traceback (exit 1)."""
    bad = ["serve-sdk", "no_such_module_here:factory"]
    quiet = subprocess.run(CLI + bad, capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr and "cannot import" in quiet.stderr
    out = subprocess.run(CLI + bad + [flag], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" in out.stderr and "cannot import" in out.stderr


def test_lint_says_a_file_is_missing_before_loading_pandas(tmp_path):
    """With pandas out of reach, a missing file is still "no recording at ..." (exit 2), not a missing extra."""
    code = ("import sys, runpy; sys.modules['pandas'] = None; sys.argv[0] = 'a2a_nb';"
            "runpy.run_module('a2a_nb', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code, "lint", str(tmp_path / "missing.jsonl")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"error: no recording at {tmp_path / 'missing.jsonl'}")


def test_lint_json_prints_one_object_per_line():
    from a2a_nb.data import recording

    out = subprocess.run(CLI + ["lint", str(recording("happy")), "--json", "--no-schema"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[-1]["exit_code"] == 0 and lines[-1]["messages"] > 0 and lines[-1]["must"] == 0
    assert lines[-1]["summary"].endswith("OK")


def test_check_broker_json_prints_one_object_per_line(broker_url):
    out = subprocess.run(CLI + ["check-broker", broker_url, "--json", "--timeout", "5"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["connack"]["retain"] is True and lines[-1] == {"core_works": True, "across": False}
    features = lines[1:-1]
    assert features and all(set(f) == {"feature", "level", "verdict", "detail"} for f in features)
