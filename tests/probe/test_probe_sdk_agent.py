"""``probe --level extended`` against an agent built with the official a2a-sdk (its DefaultRequestHandler
and an echoing AgentExecutor, on MQTT through the bare-paho shim of ``sdk_agent.py``): none of the six
Extended capabilities is offered, and the probe says why Core fails (issue [16]; the wire notes: the
SDK's handler refuses a Task.id the requester made, which the MQTT profile requires it to accept)."""
from __future__ import annotations


from a2a_nb.probe import run_probe
from a2a_nb.probe.report import EXTENDED_CAPABILITIES
from tests.probe.sdk_agent import SdkAgent
from tests.helpers import uid


def test_the_sdk_agent_offers_none_of_the_six_and_its_task_id_refusal_is_named(broker_url):
    unit = uid("sdk")
    agent = SdkAgent(broker_url, unit)
    try:
        report = run_probe("sdk-echo", unit=unit, broker=broker_url, level="extended", timeout=1.0)
    finally:
        agent.close()
    assert report.capabilities == {name: "not offered" for name, _ in EXTENDED_CAPABILITIES}
    assert "no Extended features seen" in report.summary()
    rows = {r.check: r for r in report.rows}
    assert rows["card-schema"].verdict == "pass" and rows["correlation-text"].verdict == "pass"
    assert not report.core_conformant and rows["get-task"].verdict == "fail"
    assert "not found" in rows["result-schema"].remark, "the SDK answers the requester's own Task.id with -32001"
