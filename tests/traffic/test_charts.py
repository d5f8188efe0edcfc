"""Charts return titled Figures without touching pyplot's state; Mermaid text is deterministic."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from a2a_nb.protocol import states  # noqa: E402
from a2a_nb.traffic.charts import (Mermaid, latency_chart, message_label, mermaid_sequence, reroute_chart,  # noqa: E402
                                   sequence_chart, show_mermaid, state_timeline)

from ._traffic import C1, T1, Traffic, clean_conversation  # noqa: E402

CHARTS = (sequence_chart, state_timeline, reroute_chart, latency_chart)


def handover_traffic() -> Traffic:
    tr = Traffic()
    tr.card("ticket-desk")
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, Traffic.status(T1, C1, states.WORKING, "2025-01-02T03:04:05.001Z"),
              props=[("a2a-responder-agent-id", "analyst-1")])
    tr.result(c, r, Traffic.status(T1, C1, states.INPUT_REQUIRED, "2025-01-02T03:04:05.002Z"),
              props=[("a2a-responder-agent-id", "analyst-1")])
    tr.send("analyst-1", T1, C1, "order 991")
    c, r = tr.send("ticket-desk", T1, C1, "order 991")
    tr.result(c, r, Traffic.artifact(T1, C1, last=True))
    tr.error(c, r, {"code": -32004, "message": "busy", "data": {"a2a_error": "responder_unavailable"}})
    return tr


@pytest.mark.parametrize("chart", CHARTS)
def test_each_chart_is_a_titled_figure_and_leaves_pyplot_alone(chart):
    before = plt.get_fignums()
    for tr in (clean_conversation(), handover_traffic()):
        fig = chart(tr.records)
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert ax.get_title()
        w, h = fig.get_size_inches()
        assert w == 10 and 2 <= h <= 6
        fig.canvas.draw()  # renders without error
    assert plt.get_fignums() == before


@pytest.mark.parametrize("chart", CHARTS)
def test_each_chart_copes_with_an_empty_recording(chart):
    fig = chart([])
    assert "no " in " ".join(t.get_text() for t in fig.axes[0].texts)


def test_sequence_chart_marks_handovers_and_labels():
    fig = sequence_chart(handover_traffic().records)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "handover → analyst-1" in texts
    assert {"SendStreamingMessage", "statusUpdate working", "statusUpdate input-required", "card online",
            "artifact report (last chunk)", "error -32004 responder_unavailable"} <= set(texts)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ticket-desk", "coordinator", "analyst-1", "discovery"]
    assert ax.get_ylabel() and "first" not in ax.get_title()
    big = sequence_chart(clean_conversation().records, max_messages=5)
    assert "first 5 of 15" in big.axes[0].get_title()


def test_state_timeline_and_reroute_annotations():
    fig = state_timeline(handover_traffic().records)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["working", "input-required"]
    fig = reroute_chart(handover_traffic().records)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "handover (SendMessage)" in texts and "fallback (SendMessage)" in texts
    assert fig.axes[0].get_ylabel() == "addressed agent"


def test_latency_chart_by_method():
    fig = latency_chart(clean_conversation().records)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["SendMessage\n(n=2)", "SendStreamingMessage\n(n=1)", "GetTask\n(n=2)"]
    assert fig.axes[0].get_ylabel() == "latency (ms)"


EXPECTED = """sequenceDiagram
    participant p1 as ticket-desk
    participant p2 as discovery
    participant p3 as coordinator
    participant p4 as analyst-1
    p1-)p2: card online
    p3->>p1: SendStreamingMessage
    p4-->>p3: statusUpdate working
    Note over p4: handover to analyst-1
    p4-->>p3: statusUpdate input-required
    p3->>p4: SendMessage
    p3->>p1: SendMessage
    p1-->>p3: artifact report (last chunk)
    p1-->>p3: error -32004 responder_unavailable
"""


def test_mermaid_sequence_is_deterministic():
    text = mermaid_sequence(handover_traffic().records)
    assert text == EXPECTED
    assert mermaid_sequence(handover_traffic().records) == text
    short = mermaid_sequence(handover_traffic().records, max_messages=2)
    assert short.endswith("    Note over p1: 6 more messages not shown\n")


def test_show_mermaid_mime_bundle():
    m = show_mermaid(EXPECTED)
    assert isinstance(m, Mermaid)
    assert m._repr_mimebundle_() == {"text/vnd.mermaid": EXPECTED, "text/plain": EXPECTED}
    assert str(show_mermaid(handover_traffic().records)) == EXPECTED


def test_message_label_covers_every_event():
    assert message_label({"kind": "discovery", "event": None}) == "card removed"
    assert message_label({"kind": "event"}) == "event"
    assert message_label({"kind": "reply", "event": "binary", "artifact_id": "blob"}) == "binary chunk blob"
    assert message_label({"kind": "reply", "event": "message"}) == "message"
    assert message_label({"kind": "reply", "event": "task", "state": states.CANCELED}) == "task canceled"
    assert message_label({"kind": "pool", "method": "SendMessage"}) == "SendMessage"
