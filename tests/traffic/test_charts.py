"""Charts return titled Figures without touching pyplot's state; Mermaid text is deterministic."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from PIL import Image  # noqa: E402

from a2a_nb.protocol import states  # noqa: E402
from a2a_nb.traffic.charts import (DPI, MERMAID_LOOK, SMALL, WIDTH, Mermaid, _two_lines, latency_chart,  # noqa: E402
                                   message_label, mermaid_sequence, reroute_chart, route_hops, scenario_frames,
                                   sequence_chart, show_mermaid, state_timeline, task_labels)
from a2a_nb.traffic.frame import load_traffic  # noqa: E402

from ._traffic import C1, T1, Traffic, clean_conversation  # noqa: E402

FULL = Path(__file__).resolve().parents[2] / "a2a_nb" / "data" / "recordings" / "full.jsonl"
STORY = ["happy", "handover", "no-handover", "multi-handover", "handover-unreachable", "pool"]  # recorded order


def story_names(df) -> dict:
    return dict(zip(dict.fromkeys(df["task_id"].dropna()), STORY))

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
        assert w == WIDTH and 2 <= h <= 7 and fig.dpi == DPI
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
    assert labels[:2] == ["working", "input-required"]
    assert {"first sent to", "reply naming a new responder", "fallback to the card agent"} <= set(labels)
    fig = reroute_chart(handover_traffic().records)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "handover\nSendMessage\nno reply" in texts and "fallback\nSendMessage" in texts
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["ticket-desk", "analyst-1"]
    with pytest.raises(ValueError, match="'step'"):
        state_timeline(handover_traffic().records, x="hours")


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
    rect rgb(255, 255, 255)
    p1-)p2: card online
    p3->>p1: SendStreamingMessage
    p4-->>p3: statusUpdate working
    Note over p4: handover to analyst-1
    p4-->>p3: statusUpdate input-required
    p3->>p4: SendMessage
    p3->>p1: SendMessage
    p1-->>p3: artifact report (last chunk)
    p1-->>p3: error -32004 responder_unavailable
    end
"""


def test_mermaid_sequence_is_deterministic():
    text = mermaid_sequence(handover_traffic().records)
    assert text == EXPECTED
    assert mermaid_sequence(handover_traffic().records) == text
    short = mermaid_sequence(handover_traffic().records, max_messages=2)
    assert short.endswith("    Note over p1: 6 more messages not shown\n    end\n")


def test_show_mermaid_mime_bundle():
    m = show_mermaid(EXPECTED)
    assert isinstance(m, Mermaid)
    assert m._repr_mimebundle_() == {"text/markdown": f"```mermaid\n{MERMAID_LOOK}\n{EXPECTED}```\n", "text/plain": EXPECTED}
    assert str(show_mermaid(handover_traffic().records)) == EXPECTED


def test_mermaid_label_cannot_restyle_the_diagram():
    """A peer's name holding a Mermaid directive stays a label: no %% reaches the diagram's text."""
    from a2a_nb.traffic.charts import _mermaid_text

    label = _mermaid_text('x%%{init: {"theme": "dark"}}%%%')
    assert "%%" not in label and "init" in label


def test_mermaid_markdown_fence_outlasts_backticks_in_labels():
    """A label from a recording cannot close the diagram's Markdown block early."""
    md = Mermaid("sequenceDiagram\n    p1->>p2: a ```` b").markdown()
    assert md.startswith("`````mermaid\n") and md.endswith("\n`````\n")


def test_message_label_covers_every_event():
    assert message_label({"kind": "discovery", "event": None}) == "card removed"
    assert message_label({"kind": "event"}) == "event"
    assert message_label({"kind": "reply", "event": "binary", "artifact_id": "blob"}) == "binary chunk blob"
    assert message_label({"kind": "reply", "event": "message"}) == "message"
    assert message_label({"kind": "reply", "event": "task", "state": states.CANCELED}) == "task canceled"
    assert message_label({"kind": "pool", "method": "SendMessage"}) == "SendMessage"


# -- the story's recording, read as a learner would --------------------------------------------------

def drawn(ax, prefix: str) -> list[list[str]]:
    """The gids of the artists of one kind (``state:<task>:<state>``, ``mark:<task>:<mark>``), split."""
    return [a.get_gid().split(":", 2) for a in ax.get_children() if str(a.get_gid() or "").startswith(prefix + ":")]


def test_state_timeline_shows_every_state_of_the_story_step_by_step():
    df = load_traffic(FULL)
    names = story_names(df)
    ax = state_timeline(df, names=names).axes[0]
    states_drawn = drawn(ax, "state")
    paused = {task for _, task, st in states_drawn if st == states.INPUT_REQUIRED}
    assert len(paused) == 5  # every task but multi-handover (its steps came first) waits for input
    assert {names[t] for t in paused} == set(STORY) - {"multi-handover"}
    assert len({task for _, task, st in states_drawn if st == states.SUBMITTED}) == 6
    widths = [p.get_width() for p in ax.patches if str(p.get_gid() or "").startswith("state:")]
    assert min(widths) >= 1  # step axis: even a state that lasted a millisecond is one message wide
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"{names[t]} · {t[:8]}" for t in names]
    assert "step" in ax.get_xlabel()
    time_ax = state_timeline(df, x="time").axes[0]
    assert "seconds" in time_ax.get_xlabel()
    assert len(drawn(time_ax, "state")) == len(states_drawn)


def test_importing_the_charts_keeps_the_backend_the_user_chose():
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
    code = "import matplotlib; matplotlib.use('pdf'); import a2a_nb.traffic.charts; print(matplotlib.get_backend())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "pdf"


def test_a_state_has_the_same_colour_in_the_chart_and_in_the_notebook_badges():
    from matplotlib.colors import to_hex

    from a2a_nb.agents.reprs import badge

    ax = state_timeline(load_traffic(FULL)).axes[0]
    colours: dict[str, set] = {}
    for artist in ax.get_children():
        gid = str(artist.get_gid() or "")
        if gid.startswith("state:"):
            colour = artist.get_facecolor() if hasattr(artist, "get_width") else artist.get_color()
            colours.setdefault(gid.split(":", 2)[2], set()).add(to_hex(colour))
    assert len(colours) >= 4  # submitted, working, input-required, completed at least
    for state, drawn_in in colours.items():
        assert drawn_in == {states.COLOURS[state]}
        assert f"background:{states.COLOURS[state]}" in badge(state)


def test_state_timeline_marks_where_each_task_went_on_its_row():
    df = load_traffic(FULL)
    names = story_names(df)
    by_name = {v: k for k, v in names.items()}
    ax = state_timeline(df, names=names).axes[0]
    marks = drawn(ax, "mark")

    def of(scenario):
        return [m for _, task, m in marks if task == by_name[scenario]]

    assert of("no-handover") == ["sent"]
    assert of("multi-handover") == ["sent", "handover", "handover"]
    assert of("handover-unreachable") == ["sent", "handover", "no reply", "no reply", "no reply", "fallback"]
    assert of("pool") == ["sent", "pool-assigned"]
    texts = [t.get_text() for t in ax.texts]
    assert {"to ticket-desk", "→ analyst-1", "→ analyst-2", "fallback → ticket-desk", "to pool:analysts",
            "pool → analyst-analysts-3"} <= set(texts)


def test_task_labels_fall_back_to_the_ticket():
    labels = task_labels(FULL)
    assert len(labels) == 6 and all(label.startswith("TCK-4821 · ") for label in labels.values())


def test_reroute_chart_one_panel_per_task_with_every_hop():
    df = load_traffic(FULL)
    names = story_names(df)
    fig = reroute_chart(df, names=names)
    panels = {ax.get_title(loc="left"): ax for ax in fig.axes}
    assert list(panels) == [f"{n} · {t[:8]}" for t, n in names.items()]
    multi = panels[next(k for k in panels if k.startswith("multi-handover"))]
    assert [t.get_text() for t in multi.get_yticklabels()] == ["ticket-desk", "analyst-1", "analyst-2"]
    kinds = [g[1] for g in drawn(multi, "hop")]
    # the first handover (to analyst-1) is a hop, and so are the replies each agent sent before handing over
    assert kinds == ["request", "replied", "named", "replied", "named", "request"]
    for ax in fig.axes:  # one label per hop, each at its hop; no two hops at the same place
        hops = [a for a in ax.get_lines() if str(a.get_gid() or "").startswith("hop:")]
        xs = [float(h.get_xdata()[0]) for h in hops]
        assert len(set(xs)) == len(xs) == len(ax.texts)
        assert [float(t.xy[0]) for t in ax.texts] == xs
        assert len({h.get_color() for h in hops}) == 1  # coloured by task
    dies = panels[next(k for k in panels if k.startswith("handover-unreachable"))]
    hollow = [h for h in dies.get_lines() if str(h.get_gid() or "").startswith("hop:") and h.get_mfc() == "white"]
    assert len(hollow) == 3
    assert "fallback\nSendStreaming\nMessage" in [t.get_text() for t in dies.texts]
    hops = route_hops(df)
    assert len(hops) == sum(len(drawn(ax, "hop")) for ax in fig.axes)


def test_story_sequence_charts_draw_every_message_once():
    """``save_charts`` draws one sequence chart per piece of ``scenario_frames``: no message left out."""
    df = load_traffic(FULL)
    pieces = scenario_frames(df)
    assert [task for task, _ in pieces] == list(story_names(df))
    assert sum((list(p["i"]) for _, p in pieces), []) == list(df["i"])  # each message in exactly one piece
    drawn_rows = 0
    for _, piece in pieces:
        ax = sequence_chart(piece, max_messages=len(piece)).axes[0]
        assert "first" not in ax.get_title()
        drawn_rows += len(ax.get_yticklabels())  # one row (and tick) per message
    assert drawn_rows == len(df) == 107


def test_story_charts_names_rows_by_scenario_and_indexes_them(tmp_path, broker_url):
    """``python -m a2a_nb story --charts DIR`` on the real broker: every chart listed in index.md."""
    env = dict(os.environ, A2A_BROKER_URL=broker_url)
    out = subprocess.run([sys.executable, "-m", "a2a_nb", "story", "--scenario", "multi-handover", "--pace", "0",
                          "--charts", str(tmp_path)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    index = (tmp_path / "index.md").read_text()
    names = [line.split("](")[1].split(")")[0] for line in index.splitlines() if line.startswith("- [")]
    assert names[:4] == ["states.png", "states-time.png", "reroutes.png", "latency.png"]
    assert len(names) == 5 and names[4].startswith("sequence-1-multi-handover-")
    assert all((tmp_path / n).is_file() for n in names)
    assert f"chart: {tmp_path / 'index.md'}" in out.stdout


# -- readable everywhere: size, light and dark themes, a peer's text -----------------------------------

def story_charts() -> list[Figure]:
    df = load_traffic(FULL)
    names = story_names(df)
    happy = df[df["i"] <= df[df["task_id"] == next(iter(names))]["i"].max()]
    return [sequence_chart(happy), state_timeline(df, names=names), state_timeline(df, x="time"),
            reroute_chart(df, names=names), latency_chart(df)]


def texts_of(fig: Figure) -> list:
    fig.canvas.draw()  # tick labels exist once drawn
    return [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]


def test_no_text_is_smaller_than_small():
    """7 pt at 96 dpi is 9.3 px: a chart shown at its size (768 px fits a 1280 px JupyterLab) is readable."""
    assert SMALL * DPI / 72 >= 9
    for fig in story_charts() + [chart(handover_traffic().records) for chart in CHARTS]:
        sizes = {t.get_text(): t.get_fontsize() for t in texts_of(fig)}
        small = {text: size for text, size in sizes.items() if size < SMALL}
        assert not small, f"text under {SMALL} pt: {small}"


def test_every_chart_is_a_card_with_everything_on_it():
    """A white card with a rounded frame, transparent around it (module docstring): nothing is drawn
    outside the card, where dark text would vanish on JupyterLab's dark theme."""
    from matplotlib.patches import FancyBboxPatch

    for fig in story_charts() + [chart([]) for chart in CHARTS]:
        assert fig.patch.get_alpha() in (None, 0) and fig.patch.get_facecolor()[3] == 0
        (card,) = [a for a in fig.get_children() if a.get_gid() == "card"]
        assert isinstance(card, FancyBboxPatch) and card.get_facecolor()[:3] == (1, 1, 1)
        fig.canvas.draw()
        box = card.get_window_extent()
        for ax in fig.axes:
            inner = ax.get_tightbbox()
            assert (inner.x0 >= box.x0 - 1 and inner.y0 >= box.y0 - 1 and inner.x1 <= box.x1 + 1
                    and inner.y1 <= box.y1 + 1), f"{ax.get_title()!r} reaches outside the card"
        png = Image.open(io.BytesIO(print_figure(fig, "png"))).convert("RGBA")  # what the notebook shows
        pixels = np.asarray(png)
        assert pixels[0, 0, 3] == 0 and pixels[-1, -1, 3] == 0, "transparent around the card"
        assert pixels[png.height // 2, png.width // 2, 3] == 255, "the card is opaque"
        assert fig.get_size_inches()[0] * DPI <= png.width <= fig.get_size_inches()[0] * DPI + 2 * 0.1 * DPI + 2


def test_reroute_chart_tells_a_handover_at_once_from_one_mid_stream():
    """happy: the first reply already comes from the analyst; handover: the desk answers the stream
    itself for a while, then the analyst takes over. The two panels show it."""
    df = load_traffic(FULL)
    names = story_names(df)
    panels = {ax.get_title(loc="left").split(" · ")[0]: ax for ax in reroute_chart(df, names=names).axes}

    def first_replies(scenario):
        """Who sent each reply to the task's first request, up to the first one from the new responder."""
        task = next(t for t, n in names.items() if n == scenario)
        first = df[(df["task_id"] == task) & (df["kind"] == "request")].iloc[0]
        replies = df[(df["kind"] == "reply") & (df["request_i"] == first["i"])]
        senders = list(replies["from_agent"])
        return senders[:senders.index(next(a for a in senders if a != first["to_agent"])) + 1]

    assert first_replies("happy") == ["analyst-1"]
    assert first_replies("handover") == ["ticket-desk", "ticket-desk", "analyst-1"]
    happy, handover = panels["happy"], panels["handover"]
    assert [g[1] for g in drawn(happy, "hop")] == ["request", "named", "request", "request"]
    assert [g[1] for g in drawn(handover, "hop")] == ["request", "replied", "named", "request", "request"]
    def words(ax):  # a label's lines are wrapped to the space between two hops
        return [" ".join(t.get_text().split()) for t in ax.texts]

    assert "handover in the first reply" in words(happy)
    labels = words(handover)
    assert "handover mid-stream, reply 3" in labels and "2 replies submitted, working" in labels
    (square,) = [h for h in handover.get_lines() if h.get_gid() == "hop:replied"]
    assert square.get_ydata()[0] == 0 and handover.get_yticklabels()[0].get_text() == "ticket-desk"
    hops = route_hops(df)
    assert hops.loc[hops["kind"] == "replied", "agent"].tolist() == ["ticket-desk", "ticket-desk", "analyst-1"]


def test_reroute_labels_never_run_into_each_other():
    """Hop labels are wrapped between words to the space between two hops, so neighbouring labels of
    a row never run into each other, however many hops the story has."""
    fig = reroute_chart(load_traffic(FULL))
    fig.draw_without_rendering()
    for ax in fig.axes:
        spacing = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]
        for label in ax.texts:
            width = label.get_window_extent().width
            assert width <= spacing, f"{label.get_text()!r} is {width:.0f} px wide, hops are {spacing:.0f} px apart"


def hostile_records() -> list[dict]:
    """A recording whose peers put mathtext and 100 kB into every name a chart shows."""
    big = r"$\frac{1}{2}$" + "x" * 100_000 + r"$\sqrt{2}$"
    agent = "a" * 100_000  # agent ids must be valid topic levels: long, then
    tr = Traffic()
    tr.card(agent)
    c, r = tr.send(agent, big, big, "no ticket here", stream=True)
    status = Traffic.status(big, big, states.WORKING)
    status["statusUpdate"]["status"]["state"] = big
    tr.result(c, r, status, props=[("a2a-responder-agent-id", big)])
    tr.result(c, r, Traffic.artifact(big, big, artifact_id=big, last=True), props=[("a2a-responder-agent-id", big)])
    c, r = tr.request(agent, big, {"id": big})
    tr.error(c, r, {"code": -32004, "message": big, "data": {"a2a_error": big}})
    c, r = tr.request(agent, big, {"id": big})
    task = Traffic.task(big, big)
    task["task"]["status"]["state"] = big
    tr.result(c, r, task)
    return tr.records


def test_a_hostile_recording_draws_fast_and_as_plain_text():
    """Every label from the recording is cut short and never parsed as mathtext (a 100 kB label took
    matplotlib seconds per chart; ``$...$`` drew formulas)."""
    from matplotlib import cbook

    records = hostile_records()
    for chart in CHARTS:
        start = time.perf_counter()
        fig = chart(records)
        texts = [t.get_text() for t in texts_of(fig)]
        assert time.perf_counter() - start < 3, f"{chart.__name__} took {time.perf_counter() - start:.1f} s"
        assert max(map(len, texts)) <= 80
        assert not [t for t in texts if cbook.is_math_text(t)], "a label would be drawn as mathtext"
    ticks = [t.get_text() for t in sequence_chart(records).axes[0].get_xticklabels()]
    assert ticks[0].startswith("aaaa") and ticks[0].endswith("…")
    texts = [t.get_text() for t in texts_of(sequence_chart(records))]
    assert any(t.startswith(r"statusUpdate \$\frac{1}{2}\$xxx") for t in texts)  # drawn as written


def test_long_method_names_break_between_words():
    assert _two_lines("SendStreamingMessage") == "SendStreaming\nMessage"
    assert _two_lines("SubscribeToTask") == "SubscribeTo\nTask"
    assert _two_lines("GetTask") == "GetTask"
    assert _two_lines("x" * 30) == "x" * 30  # no word boundary: left whole
