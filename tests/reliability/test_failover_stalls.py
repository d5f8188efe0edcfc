"""Failover past a node that stalls (issue [18] item 9): a node of ``A2A_BROKER_URL``'s list that takes
the TCP connection and never answers. Before, each such node cost the connect timeout (10 s) at
connect, with no deadline for the list (100 of them: still "connecting" after 80 s), and a live agent
on [A, stalled, B] reached B 62 s after A stopped (two keep-alives of 30 s). Raw sockets on 127.0.0.1
play the stalled node; the brokers are real Mosquittos. Bounds asserted generously, never exact times.
"""
from __future__ import annotations

import socket
import threading
import time

import pytest

from a2a_nb.mqtt.broker import EmbeddedBroker
from a2a_nb.mqtt.failover import ATTEMPT_TIMEOUT_S, attempt_timeout, last_attempt_on_broker
from a2a_nb.mqtt.session import ConnectFailed, Session

from tests.waiting import wait_until
from tests.helpers import uid

ORG = "acme"


class Stalled:
    """A loopback port that accepts every connection and never sends a byte."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.url = f"mqtt://127.0.0.1:{self.server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.server.close()
        for s in self.held:
            s.close()


@pytest.fixture
def stalled_nodes():
    made: list[Stalled] = []

    def make(n: int) -> list[Stalled]:
        made.extend(Stalled() for _ in range(n))
        return made[-n:]

    yield make
    for node in made:
        node.close()


def test_attempt_deadlines_double_per_pass_and_a_stalled_node_gets_one_attempt():
    assert attempt_timeout(1, 3, 10) == ATTEMPT_TIMEOUT_S <= 1.0
    assert attempt_timeout(7, 3, 10) == 2 * ATTEMPT_TIMEOUT_S  # the second pass round 3 brokers
    assert attempt_timeout(10_000, 3, 10) == 10  # never more than the connect timeout
    assert [last_attempt_on_broker(k) for k in (1, 2, 3, 4)] == [2, 2, 4, 4]


def test_a_live_agent_on_a_stalled_b_list_reaches_b_well_before_a_keepalive(stalled_nodes):
    (mid,) = stalled_nodes(1)
    with EmbeddedBroker() as a, EmbeddedBroker() as b:
        said: list[str] = []
        s = Session(ORG, uid("unit"), uid("mover"), broker=f"{a.url},{mid.url},{b.url}", keepalive=30, connect=False)
        s.on_link = said.append
        s.connect()
        a.crash()
        started = time.monotonic()
        # before: 62 s (two attempts on the stalled node, each ended by the 30 s keep-alive)
        assert wait_until(lambda: s.connected and s.endpoint.port == b.port, 20), said
        assert time.monotonic() - started < 20 and mid.held, said  # the stalled node was tried, briefly
        assert any("moved to the next broker of the list" in line for line in said), said


def test_a_first_connect_over_a_list_of_stalled_nodes_keeps_one_deadline(stalled_nodes):
    nodes = stalled_nodes(100)
    with EmbeddedBroker() as b:
        started = time.monotonic()
        with pytest.raises(ConnectFailed, match=r"no broker of the list answered \(\d+ tried within 3 s") as failed:
            Session(ORG, uid("unit"), uid("first"), broker=",".join([n.url for n in nodes] + [b.url]),
                    connect_timeout=3)
        assert time.monotonic() - started < 3 + 5  # before: 10 s per node, 1,000 s for the list
        assert failed.value.stalled and len(str(failed.value)) < 1000
        # a stalled node first, a live broker next: reached within the first node's attempt deadline
        s = Session(ORG, uid("unit"), uid("second"), broker=f"{nodes[0].url},{b.url}", connect_timeout=10)
        assert s.connected and s.endpoint.port == b.port
