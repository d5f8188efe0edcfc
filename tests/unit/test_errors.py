"""Profile: Mandatory Binding-Specific Error Mapping; A2A v1.0 error codes."""
import json

import pytest

from a2a_nb.protocol import errors as E
from a2a_nb.protocol.errors import A2AError, classify


def test_codes():
    assert (E.PARSE_ERROR, E.INVALID_REQUEST, E.METHOD_NOT_FOUND, E.INVALID_PARAMS, E.INTERNAL_ERROR) == \
        (-32700, -32600, -32601, -32602, -32603)
    assert [E.TASK_NOT_FOUND, E.TASK_NOT_CANCELABLE, E.PUSH_NOTIFICATION_NOT_SUPPORTED,
            E.UNSUPPORTED_OPERATION, E.CONTENT_TYPE_NOT_SUPPORTED, E.INVALID_AGENT_RESPONSE,
            E.EXTENDED_AGENT_CARD_NOT_CONFIGURED, E.EXTENSION_SUPPORT_REQUIRED,
            E.VERSION_NOT_SUPPORTED] == list(range(-32001, -32010, -1))


def test_a2a_error_dict_round_trip():
    err = A2AError(-32001, "Task not found: t", [{"x": 1}])
    d = err.to_dict()
    assert d == {"code": -32001, "message": "Task not found: t", "data": [{"x": 1}]}
    back = A2AError.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d
    assert A2AError(-32603, "boom").to_dict() == {"code": -32603, "message": "boom"}
    assert "-32001" in str(err) and "TaskNotFound" in str(err)
    for bad in ({"message": "m"}, {"code": "1", "message": "m"}, {"code": 1}, [], {"code": True, "message": "m"}):
        with pytest.raises(ValueError):
            A2AError.from_dict(bad)
    with pytest.raises(TypeError):
        A2AError("x", "m")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "err, code, name",
    [
        (E.parse_error(), -32700, "ParseError"),
        (E.invalid_request("no method"), -32600, "InvalidRequest"),
        (E.method_not_found("Nope"), -32601, "MethodNotFound"),
        (E.invalid_params("contextId mismatch"), -32602, "InvalidParams"),
        (E.internal_error("oops"), -32603, "InternalError"),
        (E.task_not_found("t1"), -32001, "TaskNotFound"),
        (E.task_not_cancelable("t1", "TASK_STATE_COMPLETED"), -32002, "TaskNotCancelable"),
        (E.push_notification_not_supported(), -32003, "PushNotificationNotSupported"),
        (E.unsupported_operation("task t1 is completed"), -32004, "UnsupportedOperation"),
        (E.content_type_not_supported("image/png", ["text/plain"]), -32005, "ContentTypeNotSupported"),
        (E.invalid_agent_response("no parts"), -32006, "InvalidAgentResponse"),
        (E.extended_agent_card_not_configured(), -32007, "ExtendedAgentCardNotConfigured"),
        (E.extension_support_required("urn:x"), -32008, "ExtensionSupportRequired"),
        (E.version_not_supported("0.3"), -32009, "VersionNotSupported"),
        (E.request_expired("stale"), -32003, "request_expired"),
        (E.responder_unavailable("busy"), -32004, "responder_unavailable"),
        (E.transport_protocol_error("no Correlation Data"), -32005, "transport_protocol_error"),
    ],
)
def test_constructors_and_classify(err, code, name):
    assert isinstance(err, A2AError) and err.code == code
    kind = classify(err)
    assert kind.code == code and kind.name == name
    assert classify(err.to_dict()) == kind  # dict form reads the same
    json.dumps(err.to_dict())  # serialisable


def test_core_errors_carry_error_info():
    err = E.task_not_found("t-1")
    assert err.data[0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert err.data[0]["reason"] == "TASK_NOT_FOUND"
    assert err.data[0]["domain"] == "a2a-protocol.org"
    assert err.data[0]["metadata"] == {"taskId": "t-1"}
    for ctor, reason in [(E.unsupported_operation, "UNSUPPORTED_OPERATION"),
                         (E.invalid_agent_response, "INVALID_AGENT_RESPONSE")]:
        assert ctor("x").data[0]["reason"] == reason
    assert E.push_notification_not_supported().data[0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    with pytest.raises(ValueError):
        E.core_error(-32602, "not core")


def test_binding_errors_have_the_marker():
    assert E.request_expired().to_dict()["data"] == {"a2a_error": "request_expired"}
    assert E.responder_unavailable().to_dict()["data"] == {"a2a_error": "responder_unavailable"}
    assert E.transport_protocol_error().to_dict()["data"] == {"a2a_error": "transport_protocol_error"}


def test_classify_tells_clashing_codes_apart():
    core = classify(E.unsupported_operation("terminal task"))
    binding = classify(E.responder_unavailable())
    assert core.code == binding.code == -32004
    assert (core.name, core.binding, core.retry_eligible) == ("UnsupportedOperation", False, False)
    assert (binding.name, binding.binding, binding.retry_eligible) == ("responder_unavailable", True, True)

    expired = classify(E.request_expired())
    push = classify(E.push_notification_not_supported())
    assert expired.retry_eligible and not push.retry_eligible and not push.binding

    tpe = classify(E.transport_protocol_error())
    ctype = classify(E.content_type_not_supported())
    assert tpe.binding and tpe.non_retryable_transport and not tpe.retry_eligible
    assert not ctype.binding and not ctype.non_retryable_transport


def test_classify_needs_the_matching_marker():
    # marker of another code, missing marker, marker in the wrong shape: all core
    assert not classify({"code": -32004, "message": "m", "data": {"a2a_error": "request_expired"}}).binding
    assert not classify({"code": -32003, "message": "m"}).binding
    assert not classify({"code": -32003, "message": "m", "data": [{"a2a_error": "request_expired"}]}).binding
    assert not classify({"code": -32003, "message": "m", "data": "request_expired"}).binding
    # a binding marker on a code the binding does not define does not make it a binding error
    k = classify({"code": -32001, "message": "m", "data": {"a2a_error": "request_expired"}})
    assert (k.name, k.binding, k.retry_eligible) == ("TaskNotFound", False, False)


def test_classify_unknown_codes():
    assert classify({"code": -32050, "message": "m"}).name == "ServerError"
    assert classify({"code": 42, "message": "m"}).name == "UnknownError"
    with pytest.raises(ValueError):
        classify({"message": "no code"})


def test_messages_help_the_learner():
    assert "v0.3" in E.method_not_found("message/send").message
    assert "TASK_STATE_COMPLETED" in E.task_not_cancelable("t1", "TASK_STATE_COMPLETED").message
    assert "busy" in E.responder_unavailable("busy").message
