"""Profile: A2A User Property Naming, Presence and Liveness, OAuth, Binary Artifact Mode."""
import pytest

from a2a_nb.protocol import properties as P
from a2a_nb.protocol.packet import MqttMessage


def test_constants_use_the_profile_names():
    assert P.KNOWN == {
        "a2a-status", "a2a-status-source", "a2a-responder-agent-id", "a2a-authorization",
        "a2a-artifact-mode", "a2a-event-type", "a2a-task-id", "a2a-context-id", "a2a-artifact-id",
        "a2a-chunk-seqno", "a2a-last-chunk", "a2a-security-profile", "a2a-requester-agent-id",
        "a2a-recipient-agent-id", "a2a-recipient-kid",
    }
    assert all(P.is_binding_property(k) for k in P.KNOWN)
    assert not P.is_binding_property("x-a2a-status")
    assert (P.ONLINE, P.OFFLINE, P.SOURCE_AGENT, P.SOURCE_LWT, P.SOURCE_BROKER) == \
        ("online", "offline", "agent", "lwt", "broker")
    assert (P.MODE_JSON, P.MODE_BINARY, P.EVENT_ARTIFACT_UPDATE) == ("json", "binary", "task-artifact-update")


def test_is_authorization_key_ignores_letter_case():
    assert P.is_authorization_key("a2a-authorization") and P.is_authorization_key("A2A-Authorization")
    assert not P.is_authorization_key("authorization") and not P.is_authorization_key("a2a-authorization-x")


def test_redact_and_without_authorization():
    props = (("a2a-authorization", "Bearer secret"), ("a2a-task-id", "t1"), ("A2A-Authorization", "Bearer x"))
    red = P.redact(props)
    assert red == (("a2a-authorization", "[redacted]"), ("a2a-task-id", "t1"), ("A2A-Authorization", "[redacted]"))
    assert "secret" not in repr(red)
    assert P.without_authorization(props) == (("a2a-task-id", "t1"),)
    assert P.redact([]) == ()


def test_presence_properties():
    assert P.presence_properties("online", "agent") == (("a2a-status", "online"), ("a2a-status-source", "agent"))
    assert P.presence_properties("offline", "lwt") == (("a2a-status", "offline"), ("a2a-status-source", "lwt"))
    assert P.presence_properties("offline", "broker")[1] == ("a2a-status-source", "broker")
    with pytest.raises(ValueError, match="online"):
        P.presence_properties("up", "agent")
    with pytest.raises(ValueError, match="a2a-status-source"):
        P.presence_properties("online", "me")
    with pytest.raises(ValueError, match="Last Will"):
        P.presence_properties("online", "lwt")
    msg = MqttMessage("t").with_user_properties(*P.presence_properties("online", "agent"))
    assert msg.user_property(P.STATUS) == "online"


def test_bearer_round_trip():
    pair = P.bearer("abc.def")
    assert pair == ("a2a-authorization", "Bearer abc.def")
    assert P.parse_bearer(pair[1]) == "abc.def"
    for bad in (None, "Basic x", "Bearer", "Bearer  "):
        with pytest.raises(ValueError):
            P.parse_bearer(bad)
    with pytest.raises(ValueError):
        P.bearer("Bearer abc")


def test_artifact_mode_defaults_to_json():
    assert P.artifact_mode("binary") == "binary"
    for v in (None, "json", "BINARY", "zip"):
        assert P.artifact_mode(v) == "json"


def test_chunk_properties_are_strings():
    props = P.chunk_properties("t1", "a1", 3, True, context_id="c1")
    assert dict(props) == {
        "a2a-event-type": "task-artifact-update", "a2a-task-id": "t1", "a2a-artifact-id": "a1",
        "a2a-chunk-seqno": "3", "a2a-last-chunk": "true", "a2a-context-id": "c1",
    }
    assert P.get(P.chunk_properties("t1", "a1", 0, False), P.LAST_CHUNK) == "false"
    with pytest.raises(ValueError):
        P.chunk_properties("t1", "a1", -1, False)
    assert P.get((("k", "1"), ("k", "2")), "k") == "2"


def test_one_user_property_reader_last_value_wins():
    pairs = (("a2a-status", "online"), ("x", "1"), ("a2a-status", "offline"))
    assert P.as_dict(pairs) == {"a2a-status": "offline", "x": "1"}
    assert P.as_dict([["k", "1"], ["k", "2"]]) == {"k": "2"}  # recorded pairs are lists
    msg = MqttMessage("t", user_properties=pairs)
    assert msg.user_property("a2a-status") == P.get(pairs, "a2a-status") == "offline"
    assert msg.user_property("missing") is None and P.get((), "k") is None
    from a2a_nb.protocol import packet

    assert packet.UserProperties is P.UserProperties  # one alias


def test_responder_id_rule():
    from a2a_nb.protocol.properties import RESPONDER_AGENT_ID, responder_id

    assert responder_id("desk", "desk", pooled=False) == ()
    assert responder_id("member-2", "member-2", pooled=True) == ((RESPONDER_AGENT_ID, "member-2"),)
    assert responder_id("analyst-1", "desk", pooled=False) == ((RESPONDER_AGENT_ID, "analyst-1"),)
    # once a path was told "analyst-1", a reply from the desk again must say so too
    assert responder_id("desk", "desk", pooled=False, announced="analyst-1") == ((RESPONDER_AGENT_ID, "desk"),)
    assert responder_id("analyst-1", "desk", pooled=False, announced="analyst-1") == ((RESPONDER_AGENT_ID, "analyst-1"),)
