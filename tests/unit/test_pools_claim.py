"""Pool claiming without ``$share``: rendezvous hashing over the live members, and presence messages.

Profile: Optional Shared Subscription Dispatch 4, 13 (member coordination is implementation-specific);
Presence and Liveness (status user properties, Last Will). Pure functions: no broker.
"""
from __future__ import annotations

import itertools
import uuid
from collections import Counter

import pytest

from a2a_nb.protocol import pools, properties
from a2a_nb.protocol.packet import MqttMessage, encode_json

MEMBERS = ["analyst-a", "analyst-b", "analyst-c"]
KEYS = [str(uuid.UUID(int=i, version=4)) for i in range(3000)]


def test_every_member_computes_the_same_winner_whatever_the_order_of_names():
    for key in KEYS[:200]:
        winners = {pools.claim(key, list(order)) for order in itertools.permutations(MEMBERS)}
        assert len(winners) == 1
        assert winners <= set(MEMBERS)
    assert pools.claim(KEYS[0], MEMBERS + MEMBERS) == pools.claim(KEYS[0], MEMBERS)  # a set, not a list


def test_keys_spread_over_the_members():
    counts = Counter(pools.claim(k, MEMBERS) for k in KEYS)
    assert set(counts) == set(MEMBERS)
    assert all(800 <= n <= 1200 for n in counts.values()), counts  # about a third each


def test_when_a_member_dies_only_its_keys_move():
    before = {k: pools.claim(k, MEMBERS) for k in KEYS}
    dead = "analyst-b"
    after = {k: pools.claim(k, [m for m in MEMBERS if m != dead]) for k in KEYS}
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved == {k for k in KEYS if before[k] == dead}
    assert dead not in after.values()
    assert {after[k] for k in moved} == {"analyst-a", "analyst-c"}  # shared among the survivors


def test_a_member_that_joins_takes_keys_only_for_itself():
    before = {k: pools.claim(k, MEMBERS) for k in KEYS}
    after = {k: pools.claim(k, MEMBERS + ["analyst-d"]) for k in KEYS}
    assert {after[k] for k in KEYS if before[k] != after[k]} == {"analyst-d"}


def test_a_lone_member_claims_everything_and_an_empty_pool_is_an_error():
    assert {pools.claim(k, ["analyst-a"]) for k in KEYS[:50]} == {"analyst-a"}
    with pytest.raises(ValueError, match="at least one live member"):
        pools.claim(KEYS[0], [])


def test_presence_is_retained_on_the_members_event_topic_with_status_properties():
    online = pools.presence_message("acme", "support", "analysts", "analyst-a", properties.ONLINE,
                                    properties.SOURCE_AGENT)
    assert online.topic == "$a2a/v1/event/acme/support/analyst-a"
    assert online.retain and online.qos == 1
    assert online.user_property(properties.STATUS) == "online"
    assert online.user_property(properties.STATUS_SOURCE) == "agent"
    assert online.user_property(properties.EVENT_TYPE) == pools.PRESENCE_EVENT
    assert pools.read_presence(online) == pools.Presence("analysts", "analyst-a", True)

    will = pools.presence_message("acme", "support", "analysts", "analyst-a", properties.OFFLINE,
                                  properties.SOURCE_LWT)
    assert pools.read_presence(will) == pools.Presence("analysts", "analyst-a", False)
    assert pools.presence_filter("acme", "support") == "$a2a/v1/event/acme/support/+"


def test_messages_that_are_not_a_members_own_presence_are_ignored():
    props = ((properties.EVENT_TYPE, pools.PRESENCE_EVENT), (properties.STATUS, "online"))
    body = encode_json({"pool": "analysts", "agent": "analyst-a"})
    assert pools.read_presence(MqttMessage("$a2a/v1/event/acme/support/analyst-a", body)) is None  # no event type
    # a member can only speak for itself: the agent it names is the agent of its topic
    assert pools.read_presence(MqttMessage("$a2a/v1/event/acme/support/mallory", body, user_properties=props)) is None
    assert pools.read_presence(MqttMessage("$a2a/v1/event/acme/support/analyst-a", b"not json",
                                           user_properties=props)) is None
    assert pools.read_presence(MqttMessage("$a2a/v1/event/acme/support/analyst-a", b'{"pool": 1}',
                                           user_properties=props)) is None


def test_the_claim_key_is_the_task_id_so_a_retry_is_claimed_by_the_same_live_member():
    task_id = KEYS[7]
    first = encode_json({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                         "params": {"message": {"taskId": task_id, "messageId": "m1", "role": "ROLE_USER",
                                                "parts": [{"text": "hi"}]}}})
    assert pools.pool_key(first, b"corr-1") == pools.pool_key(first, b"corr-2") == task_id
    assert pools.pool_key(b"garbage", b"\x01\x02") == "0102"


def test_lint_accepts_a_retained_presence_but_not_other_retained_events():
    from a2a_nb.traffic.lint import check_traffic
    from tests.traffic._traffic import Traffic

    presence = pools.presence_message("acme", "support", "analysts", "analyst-a", properties.ONLINE,
                                      properties.SOURCE_AGENT)
    tr = Traffic()
    tr.add(presence.topic, {"pool": "analysts", "agent": "analyst-a"}, props=presence.user_properties, retain=True)
    assert check_traffic(tr.records).empty
    tr.add("$a2a/v1/event/acme/support/analyst-a", {"hello": 1}, retain=True)
    assert list(check_traffic(tr.records)["rule"]) == ["not-retained"]


def test_membership_follows_presence_and_the_cards_of_members_that_have_one():
    m = pools.Membership("analyst-a", "analysts")
    assert m.live == {"analyst-a"}  # a member always counts itself
    m.saw_presence(pools.Presence("analysts", "analyst-b", True))
    m.saw_presence(pools.Presence("analysts", "desk", True))
    m.saw_presence(pools.Presence("other-pool", "analyst-x", True))  # another pool's member
    assert m.live == {"analyst-a", "analyst-b", "desk"}
    m.saw_presence(pools.Presence("analysts", "analyst-b", False))  # its will
    m.saw_card("desk", online=False)  # a member with a card: its card's will
    assert m.live == {"analyst-a"}
    assert all(m.claims(k) for k in KEYS[:20])
    m.saw_card("desk", online=True)  # back: its card is online again
    assert m.live == {"analyst-a", "desk"}
    m.saw_presence(pools.Presence("analysts", "analyst-a", False))  # an old will of its own: still counts itself
    assert "analyst-a" in m.live
    m.forget()
    assert m.live == {"analyst-a"}


def test_card_status_of_discovery_messages():
    topic = "$a2a/v1/discovery/acme/support/desk"
    offline = ((properties.STATUS, "offline"), (properties.STATUS_SOURCE, "lwt"))
    assert pools.card_status(MqttMessage(topic, b"{}", user_properties=offline)) == ("desk", False)
    assert pools.card_status(MqttMessage(topic, b"", retain=True)) == ("desk", False)  # deleted
    assert pools.card_status(MqttMessage(topic, b"{}", user_properties=((properties.STATUS, "online"),))) \
        == ("desk", True)
    assert pools.card_status(MqttMessage("$a2a/v1/event/acme/support/desk", b"{}")) is None


# -- only allowed members count; an unclaimed request is taken over (issue 25 item 1) -------------------------
def test_the_allow_list_takes_names_and_prefixes_and_none_allows_everyone():
    assert pools.allows(None, "anyone")
    allowed = ["analyst-a", "analyst-pool-*"]
    assert pools.allows(allowed, "analyst-a") and pools.allows(allowed, "analyst-pool-3f2a1c")
    assert not pools.allows(allowed, "analyst-b") and not pools.allows(allowed, "ghost")
    assert not pools.allows(allowed, "analyst-a-2")  # a name is not a prefix
    assert not pools.allows([], "analyst-a")


def test_a_presence_outside_the_allow_list_does_not_count():
    m = pools.Membership("analyst-a", "analysts", ["analyst-a", "analyst-b"])
    m.saw_presence(pools.Presence("analysts", "analyst-b", True))
    m.saw_presence(pools.Presence("analysts", "ghost", True))
    assert m.live == {"analyst-a", "analyst-b"} and m.not_allowed == 1
    assert all(m.arrived(k, b"c" + k.encode(), k, 10, 0.0) == (pools.claim(k, MEMBERS[:2]) == "analyst-a")
               for k in KEYS[:50])


def waiting_member(me: str = "analyst-a") -> pools.Membership:
    m: pools.Membership[str] = pools.Membership(me, "analysts", takeover_s=1.0)
    for name in MEMBERS:
        m.saw_presence(pools.Presence("analysts", name, True))
    return m


def keys_won_by(winner: str, n: int, members=MEMBERS) -> list[str]:
    return [k for k in KEYS if pools.claim(k, members) == winner][:n]


def test_a_claimed_request_is_not_taken_over():
    m = waiting_member()
    (key,) = keys_won_by("analyst-b", 1)
    assert m.arrived(key, b"corr", "request", 100, now=0.0) is False
    assert m.waiting == 1 and m.next_deadline() == 1.0
    m.saw_claim(pools.Claim("analyst-b", b"corr"), now=0.5)
    assert m.waiting == 0 and m.due(now=5.0) == [] and m.taken_over == 0
    assert m.live == set(MEMBERS)


def test_an_unclaimed_request_moves_to_the_next_live_member_and_its_winner_falls_silent():
    m = waiting_member("analyst-a")
    survivors = ["analyst-a", "analyst-c"]
    ours = [k for k in keys_won_by("analyst-b", 40) if pools.claim(k, survivors) == "analyst-a"][:3]
    theirs = [k for k in keys_won_by("analyst-b", 40) if pools.claim(k, survivors) == "analyst-c"][:1]
    for i, key in enumerate(ours + theirs):
        m.arrived(key, bytes([i + 1]), key, 100, now=0.0)
    assert m.due(now=0.99) == []  # the winner still has time
    assert sorted(m.due(now=1.0)) == sorted((k, "analyst-b") for k in ours) and m.taken_over == 3
    assert m.live == set(survivors)  # silent: later requests go straight to the others
    assert m.waiting == 1 and m.next_deadline() == 2.0  # analyst-c gets its second to claim
    m.saw_claim(pools.Claim("analyst-c", bytes([4]), silent="analyst-b"), now=1.5)
    assert m.waiting == 0
    m.saw_claim(pools.Claim("analyst-b", b"\x09"), now=1.6)  # the silent member claims something again: it counts again
    assert m.live == set(MEMBERS)


def test_a_busy_winner_is_not_silent_it_claims_late():
    """A loaded winner claims its requests late but keeps claiming: taking its request over would run
    it twice. It is silent only once it claimed nothing for ``takeover_s``."""
    m = waiting_member()
    key, other = keys_won_by("analyst-b", 2)
    m.arrived(key, b"late", key, 10, now=0.0)
    m.arrived(other, b"other", other, 10, now=0.0)
    m.saw_claim(pools.Claim("analyst-b", b"other"), now=0.8)  # busy with the requests before this one
    assert m.due(now=1.0) == [] and m.due(now=1.79) == [] and "analyst-b" in m.live
    assert m.next_deadline() == 1.8
    m.saw_claim(pools.Claim("analyst-b", b"late"), now=1.7)  # its claim comes: nobody ran it twice
    assert m.waiting == 0 and m.taken_over == 0


def test_a_busy_winner_that_never_claims_this_request_loses_it_after_max_wait():
    """A winner that claims other requests but not this one (it saw other members live) cannot hold
    it forever: at ``MAX_WAIT_S`` it is taken over."""
    survivors = ["analyst-a", "analyst-c"]
    m = waiting_member()
    key = next(k for k in keys_won_by("analyst-b", 40) if pools.claim(k, survivors) == "analyst-a")
    m.arrived(key, b"never", key, 10, now=0.0)
    t = 0.5
    while t < pools.MAX_WAIT_S:
        m.saw_claim(pools.Claim("analyst-b", b"another %f" % t), now=t)
        assert m.due(now=t) == []
        t += 0.5
    assert m.due(now=pools.MAX_WAIT_S) == [(key, "analyst-b")]


def test_a_silent_member_counts_again_when_it_announces_itself_online():
    m = waiting_member()
    (key,) = keys_won_by("analyst-b", 1)
    m.arrived(key, b"corr", key, 10, now=0.0)
    m.due(now=1.0)
    assert "analyst-b" not in m.live
    m.saw_presence(pools.Presence("analysts", "analyst-b", True))
    assert "analyst-b" in m.live


def test_claims_of_names_outside_the_allow_list_change_nothing():
    m: pools.Membership[str] = pools.Membership("analyst-a", "analysts", ["analyst-a", "analyst-b"], takeover_s=1.0)
    m.saw_presence(pools.Presence("analysts", "analyst-b", True))
    (key,) = keys_won_by("analyst-b", 1, ["analyst-a", "analyst-b"])
    m.arrived(key, b"corr", key, 10, now=0.0)
    m.saw_claim(pools.Claim("mallory", b"corr"), now=0.5)  # a stranger cannot stop the takeover
    assert m.due(now=1.0) == [(key, "analyst-b")]


def test_the_requests_kept_for_a_takeover_are_bounded_in_number_and_bytes():
    m: pools.Membership[str] = pools.Membership("analyst-a", "analysts", takeover_s=1.0, max_waiting=3,
                                                max_waiting_bytes=1000)
    m.saw_presence(pools.Presence("analysts", "analyst-b", True))
    keys = keys_won_by("analyst-b", 6, ["analyst-a", "analyst-b"])
    for i, key in enumerate(keys[:4]):
        m.arrived(key, bytes([i + 1]), key, 100, now=0.0)
    assert m.waiting == 3 and m.unwatched == 1
    m.saw_claim(pools.Claim("analyst-b", b"\x01"), now=0.0)
    assert m.arrived(keys[4], b"\x10", keys[4], 950, now=0.0) is False and m.unwatched == 2  # 1,150 bytes
    assert m.arrived(keys[5], b"", keys[5], 10, now=0.0) is False and m.waiting == 2  # no correlation: not kept
    m.forget()
    assert m.waiting == 0 and m.next_deadline() is None


def test_a_takeover_claim_tells_the_members_that_did_not_wait_who_is_silent():
    m = waiting_member("analyst-a")
    m.saw_claim(pools.Claim("analyst-c", b"\x01", silent="analyst-b"), now=0.0)  # analyst-a never waited for that one
    assert m.live == {"analyst-a", "analyst-c"}
    m.saw_claim(pools.Claim("analyst-c", b"\x02", silent="analyst-a"), now=0.0)  # a member always counts itself
    assert "analyst-a" in m.live


def test_claim_messages_round_trip_and_odd_payloads_are_plain_claims():
    plain = pools.claim_message("acme", "support", "analysts", "analyst-a", b"\x01\x02")
    assert plain.topic == "$a2a-nb-pool/acme/support/analysts/analyst-a" and plain.payload == b""
    assert pools.read_claim(plain) == pools.Claim("analyst-a", b"\x01\x02", None)
    took = pools.claim_message("acme", "support", "analysts", "analyst-a", b"\x03", silent="analyst-b")
    assert pools.read_claim(took) == pools.Claim("analyst-a", b"\x03", "analyst-b")
    for odd in (b"[1]", b"not json", b'{"silent": 7}', encode_json({"silent": "x" * 300})):
        assert pools.read_claim(MqttMessage(plain.topic, odd, correlation_data=b"\x01")).silent is None
    assert pools.read_claim(MqttMessage(plain.topic, b"")) is None  # no Correlation Data: nothing claimed
    assert pools.read_claim(MqttMessage("$a2a/v1/event/acme/support/analyst-a", b"", correlation_data=b"1")) is None
    assert pools.claims_filter("acme", "support", "analysts") == "$a2a-nb-pool/acme/support/analysts/+"
