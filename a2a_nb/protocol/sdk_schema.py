"""A2A v1.0 payloads checked against the official types: the a2a-sdk's protobuf messages.

``validate_payload("Task", payload)`` says whether a JSON payload is a valid A2A v1.0 ``Task`` (any
proto message name of ``a2a.types``: ``AgentCard``, ``SendMessageResponse``, ``StreamResponse``
...), the way the a2a-sdk itself reads it: a strict ``ParseDict`` (unknown fields, bad enum names,
two members of one oneof are errors) plus the SDK's ``validate_proto_required_fields``. These types
are generated from the specification's ``a2a.proto``, so for the shape of a payload they are the
authority (Profile: A2A base specification, v1.0 data structures); the traffic lint, the probe and
the card checks (``card_schema``) all ask here.

The a2a-sdk and protobuf come with the ``notebook`` extra and take about 0.2 s to import, so they
are imported on first use: ``a2a_nb.protocol`` itself needs paho-mqtt alone.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from functools import lru_cache
from typing import Any, Optional


@lru_cache(maxsize=1)
def _sdk() -> tuple[Any, Any, Any, Any]:
    """(types module, ParseDict, ParseError, validate_required) of a2a-sdk and protobuf, imported on
    first use."""
    import a2a.types as types
    from a2a.utils.proto_utils import validate_proto_required_fields
    from google.protobuf.json_format import ParseDict, ParseError
    return types, ParseDict, ParseError, validate_proto_required_fields


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


_STEP = re.compile(r"^([A-Za-z0-9_]+)(?:\[([^\]]*)\])?$")


_EMPTY_LIST_OK = frozenset({("ListTasksResponse", "tasks")})
"""Required repeated fields that may legitimately be empty (a ListTasks page with no tasks)."""


def _present(payload: Any, path: str, kind: str = "") -> bool:
    """Is the field an a2a-sdk error path names (``tasks[0].status.state``) present in the JSON?

    The SDK reports proto3 zero values of required fields as missing (``nextPageToken: ""`` of a
    last ListTasks page); a field the sender did write is present, so such errors are ignored.
    An empty list still counts as missing (``skills: []``), except where emptiness is legitimate.
    """
    node = payload
    for step in path.split("."):
        m = _STEP.match(step)
        if m is None or not isinstance(node, dict):
            return False
        key = _camel(m.group(1))
        if key not in node:
            return False
        node = node[key]
        if m.group(2) is not None:
            idx = m.group(2)
            if isinstance(node, list) and idx.isdigit() and int(idx) < len(node):
                node = node[int(idx)]
            elif isinstance(node, dict) and idx in node:
                node = node[idx]
            else:
                return False
    return not (isinstance(node, list) and not node and (kind, path) not in _EMPTY_LIST_OK)


def raw_base64_problem(obj: Any, path: str = "$") -> Optional[str]:
    """The first ``raw`` string that is not strict base64, named by its path, or None. Protobuf parses
    invalid base64 in ``raw`` as empty bytes, so every ``raw`` is checked strictly first (free-form
    ``data`` and ``metadata`` may hold a ``raw`` key of their own)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "raw" and isinstance(v, str):
                try:
                    base64.b64decode(v, validate=True)
                except (binascii.Error, ValueError) as e:
                    return f"{path}.raw is not valid base64 ({e})"
            elif k not in ("data", "metadata"):
                bad = raw_base64_problem(v, f"{path}.{k}")
                if bad:
                    return bad
    elif isinstance(obj, list):
        for n, v in enumerate(obj):
            bad = raw_base64_problem(v, f"{path}[{n}]")
            if bad:
                return bad
    return None


_VALIDATED: dict[tuple[str, str], Optional[str]] = {}
"""Verdicts by (kind, payload text): a recording repeats the same cards and many similar payloads."""


def validate_payload(kind: str, payload: Any) -> Optional[str]:
    """None when ``payload`` is a valid A2A v1.0 ``kind`` (proto message name), else the problem.

    Strict ``ParseDict`` (unknown fields, bad enum names, two members of one oneof are errors)
    plus ``validate_proto_required_fields``. Results are cached by payload text.
    """
    types, parse_dict, parse_error, validate_required = _sdk()
    if not isinstance(payload, dict):
        return f"{kind} must be a JSON object, got {type(payload).__name__}"
    try:
        key: Optional[tuple[str, str]] = (kind, json.dumps(payload, sort_keys=True, separators=(",", ":")))
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _VALIDATED:
        return _VALIDATED[key]
    problem = raw_base64_problem(payload)
    if problem is None:
        cls = getattr(types, kind, None)
        if cls is None:
            return None
        msg = cls()
        try:
            parse_dict(payload, msg, ignore_unknown_fields=False)
        except parse_error as e:
            problem = str(e)
        except (TypeError, ValueError) as e:
            problem = str(e)
        else:
            try:
                validate_required(msg)
            except Exception as e:  # a2a.utils.errors.InvalidParamsError
                data = getattr(e, "data", None) or {}
                errs = data.get("errors", []) if isinstance(data, dict) else []
                missing = [f"{x.get('field')}: {x.get('message')}" for x in errs
                           if not _present(payload, str(x.get("field", "")), kind)]
                if missing or not errs:
                    problem = "required fields: " + ("; ".join(missing) if missing else str(e))
    if key is not None:
        if len(_VALIDATED) > 20000:
            _VALIDATED.clear()
        _VALIDATED[key] = problem
    return problem
