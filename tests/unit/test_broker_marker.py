"""The ``broker`` marker (tests/conftest.py): ``pytest -m "not broker"`` (``make test-fast``) runs
exactly the tests that need no broker."""
from __future__ import annotations

MARK = "broker"


def test_a_test_that_uses_the_broker_fixture_is_marked(broker_url, request):
    assert request.node.get_closest_marker(MARK) is not None


def test_a_test_that_starts_a_broker_itself_is_marked(request):
    if False:  # never run: the marker reads the test's code
        from a2a_nb.mqtt.broker import EmbeddedBroker
        EmbeddedBroker()
    assert request.node.get_closest_marker(MARK) is not None


def test_a_test_without_a_broker_is_not_marked(request):
    assert request.node.get_closest_marker(MARK) is None
