"""A2A v1.0 payload builders (proto JSON dicts)."""
import base64
import re
from datetime import datetime, timezone

import pytest

from a2a_nb.protocol import messages as M
from a2a_nb.protocol import states as S


def test_now_iso_format():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", M.now_iso())
    dt = datetime(2025, 1, 2, 3, 4, 5, 123999, tzinfo=timezone.utc)
    assert M.now_iso(dt) == "2025-01-02T03:04:05.123Z"


def test_parts():
    assert M.text_part("hi") == {"text": "hi"}
    assert M.text_part("hi", "text/markdown", {"k": 1}) == {"text": "hi", "metadata": {"k": 1}, "mediaType": "text/markdown"}
    assert M.data_part({"a": [1]}) == {"data": {"a": [1]}}
    raw = M.raw_part(b"\x00\xff", "application/octet-stream", "x.bin")
    assert base64.b64decode(raw["raw"]) == b"\x00\xff" and raw["filename"] == "x.bin"
    assert M.url_part("https://x/y.png", "image/png") == {"url": "https://x/y.png", "mediaType": "image/png"}
    with pytest.raises(ValueError):
        M.raw_part("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        M.text_part(3)  # type: ignore[arg-type]
    assert "kind" not in M.text_part("x")


def test_message_builders():
    m = M.user_message("Analyse TCK-4821", message_id="TCK-4821-1", task_id="t", context_id="c")
    assert m == {"messageId": "TCK-4821-1", "contextId": "c", "taskId": "t", "role": "ROLE_USER",
                 "parts": [{"text": "Analyse TCK-4821"}]}
    a = M.agent_message(["a", M.data_part({"x": 1})], message_id="m2", reference_task_ids=["t0"])
    assert a["role"] == "ROLE_AGENT" and a["referenceTaskIds"] == ["t0"] and len(a["parts"]) == 2
    assert M.message("x", role="agent", message_id="m")["role"] == "ROLE_AGENT"
    # omitted optionals
    bare = M.message("x", message_id="m", metadata={}, reference_task_ids=[])
    assert set(bare) == {"messageId", "role", "parts"}
    with pytest.raises(ValueError, match="at least one part"):
        M.message([], message_id="m")
    with pytest.raises(ValueError, match="role"):
        M.message("x", role="ROLE_SYSTEM", message_id="m")
    with pytest.raises(ValueError, match="message_id"):
        M.message("x", message_id="")
    with pytest.raises(ValueError, match="exactly one"):
        M.message([{"kind": "text", "text": "x", "data": 1}], message_id="m")


def test_task_status_artifact():
    st = M.task_status("working", timestamp="2025-01-01T00:00:00.000Z")
    assert st == {"state": S.WORKING, "timestamp": "2025-01-01T00:00:00.000Z"}
    assert "timestamp" in M.task_status(S.COMPLETED)
    with pytest.raises(ValueError):
        M.task_status("done")
    art = M.artifact("a1", "report", name="RCA")
    assert art == {"artifactId": "a1", "name": "RCA", "parts": [{"text": "report"}]}
    t = M.task("t", "c", "submitted", artifacts=[art], history=[M.user_message("x", message_id="m")])
    assert t["status"]["state"] == S.SUBMITTED and t["artifacts"] == [art] and len(t["history"]) == 1
    assert set(M.task("t", "c", st)) == {"id", "contextId", "status"}


def test_events_and_stream_wrappers():
    su = M.status_update("t", "c", M.task_status(S.WORKING))
    assert su["taskId"] == "t" and "final" not in su
    au = M.artifact_update("t", "c", M.artifact("a", "x"))
    assert "append" not in au and "lastChunk" not in au
    au2 = M.artifact_update("t", "c", M.artifact("a", "x"), append=True, last_chunk=True)
    assert au2["append"] is True and au2["lastChunk"] is True
    t = M.task("t", "c", "working")
    m = M.agent_message("x", message_id="m")
    assert M.stream_kind(M.stream_task(t)) == "task"
    assert M.stream_kind(M.stream_message(m)) == "message"
    assert M.stream_kind(M.stream_status(su)) == "statusUpdate"
    assert M.stream_kind(M.stream_artifact(au)) == "artifactUpdate"
    assert M.send_message_result(t) == {"task": t}
    assert M.send_message_result(m) == {"message": m}
    with pytest.raises(ValueError):
        M.send_message_result({"foo": 1})
    for bad in ({}, {"task": t, "message": m}, {"task": t, "extra": 1}, {"kind": "task"}, [], None):
        with pytest.raises(ValueError):
            M.stream_kind(bad)


def test_params():
    m = M.user_message("x", message_id="m")
    cfg = M.send_message_configuration(["text/plain"], 5, True)
    assert cfg == {"acceptedOutputModes": ["text/plain"], "historyLength": 5, "returnImmediately": True}
    assert M.send_message_configuration() == {}
    assert M.send_message_params(m) == {"message": m}
    assert M.send_message_params(m, cfg, {"k": "v"}) == {"message": m, "configuration": cfg, "metadata": {"k": "v"}}
    assert M.send_message_params(m, {}) == {"message": m}
    assert M.get_task_params("t", 2) == {"id": "t", "historyLength": 2}
    assert M.cancel_task_params("t") == {"id": "t"}
    assert M.subscribe_task_params("t") == {"id": "t"}
    assert M.list_tasks_params() == {}
    assert M.list_tasks_params("c", "completed", 10, "tok", 0, True) == {
        "contextId": "c", "status": S.COMPLETED, "pageSize": 10, "pageToken": "tok",
        "historyLength": 0, "includeArtifacts": True}
    with pytest.raises(ValueError):
        M.get_task_params("t", -1)
    with pytest.raises(ValueError):
        M.list_tasks_params(page_size=0)
    r = M.list_tasks_result([], page_size=50, total_size=0)
    assert r == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


def test_readers():
    m = M.agent_message(["Root cause:", M.data_part({"n": 1}), "cache", M.raw_part(b"x")], message_id="m")
    assert M.text_of(m) == "Root cause:\ncache"
    assert M.text_of(m, sep=" ") == "Root cause: cache"
    assert M.data_of(m) == [{"n": 1}]
    assert M.text_of(M.artifact("a", ["a", "b"]), sep="") == "ab"
    assert M.text_of([M.text_part("x")]) == "x"
    assert M.text_of({"parts": []}) == ""


def test_the_task_a_result_carries():
    task = M.task("t1", "c1", M.task_status(S.WORKING))
    assert M.task_in_result({"task": task}) is task
    assert M.task_in_result(task) is task
    assert M.task_in_result({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}}) is None
    assert M.task_in_result(None) is None and M.task_in_result([task]) is None
