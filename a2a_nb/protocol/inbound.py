"""What a responder checks on each incoming request, before any work (pure functions).

Profile: Request/Reply Mapping 2-7 (reply path, requester-generated UUIDv4 Task.id), Error Handling
and Deduplication 4-5 (message expiry), Mandatory Binding-Specific Error Mapping (-32003/-32005),
Multi-Turn Conversation Patterns (contextId), plus JSON-RPC and A2A v1.0 parameter shapes.

Order of the checks (each step answers with the first problem found):
1. no Response Topic or no Correlation Data → nothing can be answered: ``Drop``;
1a. a Response Topic outside the reply namespaces this responder serves (a card, request or event
    topic, a wildcard) → ``Drop``: answering would let any client make the agent publish there;
1b. payload above the responder's ``max_request_bytes`` → -32600, id null (not even parsed);
2. request expired while it waited (Message Expiry) → -32003 ``request_expired``;
3. binding metadata invalid (content type, payload format, security profile, recipient) → -32005;
4. not UTF-8 / not JSON → -32700; not a JSON-RPC request → -32600; unknown method → -32601;
5. params of the wrong shape, Task.id missing or not UUIDv4 → -32602.
Task-state checks (unknown task, terminal task, context mismatch) need the store: see
``check_send_against`` and friends below, which take the stored task as an argument.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, Union

from . import errors, jsonrpc, properties, states
from .errors import A2AError
from .ids import is_uuid4
from .packet import MqttMessage
from .topics import parse_topic
from .ubsp import PROFILE as UBSP_PROFILE

JSON_CONTENT_TYPES = frozenset({"application/json", "application/json-rpc", "application/json; charset=utf-8"})
ROLES = frozenset({"ROLE_USER", "ROLE_AGENT"})
PART_KINDS = ("text", "data", "raw", "url")


@dataclass(frozen=True)
class Drop:
    """A request without a reply path: it is logged and dropped, never answered."""

    reason: str


@dataclass(frozen=True)
class Rejected:
    """A request answered with an error on its reply path."""

    request_id: jsonrpc.RequestId
    error: A2AError


@dataclass(frozen=True)
class Accepted:
    request_id: jsonrpc.RequestId
    method: str
    params: dict[str, Any]
    artifact_mode: str


Verdict = Union[Drop, Rejected, Accepted]


def has_wildcards(topic: str) -> bool:
    return "+" in topic or "#" in topic


def reply_path_problem(response_topic: str, namespaces: tuple[str, ...]) -> Optional[str]:
    """Why a responder must not publish to ``response_topic``, or None when it may.

    A reply goes only to a topic name (no wildcard) inside one of ``namespaces`` (prefixes such as
    ``$a2a/v1/reply/acme/support/``, see ``topics.reply_namespace``). Without this rule a request
    naming the agent's own discovery topic as Response Topic would make the agent overwrite its own
    retained card with a reply (Profile: Request/Reply Mapping 3-4, Responder Behavior 2).
    """
    if has_wildcards(response_topic):
        return f"Response Topic {response_topic!r} has wildcards: nothing can be published there"
    if not any(response_topic.startswith(ns) and len(response_topic) > len(ns) for ns in namespaces):
        return (f"Response Topic {response_topic!r} is outside the reply namespace "
                f"({', '.join(namespaces)}); replying there could overwrite another topic")
    return None


@lru_cache(maxsize=1024)  # a requester sends all its requests with one reply topic: read it once
def requester_identity(response_topic: str, subject: Optional[str] = None) -> str:
    """Who sent a request, as far as a responder can tell: the requester part of its reply topic.

    A profile reply topic ``$a2a/v1/reply/{org}/{unit}/{agent}/{suffix}`` gives the Client ID
    ``{org}/{unit}/{agent}``; on a broker whose ACL lets each login read only its own reply topics
    (``broker --secure``), nobody else could read the replies, so the name is as good as the login.
    Any other allowed topic gives its parent levels. ``subject``: the ``sub`` claim of a valid bearer
    token, when the responder checks tokens; it becomes part of the identity.
    """
    try:
        info = parse_topic(response_topic)
    except ValueError:
        info = None
    if info is not None and info.kind == "reply":
        who = f"{info.org}/{info.unit}/{info.agent}"
    else:
        who = response_topic.rpartition("/")[0] or response_topic
    return who if subject is None else f"{who} (sub {subject})"


def is_expired(msg: MqttMessage, now: float) -> bool:
    """True when the request's Message Expiry Interval ran out while it waited to be processed.

    The broker already subtracts its own holding time; what is left counts from ``received_at``.
    """
    if msg.message_expiry is None or msg.received_at is None:
        return False
    return now > msg.received_at + msg.message_expiry


def check_binding(msg: MqttMessage, my_agent_id: str, opened_ubsp: bool = False) -> Optional[A2AError]:
    """Binding metadata this kit can act on (-32005 ``transport_protocol_error`` when invalid).
    ``opened_ubsp``: the responder opened this ``ubsp-v1`` request itself (``a2a_nb.ubsp``), so the
    profile's property is expected; else any security profile is one this responder cannot speak."""
    profile = msg.user_property(properties.SECURITY_PROFILE)
    if profile is not None and not (opened_ubsp and profile == UBSP_PROFILE):
        return errors.transport_protocol_error(f"security profile {profile!r} is not supported by this responder")
    if msg.payload_format == 0:
        return errors.transport_protocol_error("requests are JSON-RPC text: Payload Format Indicator must be 1 or absent")
    if msg.content_type is not None and msg.content_type.split(";")[0].strip().lower() not in {
        c.split(";")[0] for c in JSON_CONTENT_TYPES
    }:
        return errors.transport_protocol_error(f"unsupported request Content Type {msg.content_type!r}; use application/json")
    recipient = msg.user_property(properties.RECIPIENT_AGENT_ID)
    if recipient is not None and recipient != my_agent_id:
        return errors.transport_protocol_error(f"a2a-recipient-agent-id {recipient!r} is not this responder ({my_agent_id})")
    return repeated_authorization(msg)


def repeated_authorization(msg: MqttMessage) -> Optional[A2AError]:
    """A request carrying more than one ``a2a-authorization`` is refused: which token would count?
    (Profile: OAuth 2.0 and OIDC over MQTT User Properties.)"""
    if sum(1 for k, _ in msg.user_properties if k == properties.AUTHORIZATION) > 1:
        return errors.transport_protocol_error("more than one a2a-authorization user property")
    return None


def check_request(msg: MqttMessage, now: float, my_agent_id: str, max_bytes: Optional[int] = None,
                  reply_namespaces: tuple[str, ...] = ("$a2a/v1/reply/",), opened_ubsp: bool = False) -> Verdict:
    """Steps 1-5 of the module docstring on one received request (``opened_ubsp``: see ``check_binding``).

    ``reply_namespaces``: the prefixes a Response Topic must start with (see ``reply_path_problem``).

    ``max_bytes``: a larger payload is answered with -32600 (JSON-RPC "Invalid Request": the request
    is not one this responder accepts; not retryable as it is) and id null, without parsing it.
    """
    if not msg.response_topic:
        return Drop("no Response Topic: the request cannot be answered")
    if msg.correlation_data is None:
        return Drop("no Correlation Data: a reply could not be matched by the requester")
    problem = reply_path_problem(msg.response_topic, reply_namespaces)
    if problem is not None:
        return Drop(problem)
    if max_bytes is not None and len(msg.payload) > max_bytes:
        return Rejected(None, errors.invalid_request(
            f"the request is {len(msg.payload)} bytes, above this responder's limit of {max_bytes} bytes"))
    try:  # parsed once; what is no JSON-RPC request is answered below, after the checks above it
        req: Union[dict[str, Any], A2AError] = jsonrpc.parse_request(msg.payload)
    except A2AError as err:
        req = err
    request_id = jsonrpc.request_id_of(msg.payload if isinstance(req, A2AError) else req)
    if is_expired(msg, now):
        return Rejected(request_id, errors.request_expired("the request's Message Expiry Interval ran out before processing"))
    binding_problem = check_binding(msg, my_agent_id, opened_ubsp)
    if binding_problem is not None:
        return Rejected(request_id, binding_problem)
    if isinstance(req, A2AError):
        return Rejected(request_id, req)
    try:
        method = jsonrpc.check_method(req["method"])
        params = req.get("params", {})
        check_params(method, params)
    except A2AError as err:
        return Rejected(request_id, err)
    return Accepted(req.get("id"), method, params, properties.artifact_mode(msg.user_property(properties.ARTIFACT_MODE)))


# -- parameter shapes ---------------------------------------------------------------------------------
def _bad(detail: str) -> A2AError:
    return errors.invalid_params(detail)


def _opt_int(params: dict[str, Any], key: str, minimum: int = 0) -> None:
    if key in params and (not isinstance(params[key], int) or isinstance(params[key], bool) or params[key] < minimum):
        raise _bad(f"'{key}' must be an integer >= {minimum}")


def _task_id(params: dict[str, Any], key: str = "id") -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(f"'{key}' (the Task.id) is required and must be a string")
    return value


def check_part(part: Any, where: str) -> None:
    if not isinstance(part, dict):
        raise _bad(f"{where} must be an object")
    kinds = [k for k in PART_KINDS if k in part]
    if len(kinds) != 1:
        raise _bad(f"{where} must have exactly one of {', '.join(PART_KINDS)} (found {kinds or 'none'})")
    kind = kinds[0]
    if kind in ("text", "raw", "url") and not isinstance(part[kind], str):
        raise _bad(f"{where}.{kind} must be a string")
    for key in ("mediaType", "filename"):
        if key in part and not isinstance(part[key], str):
            raise _bad(f"{where}.{key} must be a string")
    if "metadata" in part and not isinstance(part["metadata"], dict):
        raise _bad(f"{where}.metadata must be an object")
    unknown = set(part) - set(PART_KINDS) - {"mediaType", "filename", "metadata"}
    if unknown:
        raise _bad(f"{where} has unknown fields {sorted(unknown)}")


def check_message(message: Any) -> dict[str, Any]:
    """A v1.0 Message as the MQTT binding needs it (Task.id present and UUIDv4)."""
    if not isinstance(message, dict):
        raise _bad("'message' is required and must be an object")
    if not isinstance(message.get("messageId"), str) or not message["messageId"]:
        raise _bad("message.messageId is required and must be a non-empty string")
    if not isinstance(message.get("role"), str) or message["role"] not in ROLES:
        raise _bad(f"message.role must be one of {sorted(ROLES)}, got {message.get('role')!r}")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _bad("message.parts must be a non-empty list")
    for i, part in enumerate(parts):
        check_part(part, f"message.parts[{i}]")
    task_id = message.get("taskId")
    if not isinstance(task_id, str) or not is_uuid4(task_id):
        raise _bad("message.taskId is required over MQTT and must be a UUIDv4 generated by the requester "
                   f"(Profile: Request/Reply Mapping 6), got {task_id!r}")
    if "contextId" in message and (not isinstance(message["contextId"], str) or not message["contextId"]):
        raise _bad("message.contextId must be a non-empty string when present")
    if "referenceTaskIds" in message and not (
        isinstance(message["referenceTaskIds"], list) and all(isinstance(t, str) for t in message["referenceTaskIds"])
    ):
        raise _bad("message.referenceTaskIds must be a list of strings")
    for key in ("metadata",):
        if key in message and not isinstance(message[key], dict):
            raise _bad(f"message.{key} must be an object")
    if "extensions" in message and not (
        isinstance(message["extensions"], list) and all(isinstance(t, str) for t in message["extensions"])
    ):
        raise _bad("message.extensions must be a list of strings")
    unknown = set(message) - {"messageId", "role", "parts", "taskId", "contextId", "referenceTaskIds", "metadata", "extensions"}
    if unknown:
        raise _bad(f"message has unknown fields {sorted(unknown)}")
    return message


def check_params(method: str, params: Any) -> None:
    """Raise -32602 when ``params`` do not fit ``method`` (A2A v1.0 shapes)."""
    if not isinstance(params, dict):
        raise _bad("params must be an object")
    if method in (jsonrpc.SEND_MESSAGE, jsonrpc.SEND_STREAMING_MESSAGE):
        check_message(params.get("message"))
        config = params.get("configuration")
        if config is not None:
            if not isinstance(config, dict):
                raise _bad("configuration must be an object")
            _opt_int(config, "historyLength")
            if "returnImmediately" in config and not isinstance(config["returnImmediately"], bool):
                raise _bad("configuration.returnImmediately must be a boolean")
            if "acceptedOutputModes" in config and not (
                isinstance(config["acceptedOutputModes"], list) and all(isinstance(m, str) for m in config["acceptedOutputModes"])
            ):
                raise _bad("configuration.acceptedOutputModes must be a list of strings")
        if "metadata" in params and not isinstance(params["metadata"], dict):
            raise _bad("metadata must be an object")
    elif method in (jsonrpc.GET_TASK, jsonrpc.CANCEL_TASK, jsonrpc.SUBSCRIBE_TO_TASK):
        _task_id(params)
        _opt_int(params, "historyLength")
    elif method == jsonrpc.LIST_TASKS:
        if "contextId" in params and not isinstance(params["contextId"], str):
            raise _bad("contextId must be a string")
        if "status" in params and not states.is_state(params["status"]):
            raise _bad(f"status must be a TASK_STATE_* name, got {params['status']!r}")
        _opt_int(params, "pageSize", 1)
        _opt_int(params, "historyLength")
        if "pageToken" in params and not isinstance(params["pageToken"], str):
            raise _bad("pageToken must be a string")
        if "includeArtifacts" in params and not isinstance(params["includeArtifacts"], bool):
            raise _bad("includeArtifacts must be a boolean")


# -- checks against the stored task ------------------------------------------------------------------------
SEND_NEW, SEND_DUPLICATE, SEND_CONTINUE = "new", "duplicate", "continue"


def classify_send(stored: Optional[dict[str, Any]], message: dict[str, Any]) -> str:
    """What a SendMessage means for the task it names (Profile: Requester Retry 4, Multi-Turn).

    ``new``: no such task yet. ``duplicate``: a retry (same messageId seen, or the task is still
    active: dedupe by Task.id, never run the work twice). ``continue``: new input for an interrupted
    task. Raises -32602 on a contextId mismatch and -32004 for a message to a terminal task.
    """
    if stored is None:
        return SEND_NEW
    ctx = message.get("contextId")
    if ctx is not None and ctx != stored.get("contextId"):
        raise _bad(f"message.contextId {ctx!r} differs from the task's contextId {stored.get('contextId')!r}")
    seen = {m.get("messageId") for m in stored.get("history", [])}
    if message["messageId"] in seen:
        return SEND_DUPLICATE
    state = stored["status"]["state"]
    if states.is_terminal(state):
        raise errors.unsupported_operation(
            f"task {stored['id']} is {states.short_name(state)} (terminal): start a new task in the same contextId")
    if states.is_interrupted(state):
        return SEND_CONTINUE
    return SEND_DUPLICATE


def visible_to(task_requester: Optional[str], caller: str) -> bool:
    """A task is seen only by the requester that created it: for anyone else it does not exist
    (GetTask, CancelTask, SubscribeToTask, SendMessage and ListTasks answer as for an unknown task).
    Tasks stored before requesters were recorded (``None``) stay visible to everyone."""
    return task_requester is None or task_requester == caller


def check_cancel(stored: Optional[dict[str, Any]], task_id: str) -> dict[str, Any]:
    if stored is None:
        raise errors.task_not_found(task_id)
    if states.is_terminal(stored["status"]["state"]):
        raise errors.task_not_cancelable(task_id, stored["status"]["state"])
    return stored


def check_subscribe(stored: Optional[dict[str, Any]], task_id: str) -> dict[str, Any]:
    if stored is None:
        raise errors.task_not_found(task_id)
    if states.is_terminal(stored["status"]["state"]):
        raise errors.unsupported_operation(f"task {task_id} is terminal: nothing left to subscribe to; use GetTask")
    return stored


def check_get(stored: Optional[dict[str, Any]], task_id: str) -> dict[str, Any]:
    if stored is None:
        raise errors.task_not_found(task_id)
    return stored
