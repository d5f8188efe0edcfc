"""Test session set-up: one real Mosquitto for the whole run (never a mock broker).

It starts in ``pytest_sessionstart`` (not a fixture) because nbval's notebook kernels do not see
fixtures: they inherit ``A2A_BROKER_URL`` from this process instead. A broker named by
``A2A_BROKER_URL`` before the run is used as it is. Under pytest-xdist (``-n``) each worker process
starts a broker of its own and the controller, which runs no test, none: tests that use fixed
agent names never meet another worker's.
"""
from __future__ import annotations

import inspect
import logging
import os
import signal
import tempfile

import pytest

from a2a_nb.mqtt.broker import ENV_URL, EmbeddedBroker
from tests.helpers import uid

_session_broker: "EmbeddedBroker | None" = None


def pytest_sessionstart(session):
    global _session_broker
    os.environ.setdefault("A2A_NB_TEST_RUN", "1")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background by a shell (`make test &`): Ctrl-C is ignored and the commands the tests
        # start would inherit that, so the Ctrl-C tests' SIGINT would do nothing. Take Ctrl-C as Python does.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("MPLBACKEND", "Agg")
    # `send` keeps its routes between runs under $XDG_STATE_HOME: the tests' own, never the user's
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="a2a-nb-test-state-")
    # and `serve` / `send --ubsp` keep ubsp-v1 keys in a key home: the tests' own too
    os.environ["A2A_UBSP_DIR"] = tempfile.mkdtemp(prefix="a2a-nb-test-ubsp-")
    if not os.environ.get(ENV_URL) and not _is_xdist_controller(session.config):
        _session_broker = EmbeddedBroker().start()
        os.environ[ENV_URL] = _session_broker.url


BROKER_FIXTURES = frozenset({"broker_url", "private_broker", "bridged_pair"})
BROKER_SIGNS = ("EmbeddedBroker(", "SecureBroker(", "BridgedPair(", "BridgedBroker(", "A2A_BROKER_URL", "ENV_URL",
                '("broker"', '["broker"')
"""A test needs a broker when it uses one of these fixtures (itself or through another fixture), or
when its own code starts a broker or hands one on (a ``broker`` command, the ``A2A_BROKER_URL`` a
subprocess inherits). Such tests are marked ``broker``, so that ``pytest -m "not broker"`` is the
fast set (``make test-fast``). A test whose helpers start one says so: ``pytest.mark.broker``."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if BROKER_FIXTURES.intersection(getattr(item, "fixturenames", ())) or _starts_a_broker(item):
            item.add_marker(pytest.mark.broker)


def _starts_a_broker(item) -> bool:
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return False
    return any(sign in source for sign in BROKER_SIGNS)


def _is_xdist_controller(config) -> bool:
    """This process hands tests to pytest-xdist workers and runs none itself."""
    return not os.environ.get("PYTEST_XDIST_WORKER") and bool(getattr(config.option, "numprocesses", None))


def pytest_sessionfinish(session, exitstatus):
    from a2a_nb.mqtt.session import stop_all

    stop_all()
    if _session_broker is not None:
        _session_broker.stop()


@pytest.fixture(scope="session")
def broker_url() -> str:
    return os.environ[ENV_URL]


@pytest.fixture
def unit() -> str:
    """A unit of the test's own: its topics and retained cards never meet another test's."""
    return uid("u")


@pytest.fixture
def private_broker():
    """A broker of the test's own, for tests that stop or restart it."""
    with EmbeddedBroker() as b:
        yield b


@pytest.fixture(autouse=True)
def _log_levels_as_found():
    """A test that runs the command line in-process sets the root logger to ERROR (``configure_logging``);
    the next test's ``caplog`` would then see no warnings. Put the levels back after each test."""
    levels = {name: logging.getLogger(name).level for name in ("", "paho")}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    from a2a_nb.mqtt.session import stop_all

    stop_all()


@pytest.fixture
def bridged_pair():
    """Two brokers of the test's own, ``b`` bridged to ``a`` (:class:`a2a_nb.mqtt.bridged.BridgedPair`);
    the test's clients are closed before the brokers stop, even when the test fails."""
    from a2a_nb.mqtt.bridged import BridgedPair
    from a2a_nb.mqtt.session import stop_all

    with BridgedPair() as pair:
        try:
            yield pair
        finally:
            stop_all()
