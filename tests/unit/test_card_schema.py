"""The one card validator: the A2A v1.0 AgentCard type (a2a-sdk) is normative, the hand checks say what
it cannot and restate the rest for the core. Profile: Agent Card Requirements 1."""
import copy

import pytest

from a2a_nb.protocol import card_schema as S
from a2a_nb.protocol import cards as C


def good_card():
    return C.agent_card("Ticket desk", "Support ticket analysis", "1.0.0", "acme", "support", "ticket-desk",
                        [C.skill("ticket-rca", "Ticket RCA", "Finds why a ticket happened", ["tickets"])],
                        provider=C.provider("ACME", "https://acme.example"),
                        security_schemes={"oauth": C.oauth2_scheme("https://idp/token", {"r": "Read"})},
                        security_requirements=[C.requirement("oauth", ["r"])])


def changed(**fields):
    card = copy.deepcopy(good_card())
    for key, value in fields.items():
        if value is None:
            del card[key]
        else:
            card[key] = value
    return card


SKILL = {"id": "s", "name": "S", "description": "d", "tags": ["t"]}
BOTH_REFUSE = {
    "name missing": changed(name=None),
    "name a dict": changed(name={"a": 1}),
    "version a number": changed(version=3),
    "skills empty": changed(skills=[]),
    "skills a string": changed(skills="x"),
    "skills missing": changed(skills=None),
    "tags missing": changed(skills=[{"id": "s", "name": "S", "description": "d"}]),
    "tags empty": changed(skills=[dict(SKILL, tags=[])]),
    "tags numbers": changed(skills=[dict(SKILL, tags=[1, 2])]),
    "skill id a list": changed(skills=[dict(SKILL, id=[1])]),
    "skill a string": changed(skills=["x"]),
    "examples a number": changed(skills=[dict(SKILL, examples=5)]),
    "capabilities missing": changed(capabilities=None),
    "streaming a string": changed(capabilities={"streaming": "yes"}),
    "unknown capability": changed(capabilities={"foo": True}),
    "no interfaces": changed(supportedInterfaces=[]),
    "interface without binding": changed(supportedInterfaces=[{"url": "x"}]),
    "v0.3 url": changed(url="http://x"),
    "v0.3 security": changed(security=[]),
    "input modes missing": changed(defaultInputModes=None),
    "input modes empty": changed(defaultInputModes=[]),
    "provider without url": changed(provider={"organization": "A"}),
    "provider a string": changed(provider="A"),
    "two scheme kinds": changed(securitySchemes={"oauth": {"httpAuthSecurityScheme": {}, "mtlsSecurityScheme": {}}}),
    "schemes a list": changed(securitySchemes=[]),
    "requirements a number": changed(securityRequirements=5),
    "requirement of another shape": changed(securityRequirements=[{"x": 1}]),
    "scopes not a list": changed(securityRequirements=[{"schemes": {"oauth": {"list": "r"}}}]),
}
ONLY_THE_HAND_CHECKS_REFUSE = {  # what the type cannot say
    "name empty": changed(name=""),
    "description blank": changed(description="  "),
    "an empty tag": changed(skills=[dict(SKILL, tags=[""])]),
    "an empty input mode": changed(defaultInputModes=[""]),
    "capabilities a list": changed(capabilities=[]),
    "a scheme of no kind": changed(securitySchemes={"oauth": {}}),
    "an undeclared scheme": changed(securityRequirements=[{"schemes": {"nope": {"list": []}}}]),
}
ONLY_THE_TYPE_REFUSES = {  # LEFT_TO_THE_TYPE
    "iconUrl a number": changed(iconUrl=5),
    "a signature of another shape": changed(signatures=[{"x": 1}]),
    "an extension of another shape": changed(capabilities={"extensions": [{"uri": 5}]}),
    "oauth2 without flows": changed(securitySchemes={"oauth": {"oauth2SecurityScheme": {}}}),
}


def test_a_good_card_passes_both():
    assert S.card_problems(good_card()) == [] and S.type_problem(good_card()) is None
    assert S.card_problems(good_card(), require_mqtt=True, sdk=True) == []


@pytest.mark.parametrize("name", sorted(BOTH_REFUSE))
def test_the_hand_checks_refuse_what_the_type_refuses(name):
    card = BOTH_REFUSE[name]
    assert S.type_problem(card) is not None
    assert S.card_problems(card)


@pytest.mark.parametrize("name", sorted(ONLY_THE_HAND_CHECKS_REFUSE))
def test_what_only_the_hand_checks_say(name):
    card = ONLY_THE_HAND_CHECKS_REFUSE[name]
    assert S.type_problem(card) is None
    assert S.card_problems(card)


@pytest.mark.parametrize("name", sorted(ONLY_THE_TYPE_REFUSES))
def test_what_is_left_to_the_type(name):
    card = ONLY_THE_TYPE_REFUSES[name]
    assert S.card_problems(card) == []
    refused = S.type_problem(card)
    assert refused is not None
    assert S.card_problems(card, sdk=True) == [refused]  # the full verdict: the type has the last word


def test_the_full_verdict_lists_the_hand_problems_then_the_type():
    card = changed(skills=[])
    assert S.card_problems(card, sdk=True) == ["card.skills must be a non-empty list",
                                               "required fields: skills: Field must contain at least one element."]


def test_the_mqtt_entry_is_the_profile_rule():
    card = changed(supportedInterfaces=[{"url": "https://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
    assert S.type_problem(card) is None and S.card_problems(card) == []
    assert S.card_problems(card, require_mqtt=True) == [
        "card.supportedInterfaces has no MQTT entry naming a request topic"]


def test_anything_not_an_object():
    assert S.card_problems([1]) == ["an agent card must be a JSON object, got list"]
    assert S.type_problem([1]) == "AgentCard must be a JSON object, got list"
