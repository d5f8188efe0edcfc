"""The requester's wait for replies (``_Call``): replies, timeouts and broker refusals (Profile:
Requester Retry and Timeout Profile 6: a refused publish ends the wait for its reply)."""
from __future__ import annotations

import threading
import time

from a2a_nb.agents.requester import Attempt, _Call
from a2a_nb.mqtt.session import PublishResult
from a2a_nb.protocol.packet import MqttMessage

REFUSED = PublishResult(135, "Not authorized")
NOBODY = PublishResult(16, "No matching subscribers")


def call_and_attempt():
    return _Call("SendMessage", None, "1"), Attempt(1, "t", "00", time.time())


def test_replies_come_out_in_order_and_a_quiet_wait_times_out():
    call, _ = call_and_attempt()
    a, b = MqttMessage("r", b"a"), MqttMessage("r", b"b")
    call.push(a)
    call.push(b)
    assert call.next(1) is a and call.next(1) is b
    t = time.monotonic()
    assert call.next(0.2) is None
    assert 0.15 < time.monotonic() - t < 2


def test_a_reply_from_another_thread_wakes_the_waiter():
    call, _ = call_and_attempt()
    m = MqttMessage("r", b"late")
    threading.Timer(0.1, call.push, (m,)).start()
    assert call.next(5) is m


def test_a_refused_publish_ends_the_wait_at_once():
    call, att = call_and_attempt()
    threading.Timer(0.1, call.acked, (att, REFUSED)).start()
    t = time.monotonic()
    assert call.next(10) is None
    assert time.monotonic() - t < 5
    assert att.reason_code == 135 and "refused by the broker" in att.outcome


def test_a_reply_already_waiting_wins_over_a_refusal():
    call, att = call_and_attempt()
    m = MqttMessage("r", b"answer to an earlier attempt")
    call.acked(att, REFUSED)
    call.push(m)
    assert call.next(1) is m
    assert call.next(1) is None, "then the refusal ends the wait"


def test_a_stale_refusal_does_not_end_the_next_attempts_wait():
    call, att = call_and_attempt()
    call.acked(att, REFUSED)
    call.refused = False  # the caller moved on to a new attempt
    m = MqttMessage("r", b"reply to the new attempt")
    threading.Timer(0.1, call.push, (m,)).start()
    assert call.next(5) is m


def test_puback_16_is_noted_but_keeps_waiting():
    call, att = call_and_attempt()
    call.acked(att, NOBODY)
    assert att.outcome == "no matching subscribers (PUBACK 16)" and not call.refused
    assert call.next(0.1) is None
