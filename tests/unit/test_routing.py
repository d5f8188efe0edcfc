"""The requester's routing table (pure): handover moves the route, and the table stays bounded."""
from __future__ import annotations

from a2a_nb.protocol.routing import Address, RoutingTable

DESK = Address("acme", "support", agent="ticket-desk")


def test_the_latest_responder_id_wins_and_fallback_returns_to_the_card_agent():
    table = RoutingTable()
    table.start("t1", DESK, 0.0)
    assert table.observe("t1", "analyst-1", 1.0).cause == "handover"
    assert table.observe("t1", "analyst-2", 2.0).to.agent == "analyst-2"
    assert table.observe("t1", "analyst-2", 3.0) is None  # same agent: no reroute
    assert table.fall_back("t1", 4.0, "silent").to == DESK
    assert [r.cause for r in table.reroutes("t1")] == ["handover", "handover", "fallback"]


def test_the_table_keeps_only_the_most_recently_used_routes():
    table = RoutingTable(max_routes=3)
    for i in range(5):
        table.start(f"t{i}", DESK, float(i))
    assert list(table.routes) == ["t2", "t3", "t4"] and table.forgotten == 2
    table.observe("t2", "analyst-1", 9.0)  # used again: now the most recent
    table.start("t5", DESK, 10.0)
    assert list(table.routes) == ["t4", "t2", "t5"]
    assert table.target("t3") is None and table.target("t2").agent == "analyst-1"
    for i in range(10):
        table.observe("t5", f"analyst-{i}", 20.0 + i)
    assert len(table.history) == 3  # reroutes are bounded the same way


def test_a_target_name_is_an_agent_or_a_pool():
    assert Address.parse("ticket-desk", "acme", "support") == Address("acme", "support", agent="ticket-desk")
    assert Address.parse("pool:analysts", "acme", "support") == Address("acme", "support", pool="analysts")
    assert Address.parse("pool:analysts", "acme", "support").topic == "$a2a/v1/request/acme/support/pool/analysts"
