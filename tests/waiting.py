"""Polling helper shared by tests that wait for something to arrive over the broker."""
from __future__ import annotations

import time


def wait_until(pred, timeout: float = 5.0, interval: float = 0.02):
    """Call ``pred`` until it returns something truthy or ``timeout`` passes; return its last value."""
    deadline = time.time() + timeout
    while True:
        value = pred()
        if value or time.time() > deadline:
            return value
        time.sleep(interval)
