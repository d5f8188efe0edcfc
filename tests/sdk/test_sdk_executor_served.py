"""Any a2a-sdk ``AgentExecutor`` served on the profile by the kit (``a2a_nb.sdk.serve``): the probe
finds it Core conformant (the bare SDK behind a thin shim is not: tests/probe/test_probe_sdk_agent.py),
the kit's Requester tells a two-turn task with a streamed artifact, a CancelTask reaches the executor,
and everything it emits validates against the SDK's own types."""
from __future__ import annotations

import time

import pytest

from a2a_nb import sdk
from a2a_nb.agents.requester import Requester
from a2a_nb.probe import run_probe
from a2a_nb.protocol import states
from a2a_nb.story.cast import echo_card
from tests.bridge.conftest import ORG
from tests.sdk.executors import EchoExecutor, ReportExecutor
from tests.sdk_check import assert_valid


def test_an_sdk_executor_served_by_the_kit_passes_every_core_check(broker_url, unit):
    with sdk.serve(EchoExecutor(), echo_card(ORG, unit, "sdk-echo"), broker=broker_url) as served:
        report = run_probe("sdk-echo", org=ORG, unit=unit, broker=broker_url, level="core", timeout=1.0)
    failed = [(r.check, r.remark) for r in report.rows if r.verdict == "fail"]
    assert report.core_conformant and not failed, (report.summary(), failed)
    assert served.responder.stats.executions > 0


def test_a_kit_requester_drives_an_sdk_executor_through_input_required_and_a_streamed_artifact(broker_url, unit):
    with sdk.serve(ReportExecutor(), echo_card(ORG, unit, "reporter"), broker=broker_url), \
            Requester(org=ORG, unit=unit, broker=broker_url) as req:
        first = req.send("reporter", "TCK-4821")
        assert first.state == states.INPUT_REQUIRED and first.text == "which version?"
        events = list(req.continue_task(first, "2.4.1", stream=True))
        assert [e.kind for e in events][-1] == "statusUpdate" and events[-1].state == states.COMPLETED
        arts = [e.data for e in events if e.kind == "artifactUpdate"]
        assert [a["artifact"]["parts"][0]["text"] for a in arts] == ["part one", "part two"]
        assert arts[-1]["lastChunk"] is True and arts[-1]["append"] is True
        task = req.get_task(first.task_id)
        assert task["id"] == first.task_id, "the executor works on the requester's own Task.id"
        assert task["status"]["message"]["parts"][0]["text"] == "done for 2.4.1"
        assert_valid("Task", task)
        for e in events:
            assert_valid({"task": "Task", "statusUpdate": "TaskStatusUpdateEvent",
                          "artifactUpdate": "TaskArtifactUpdateEvent", "message": "Message"}[e.kind], e.data)


def test_cancel_task_reaches_a_running_executor(broker_url, unit):
    executor = ReportExecutor(slow=30.0)
    with sdk.serve(executor, echo_card(ORG, unit, "reporter"), broker=broker_url), \
            Requester(org=ORG, unit=unit, broker=broker_url) as req:
        first = req.send("reporter", "TCK-4821")
        req.continue_task(first, "2.4.1", return_immediately=True)
        deadline = time.monotonic() + 30
        while req.get_task(first.task_id)["status"]["state"] != states.WORKING:
            assert time.monotonic() < deadline, "the executor never started working"
            time.sleep(0.05)
        canceled = req.cancel_task(first.task_id)
        assert canceled["status"]["state"] == states.CANCELED
        while executor.cancelled != [first.task_id]:
            assert time.monotonic() < deadline, "executor.cancel was never called"
            time.sleep(0.05)
        assert req.get_task(first.task_id)["status"]["state"] == states.CANCELED


def test_serve_refuses_what_is_no_executor_or_card(broker_url, unit):
    with pytest.raises(TypeError, match="takes an a2a-sdk AgentExecutor, not function"):
        sdk.serve(lambda ctx: None, echo_card(ORG, unit, "x"), broker=broker_url)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="as an a2a-sdk AgentCard or its JSON"):
        sdk.serve(EchoExecutor(), "card", broker=broker_url)  # type: ignore[arg-type]
