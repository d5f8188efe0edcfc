"""JSON-RPC 2.0 envelopes for A2A v1.0 methods, and strict parsing of incoming ones.

Profile: Mandatory Binding-Specific Error Mapping 1-3 (errors are JSON-RPC ``error`` objects that
follow the core JSON-RPC/A2A definitions); Streaming Reply Mapping (a stream is a series of
complete JSON-RPC responses with the same ``id``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping
from typing import Any, Optional, Union

from . import errors
from .errors import A2AError

JSONRPC_VERSION = "2.0"

SEND_MESSAGE = "SendMessage"
SEND_STREAMING_MESSAGE = "SendStreamingMessage"
GET_TASK = "GetTask"
LIST_TASKS = "ListTasks"
CANCEL_TASK = "CancelTask"
SUBSCRIBE_TO_TASK = "SubscribeToTask"
CREATE_TASK_PUSH_NOTIFICATION_CONFIG = "CreateTaskPushNotificationConfig"
GET_TASK_PUSH_NOTIFICATION_CONFIG = "GetTaskPushNotificationConfig"
LIST_TASK_PUSH_NOTIFICATION_CONFIGS = "ListTaskPushNotificationConfigs"
DELETE_TASK_PUSH_NOTIFICATION_CONFIG = "DeleteTaskPushNotificationConfig"
GET_EXTENDED_AGENT_CARD = "GetExtendedAgentCard"

KNOWN_METHODS = frozenset(
    {
        SEND_MESSAGE, SEND_STREAMING_MESSAGE, GET_TASK, LIST_TASKS, CANCEL_TASK, SUBSCRIBE_TO_TASK,
        CREATE_TASK_PUSH_NOTIFICATION_CONFIG, GET_TASK_PUSH_NOTIFICATION_CONFIG,
        LIST_TASK_PUSH_NOTIFICATION_CONFIGS, DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_EXTENDED_AGENT_CARD,
    }
)
STREAMING_METHODS = frozenset({SEND_STREAMING_MESSAGE, SUBSCRIBE_TO_TASK})
TASK_METHODS = frozenset({GET_TASK, CANCEL_TASK, SUBSCRIBE_TO_TASK})
"""Methods whose ``params.id`` names the task they are about."""

PARAMS_TYPE: Mapping[str, str] = MappingProxyType({
    SEND_MESSAGE: "SendMessageRequest",
    SEND_STREAMING_MESSAGE: "SendMessageRequest",
    GET_TASK: "GetTaskRequest",
    LIST_TASKS: "ListTasksRequest",
    CANCEL_TASK: "CancelTaskRequest",
    SUBSCRIBE_TO_TASK: "SubscribeToTaskRequest",
    CREATE_TASK_PUSH_NOTIFICATION_CONFIG: "TaskPushNotificationConfig",
    GET_TASK_PUSH_NOTIFICATION_CONFIG: "GetTaskPushNotificationConfigRequest",
    LIST_TASK_PUSH_NOTIFICATION_CONFIGS: "ListTaskPushNotificationConfigsRequest",
    DELETE_TASK_PUSH_NOTIFICATION_CONFIG: "DeleteTaskPushNotificationConfigRequest",
    GET_EXTENDED_AGENT_CARD: "GetExtendedAgentCardRequest",
})
"""A2A v1.0 proto message name of each method's ``params``."""

RESULT_TYPE: Mapping[str, str] = MappingProxyType({
    SEND_MESSAGE: "SendMessageResponse",
    SEND_STREAMING_MESSAGE: "StreamResponse",
    GET_TASK: "Task",
    LIST_TASKS: "ListTasksResponse",
    CANCEL_TASK: "Task",
    SUBSCRIBE_TO_TASK: "StreamResponse",
    GET_EXTENDED_AGENT_CARD: "AgentCard",
})
"""A2A v1.0 proto message name of each method's ``result`` (each stream item, for streams)."""

RequestId = Union[str, int, None]


def _valid_id(value: object) -> bool:
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def request(method: str, params: Optional[Mapping[str, Any]], id: RequestId) -> dict[str, Any]:
    """``{"jsonrpc": "2.0", "id": id, "method": method, "params": params}`` (params omitted if None)."""
    if not isinstance(method, str) or not method:
        raise ValueError(f"method must be a non-empty string, got {method!r}")
    if not _valid_id(id):
        raise ValueError(f"JSON-RPC id must be a string, an integer or None, got {id!r}")
    if params is not None and not isinstance(params, Mapping):
        raise ValueError(f"A2A params must be an object (dict), got {type(params).__name__}")
    req: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "id": id, "method": method}
    if params is not None:
        req["params"] = dict(params)
    return req


def result_response(id: RequestId, result: Any) -> dict[str, Any]:
    """A success response; for streams, one of these per stream item, all with the same ``id``."""
    if not _valid_id(id):
        raise ValueError(f"JSON-RPC id must be a string, an integer or None, got {id!r}")
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "result": result}


def error_response(id: RequestId, error: Union[A2AError, Mapping[str, Any]]) -> dict[str, Any]:
    """An error response; ``id`` is None when the request's id could not be read."""
    if not _valid_id(id):
        id = None
    err = error if isinstance(error, A2AError) else A2AError.from_dict(error)
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": err.to_dict()}


def _load(payload: Union[bytes, bytearray, memoryview, str]) -> Any:
    if isinstance(payload, str):
        text = payload
    else:
        try:
            text = bytes(payload).decode("utf-8")
        except UnicodeDecodeError as e:
            raise errors.parse_error(f"payload is not valid UTF-8 ({e.reason} at byte {e.start})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.parse_error(f"payload is not valid JSON ({e.msg} at line {e.lineno} column {e.colno})")
    except RecursionError:
        raise errors.parse_error("payload is nested too deeply to be parsed") from None
    except ValueError as e:  # e.g. an integer literal longer than Python's int_max_str_digits
        raise errors.parse_error(f"payload is not usable JSON ({e})") from None


def parse_request(payload: Union[bytes, bytearray, memoryview, str]) -> dict[str, Any]:
    """Decode and check one JSON-RPC 2.0 request; return it as a dict.

    Raises ``A2AError`` -32700 for invalid UTF-8 or JSON and -32600 when the JSON is not a request
    object (batch, ``jsonrpc`` != "2.0", missing/empty ``method``, ``id`` not a string/integer/null,
    ``params`` present but not an object). It does not check the method name: see
    ``check_method``. Use ``request_id_of`` to address the error reply.
    """
    obj = _load(payload)
    if isinstance(obj, list):
        raise errors.invalid_request("batch requests are not supported; send one request object")
    if not isinstance(obj, dict):
        raise errors.invalid_request(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise errors.invalid_request(f"'jsonrpc' must be exactly \"2.0\", got {obj.get('jsonrpc')!r}")
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise errors.invalid_request(f"'method' must be a non-empty string, got {method!r}")
    if "id" in obj and not _valid_id(obj["id"]):
        raise errors.invalid_request(f"'id' must be a string, an integer or null, got {obj['id']!r}")
    if "params" in obj and not isinstance(obj["params"], dict):
        raise errors.invalid_request(
            f"'params' must be an object for A2A methods, got {type(obj['params']).__name__}"
        )
    return obj


def check_method(method: str) -> str:
    """Return ``method`` if it is an A2A v1.0 method, else raise ``A2AError`` -32601."""
    if method not in KNOWN_METHODS:
        raise errors.method_not_found(method)
    return method


def request_id_of(obj: Any) -> RequestId:
    """Best-effort ``id`` of a (possibly malformed) request, for addressing an error reply.

    Accepts a parsed object or raw payload bytes/str; returns None when no usable id is found.
    """
    if isinstance(obj, (bytes, bytearray, memoryview, str)):
        try:
            obj = _load(obj)
        except A2AError:
            return None
    if isinstance(obj, Mapping):
        value = obj.get("id")
        if _valid_id(value):
            return value
    return None


@dataclass(frozen=True)
class Response:
    """One JSON-RPC response: exactly one of ``result`` / ``error`` is meaningful."""

    id: RequestId
    result: Any = None
    error: Optional[dict[str, Any]] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_for_error(self) -> Any:
        """Return ``result``, or raise the ``error`` as an ``A2AError``."""
        if self.error is not None:
            raise A2AError.from_dict(self.error)
        return self.result


def parse_response(obj: Union[Mapping[str, Any], bytes, bytearray, str]) -> Response:
    """Check a JSON-RPC 2.0 response (dict or raw payload) and wrap it in a ``Response``.

    Raises ``ValueError`` when it is not JSON, ``jsonrpc`` is not "2.0", or when it has neither or
    both of ``result`` and ``error``, or a malformed ``error``.
    """
    if isinstance(obj, (bytes, bytearray, memoryview, str)):
        try:
            obj = _load(obj)
        except A2AError as e:
            raise ValueError(e.message) from None
    if not isinstance(obj, Mapping):
        raise ValueError(f"a JSON-RPC response must be an object, got {type(obj).__name__}")
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise ValueError(f"'jsonrpc' must be exactly \"2.0\", got {obj.get('jsonrpc')!r}")
    has_result, has_error = "result" in obj, "error" in obj
    if has_result == has_error:
        which = "both" if has_result else "neither"
        raise ValueError(f"a JSON-RPC response needs exactly one of 'result' and 'error', got {which}")
    rid = obj.get("id")
    if not _valid_id(rid):
        raise ValueError(f"response 'id' must be a string, an integer or null, got {rid!r}")
    if has_error:
        err = A2AError.from_dict(obj["error"])  # ValueError if malformed
        return Response(id=rid, error=err.to_dict())
    return Response(id=rid, result=obj["result"])
