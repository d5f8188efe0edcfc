"""Profile: Discovery, Agent Card Requirements; A2A v1.0 card shape."""
import json

import pytest

from a2a_nb.protocol import cards as C
from a2a_nb.protocol.card_schema import card_problems


def desk_card(**kw):
    skills = [
        C.skill("ticket-rca", "Ticket root-cause analysis", "Finds why a ticket happened",
                ["tickets", "Root-Cause"], examples=["Analyse TCK-4821"]),
        C.skill("triage", "Triage", "Sorts tickets", ["tickets", "triage"]),
    ]
    return C.agent_card("Ticket desk", "Support ticket analysis", "1.0.0", "acme", "support",
                        "ticket-desk", skills, **kw)


def test_agent_card_shape():
    card = desk_card()
    assert card["supportedInterfaces"] == [{
        "url": "$a2a/v1/request/acme/support/ticket-desk",
        "protocolBinding": C.MQTT_BINDING, "protocolVersion": "1.0"}]
    assert card["capabilities"] == {"streaming": True, "pushNotifications": False, "extendedAgentCard": False}
    assert card["defaultInputModes"] == ["text/plain", "application/json"]
    assert card_problems(card) == []
    assert card_problems(card, require_mqtt=True) == []
    assert C.request_topic_of(card) == "$a2a/v1/request/acme/support/ticket-desk"


def test_agent_card_with_broker_url_and_security():
    card = desk_card(
        broker_url="mqtts://broker.example.com:8883/",
        provider=C.provider("ACME", "https://acme.example"),
        security_schemes={"bearer": C.bearer_scheme(),
                          "oauth": C.oauth2_scheme("https://idp/token", {"tickets.read": "Read"})},
        security_requirements=[C.requirement("oauth", ["tickets.read"])],
        documentation_url="https://acme.example/docs",
    )
    assert card["supportedInterfaces"][0]["url"] == "mqtts://broker.example.com:8883/$a2a/v1/request/acme/support/ticket-desk"
    assert C.request_topic_of(card) == "$a2a/v1/request/acme/support/ticket-desk"
    assert card["securityRequirements"] == [{"schemes": {"oauth": {"list": ["tickets.read"]}}}]
    assert card_problems(card) == []


def test_agent_card_refuses_bad_input():
    with pytest.raises(ValueError, match="tags"):
        C.skill("s", "S", "d", [])
    with pytest.raises(ValueError, match="reserved"):
        C.agent_card("n", "d", "1", "acme", "support", "pool", [C.skill("s", "S", "d", ["t"])])
    with pytest.raises(ValueError, match="skills"):
        C.agent_card("n", "d", "1", "acme", "support", "x", [])
    with pytest.raises(ValueError, match="not declared"):
        desk_card(security_requirements=[C.requirement("oauth")])
    with pytest.raises(ValueError):
        C.oauth2_scheme("https://idp/token", {})
    with pytest.raises(ValueError):
        C.oauth2_scheme("https://idp/token", {"s": "d"}, flow="authorization_code")


def test_card_problems_reports_problems():
    card = desk_card()
    assert card_problems("nope") == ["an agent card must be a JSON object, got str"]
    broken = dict(card, supportedInterfaces=[], version=3, security=[], url="http://x")
    del broken["description"]
    broken["skills"] = [{"id": "s", "name": "S", "tags": []}, "x"]
    broken["capabilities"] = {"streaming": "yes"}
    problems = card_problems(broken)
    text = "\n".join(problems)
    for expected in [
        "card.description is missing",
        "card.version must be a non-empty string",
        "card.supportedInterfaces must be a non-empty list",
        "card.security: unknown field (v0.3 name; v1.0 uses securityRequirements)",
        "card.url: unknown field",
        "card.skills[0].description is missing",
        "card.skills[0].tags must not be empty",
        "card.skills[1] must be an object",
        "card.capabilities.streaming must be true or false",
    ]:
        assert expected in text, expected
    missing = card_problems({})
    assert {"card.name is missing (required)", "card.skills is missing (required)",
            "card.capabilities is missing (required)",
            "card.supportedInterfaces is missing (required)",
            "card.defaultInputModes is missing (required)"} <= set(missing)
    iface = dict(card, supportedInterfaces=[{"url": "x"}])
    assert "card.supportedInterfaces[0].protocolBinding is missing (required)" in card_problems(iface)
    not_mqtt = dict(card, supportedInterfaces=[{"url": "https://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
    assert card_problems(not_mqtt) == []
    assert any("MQTT" in p for p in card_problems(not_mqtt, require_mqtt=True))
    bad_scheme = dict(card, securitySchemes={"x": {"httpAuthSecurityScheme": {}, "mtlsSecurityScheme": {}}})
    assert any("exactly one" in p for p in card_problems(bad_scheme))


def test_card_matches_tags_and_capabilities():
    card = desk_card()
    assert C.card_matches(card)
    assert C.card_matches(card, tags=["tickets"])
    assert C.card_matches(card, tags=["TICKETS", "root-cause"])
    assert not C.card_matches(card, tags=["root-cause", "triage"])  # no single skill has both
    assert not C.card_matches(card, tags=["billing"])
    assert C.card_matches(card, tags="triage")
    assert C.card_matches(card, capabilities=["streaming"])
    assert not C.card_matches(card, capabilities=["push_notifications"])
    assert not C.card_matches(card, capabilities=["pushNotifications"])
    assert not C.card_matches(card, capabilities=["extendedAgentCard"])
    assert not C.card_matches("x", tags=["t"])  # type: ignore[arg-type]


def test_card_matches_security():
    open_card = desk_card()
    assert C.card_matches(open_card, schemes=set())
    secured = desk_card(
        security_schemes={"bearer": C.bearer_scheme(),
                          "oauth": C.oauth2_scheme("https://idp/token", {"tickets.read": "r", "tickets.write": "w"}),
                          "mtls": {"mtlsSecurityScheme": {}}},
        security_requirements=[C.requirement("oauth", ["tickets.read"]),
                               {"schemes": {"bearer": {"list": []}, "mtls": {"list": []}}}],
    )
    assert C.card_matches(secured)  # None skips the check
    assert not C.card_matches(secured, schemes=set())
    assert C.card_matches(secured, schemes={"oauth"})
    assert not C.card_matches(secured, schemes={"bearer"})  # second alternative needs mtls too
    assert C.card_matches(secured, schemes={"bearer", "mtls"})
    assert C.card_matches(secured, schemes={"oauth": ["tickets.read"]})
    assert not C.card_matches(secured, schemes={"oauth": ["tickets.write"]})


def test_request_topic_of_variants():
    def card_with(*ifaces):
        return {"supportedInterfaces": list(ifaces)}
    t = "$a2a/v1/request/acme/support/x"
    assert C.request_topic_of(card_with({"url": t, "protocolBinding": "MQTT5+JSONRPC"})) == t
    assert C.request_topic_of(card_with({"url": "https://x", "protocolBinding": "JSONRPC"},
                                        {"url": "mqtt://h:1883/" + t, "protocolBinding": "MQTTv5+JSONRPCv2"})) == t
    pool = "$a2a/v1/request/acme/support/pool/p"
    assert C.request_topic_of(card_with({"url": pool, "protocolBinding": C.MQTT_BINDING})) == pool
    assert C.request_topic_of(card_with({"url": "mqtts://broker:8883", "protocolBinding": "MQTT5+JSONRPC"})) is None
    assert C.request_topic_of(card_with({"url": "$a2a/v1/discovery/a/b/c", "protocolBinding": C.MQTT_BINDING})) is None
    assert C.request_topic_of(card_with({"url": "$a2a/v1/request/a/b c/x", "protocolBinding": C.MQTT_BINDING})) is None
    assert C.request_topic_of(card_with({"url": t, "protocolBinding": "JSONRPC"})) is None
    assert C.request_topic_of({}) is None
    assert C.is_mqtt_binding(C.MQTT_BINDING) and not C.is_mqtt_binding("HTTP+JSON")


# -- reading a card message: the one reader of discovery, the bridge, send and the probe ----------------------
TOPIC = "$a2a/v1/discovery/acme/support/ticket-desk"
ONLINE = (("a2a-status", "online"), ("a2a-status-source", "agent"))


def test_read_a_card_with_its_presence():
    card = desk_card()
    read = C.read_card_message(TOPIC, json.dumps(card).encode(), ONLINE)
    assert read == C.CardMessage("acme", "support", "ticket-desk", True, card, None, "online", "agent")
    later = C.read_card_message(TOPIC, json.dumps(card).encode(), (*ONLINE, ("a2a-status", "offline")))
    assert later.status == "offline"  # MQTT allows repeats: the last value wins
    assert C.read_card_message(TOPIC, b"{}").status is None


def test_an_empty_payload_unregisters():
    assert C.read_card_message(TOPIC, b"", ONLINE) == C.CardMessage("acme", "support", "ticket-desk", False)


@pytest.mark.parametrize("payload, why", [
    (b"[1, 2]", "card is a JSON list, not an object"),
    (b"null", "card is a JSON NoneType, not an object"),
    (b"\xff", "card is not usable JSON: not UTF-8"),
    (b"[" * 100 + b"]" * 100, "card is not usable JSON: nested more than 64 levels deep"),
    (b" " * (C.MAX_CARD_BYTES + 1), "card is not usable JSON: 65,537 bytes, more than the 65,536 accepted"),
])
def test_a_payload_that_is_no_card_says_why(payload, why):
    read = C.read_card_message(TOPIC, payload, ONLINE)
    assert read.registered and read.card is None and read.error.startswith(why)
    assert read.status == "online"


@pytest.mark.parametrize("topic", ["$a2a/v1/request/acme/support/ticket-desk", "other/topic",
                                   "$a2a/v1/discovery/acme/support", "$a2a/v1/discovery/acme/support/bad agent"])
def test_only_an_agents_discovery_topic_is_read(topic):
    assert C.read_card_message(topic, b"{}") is None
