"""One rule, one place: a request with two ``a2a-authorization`` properties is refused the same way
by the plain request check and by a bearer-token policy."""
from __future__ import annotations

from a2a_nb.agents.auth import BearerPolicy
from a2a_nb.protocol import inbound
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import MqttMessage

TWO = MqttMessage("$a2a/v1/request/acme/support/desk", b"{}", user_properties=(
    ("a2a-authorization", "Bearer a"), ("a2a-task-id", "t"), ("a2a-authorization", "Bearer b")))
ONE = MqttMessage("$a2a/v1/request/acme/support/desk", b"{}", user_properties=(("a2a-authorization", "Bearer a"),))


def test_two_authorization_properties_are_one_error_for_the_request_check_and_the_token_policy():
    err = inbound.repeated_authorization(TWO)
    assert isinstance(err, A2AError) and "more than one a2a-authorization" in err.message
    assert inbound.repeated_authorization(ONE) is None
    assert inbound.check_binding(TWO, "desk").to_dict() == err.to_dict()
    policy = BearerPolicy(issuer="https://idp", audience="desk", key="an-hmac-secret-long-enough-for-hs256",
                          require_tls=False)
    refused = policy.authenticate(TWO, tls=True)
    assert isinstance(refused, A2AError) and refused.to_dict() == err.to_dict()
    assert policy.refused == 1
