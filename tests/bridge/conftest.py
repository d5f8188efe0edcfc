"""Fixtures of the bridge tests: a ticket desk in a unit of the test's own on the session's real
Mosquitto (``unit``: tests/conftest.py), a recorder on that unit, and a Bridge in front of the desk.
Nothing is mocked."""
from __future__ import annotations


import pytest

from a2a_nb.bridge import Bridge
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk
from a2a_nb.traffic.recorder import Recorder
from tests.helpers import clear_cards

ORG = "acme"
SHORT = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=3.0, max_attempts=2, backoff_s=(0.05, 0.1))
"""Short waits, so that a silent agent is a -32004 within about a second."""


@pytest.fixture(autouse=True)
def _cards_cleared(request):
    """A test on the broker in a unit of its own (``unit``, tests/conftest.py): the retained cards
    it leaves there are cleared afterwards."""
    if not {"broker_url", "unit"} <= set(request.fixturenames):
        yield
        return
    broker_url, unit = request.getfixturevalue("broker_url"), request.getfixturevalue("unit")
    yield
    clear_cards(broker_url, unit, ("ticket-desk", "ghost"))


@pytest.fixture
def recorder(broker_url, unit):
    with Recorder(broker_url, org_filter=f"$a2a/v1/+/{ORG}/{unit}/#") as rec:
        yield rec


@pytest.fixture
def desk(broker_url, unit):
    with TicketDesk(org=ORG, unit=unit, broker=broker_url, pace=0.01) as d:
        yield d


@pytest.fixture
def bridge(broker_url, unit, desk):
    with Bridge("ticket-desk", org=ORG, unit=unit, broker=broker_url) as b:
        yield b
