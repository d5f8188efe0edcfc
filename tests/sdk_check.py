"""Check a payload dict against the official A2A v1.0 types of ``a2a-sdk``, strictly.

``assert_valid("Task", payload)`` parses with ``google.protobuf.json_format.ParseDict`` (unknown
fields, bad enum names and two members of one oneof are errors) and then runs
``a2a.utils.proto_utils.validate_proto_required_fields`` (fields marked REQUIRED). It also closes
one trap of proto parsing: invalid base64 in ``raw`` silently parses as empty bytes, so every
``raw`` string is decoded strictly first.

Any other test suite may import it: ``from tests.sdk_check import assert_valid``.
"""
from __future__ import annotations

from typing import Any, Iterable

import a2a.types as a2a_types
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

from a2a_nb.protocol.sdk_schema import raw_base64_problem

KINDS: dict[str, type] = {
    name: getattr(a2a_types, name)
    for name in (
        "Message", "Part", "Task", "TaskStatus", "Artifact", "AgentCard", "AgentSkill",
        "AgentInterface", "SecurityScheme", "SecurityRequirement", "StreamResponse",
        "SendMessageRequest", "SendMessageConfiguration", "GetTaskRequest", "CancelTaskRequest",
        "ListTasksRequest", "SubscribeToTaskRequest", "ListTasksResponse",
        "TaskStatusUpdateEvent", "TaskArtifactUpdateEvent", "SendMessageResponse",
        "TaskPushNotificationConfig", "GetExtendedAgentCardRequest",
    )
}
"""Kind name -> a2a-sdk protobuf type (the names are the proto message names)."""


class SdkValidationError(AssertionError):
    """The payload does not parse, or misses required fields, under the a2a-sdk types."""


def parse(kind: str, payload: dict[str, Any]) -> ProtoMessage:
    """Parse strictly into the a2a-sdk type named ``kind`` (no required-field check)."""
    try:
        cls = KINDS[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
    if not isinstance(payload, dict):
        raise SdkValidationError(f"{kind}: payload must be a dict, got {type(payload).__name__}")
    bad_raw = raw_base64_problem(payload)
    if bad_raw:
        raise SdkValidationError(bad_raw)
    msg = cls()
    try:
        ParseDict(payload, msg, ignore_unknown_fields=False)
    except ParseError as e:
        raise SdkValidationError(f"{kind}: {e}") from None
    return msg


def assert_valid(kind: str, payload: dict[str, Any], *,
                 ignore_required: Iterable[str] = ()) -> ProtoMessage:
    """Assert ``payload`` is a valid ``kind`` under a2a-sdk 1.3.0; return the parsed message.

    ``ignore_required`` lists field paths (as the SDK names them, e.g. ``"next_page_token"``) whose
    REQUIRED violations are accepted. The SDK flags proto3 zero values of required scalars as
    missing, so a last ``ListTasksResponse`` page (``nextPageToken: ""``) or an empty one needs
    ``ignore_required=("tasks", "next_page_token", ...)``.
    """
    msg = parse(kind, payload)
    try:
        validate_proto_required_fields(msg)
    except Exception as e:  # a2a.utils.errors.InvalidParamsError
        data = getattr(e, "data", None) or {}
        problems = [
            err for err in data.get("errors", [])
            if err.get("field") not in set(ignore_required)
        ] if isinstance(data, dict) and "errors" in data else [{"field": "?", "message": str(e)}]
        if problems:
            lines = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            raise SdkValidationError(f"{kind}: required fields: {lines}") from None
    return msg
