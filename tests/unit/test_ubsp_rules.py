"""The ubsp-v1 rules as pure functions (a2a_nb.protocol.ubsp): properties, claims, replay cache,
key metadata. Profile: Optional Untrusted-Broker Security Profile 2-12."""
from __future__ import annotations

import json

import pytest

from a2a_nb.protocol import properties, ubsp
from a2a_nb.protocol.packet import MqttMessage

REPLY = "$a2a/v1/reply/acme/support/coordinator/r1"


def request(props, content_type=ubsp.CONTENT_TYPE) -> MqttMessage:
    return MqttMessage("$a2a/v1/request/acme/support/analyst", b"x.y.z.w.v", response_topic=REPLY,
                       correlation_data=b"c", user_properties=tuple(props), content_type=content_type)


def test_a_protected_request_names_profile_requester_and_recipient():
    props = ubsp.request_properties("coordinator", "analyst", kid="analyst-enc-1")
    assert dict(props) == {"a2a-security-profile": "ubsp-v1", "a2a-requester-agent-id": "coordinator",
                           "a2a-recipient-agent-id": "analyst", "a2a-recipient-kid": "analyst-enc-1"}
    assert ubsp.request_problem(request(props), "analyst") is None


@pytest.mark.parametrize("props, content_type, expected", [
    ((("a2a-security-profile", "ubsp-v2"),), ubsp.CONTENT_TYPE, "'ubsp-v2' is not supported"),
    (ubsp.request_properties("coordinator", "billing"), ubsp.CONTENT_TYPE, "'billing' is not this responder"),
    ((("a2a-security-profile", "ubsp-v1"), ("a2a-recipient-agent-id", "analyst")), ubsp.CONTENT_TYPE,
     "must name its requester"),
    ((("a2a-security-profile", "ubsp-v1"), ("a2a-requester-agent-id", "a/b"), ("a2a-recipient-agent-id", "analyst")),
     ubsp.CONTENT_TYPE, "must name its requester"),
    (ubsp.request_properties("coordinator", "analyst"), "application/json", "not a JOSE type"),
    (ubsp.request_properties("coordinator", "analyst"), None, "not a JOSE type"),
])
def test_a_protected_request_with_wrong_metadata_is_refused(props, content_type, expected):
    assert expected in (ubsp.request_problem(request(props, content_type), "analyst") or "")


def test_both_jose_content_types_are_accepted():
    for ctype in ("application/jose", "application/jose+json", "Application/JOSE; charset=us-ascii"):
        assert ubsp.request_problem(request(ubsp.request_properties("c", "analyst"), ctype), "analyst") is None


def test_a_protected_reply_names_requester_and_responder():
    reply = MqttMessage(REPLY, b"a.b.c.d.e", correlation_data=b"c", content_type=ubsp.CONTENT_TYPE,
                        user_properties=ubsp.response_properties("coordinator", "analyst"))
    assert ubsp.response_problem(reply, "coordinator") is None
    assert "is not other" in (ubsp.response_problem(reply, "other") or "")
    bare = MqttMessage(REPLY, b"{}", correlation_data=b"c")
    assert "not protected" in (ubsp.response_problem(bare, "coordinator") or "")


def test_without_ubsp_keeps_every_other_property():
    props = ubsp.request_properties("c", "a", "k") + ((properties.ARTIFACT_MODE, "json"), ("x-other", "1"))
    assert ubsp.without_ubsp(props) == ((properties.ARTIFACT_MODE, "json"), ("x-other", "1"))


def test_claims_are_checked_for_sender_recipient_lifetime_and_jti():
    good = ubsp.claims("coordinator", "analyst", "j1", now=1000.0)
    assert good["exp"] - good["iat"] <= ubsp.TTL_S + 1
    assert ubsp.claims_problem(good, "coordinator", "analyst", 1000.0) is None
    assert "not by mallory" in ubsp.claims_problem(good, "mallory", "analyst", 1000.0)
    assert "not for billing" in ubsp.claims_problem(good, "coordinator", "billing", 1000.0)
    assert "expired" in ubsp.claims_problem(good, "coordinator", "analyst", 1000.0 + ubsp.TTL_S + ubsp.SKEW_S + 2)
    assert "no usable jti" in ubsp.claims_problem({**good, "jti": ""}, "coordinator", "analyst", 1000.0)
    assert "numbers" in ubsp.claims_problem({**good, "exp": "soon"}, "coordinator", "analyst", 1000.0)
    assert "numbers" in ubsp.claims_problem({**good, "iat": True}, "coordinator", "analyst", 1000.0)
    long_lived = {**good, "exp": good["iat"] + ubsp.MAX_TTL_S + 100}
    assert "lifetime" in ubsp.claims_problem(long_lived, "coordinator", "analyst", 1000.0)
    assert "future" in ubsp.claims_problem({**good, "iat": 2000}, "coordinator", "analyst", 1000.0)


def test_the_replay_cache_refuses_a_repeat_forgets_expired_ones_and_fails_closed_when_full():
    cache = ubsp.ReplayCache(max_entries=3)
    assert cache.check("a", exp=10.0, now=0.0) is None
    assert "replayed" in cache.check("a", exp=10.0, now=1.0)
    assert cache.check("b", exp=20.0, now=1.0) is None and cache.check("c", exp=30.0, now=1.0) is None
    assert "full" in cache.check("d", exp=30.0, now=2.0)  # never forgets an unexpired one to make room
    assert cache.check("d", exp=40.0, now=10.0 + ubsp.SKEW_S + 1) is None  # "a" expired: room again
    assert len(cache) == 3


def test_key_metadata_in_a_card_extension():
    meta = {"jwksUri": "https://keys.acme.example/analyst.json"}
    card = {"name": "A", "capabilities": {"streaming": True, "extensions": [{"uri": "urn:other"}, ubsp.card_extension(meta)]}}
    assert ubsp.card_key_metadata(card) == meta
    for odd in ({}, {"capabilities": "x"}, {"capabilities": {"extensions": "x"}}, {"capabilities": {"extensions": [1]}},
                {"capabilities": {"extensions": [{"uri": ubsp.EXTENSION_URI, "params": "x"}]}}, [], None):
        assert ubsp.card_key_metadata(odd) is None


def test_a_requesters_key_metadata_message_is_retained_and_read_back_within_bounds():
    msg = ubsp.key_metadata_message("acme", "support", "coordinator", {"jwks": {"keys": []}})
    assert msg.retain and msg.topic == "$a2a/v1/event/acme/support/coordinator"
    assert ubsp.read_key_metadata(msg) == ("coordinator", {"jwks": {"keys": []}})
    cleared = ubsp.key_metadata_message("acme", "support", "coordinator", None)
    assert cleared.retain and cleared.payload == b"" and ubsp.read_key_metadata(cleared) == ("coordinator", None)
    hostile = [
        b"[" * 100_000, b"not json", json.dumps({"agent": "someone-else", "jwks": {}}).encode(),
        json.dumps({"agent": "coordinator", "jwks": "x" * (ubsp.MAX_METADATA_BYTES + 1)}).encode(),
    ]
    for payload in hostile:
        assert ubsp.read_key_metadata(MqttMessage(msg.topic, payload, user_properties=msg.user_properties)) is None
    extra = json.dumps({"agent": "coordinator", "jwksUri": "https://k/x", "evil": 1}).encode()
    assert ubsp.read_key_metadata(MqttMessage(msg.topic, extra, user_properties=msg.user_properties)) == (
        "coordinator", {"jwksUri": "https://k/x"})
    presence = MqttMessage(msg.topic, b"{}", user_properties=((properties.EVENT_TYPE, "pool-presence"),))
    assert ubsp.read_key_metadata(presence) is None


def test_a_reply_binding_names_the_request_and_any_other_is_refused_naming_what_differs():
    """Issue 35 item 1: the request's jti, Correlation Data and JSON-RPC id, signed into each reply."""
    bound = ubsp.reply_binding("j1", b"\x01\x02", "7")
    assert bound == {"req": {"jti": "j1", "cd": "0102", "id": "7"}}
    assert ubsp.binding_problem(bound, "j1", b"\x01\x02", "7") is None
    assert "no req claim" in ubsp.binding_problem({}, "j1", b"\x01\x02", "7")
    assert "request jti 'j0'" in ubsp.binding_problem(ubsp.reply_binding("j0", b"\x01\x02", "7"), "j1", b"\x01\x02", "7")
    assert "Correlation Data" in ubsp.binding_problem(ubsp.reply_binding("j1", b"\x09", "7"), "j1", b"\x01\x02", "7")
    assert "JSON-RPC id" in ubsp.binding_problem(ubsp.reply_binding("j1", b"\x01\x02", 7), "j1", b"\x01\x02", "7")
    refusal = ubsp.reply_binding(None, b"\x01\x02", None)  # the refusal of a request that was not opened
    assert ubsp.binding_problem(refusal, "j1", b"\x01\x02", "7", is_error=True) is None
    assert "request jti" in ubsp.binding_problem(refusal, "j1", b"\x01\x02", "7")  # never a result
    assert "Correlation Data" in ubsp.binding_problem(refusal, "j1", b"\x09", "7", is_error=True)


def test_the_replay_cache_refuses_what_was_issued_before_not_before():
    """Issue 35 item 2: keys that outlive their process, without the memory of what they opened."""
    cache = ubsp.ReplayCache(not_before=100.0)
    assert "before this agent started" in cache.check("a", exp=150.0, now=101.0, iat=99.99)
    assert cache.check("a", exp=150.0, now=101.0, iat=100.0) is None
