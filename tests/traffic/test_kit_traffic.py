"""Real traffic from the kit's own Requester and Responder: recorded, framed, charted, linted.

Clean traffic (blocking send, stream with artifacts, input-required continuation, error reply)
must give zero MUST findings; a handover followed by a fallback to the card agent stays free of
MUST findings too.
"""
from __future__ import annotations


import pytest

from a2a_nb.agents import Requester, Responder
from a2a_nb.protocol import cards, states
from a2a_nb.protocol.errors import A2AError
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.traffic.charts import latency_chart, mermaid_sequence, reroute_chart, sequence_chart, state_timeline
from a2a_nb.traffic.frame import load_traffic, routing_view, state_transitions
from a2a_nb.traffic.lint import check_traffic, format_findings
from a2a_nb.traffic.recorder import Recorder
from tests.helpers import uid

FAST = RetryProfile(reply_first_timeout_s=0.4, stream_idle_timeout_s=1.0, max_attempts=2, backoff_s=(0.05, 0.1))


def _card(unit: str, agent: str) -> dict:
    return cards.agent_card(agent, f"{agent} for the traffic tests", "1.0.0", "acme", unit, agent,
                            [cards.skill("rca", "RCA", "Root-cause analysis", ["tickets"])])


@pytest.fixture(scope="module")
def clean_traffic(broker_url, tmp_path_factory):
    unit = uid("trf")
    path = tmp_path_factory.mktemp("kit") / "clean.jsonl"

    def worker(ctx):
        if ctx.turn == 1:
            ctx.working("reading ticket TCK-4821")
            ctx.artifact("report", "part 1")
            ctx.artifact("report", "part 2", append=True, last_chunk=True)
            ctx.ask_input("which order number?")
        else:
            ctx.complete(f"order {ctx.text} fixed")

    with Recorder(broker_url, path=path, org_filter=f"$a2a/v1/+/acme/{unit}/#") as rec:
        echo = Responder("echo", lambda ctx: ctx.respond("hi"), unit=unit, broker=broker_url, card=_card(unit, "echo"))
        desk = Responder("worker", worker, unit=unit, broker=broker_url, card=_card(unit, "worker"))
        req = Requester("coordinator", unit=unit, broker=broker_url, retry=FAST, token="s3cr3t-token",
                        allow_token_without_tls=True)  # plain test broker: the recorder must still redact it
        assert req.send("echo", "hello").text == "hi"
        stream = req.stream("worker", "go")
        kinds = [ev.kind for ev in stream]
        assert "artifactUpdate" in kinds and stream.state == states.INPUT_REQUIRED
        assert req.continue_task(stream, "991").state == states.COMPLETED
        with pytest.raises(A2AError):
            req.get_task("00000000-0000-4000-8000-000000000000", to="echo")
        rec.wait_idle(0.2)
        echo.stop()
        desk.stop()
        req.close()
        rec.wait_idle(0.1)
    return path


def test_clean_kit_traffic_has_no_must_findings(clean_traffic):
    df = load_traffic(clean_traffic)
    f = check_traffic(df)
    must = f[f["level"] == "MUST"]
    assert must.empty, format_findings(must)
    assert "s3cr3t" not in clean_traffic.read_text()
    # every kind of message the story needs is there
    assert {"discovery", "request", "reply"} <= set(df["kind"])
    assert {"card", "message", "task", "status", "artifact", "error"} <= set(df["event"].dropna())
    assert set(df["method"].dropna()) == {"SendMessage", "SendStreamingMessage", "GetTask"}


def test_clean_kit_traffic_frame_and_views(clean_traffic):
    df = load_traffic(clean_traffic)
    replies = df[df["kind"] == "reply"]
    assert replies["request_i"].notna().all() and (replies["latency_s"] > 0).all()
    assert set(replies["to_agent"]) == {"coordinator"}
    req = df[df["kind"] == "request"]
    assert set(req["from_agent"]) == {"coordinator"} and set(req["to_agent"]) == {"echo", "worker"}
    err = df[df["event"] == "error"].iloc[0]
    assert err["error_code"] == -32001 and err["task_id"] == "00000000-0000-4000-8000-000000000000"
    tr = state_transitions(df)
    assert list(tr["short"])[-3:] == ["working", "input-required", "completed"]
    assert not routing_view(df)["reroute"].any()


def test_clean_kit_traffic_charts(clean_traffic):
    df = load_traffic(clean_traffic)
    for chart in (sequence_chart, state_timeline, reroute_chart, latency_chart):
        fig = chart(df)
        assert fig.axes and fig.axes[0].get_title()
    text = mermaid_sequence(df)
    assert text.startswith("sequenceDiagram\n") and "SendStreamingMessage" in text and "artifact report" in text


def test_handover_and_fallback_stay_free_of_must_findings(broker_url):
    unit = uid("trf")

    def desk_handler(ctx):
        if ctx.turn == 1:
            ctx.hand_over(analyst)
            ctx.working("analyst-1 takes over")
            ctx.ask_input("which order?")
        else:
            ctx.complete("done")

    with Recorder(broker_url, org_filter=f"$a2a/v1/+/acme/{unit}/#") as rec:
        desk = Responder("ticket-desk", desk_handler, unit=unit, broker=broker_url, card=_card(unit, "ticket-desk"))
        analyst = Responder("analyst-1", desk_handler, unit=unit, broker=broker_url, runtime=desk.runtime)
        req = Requester("coordinator", unit=unit, broker=broker_url, retry=FAST)
        first = req.stream("ticket-desk", "TCK-4821")
        first.wait()
        assert req.continue_task(first, "991").state == states.COMPLETED  # goes to analyst-1
        second = req.stream("ticket-desk", "TCK-4822")
        second.wait()
        analyst.stop()  # the handover target goes silent: the requester falls back to the card agent
        assert req.continue_task(second, "992").state == states.COMPLETED
        rec.wait_idle(0.2)
        desk.stop()
        req.close()
    df = load_traffic(rec)
    f = check_traffic(df)
    assert f[f["level"] == "MUST"].empty, format_findings(f)
    rv = routing_view(df)
    assert list(rv[rv["reroute"]]["cause"]) == ["handover", "handover", "fallback"]
    assert not rv[rv["target"] == "analyst-1"]["answered"].all()  # the silent attempts
    fig = reroute_chart(df)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)  # one panel per task
    assert "handover" in texts and "fallback" in texts
    assert "handover to analyst-1" in mermaid_sequence(df)
