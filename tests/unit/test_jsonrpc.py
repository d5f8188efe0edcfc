"""JSON-RPC 2.0 envelopes (Profile: Mandatory Binding-Specific Error Mapping 1-3)."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_nb.protocol import errors as E
from a2a_nb.protocol import jsonrpc as J
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.packet import encode_json


def test_method_names():
    assert J.SEND_MESSAGE == "SendMessage"
    assert J.STREAMING_METHODS == {"SendStreamingMessage", "SubscribeToTask"}
    assert {J.GET_TASK, J.LIST_TASKS, J.CANCEL_TASK, J.SUBSCRIBE_TO_TASK, J.GET_EXTENDED_AGENT_CARD,
            J.CREATE_TASK_PUSH_NOTIFICATION_CONFIG} <= J.KNOWN_METHODS
    assert len(J.KNOWN_METHODS) == 11
    assert set(J.PARAMS_TYPE) == J.KNOWN_METHODS
    assert all("/" not in m for m in J.KNOWN_METHODS)


def test_envelopes():
    assert J.request("GetTask", {"id": "t"}, "r1") == {"jsonrpc": "2.0", "id": "r1", "method": "GetTask", "params": {"id": "t"}}
    assert "params" not in J.request("GetExtendedAgentCard", None, 1)
    assert J.result_response(1, {"x": 1}) == {"jsonrpc": "2.0", "id": 1, "result": {"x": 1}}
    err = J.error_response(None, E.parse_error())
    assert err == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert J.error_response("a", {"code": -32601, "message": "m"})["error"]["code"] == -32601
    assert J.error_response(True, E.internal_error())["id"] is None  # unusable id becomes null
    with pytest.raises(ValueError):
        J.request("", {}, 1)
    with pytest.raises(ValueError):
        J.request("GetTask", {}, 1.5)
    with pytest.raises(ValueError):
        J.request("GetTask", [], 1)  # type: ignore[arg-type]


def test_parse_request_round_trip():
    req = J.request("SendMessage", {"message": {}}, "abc")
    assert J.parse_request(encode_json(req)) == req
    assert J.parse_request(json.dumps(req)) == req
    assert J.parse_request(b'{"jsonrpc":"2.0","method":"GetTask"}')["method"] == "GetTask"
    assert J.parse_request(b'{"jsonrpc":"2.0","method":"GetTask","id":null}')["id"] is None


@pytest.mark.parametrize(
    "payload, code",
    [
        (b"\xff\xfe{}", -32700),
        (b'{"jsonrpc": "2.0", "method": ', -32700),
        (b"", -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","method":"GetTask","id":1}]', -32600),
        (b'"hello"', -32600),
        (b'{"method":"GetTask","id":1}', -32600),
        (b'{"jsonrpc":"1.0","method":"GetTask","id":1}', -32600),
        (b'{"jsonrpc":2.0,"method":"GetTask","id":1}', -32600),
        (b'{"jsonrpc":"2.0","id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":"","id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":7,"id":1}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","id":true}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","id":1.5}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","id":{}}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","id":1,"params":[1]}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","id":1,"params":null}', -32600),
    ],
)
def test_parse_request_error_codes(payload, code):
    with pytest.raises(A2AError) as e:
        J.parse_request(payload)
    assert e.value.code == code


def test_request_id_of_malformed_requests():
    assert J.request_id_of({"id": "x", "jsonrpc": "1.0"}) == "x"
    assert J.request_id_of(b'{"jsonrpc":"1.0","method":"GetTask","id":7}') == 7
    assert J.request_id_of(b"not json") is None
    assert J.request_id_of({"id": True}) is None
    assert J.request_id_of({"id": [1]}) is None
    assert J.request_id_of([1, 2]) is None


def test_check_method():
    assert J.check_method("GetTask") == "GetTask"
    with pytest.raises(A2AError) as e:
        J.check_method("tasks/get")
    assert e.value.code == -32601


def test_parse_response():
    r = J.parse_response({"jsonrpc": "2.0", "id": "1", "result": {"task": {}}})
    assert r.ok and r.id == "1" and r.result == {"task": {}} and r.raise_for_error() == {"task": {}}
    r = J.parse_response(encode_json(J.error_response("1", E.task_not_found("t"))))
    assert not r.ok and r.error["code"] == -32001
    with pytest.raises(A2AError) as e:
        r.raise_for_error()
    assert e.value.code == -32001
    assert J.parse_response({"jsonrpc": "2.0", "id": 1, "result": None}).result is None


@pytest.mark.parametrize(
    "obj, match",
    [
        ({"jsonrpc": "2.0", "id": 1}, "neither"),
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "m"}}, "both"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"message": "m"}}, "code"),
        ({"id": 1, "result": 1}, "2.0"),
        ([], "object"),
        (b"{", "JSON"),
    ],
)
def test_parse_response_rejects(obj, match):
    with pytest.raises(ValueError, match=match):
        J.parse_response(obj)


@given(st.one_of(st.text(max_size=20), st.integers(min_value=-(2**53), max_value=2**53)),
       st.sampled_from(sorted(J.KNOWN_METHODS)),
       st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))
def test_property_request_round_trip(rid, method, params):
    req = J.request(method, params, rid)
    assert J.parse_request(encode_json(req)) == req
    assert J.request_id_of(encode_json(req)) == rid
