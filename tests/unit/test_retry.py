"""Profile: Requester Retry and Timeout Profile."""
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_nb.protocol import retry as R
from a2a_nb.protocol.retry import RetryProfile

FAST = RetryProfile(reply_first_timeout_s=1.5, stream_idle_timeout_s=3.0, max_attempts=3, backoff_s=(0.1, 0.2, 0.4))


def test_defaults_match_the_profile():
    d = R.DEFAULT
    assert (d.reply_first_timeout_s, d.stream_idle_timeout_s, d.max_attempts, d.backoff_s, d.jitter) == \
        (15.0, 30.0, 3, (1.0, 2.0, 4.0), 0.2)
    assert RetryProfile.from_ms() == d
    assert RetryProfile.from_ms(1500, 3000, 3, (100, 200, 400)) == FAST


def test_message_expiry_exceeds_first_reply_timeout():
    assert R.DEFAULT.message_expiry_s() == 20
    assert FAST.message_expiry_s() == 7
    for t in (0.1, 1.0, 14.2, 15.0, 300.0):
        e = RetryProfile(reply_first_timeout_s=t).message_expiry_s()
        assert isinstance(e, int) and e > t


@given(st.integers(min_value=1, max_value=10), st.integers(min_value=0, max_value=2**32))
def test_property_backoff_within_jitter_bounds(attempt, seed):
    rng = random.Random(seed)
    for p in (R.DEFAULT, FAST):
        lo, hi = p.backoff_bounds(attempt)
        v = p.backoff(attempt, rng)
        assert lo <= v <= hi


def test_backoff_values():
    assert R.DEFAULT.backoff_bounds(1) == pytest.approx((0.8, 1.2))
    assert R.DEFAULT.backoff_bounds(2) == pytest.approx((1.6, 2.4))
    assert R.DEFAULT.backoff_bounds(3) == pytest.approx((3.2, 4.8))
    assert R.DEFAULT.backoff_bounds(9) == R.DEFAULT.backoff_bounds(3)  # last value repeats
    no_jitter = RetryProfile(jitter=0)
    assert [no_jitter.backoff(i, random.Random(0)) for i in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert R.DEFAULT.backoff(2, random.Random(5)) == R.DEFAULT.backoff(2, random.Random(5))  # seeded: reproducible
    values = {round(R.DEFAULT.backoff(1, random.Random(s)), 6) for s in range(20)}
    assert len(values) > 10  # jitter actually varies
    with pytest.raises(ValueError):
        R.DEFAULT.backoff(0, random.Random())


def test_can_retry_and_next_delay():
    p = R.DEFAULT
    assert p.can_retry(1) and p.can_retry(2) and not p.can_retry(3)
    assert not p.can_retry(1, got_any_reply=True)
    rng = random.Random(1)
    assert R.next_delay(p, 1, rng) is not None
    assert R.next_delay(p, 3, rng) is None
    assert R.next_delay(p, 1, rng, got_any_reply=True) is None
    assert RetryProfile(max_attempts=1).can_retry(1) is False
    assert R.DEFAULT.worst_case_s() == pytest.approx(3 * 15 + 1.2 + 2.4)


def test_a_stalled_stream_is_recovered_at_most_max_attempts_times():
    assert [R.DEFAULT.can_recover(n) for n in range(5)] == [True, True, True, False, False]
    assert RetryProfile(max_attempts=1).can_recover(0) and not RetryProfile(max_attempts=1).can_recover(1)


@pytest.mark.parametrize(
    "kw",
    [dict(reply_first_timeout_s=0), dict(stream_idle_timeout_s=-1), dict(max_attempts=0),
     dict(max_attempts=1.5), dict(backoff_s=()), dict(backoff_s=(1, -1)), dict(jitter=1.0),
     dict(jitter=-0.1), dict(backoff_s="abc"), dict(reply_first_timeout_s=float("inf"))],
)
def test_validation(kw):
    with pytest.raises(ValueError):
        RetryProfile(**kw)


def test_frozen_and_list_backoff_normalised():
    p = RetryProfile(backoff_s=[1, 2])
    assert p.backoff_s == (1.0, 2.0)
    with pytest.raises(Exception):
        p.max_attempts = 5  # type: ignore[misc]
    hash(p)
