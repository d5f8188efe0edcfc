"""The requester's retry and timeout policy as a value.

Profile: Requester Retry and Timeout Profile (defaults in rule 2; message expiry in rule 10);
Mandatory Binding-Specific Error Mapping 7-8 (which errors are retry-eligible, see
``errors.classify``).

**Worst cases** (T = ``reply_first_timeout_s``, I = ``stream_idle_timeout_s``, A = ``max_attempts``,
B = the largest backoffs after failures 1 .. A-1; defaults: T 15 s, I 30 s, A 3, B 1.2 + 2.4 = 3.6 s):

* one request (SendMessage, GetTask, a stream's first item), nobody answering: A*T + B
  (:meth:`RetryProfile.worst_case_s`, 48.6 s). With the broker gone every publish is refused at once:
  B (3.6 s), plus T for an attempt sent just before it went (18.6 s). A silent handover target adds
  as much again for the fallback to the card agent (97.2 s).
* a stream gone quiet after an item: I, then a recovery (GetTask, and SubscribeToTask while the task
  runs: each one request as above), at most A recoveries. Broker killed: I + B = 33.6 s after the last
  item; a broker that vanishes without closing the connection: I + A*T + B = 78.6 s.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class RetryProfile:
    """Timeouts (seconds), attempt budget and backoff of a requester.

    ``max_attempts`` counts the initial publish (3 = one try plus two retries). ``backoff_s[i]`` is
    the wait after failure ``i + 1`` (the last value repeats if there are more retries), varied by
    ``±jitter`` (0.2 = ±20%). Every attempt publishes with fresh Correlation Data and the same
    ``Task.id`` (rule 3); once a correlated item arrives, do not retry (rules 5, 7).
    """

    reply_first_timeout_s: float = 15.0
    stream_idle_timeout_s: float = 30.0
    max_attempts: int = 3
    backoff_s: tuple[float, ...] = (1.0, 2.0, 4.0)
    jitter: float = 0.2

    def __post_init__(self) -> None:
        for name in ("reply_first_timeout_s", "stream_idle_timeout_s"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0 or math.isinf(v):
                raise ValueError(f"{name} must be a positive number of seconds, got {v!r}")
        if not isinstance(self.max_attempts, int) or isinstance(self.max_attempts, bool) or self.max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1 (1 = no retries), got {self.max_attempts!r}")
        try:
            backoff = tuple(float(b) for b in self.backoff_s)
        except (TypeError, ValueError):
            raise ValueError(f"backoff_s must be a sequence of seconds, got {self.backoff_s!r}") from None
        if not backoff or any(not (b >= 0) or math.isinf(b) for b in backoff):
            raise ValueError(f"backoff_s must hold at least one finite delay >= 0, got {self.backoff_s!r}")
        object.__setattr__(self, "backoff_s", backoff)
        j = self.jitter
        if not isinstance(j, (int, float)) or isinstance(j, bool) or not 0 <= j < 1:
            raise ValueError(f"jitter must be a fraction in [0, 1), got {j!r}")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1 = after the first failure).

        ``base * (1 ± jitter)``, with the randomness from ``rng`` (pass a seeded ``random.Random``
        for reproducible runs).
        """
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
            raise ValueError(f"attempt must be an int >= 1, got {attempt!r}")
        base = self.backoff_s[min(attempt, len(self.backoff_s)) - 1]
        return base * (1.0 + rng.uniform(-self.jitter, self.jitter))

    def backoff_bounds(self, attempt: int) -> tuple[float, float]:
        """The smallest and largest value ``backoff(attempt, ...)`` can return."""
        if not isinstance(attempt, int) or attempt < 1:
            raise ValueError(f"attempt must be an int >= 1, got {attempt!r}")
        base = self.backoff_s[min(attempt, len(self.backoff_s)) - 1]
        return base * (1.0 - self.jitter), base * (1.0 + self.jitter)

    def can_retry(self, attempts_made: int, got_any_reply: bool = False) -> bool:
        """May another publish of the same request follow ``attempts_made`` attempts?

        Never after a correlated reply or stream item (rules 5, 7); otherwise while attempts are
        below ``max_attempts`` (rule 6).
        """
        return not got_any_reply and attempts_made < self.max_attempts

    def can_recover(self, recoveries_made: int) -> bool:
        """May a stream that stalled for ``stream_idle_timeout_s`` be recovered once more, after
        ``recoveries_made`` recoveries? Recovery is a follow-up (``GetTask``, then a new subscription),
        never a republish of the request (rule 8); it gets the same budget as attempts (rule 6)."""
        return recoveries_made < self.max_attempts

    def message_expiry_s(self) -> int:
        """MQTT Message Expiry Interval for requests: ``ceil(reply_first_timeout_s) + 5``.

        Rule 10: if set, it SHOULD be greater than the first-reply timeout, so a request is not
        dropped by the broker while the requester is still waiting for it.
        """
        return math.ceil(self.reply_first_timeout_s) + 5

    def worst_case_s(self) -> float:
        """Longest time before giving up when nothing ever answers (all timeouts + max backoffs)."""
        waits = sum(self.backoff_bounds(i)[1] for i in range(1, self.max_attempts))
        return self.max_attempts * self.reply_first_timeout_s + waits

    @classmethod
    def from_ms(cls, reply_first_timeout_ms: int = 15000, stream_idle_timeout_ms: int = 30000,
                max_attempts: int = 3, retry_backoff_ms: tuple[int, ...] = (1000, 2000, 4000),
                jitter: float = 0.2) -> "RetryProfile":
        """Build from the millisecond names the profile uses (rule 2)."""
        return cls(reply_first_timeout_ms / 1000, stream_idle_timeout_ms / 1000, max_attempts,
                   tuple(b / 1000 for b in retry_backoff_ms), jitter)


DEFAULT = RetryProfile()
"""The profile's mandatory defaults (rule 2): 15 s, 30 s, 3 attempts, 1/2/4 s ±20%."""


def next_delay(profile: RetryProfile, attempts_made: int, rng: random.Random,
               got_any_reply: bool = False) -> Optional[float]:
    """Plan helper: seconds to wait before the next attempt, or None when the requester must stop."""
    if not profile.can_retry(attempts_made, got_any_reply):
        return None
    return profile.backoff(attempts_made, rng)
