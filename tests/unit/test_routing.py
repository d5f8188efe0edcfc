"""The requester's routing table (pure): handover moves the route, the table stays bounded, and a
recording replayed through it (``replay``) gives the reroutes the live table made."""
from __future__ import annotations

from a2a_nb.protocol.routing import (CAUSES, FALLBACK, HANDOVER, POOL_ASSIGNED, Address, Replied, RoutingTable, Sent,
                                     new_responder_cause, replay, silence_reason)

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


# -- a recording replayed through the same table ----------------------------------------------------------

ANALYSTS = Address("acme", "support", pool="analysts")


def to(agent: str) -> Address:
    return Address("acme", "support", agent=agent)


def moves(steps) -> list[tuple]:
    return [(r.task_id, r.from_.label, r.to.label, r.cause, r.detail) for r in replay(steps) if r is not None]


def test_the_cause_names_are_the_table_s():
    assert CAUSES == (HANDOVER, POOL_ASSIGNED, FALLBACK) == ("handover", "pool-assigned", "fallback")
    assert new_responder_cause(pooled=True) == POOL_ASSIGNED and new_responder_cause(pooled=False) == HANDOVER
    assert silence_reason("analyst-1", 3) == "analyst-1 did not answer 3 attempts"
    assert silence_reason("analyst-1", 1, nobody_subscribed=True).endswith("(PUBACK 16: nobody subscribed)")


def test_replay_gives_one_entry_per_step_and_follows_the_latest_responder():
    steps = [Sent("t1", DESK, 0.0), Replied("t1", "ticket-desk", 0.1), Replied("t1", "analyst-1", 0.2),
             Replied("t1", "analyst-1", 0.3), Replied("t1", "analyst-2", 0.4), Replied("t1", None, 0.5),
             Sent("t1", to("analyst-2"), 0.6)]
    result = replay(steps)
    assert len(result) == len(steps)
    assert [k for k, r in enumerate(result) if r is not None] == [2, 4]
    assert moves(steps) == [("t1", "ticket-desk", "analyst-1", HANDOVER, "a2a-responder-agent-id=analyst-1"),
                            ("t1", "analyst-1", "analyst-2", HANDOVER, "a2a-responder-agent-id=analyst-2")]


def test_a_request_back_to_the_card_agent_is_the_fallback_and_says_how_long_the_target_was_silent():
    steps = [Sent("t1", DESK, 0.0), Replied("t1", "analyst-1", 0.1),
             Sent("t1", to("analyst-1"), 1.0), Replied("t1", "analyst-1", 1.1),  # answered: not silent
             Sent("t1", to("analyst-1"), 2.0, answered=False), Sent("t1", to("analyst-1"), 3.0, answered=False),
             Sent("t1", DESK, 4.0), Sent("t1", DESK, 5.0)]
    assert moves(steps)[1:] == [("t1", "analyst-1", "ticket-desk", FALLBACK, "analyst-1 did not answer 2 attempts")]


def test_a_pooled_task_moves_to_its_member_and_never_falls_back_to_the_pool():
    steps = [Sent("t1", ANALYSTS, 0.0), Replied("t1", "analyst-3", 0.1),
             Sent("t1", to("analyst-3"), 1.0, answered=False), Sent("t1", ANALYSTS, 2.0)]
    assert moves(steps) == [("t1", "pool:analysts", "analyst-3", POOL_ASSIGNED, "a2a-responder-agent-id=analyst-3")]


def test_what_the_table_cannot_follow_moves_nothing():
    steps = [Replied("t0", "analyst-1", 0.0),  # a task whose first request was not recorded
             Sent("t1", DESK, 0.0), Replied("t1", "analyst/1", 0.1),  # not an identifier
             Sent("t1", to("somebody-else"), 0.2)]  # a requester that did not follow its table
    assert replay(steps) == [None] * 4


def test_a_request_to_the_card_agent_before_the_target_went_silent_is_no_fallback():
    """The requester broke the rule (lint says so at that row); the route stays with the analyst, so
    the next request to the analyst is right, not a second finding."""
    steps = [Sent("t1", DESK, 0.0), Replied("t1", "analyst-1", 0.1), Sent("t1", DESK, 1.0),
             Replied("t1", "analyst-1", 1.1), Sent("t1", to("analyst-1"), 2.0)]
    moves = replay(steps)
    assert [m.cause if m else None for m in moves] == [None, HANDOVER, None, None, None]


def test_replay_makes_what_the_live_table_made():
    """The live requester calls start/observe/fall_back; the replay sees only the traffic. Both
    drive one RoutingTable, so they agree (Profile: Optional Task Handover; Requester Retry 9)."""
    live = RoutingTable()
    live.start("t1", DESK, 0.0)
    live.start("t2", ANALYSTS, 0.0)
    live.observe("t1", "analyst-1", 1.0)
    live.observe("t2", "analyst-3", 1.5)
    live.observe("t1", "analyst-2", 2.0)
    live.fall_back("t1", 5.0, silence_reason("analyst-2", 3))
    steps = [Sent("t1", DESK, 0.0), Sent("t2", ANALYSTS, 0.0), Replied("t1", "analyst-1", 1.0),
             Replied("t2", "analyst-3", 1.5), Replied("t1", "analyst-2", 2.0)]
    steps += [Sent("t1", to("analyst-2"), 3.0 + k / 10, answered=False) for k in range(3)]
    steps += [Sent("t1", DESK, 5.0)]
    assert [r for r in replay(steps) if r is not None] == live.history
