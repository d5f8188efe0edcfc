"""Profile: Topic Model, Discovery Subscriber Behavior 1, Optional Shared Subscription Dispatch."""
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_nb.protocol import topics
from a2a_nb.protocol.ids import InvalidIdentifier
from a2a_nb.protocol.topics import TopicInfo, parse_topic

ALLOWED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
ident = st.text(alphabet=ALLOWED, min_size=1, max_size=30)
agent_ident = ident.filter(lambda s: s != "pool")


def test_builders_follow_the_profile():
    assert topics.discovery_topic("acme", "support", "ticket-desk") == "$a2a/v1/discovery/acme/support/ticket-desk"
    assert topics.request_topic("acme", "support", "ticket-desk") == "$a2a/v1/request/acme/support/ticket-desk"
    assert topics.reply_topic("acme", "support", "coordinator", "0123456789abcdef") == \
        "$a2a/v1/reply/acme/support/coordinator/0123456789abcdef"
    assert topics.event_topic("acme", "support", "ticket-desk") == "$a2a/v1/event/acme/support/ticket-desk"
    assert topics.pool_topic("acme", "support", "analysts") == "$a2a/v1/request/acme/support/pool/analysts"
    assert topics.shared_pool_subscription("acme", "support", "analysts") == \
        "$share/a2a.acme.support.analysts/$a2a/v1/request/acme/support/pool/analysts"
    assert topics.discovery_filter("acme") == "$a2a/v1/discovery/acme/+/+"
    assert topics.discovery_filter("acme", "support") == "$a2a/v1/discovery/acme/support/+"
    assert topics.reply_filter("acme", "support", "coordinator") == "$a2a/v1/reply/acme/support/coordinator/+"
    assert topics.ALL_A2A == "$a2a/#"


@pytest.mark.parametrize(
    "call",
    [
        lambda: topics.discovery_topic("acme", "sup/port", "x"),
        lambda: topics.request_topic("acme", "support", "desk+"),
        lambda: topics.reply_topic("acme", "support", "c", "a/b"),
        lambda: topics.event_topic("ac me", "support", "x"),
        lambda: topics.pool_topic("acme", "support", "#"),
        lambda: topics.group_id("acme", "support", ""),
        lambda: topics.discovery_filter("+"),
        lambda: topics.discovery_filter("acme", "#"),
    ],
)
def test_builders_validate_identifiers(call):
    with pytest.raises(InvalidIdentifier):
        call()


def test_agent_named_pool_is_ambiguous_on_request_topics():
    with pytest.raises(InvalidIdentifier, match="reserved"):
        topics.request_topic("acme", "support", "pool")
    # other kinds have no such ambiguity
    assert topics.discovery_topic("acme", "support", "pool").endswith("/pool")
    with pytest.raises(ValueError, match="pool_id"):
        parse_topic("$a2a/v1/request/acme/support/pool")


def test_group_id_sanitises_and_is_deterministic():
    assert topics.group_id("acme", "support", "ticket-desk") == "a2a.acme.support.ticket_desk"
    assert topics.group_id("acme", "support", "x") == topics.group_id("acme", "support", "x")
    assert topics.sanitize_group_id("team: rca/eu") == "team__rca_eu"


def test_group_id_long_is_truncated_with_hash():
    pool = "p" * 100
    gid = topics.group_id("acme", "support", pool)
    base = f"a2a.acme.support.{pool}"
    assert len(gid) == 64
    assert gid == base[:55] + "_" + hashlib.sha256(base.encode()).hexdigest()[:8]
    other = topics.group_id("acme", "support", "p" * 99 + "q")
    assert other != gid and other[:55] == gid[:55]
    exactly = "a2a.acme.support." + "x" * (64 - len("a2a.acme.support."))
    assert topics.group_id("acme", "support", "x" * (64 - 17)) == exactly


@given(ident, ident, ident)
def test_property_group_id_is_valid_and_bounded(org, unit, pool):
    gid = topics.group_id(org, unit, pool)
    assert len(gid) <= 64
    assert all(c.isascii() and (c.isalnum() or c in "._") for c in gid)
    assert gid == topics.group_id(org, unit, pool)
    info = parse_topic(topics.shared_pool_subscription(org, unit, pool))
    assert info == TopicInfo("pool", org, unit, pool=pool, shared_group=gid)


@given(ident, ident, agent_ident, ident)
def test_property_build_parse_round_trip(org, unit, agent, suffix):
    cases = {
        "discovery": topics.discovery_topic(org, unit, agent),
        "request": topics.request_topic(org, unit, agent),
        "event": topics.event_topic(org, unit, agent),
    }
    for kind, t in cases.items():
        info = parse_topic(t)
        assert info == TopicInfo(kind, org, unit, agent=agent)
        assert info.topic == t
    r = topics.reply_topic(org, unit, agent, suffix)
    info = parse_topic(r)
    assert info == TopicInfo("reply", org, unit, agent=agent, reply_suffix=suffix)
    assert info.topic == r
    p = topics.pool_topic(org, unit, suffix)
    assert parse_topic(p) == TopicInfo("pool", org, unit, pool=suffix)
    assert parse_topic(p).topic == p


def test_parse_returns_none_outside_a2a_v1():
    for t in ["sensors/temp", "$SYS/broker/uptime", "$a2a/v2/request/a/b/c", "$a2a", "",
              "$share/g/sensors/temp"]:
        assert parse_topic(t) is None
        assert not topics.is_a2a_topic(t)


@pytest.mark.parametrize(
    "topic, match",
    [
        ("$a2a/v1/request/acme/support", "level"),
        ("$a2a/v1/discovery/acme/support/desk/extra", "level"),
        ("$a2a/v1/reply/acme/support/coordinator", "level"),
        ("$a2a/v1/event/acme/support/a/b", "level"),
        ("$a2a/v1/request/acme/support/pool/x/y", "level"),
        ("$a2a/v1/bogus/acme/support/desk", "unknown kind"),
        ("$a2a/v1/request/acme/sup port/desk", "unit_id"),
        ("$a2a/v1/discovery/acme/support/+", "agent_id"),
        ("$a2a/v1/reply/acme/support/c/", "reply_suffix"),
        ("$share/bad group/$a2a/v1/request/acme/support/pool/x", "group_id"),
    ],
)
def test_parse_rejects_malformed_a2a_topics(topic, match):
    assert topics.is_a2a_topic(topic)
    with pytest.raises(ValueError, match=match):
        parse_topic(topic)


def test_parse_accepts_share_prefix_on_any_kind():
    info = parse_topic("$share/g1/$a2a/v1/request/acme/support/ticket-desk")
    assert info == TopicInfo("request", "acme", "support", agent="ticket-desk", shared_group="g1")
