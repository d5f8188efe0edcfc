"""The replay cache kept beside an agent's keys (a2a_nb.ubsp.replays): what one process accepted, the
next refuses; the file is bounded and read as untrusted bytes. Profile: Untrusted-Broker Security Profile 12."""
from __future__ import annotations

import time

from a2a_nb.ubsp.replays import MAX_FILE_BYTES, KeptReplayCache, digest


def test_what_one_process_accepted_the_next_refuses(tmp_path):
    now = time.time()
    path = tmp_path / "echo.seen"
    first = KeptReplayCache(path, now=now)
    assert first.not_before is None  # no file yet: nothing was seen, nothing to refuse
    assert first.check("jti-1", now + 60, now, now) is None
    restarted = KeptReplayCache(path, now=now + 1)
    assert "replayed: jti jti-1" in restarted.check("jti-1", now + 60, now + 1, now)
    assert restarted.check("jti-2", now + 60, now + 1, now) is None
    assert restarted.not_before is None  # the file was read whole: no clock rule needed


def test_expired_entries_are_dropped_and_the_file_rewritten_bounded(tmp_path):
    now = time.time()
    path = tmp_path / "echo.seen"
    cache = KeptReplayCache(path, max_entries=10, now=now)
    for i in range(25):  # every max_entries appended lines the file is rewritten with the live ones
        at = now + 20 * i
        assert cache.check(f"j{i}", at + 5, at, at) is None
    assert len(path.read_text().splitlines()) <= 11
    later = KeptReplayCache(path, max_entries=10, now=now + 20 * 24)  # only the last one is still live
    assert len(later) == 1 and len(path.read_text().splitlines()) == 1


def test_the_senders_jti_is_never_written(tmp_path):
    """The file holds a digest: a jti with a newline cannot add lines of its own."""
    now = time.time()
    path = tmp_path / "echo.seen"
    KeptReplayCache(path, now=now).check("a\nffffffffffffffffffffffffffffffff 99999999999", now + 60, now, now)
    [line] = path.read_text().splitlines()
    assert line.split()[0] == digest("a\nffffffffffffffffffffffffffffffff 99999999999")


def test_a_damaged_file_is_moved_aside_and_earlier_requests_are_refused(tmp_path):
    """Lines that do not parse are skipped; a file too large to read is moved aside (kept for a
    look), and the agent refuses what was issued before it started (it cannot tell a replay)."""
    now = time.time()
    path = tmp_path / "echo.seen"
    path.write_bytes(b"garbage\n\x00\xff\n" + f"{digest('ok')} {int(now) + 60}\n".encode())
    cache = KeptReplayCache(path, now=now)
    assert "replayed" in cache.check("ok", now + 60, now, now) and cache.not_before is None
    path.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    cache = KeptReplayCache(path, now=now)
    assert cache.not_before == now
    assert "before this agent started" in cache.check("new", now + 60, now, now - 2)
    assert cache.check("new", now + 60, now, now + 0.5) is None
    assert [p.name for p in tmp_path.iterdir() if ".damaged-" in p.name]
