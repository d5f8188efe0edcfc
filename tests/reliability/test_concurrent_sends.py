"""Ten ``python -m a2a_nb send`` started at once by one user all succeed: each takes a sender name of
its own (``cli``, ``cli-2``, ...; ``a2a_nb/commands/sender_slots.py``), so no send takes another's
session over (issue 18 item 7: before, 5-8 of 10 failed with 24-373 takeovers). On an open broker and
on ``broker --secure`` (the ``cli`` logins it issues)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from a2a_nb.agents.responder import Responder, ResponderOptions
from a2a_nb.commands import sender_slots
from a2a_nb.story.cast import echo_card, echo_handler

from .test_secure_cast import TAKEOVER, banner_value, read_until, secure_broker_process, stop  # noqa: F401 (a fixture)

SENDS = 10


def send_all_at_once(env: dict, unit: str, n: int = SENDS) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-m", "a2a_nb", "send", "echo", f"hello {i}", "--unit", unit,
                               "--timeout", "60"], env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(n)]
    done = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def assert_all_answered(done: list[subprocess.CompletedProcess]) -> None:
    failed = [(d.returncode, d.stderr[-500:]) for d in done if d.returncode != 0]
    assert not failed, f"{len(failed)} of {len(done)} sends failed: {failed}"
    for i, d in enumerate(done):
        assert f"echo: hello {i}" in d.stdout, d.stdout


def test_ten_sends_at_once_all_succeed_on_an_open_broker(private_broker, tmp_path):
    unit = "parallel"
    echo = Responder("echo", echo_handler, org="acme", unit=unit, card=echo_card("acme", unit),
                     broker=private_broker.url, options=ResponderOptions(inline=True))
    env = dict(os.environ, A2A_BROKER_URL=private_broker.url, XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("A2A_BROKER_CREDENTIALS", None)
    try:
        done = send_all_at_once(env, unit)
    finally:
        echo.stop()
    assert_all_answered(done)
    log = private_broker.log_text()
    assert TAKEOVER not in log, "a send took another one's session over"
    clients = set(re.findall(r"New client connected from \S+ as acme/parallel/(cli[-0-9]*)", log))
    assert "cli" in clients and len(clients) >= 2, clients  # they overlapped, each with a name of its own


def test_ten_sends_at_once_all_succeed_on_the_secure_broker(secure_broker_process, tmp_path):  # noqa: F811
    """Eight ``cli`` logins for ten sends: the last ones wait for a free login, none takes one over."""
    _, _, banner = secure_broker_process
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_BROKER")}
    env.update(A2A_BROKER_URL=banner_value(banner, r"export A2A_BROKER_URL='(mqtts://127[^']+)'"),
               A2A_BROKER_CREDENTIALS=banner_value(banner, r"export A2A_BROKER_CREDENTIALS=(\S+)"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    workdir = banner_value(banner, r"config and log in (\S+)\)")
    echo = subprocess.Popen([sys.executable, "-m", "a2a_nb", "serve", "echo"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        read_until(echo.stdout, r"echo serving on", [], 30)
        done = send_all_at_once(env, "support")
    finally:
        stop(echo)
    assert_all_answered(done)
    with open(os.path.join(workdir, "mosquitto.log"), errors="replace") as f:
        log = f.read()
    assert TAKEOVER not in log, "a send took another one's session over"
    assert "not authorised" not in log.lower(), log[-2000:]


def test_a_held_name_is_skipped_and_released_when_its_send_ends(tmp_path):
    names = sender_slots.slot_names("cli", limit=3)
    assert names == ["cli", "cli-2", "cli-3"]
    first = sender_slots.claim(tmp_path, "acme", "support", names)
    second = sender_slots.claim(tmp_path, "acme", "support", names)
    assert (first.agent, second.agent) == ("cli", "cli-2")
    first.release()
    assert sender_slots.claim(tmp_path, "acme", "support", names).agent == "cli"


def test_when_every_name_is_taken_a_send_says_so_and_gives_up_after_its_wait(tmp_path):
    held = sender_slots.claim(tmp_path, "acme", "support", ["coordinator"])
    said: list[str] = []
    with pytest.raises(TimeoutError, match="in use by other sends"):
        sender_slots.claim(tmp_path, "acme", "support", ["coordinator"], wait=0.3, say=said.append)
    assert len(said) == 1 and "waits for one of them to finish" in said[0]
    held.release()


def test_the_secure_broker_logins_are_the_ones_a_send_may_take(tmp_path):
    path = tmp_path / "credentials.json"
    path.write_text('{"users": {"acme/support/cli": "a", "acme/support/cli-2": "b", "acme/other/cli-3": "c"}}')
    logins = sender_slots.credential_agents(str(path), "acme", "support")
    assert sender_slots.slot_names("cli", logins) == ["cli", "cli-2"]
