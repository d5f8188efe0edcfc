"""The SDK's protobuf types and the kit's A2A v1.0 JSON, both ways.

The kit speaks the v1.0 JSON the SDK's own JSON-RPC transport speaks (camelCase members, enums by
name), so ``google.protobuf.json_format`` converts one into the other. What comes from a peer is read
with the SDK's types (unknown members ignored, as the SDK's own client does); what does not fit
them is a one-line ``ValueError``.
"""
from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as Proto

from ..protocol.safe_text import safe_text

P = TypeVar("P", bound=Proto)


def to_json(msg: Proto) -> dict[str, Any]:
    """A protobuf message of the SDK as the v1.0 JSON object."""
    return MessageToDict(msg)


def from_json(obj: Any, proto_type: type[P], what: str) -> P:
    """``obj`` read as ``proto_type``; ``ValueError`` naming ``what`` when it is no such object."""
    if not isinstance(obj, dict):
        raise ValueError(f"{what} is not a JSON object but {type(obj).__name__}")
    try:
        return ParseDict(obj, proto_type(), ignore_unknown_fields=True)
    except (ParseError, TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a valid {proto_type.__name__}: {safe_text(str(exc), 200)}") from None
