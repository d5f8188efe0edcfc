"""A2A v1.0 payloads as plain dicts in the proto JSON mapping.

lowerCamel names, enums by name (``"ROLE_USER"``, ``"TASK_STATE_WORKING"``), bytes as base64,
timestamps RFC 3339 UTC with ``Z``; optional fields that are None/empty (and false flags of
events) are left out, as proto3 does. Every builder's output parses strictly with the official
``a2a-sdk`` types (see tests/unit/test_sdk_validation.py).

Profile: Request/Reply Mapping 6-9 (requester-made ``taskId``/``contextId`` travel in the
Message), Streaming Reply Mapping 3 (stream items are StreamResponse objects).
"""
from __future__ import annotations

import base64
from datetime import datetime, timezone
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from . import properties, states

ROLE_USER = "ROLE_USER"
ROLE_AGENT = "ROLE_AGENT"
ROLES = frozenset({ROLE_USER, ROLE_AGENT})
_ROLE_SHORT = {"user": ROLE_USER, "agent": ROLE_AGENT}

STREAM_KINDS = ("task", "message", "statusUpdate", "artifactUpdate")

Part = dict[str, Any]
PartsLike = Union[str, Mapping[str, Any], Sequence[Union[str, Mapping[str, Any]]]]


# --- small checks -------------------------------------------------------------------------------

def _nonempty(value: object, what: str) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _obj(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be an object (dict), got {type(value).__name__}")
    return dict(value)


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    """Set an optional field unless it is None or an empty collection."""
    if value is None:
        return
    if isinstance(value, (list, tuple, dict)) and len(value) == 0:
        return
    d[key] = value


def _meta(d: dict[str, Any], metadata: Optional[Mapping[str, Any]]) -> None:
    if metadata is not None:
        _put(d, "metadata", _obj(metadata, "metadata"))


def _strs(values: Optional[Iterable[str]], what: str) -> Optional[list[str]]:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out = list(values)
    for v in out:
        _nonempty(v, f"each entry of {what}")
    return out


def _int(value: Optional[int], what: str, minimum: int = 0) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def now_iso(now: Optional[datetime] = None) -> str:
    """RFC 3339 UTC timestamp with milliseconds and ``Z``, e.g. ``2025-01-02T03:04:05.123Z``."""
    dt = datetime.now(timezone.utc) if now is None else now.astimezone(timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- parts --------------------------------------------------------------------------------------

def _part(key: str, value: Any, media_type: Optional[str], filename: Optional[str],
          metadata: Optional[Mapping[str, Any]]) -> Part:
    p: Part = {key: value}
    _meta(p, metadata)
    if filename is not None:
        p["filename"] = _nonempty(filename, "filename")
    if media_type is not None:
        p["mediaType"] = _nonempty(media_type, "media_type")
    return p


def text_part(text: str, media_type: Optional[str] = None,
              metadata: Optional[Mapping[str, Any]] = None) -> Part:
    """``{"text": ...}``. v1.0 parts have no ``kind`` field: the member present says what it is."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return _part("text", text, media_type, None, metadata)


def data_part(data: Any, media_type: Optional[str] = None,
              metadata: Optional[Mapping[str, Any]] = None) -> Part:
    """``{"data": <any JSON value>}`` for structured content."""
    return _part("data", data, media_type, None, metadata)


def raw_part(data: Union[bytes, bytearray, memoryview], media_type: Optional[str] = None,
             filename: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None) -> Part:
    """``{"raw": <base64>}``: inline bytes (Profile: Binary Artifact Mode 1, JSON baseline)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"raw_part needs bytes, got {type(data).__name__} (use text_part for str)")
    encoded = base64.b64encode(bytes(data)).decode("ascii")
    return _part("raw", encoded, media_type, filename, metadata)


def url_part(url: str, media_type: Optional[str] = None, filename: Optional[str] = None,
             metadata: Optional[Mapping[str, Any]] = None) -> Part:
    """``{"url": ...}``: content by reference."""
    return _part("url", _nonempty(url, "url"), media_type, filename, metadata)


def _parts(parts: PartsLike, what: str = "parts") -> list[Part]:
    if isinstance(parts, str):
        return [text_part(parts)]
    if isinstance(parts, Mapping):
        parts = [parts]
    if not isinstance(parts, Sequence) or isinstance(parts, (bytes, bytearray)):
        where = "" if what == "parts" else f"{what}: "
        raise TypeError(f"{where}the content of a message is text (a str), a part (a dict) or a list of them, "
                        f"not {type(parts).__name__}")
    out: list[Part] = []
    for p in parts:
        if isinstance(p, str):
            out.append(text_part(p))
        elif isinstance(p, Mapping):
            present = [k for k in ("text", "data", "raw", "url") if k in p]
            if len(present) != 1:
                raise ValueError(
                    f"a part needs exactly one of text, data, raw, url; got {sorted(p)} "
                    "(v1.0 parts have no 'kind')"
                )
            out.append(dict(p))
        else:
            raise ValueError(f"a part must be a str or a dict, got {type(p).__name__}")
    if not out:
        raise ValueError(f"{what} must contain at least one part")
    return out


# --- message, task, artifact --------------------------------------------------------------------

def message(parts: PartsLike, *, role: str = ROLE_USER, message_id: str,
            task_id: Optional[str] = None, context_id: Optional[str] = None,
            reference_task_ids: Optional[Iterable[str]] = None,
            metadata: Optional[Mapping[str, Any]] = None,
            extensions: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """An A2A Message. ``parts`` may be a str (one text part), a part, or a list of parts/strs.

    Over MQTT the requester puts its own UUIDv4 ``taskId`` (and ``contextId``) here on the very
    first SendMessage (Profile: Request/Reply Mapping 6, 9).
    """
    role = _ROLE_SHORT.get(role, role)
    if role not in ROLES:
        raise ValueError(f"role must be 'ROLE_USER' or 'ROLE_AGENT', got {role!r}")
    m: dict[str, Any] = {"messageId": _nonempty(message_id, "message_id")}
    if context_id is not None:
        m["contextId"] = _nonempty(context_id, "context_id")
    if task_id is not None:
        m["taskId"] = _nonempty(task_id, "task_id")
    m["role"] = role
    m["parts"] = _parts(parts)
    _meta(m, metadata)
    _put(m, "extensions", _strs(extensions, "extensions"))
    _put(m, "referenceTaskIds", _strs(reference_task_ids, "reference_task_ids"))
    return m


def user_message(parts: PartsLike, *, message_id: str, **kw: Any) -> dict[str, Any]:
    """``message(..., role="ROLE_USER")``."""
    return message(parts, role=ROLE_USER, message_id=message_id, **kw)


def agent_message(parts: PartsLike, *, message_id: str, **kw: Any) -> dict[str, Any]:
    """``message(..., role="ROLE_AGENT")``."""
    return message(parts, role=ROLE_AGENT, message_id=message_id, **kw)


def task_status(state: str, message: Optional[Mapping[str, Any]] = None,
                timestamp: Optional[str] = None) -> dict[str, Any]:
    """A TaskStatus; ``state`` may be the v1.0 name or a short one (``"working"``)."""
    s: dict[str, Any] = {"state": states.from_short(state)}
    if message is not None:
        s["message"] = _obj(message, "status message")
    s["timestamp"] = timestamp if timestamp is not None else now_iso()
    return s


def _status(status: Union[str, Mapping[str, Any]]) -> dict[str, Any]:
    return task_status(status) if isinstance(status, str) else _obj(status, "status")


def task(task_id: str, context_id: str, status: Union[str, Mapping[str, Any]],
         artifacts: Optional[Sequence[Mapping[str, Any]]] = None,
         history: Optional[Sequence[Mapping[str, Any]]] = None,
         metadata: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """A Task. ``status`` may be a TaskStatus dict or a state name (stamped now)."""
    t: dict[str, Any] = {
        "id": _nonempty(task_id, "task_id"),
        "contextId": _nonempty(context_id, "context_id"),
        "status": _status(status),
    }
    _put(t, "artifacts", [dict(a) for a in artifacts] if artifacts else None)
    _put(t, "history", [dict(h) for h in history] if history else None)
    _meta(t, metadata)
    return t


def artifact(artifact_id: str, parts: PartsLike, name: Optional[str] = None,
             description: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None,
             extensions: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """An Artifact; ``artifactId`` is unique within its task."""
    a: dict[str, Any] = {"artifactId": _nonempty(artifact_id, "artifact_id")}
    if name is not None:
        a["name"] = _nonempty(name, "name")
    if description is not None:
        a["description"] = _nonempty(description, "description")
    a["parts"] = _parts(parts)
    _meta(a, metadata)
    _put(a, "extensions", _strs(extensions, "extensions"))
    return a


# --- streaming events ---------------------------------------------------------------------------

def status_update(task_id: str, context_id: str, status: Union[str, Mapping[str, Any]],
                  metadata: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """TaskStatusUpdateEvent (v1.0 has no ``final``: the state says whether the stream ends)."""
    ev: dict[str, Any] = {
        "taskId": _nonempty(task_id, "task_id"),
        "contextId": _nonempty(context_id, "context_id"),
        "status": _status(status),
    }
    _meta(ev, metadata)
    return ev


def artifact_update(task_id: str, context_id: str, artifact: Mapping[str, Any],
                    append: bool = False, last_chunk: bool = False,
                    metadata: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """TaskArtifactUpdateEvent; false ``append``/``lastChunk`` are omitted (proto3 defaults).

    ``append`` extends the artifact's parts; ``lastChunk`` ends that artifact, never the task.
    """
    ev: dict[str, Any] = {
        "taskId": _nonempty(task_id, "task_id"),
        "contextId": _nonempty(context_id, "context_id"),
        "artifact": _obj(artifact, "artifact"),
    }
    if append:
        ev["append"] = True
    if last_chunk:
        ev["lastChunk"] = True
    _meta(ev, metadata)
    return ev


def stream_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """StreamResponse ``{"task": ...}`` (e.g. the first item of SubscribeToTask)."""
    return {"task": _obj(task, "task")}


def stream_message(msg: Mapping[str, Any]) -> dict[str, Any]:
    """StreamResponse ``{"message": ...}``."""
    return {"message": _obj(msg, "message")}


def stream_status(ev: Mapping[str, Any]) -> dict[str, Any]:
    """StreamResponse ``{"statusUpdate": ...}``."""
    return {"statusUpdate": _obj(ev, "status update")}


def stream_artifact(ev: Mapping[str, Any]) -> dict[str, Any]:
    """StreamResponse ``{"artifactUpdate": ...}``."""
    return {"artifactUpdate": _obj(ev, "artifact update")}


def is_task(obj: Any) -> bool:
    """A Task object (``id`` and ``status``), e.g. the bare Task GetTask and CancelTask answer with."""
    return isinstance(obj, Mapping) and "id" in obj and "status" in obj


def task_in_result(result: Any) -> Optional[dict[str, Any]]:
    """The Task a JSON-RPC result carries: ``{"task": ...}`` (SendMessage) or a bare Task (GetTask,
    CancelTask); None for a Message or anything else."""
    if isinstance(result, dict) and isinstance(result.get("task"), dict):
        return result["task"]  # type: ignore[no-any-return]
    return result if is_task(result) else None


def is_message(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "messageId" in obj and "role" in obj


def send_message_result(task_or_message: Mapping[str, Any]) -> dict[str, Any]:
    """SendMessageResponse: ``{"task": ...}`` or ``{"message": ...}`` depending on the object."""
    if is_task(task_or_message):
        return {"task": dict(task_or_message)}
    if is_message(task_or_message):
        return {"message": dict(task_or_message)}
    raise ValueError(
        "send_message_result needs a Task (with 'id' and 'status') or a Message "
        "(with 'messageId' and 'role')"
    )


def stream_kind(result: Any) -> str:
    """Which member a StreamResponse/SendMessageResponse holds: task, message, statusUpdate or
    artifactUpdate; ``ValueError`` unless exactly one of them (and nothing else) is present."""
    if isinstance(result, dict) and len(result) == 1:  # the common case, checked first (hot on streams)
        for key in result:
            if key in STREAM_KINDS:
                return str(key)
    if not isinstance(result, Mapping):
        raise ValueError(f"a stream item must be an object, got {type(result).__name__}")
    present = [k for k in STREAM_KINDS if k in result]
    extra = sorted(k for k in result if k not in STREAM_KINDS)
    if len(present) != 1 or extra:
        raise ValueError(
            "a stream item needs exactly one of 'task', 'message', 'statusUpdate', "
            f"'artifactUpdate'; got {sorted(result)}"
        )
    return present[0]


# --- method params and results ------------------------------------------------------------------

def send_message_configuration(accepted_output_modes: Optional[Iterable[str]] = None,
                               history_length: Optional[int] = None,
                               return_immediately: Optional[bool] = None) -> dict[str, Any]:
    """SendMessageConfiguration (v1.0: blocking is the default; ``returnImmediately`` opts out)."""
    c: dict[str, Any] = {}
    _put(c, "acceptedOutputModes", _strs(accepted_output_modes, "accepted_output_modes"))
    _put(c, "historyLength", _int(history_length, "history_length"))
    if return_immediately is not None:
        c["returnImmediately"] = bool(return_immediately)
    return c


def send_message_params(message: Mapping[str, Any],
                        configuration: Optional[Mapping[str, Any]] = None,
                        metadata: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Params of SendMessage / SendStreamingMessage (SendMessageRequest)."""
    p: dict[str, Any] = {"message": _obj(message, "message")}
    if configuration is not None:
        _put(p, "configuration", _obj(configuration, "configuration"))
    _meta(p, metadata)
    return p


def get_task_params(task_id: str, history_length: Optional[int] = None) -> dict[str, Any]:
    """Params of GetTask."""
    p: dict[str, Any] = {"id": _nonempty(task_id, "task_id")}
    _put(p, "historyLength", _int(history_length, "history_length"))
    return p


def cancel_task_params(task_id: str, metadata: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Params of CancelTask."""
    p: dict[str, Any] = {"id": _nonempty(task_id, "task_id")}
    _meta(p, metadata)
    return p


def subscribe_task_params(task_id: str) -> dict[str, Any]:
    """Params of SubscribeToTask."""
    return {"id": _nonempty(task_id, "task_id")}


def list_tasks_params(context_id: Optional[str] = None, status: Optional[str] = None,
                      page_size: Optional[int] = None, page_token: Optional[str] = None,
                      history_length: Optional[int] = None,
                      include_artifacts: Optional[bool] = None) -> dict[str, Any]:
    """Params of ListTasks; ``status`` filters by state (v1.0 or short name)."""
    p: dict[str, Any] = {}
    if context_id is not None:
        p["contextId"] = _nonempty(context_id, "context_id")
    if status is not None:
        p["status"] = states.from_short(status)
    _put(p, "pageSize", _int(page_size, "page_size", 1))
    if page_token:
        p["pageToken"] = page_token
    _put(p, "historyLength", _int(history_length, "history_length"))
    if include_artifacts is not None:
        p["includeArtifacts"] = bool(include_artifacts)
    return p


def list_tasks_result(tasks: Sequence[Mapping[str, Any]], *, next_page_token: str = "",
                      page_size: int, total_size: int) -> dict[str, Any]:
    """Result of ListTasks. ``nextPageToken`` is always present ("" on the last page)."""
    if not isinstance(next_page_token, str):
        raise ValueError(f"next_page_token must be a string, got {next_page_token!r}")
    return {
        "tasks": [_obj(t, "task") for t in tasks],
        "nextPageToken": next_page_token,
        "pageSize": _int(page_size, "page_size"),
        "totalSize": _int(total_size, "total_size"),
    }


# --- readers ------------------------------------------------------------------------------------

def parts_of(obj: Any) -> list[Mapping[str, Any]]:
    """The parts of a Message or Artifact (or a list of parts as is)."""
    if isinstance(obj, Mapping):
        parts = obj.get("parts", [])
    else:
        parts = obj
    if not isinstance(parts, (list, tuple)):
        raise ValueError("expected a Message/Artifact with 'parts', or a list of parts")
    return [p for p in parts if isinstance(p, Mapping)]


def text_of(obj: Any, sep: str = "\n") -> str:
    """The text parts of a Message or Artifact joined with ``sep`` (other parts are skipped)."""
    return sep.join(p["text"] for p in parts_of(obj) if isinstance(p.get("text"), str))


def data_of(obj: Any) -> list[Any]:
    """The ``data`` values of a Message or Artifact, in order."""
    return [p["data"] for p in parts_of(obj) if "data" in p]


def task_ids_of(payload: Any, props: dict[str, str]) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(Task.id, contextId, messageId) a JSON-RPC payload itself names (no inheritance from a request).

    Task.id comes from ``params.message.taskId``, ``params.id``, ``result.task.id``, a Task
    ``result.id``, ``result.statusUpdate.taskId``, ``result.artifactUpdate.taskId``,
    ``result.message.taskId``, else the ``a2a-task-id`` user property (native binary chunks).
    messageId comes from the Message a payload carries: ``params.message``, ``result.message``, or
    the ``status.message`` of a status update (an agent's question when input is required); a
    Task snapshot carries a whole history, so it names none.
    """
    tid = cid = mid = None
    if type(payload) is dict:
        params = payload.get("params")
        if type(params) is dict:
            m = params.get("message")
            if type(m) is dict:
                tid, cid, mid = m.get("taskId"), m.get("contextId"), m.get("messageId")
            else:
                tid, cid = params.get("id"), params.get("contextId")
        else:
            r = payload.get("result")
            if type(r) is dict:
                body = r.get("statusUpdate") or r.get("artifactUpdate")
                if type(body) is dict:
                    tid, cid = body.get("taskId"), body.get("contextId")
                    status = body.get("status")
                    if type(status) is dict and type(status.get("message")) is dict:
                        mid = status["message"].get("messageId")
                elif type(r.get("task")) is dict:
                    tid, cid = r["task"].get("id"), r["task"].get("contextId")
                elif type(r.get("message")) is dict:
                    m = r["message"]
                    tid, cid, mid = m.get("taskId"), m.get("contextId"), m.get("messageId")
                elif is_task(r):
                    tid, cid = r.get("id"), r.get("contextId")
    if tid is None and props:
        tid = props.get(properties.TASK_ID)
    if cid is None and props:
        cid = props.get(properties.CONTEXT_ID)
    return tid, cid, mid
