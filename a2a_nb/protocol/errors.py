"""JSON-RPC / A2A error objects and the profile's binding-specific errors.

Profile: Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT); A2A v1.0 error codes.

The profile reuses -32003, -32004 and -32005 for its own transport errors and marks them with
``error.data.a2a_error``; core A2A uses the same numbers for PushNotificationNotSupported,
UnsupportedOperation and ContentTypeNotSupported. ``classify`` tells them apart by that marker.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping
from typing import Any, Optional, Union

from ..error_base import A2ANbError

# JSON-RPC 2.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A2A core
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
INVALID_AGENT_RESPONSE = -32006
EXTENDED_AGENT_CARD_NOT_CONFIGURED = -32007
EXTENSION_SUPPORT_REQUIRED = -32008
VERSION_NOT_SUPPORTED = -32009
# MQTT binding (same numbers as three core errors; told apart by data.a2a_error)
REQUEST_EXPIRED = -32003
RESPONDER_UNAVAILABLE = -32004
TRANSPORT_PROTOCOL_ERROR = -32005

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_DOMAIN = "a2a-protocol.org"

JSONRPC_NAMES: Mapping[int, str] = MappingProxyType({
    PARSE_ERROR: "ParseError",
    INVALID_REQUEST: "InvalidRequest",
    METHOD_NOT_FOUND: "MethodNotFound",
    INVALID_PARAMS: "InvalidParams",
    INTERNAL_ERROR: "InternalError",
})
CORE_NAMES: Mapping[int, str] = MappingProxyType({
    TASK_NOT_FOUND: "TaskNotFound",
    TASK_NOT_CANCELABLE: "TaskNotCancelable",
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PushNotificationNotSupported",
    UNSUPPORTED_OPERATION: "UnsupportedOperation",
    CONTENT_TYPE_NOT_SUPPORTED: "ContentTypeNotSupported",
    INVALID_AGENT_RESPONSE: "InvalidAgentResponse",
    EXTENDED_AGENT_CARD_NOT_CONFIGURED: "ExtendedAgentCardNotConfigured",
    EXTENSION_SUPPORT_REQUIRED: "ExtensionSupportRequired",
    VERSION_NOT_SUPPORTED: "VersionNotSupported",
})
CORE_REASONS: Mapping[int, str] = MappingProxyType({
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOTIFICATION_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    INVALID_AGENT_RESPONSE: "INVALID_AGENT_RESPONSE",
    EXTENDED_AGENT_CARD_NOT_CONFIGURED: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    EXTENSION_SUPPORT_REQUIRED: "EXTENSION_SUPPORT_REQUIRED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
})
BINDING_NAMES: Mapping[int, str] = MappingProxyType({
    REQUEST_EXPIRED: "request_expired",
    RESPONDER_UNAVAILABLE: "responder_unavailable",
    TRANSPORT_PROTOCOL_ERROR: "transport_protocol_error",
})


class A2AError(A2ANbError):
    """A JSON-RPC error object as a Python exception (``code``, ``message``, optional ``data``).

    Raise it in a handler; the responder turns it into ``{"jsonrpc": "2.0", "id": ..., "error":
    err.to_dict()}`` on the reply path (Profile: Mandatory Binding-Specific Error Mapping 1-2).

    An error a ``Requester`` received carries ``reply``: the requester's ``Reply`` it came in (which
    agent answered, after how many attempts, its MQTT message); ``None`` for an error raised here.
    """

    reply: Any

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        if not isinstance(code, int) or isinstance(code, bool):
            raise TypeError(f"JSON-RPC error code must be an int, got {code!r}")
        if not isinstance(message, str):
            raise TypeError(f"JSON-RPC error message must be a string, got {message!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.reply = None

    def __str__(self) -> str:
        return f"{self.message} (JSON-RPC error {self.code}, {classify(self).name})"

    def __repr__(self) -> str:
        return f"A2AError(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member: ``{"code", "message"}`` plus ``"data"`` when set."""
        d: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            d["data"] = self.data
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "A2AError":
        """Rebuild from a JSON-RPC ``error`` member; ValueError if it is not one."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a JSON-RPC error must be an object, got {type(d).__name__}")
        code, message = d.get("code"), d.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            raise ValueError(f"a JSON-RPC error needs an integer 'code', got {code!r}")
        if not isinstance(message, str):
            raise ValueError(f"a JSON-RPC error needs a string 'message', got {message!r}")
        return cls(code, message, d.get("data"))


def _msg(base: str, detail: Optional[str]) -> str:
    return f"{base}: {detail}" if detail else base


def error_info(reason: str, metadata: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """One ``google.rpc.ErrorInfo`` detail in the A2A domain (A2A v1.0 error ``data`` entries)."""
    info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": A2A_DOMAIN}
    if metadata:
        info["metadata"] = {str(k): str(v) for k, v in metadata.items()}
    return info


def core_error(code: int, message: str, metadata: Optional[Mapping[str, str]] = None) -> A2AError:
    """A core A2A error (-32001..-32009) with its ``ErrorInfo`` detail in ``data``."""
    if code not in CORE_REASONS:
        raise ValueError(f"{code} is not a core A2A error code (-32001..-32009)")
    return A2AError(code, message, [error_info(CORE_REASONS[code], metadata)])


# --- JSON-RPC 2.0 -------------------------------------------------------------------------------

def parse_error(detail: Optional[str] = None) -> A2AError:
    """-32700: the payload is not UTF-8 JSON."""
    return A2AError(PARSE_ERROR, _msg("Parse error", detail))


def invalid_request(detail: Optional[str] = None) -> A2AError:
    """-32600: JSON, but not a JSON-RPC 2.0 request object."""
    return A2AError(INVALID_REQUEST, _msg("Invalid request", detail))


def method_not_found(method: object) -> A2AError:
    """-32601: no such method (v1.0 names are PascalCase, e.g. ``SendMessage``)."""
    hint = ""
    if isinstance(method, str) and "/" in method:
        hint = " (that is a v0.3 name; A2A v1.0 uses PascalCase such as 'SendMessage')"
    return A2AError(METHOD_NOT_FOUND, f"Method not found: {method!r}{hint}")


def invalid_params(detail: Optional[str] = None) -> A2AError:
    """-32602: params are missing or malformed (also: contextId mismatch, Multi-Turn 6)."""
    return A2AError(INVALID_PARAMS, _msg("Invalid params", detail))


def internal_error(detail: Optional[str] = None) -> A2AError:
    """-32603: the responder failed."""
    return A2AError(INTERNAL_ERROR, _msg("Internal error", detail))


# --- A2A core -----------------------------------------------------------------------------------

def task_not_found(task_id: str) -> A2AError:
    """-32001."""
    return core_error(TASK_NOT_FOUND, f"Task not found: {task_id}", {"taskId": task_id})


def task_not_cancelable(task_id: str, state: Optional[str] = None) -> A2AError:
    """-32002: e.g. cancelling a task that already reached a terminal state."""
    where = f" (it is {state})" if state else ""
    meta = {"taskId": task_id, **({"state": state} if state else {})}
    return core_error(TASK_NOT_CANCELABLE, f"Task {task_id} cannot be canceled{where}", meta)


def push_notification_not_supported() -> A2AError:
    """-32003 (core): push notifications are not supported by this agent."""
    return core_error(PUSH_NOTIFICATION_NOT_SUPPORTED, "Push notifications are not supported")


def unsupported_operation(detail: Optional[str] = None) -> A2AError:
    """-32004 (core): e.g. a message to a task in a terminal state, or subscribing to one."""
    return core_error(UNSUPPORTED_OPERATION, _msg("Unsupported operation", detail))


def content_type_not_supported(
    media_type: Optional[str] = None, supported: Optional[list[str]] = None
) -> A2AError:
    """-32005 (core): none of the offered/accepted media types is supported."""
    detail = f"{media_type!r}" if media_type else None
    if supported:
        detail = (detail + "; " if detail else "") + "supported: " + ", ".join(supported)
    return core_error(CONTENT_TYPE_NOT_SUPPORTED, _msg("Content type not supported", detail))


def invalid_agent_response(detail: Optional[str] = None) -> A2AError:
    """-32006: the agent produced something that is not a valid A2A response."""
    return core_error(INVALID_AGENT_RESPONSE, _msg("Invalid agent response", detail))


def extended_agent_card_not_configured() -> A2AError:
    """-32007."""
    return core_error(EXTENDED_AGENT_CARD_NOT_CONFIGURED, "Extended agent card is not configured")


def extension_support_required(uri: Optional[str] = None) -> A2AError:
    """-32008: the agent requires an extension the client did not declare."""
    return core_error(EXTENSION_SUPPORT_REQUIRED, _msg("Extension support required", uri))


def version_not_supported(version: Optional[str] = None) -> A2AError:
    """-32009."""
    return core_error(VERSION_NOT_SUPPORTED, _msg("A2A version not supported", version))


# --- MQTT binding -------------------------------------------------------------------------------

def _binding(code: int, base: str, detail: Optional[str]) -> A2AError:
    return A2AError(code, _msg(base, detail), {"a2a_error": BINDING_NAMES[code]})


def request_expired(detail: Optional[str] = None) -> A2AError:
    """-32003 ``request_expired``: the request went stale before processing (retry-eligible)."""
    return _binding(REQUEST_EXPIRED, "Request expired before processing", detail)


def responder_unavailable(detail: Optional[str] = None) -> A2AError:
    """-32004 ``responder_unavailable``: temporarily unavailable/overloaded (retry-eligible)."""
    return _binding(RESPONDER_UNAVAILABLE, "Responder temporarily unavailable", detail)


def transport_protocol_error(detail: Optional[str] = None) -> A2AError:
    """-32005 ``transport_protocol_error``: MQTT binding metadata invalid/missing (not retryable)."""
    return _binding(TRANSPORT_PROTOCOL_ERROR, "MQTT binding metadata invalid", detail)


# --- reading errors -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorKind:
    """What a received error means for the requester (Binding-Specific Error Mapping 5-8)."""

    code: int
    name: str
    binding: bool
    retry_eligible: bool
    non_retryable_transport: bool
    message: str = ""


def classify(error: Union[Mapping[str, Any], A2AError]) -> ErrorKind:
    """Name an error and say whether the requester may retry it.

    Binding errors are recognised only by ``data`` being an object whose ``a2a_error`` equals the
    name the profile gives that code; otherwise -32003/-32004/-32005 are the core A2A errors.
    Only binding -32003/-32004 are retry-eligible; binding -32005 is non-retryable until the
    request metadata is fixed.
    """
    if isinstance(error, A2AError):
        code, data, message = error.code, error.data, error.message
    else:
        err = A2AError.from_dict(error)
        code, data, message = err.code, err.data, err.message
    marker = data.get("a2a_error") if isinstance(data, Mapping) else None
    if code in BINDING_NAMES and marker == BINDING_NAMES[code]:
        return ErrorKind(
            code=code,
            name=BINDING_NAMES[code],
            binding=True,
            retry_eligible=code in (REQUEST_EXPIRED, RESPONDER_UNAVAILABLE),
            non_retryable_transport=code == TRANSPORT_PROTOCOL_ERROR,
            message=message,
        )
    if code in CORE_NAMES:
        name = CORE_NAMES[code]
    elif code in JSONRPC_NAMES:
        name = JSONRPC_NAMES[code]
    elif -32099 <= code <= -32000:
        name = "ServerError"
    else:
        name = "UnknownError"
    return ErrorKind(code, name, False, False, False, message)
