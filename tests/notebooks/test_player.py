"""The step-through player without a browser: move the slider, read the HTML and the PNG it shows.

In plain pytest ipywidgets has no kernel (a dummy comm): observers fire when a trait changes, so the
player renders exactly as it would in JupyterLab, minus the drawing. It replays the committed
recordings of a2a_nb/data/recordings/ (no broker), and one hand-made recording for the edge cases.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from a2a_nb.notebook.player import TrafficPlayer, step_html, step_text, steps_of, steps_table_html, task_states
from a2a_nb.notebook.widgets import WIDGET_MIME
from a2a_nb.protocol.ids import readable_correlation
from a2a_nb.traffic import handovers, load_traffic, routing_view, state_transitions
from a2a_nb.traffic.frame import short_state

ROOT = Path(__file__).resolve().parents[2]
HAPPY = ROOT / "a2a_nb" / "data" / "recordings" / "happy.jsonl"
FULL = ROOT / "a2a_nb" / "data" / "recordings" / "full.jsonl"


@pytest.fixture(scope="module")
def happy():
    return load_traffic(HAPPY)


@pytest.fixture
def player(happy):
    p = TrafficPlayer(happy, window=8)
    yield p
    p.close()


def first(df, **where) -> int:
    sub = df
    for k, v in where.items():
        sub = sub[sub[k] == v]
    return int(sub["i"].iloc[0])


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_step_html_names_the_message_and_its_packet(happy):
    i = first(happy, state="TASK_STATE_INPUT_REQUIRED")
    r = happy.iloc[i]
    out = step_html(happy, i)
    assert f"data-i='{i}'" in out and f"message #{i}</b> of {len(happy)}" in out
    assert "statusUpdate input-required" in out
    shown = readable_correlation(bytes.fromhex(r["correlation"]))
    assert r["topic"].replace("/", "/<wbr>") in out and shown in out  # MQTT properties
    assert "QoS" in out and "retain" in out
    assert "a2a-responder-agent-id" in out                         # a user property
    assert "TASK_STATE_INPUT_REQUIRED" in out                      # the JSON payload
    assert f"answers request #{int(r['request_i'])}" in out


def test_task_state_follows_state_transitions(happy):
    tr = state_transitions(happy)
    task = tr["task_id"].iloc[0]
    for i in range(len(happy)):
        seen = tr[(tr["task_id"] == task) & (tr["i"] <= i)]
        states = task_states(happy, i)
        if first(happy, task_id=task) > i:
            assert states == []
            continue
        (t,) = states
        assert t["state"] == (seen["state"].iloc[-1] if len(seen) else None)
        assert t["trail"] == [short_state(s) for s in seen["state"]]
        assert t["changed"] == (i in set(seen["i"]))


def test_slider_changes_the_view(player, happy):
    assert player.index == 0 and "data-i='0'" in player.view.value and "card online" in player.view.value
    i = first(happy, state="TASK_STATE_COMPLETED")
    player.slider.value = i
    assert f"data-i='{i}'" in player.view.value
    assert "statusUpdate completed" in player.view.value
    assert "completed" in player.text() and player.text().startswith(f"#{i} ")
    assert "(changed here)" in player.view.value
    # the Play widget drives the slider (a kernel-side link)
    player.play.value = 2
    assert player.index == 2 and "data-i='2'" in player.view.value
    # buttons step and clamp
    player.next.click()
    assert player.index == 3
    player.index = 0
    player.prev.click()
    assert player.index == 0
    with pytest.raises(IndexError):
        player.index = len(happy)


def test_handover_and_reroute_are_pointed_out(player, happy):
    h = handovers(happy).iloc[0]
    player.index = int(h["i"])
    assert "<b>handover</b>" in player.view.value and f"a2a-responder-agent-id={h['responder']}" in player.view.value
    rv = routing_view(happy)
    re_i = int(rv.loc[rv["reroute"], "i"].iloc[0])
    player.index = re_i
    assert "reroute (handover)" in player.view.value
    assert "reroute (handover)" in step_text(happy, re_i)


def test_chart_highlights_the_current_message(player, happy):
    for i in (1, 4, 9):  # 1 and 4 on the first page of 8, 9 on the second
        player.index = i
        assert player.highlighted == i
        page, row = player.chart_position(i)
        assert (page, row) == (i // 8, i % 8)  # every message of this recording is drawn
        img = pixels(player.chart.value)
        base = player._pages[page][0]
        assert img.shape == base.shape
        top, bottom, left, right = player.highlight_box(i)
        # the PNG is a palette image: compare with a tolerance
        diff = np.abs(img.astype(int) - base.astype(int)).max(axis=2)
        tinted = np.nonzero((diff > 60).mean(axis=1) > 0.2)[0]
        assert tinted.min() >= top and tinted.max() < bottom, "only the current message's row is tinted"
        assert len(tinted) >= (bottom - top) * 0.6
        white = np.all(base[top:bottom, left:right] == 255, axis=2)
        assert white.mean() > 0.5
        band = img[top:bottom, left:right][white].astype(int)
        assert (np.abs(band - [255, 214, 102, 255]).max(axis=1) < 24).mean() > 0.95, "white turns yellow"
    # two messages on one page: the same picture, a different highlighted row
    player.index = 1
    one = pixels(player.chart.value)
    player.index = 4
    four = pixels(player.chart.value)
    assert one.shape == four.shape and not np.array_equal(one, four)


def test_chart_pages_on_a_long_recording():
    p = TrafficPlayer(FULL, window=16)
    try:
        last = len(p) - 1
        p.index = last
        assert p.highlighted == last and p.chart_position(last)[0] == last // 16
        assert f"message #{last}</b>" in p.view.value
        assert len(p._png) == 2  # #0 and the last one: nothing drawn for the steps in between
    finally:
        p.close()


def test_fallback_html_without_a_frontend(player, happy):
    bundle = player._repr_mimebundle_()
    assert WIDGET_MIME not in bundle, "no kernel here: only the HTML snapshot"
    assert bundle["text/plain"] == repr(player) == f"<TrafficPlayer {len(happy)} messages, at #0>"
    table = player._repr_html_()
    assert bundle["text/html"] == table
    assert len(re.findall(r"<tr><td>#\d+</td>", table)) == min(len(happy), player.fallback_rows)
    assert "card online" in table and "handover → analyst-" in table
    short = steps_table_html(happy, limit=5)
    assert len(re.findall(r"<tr><td>#\d+</td>", short)) == 5
    assert f"… and {len(happy) - 5} more message(s)" in short


def test_binary_and_odd_records():
    """A native binary chunk, an empty payload (card removed) and a topic outside the profile."""
    recs = [
        {"v": 1, "t": 1.0, "topic": "$a2a/v1/discovery/acme/support/echo", "qos": 1, "retain": True,
         "payload_json": None, "payload_b64": "", "size": 0, "user_properties": []},
        {"v": 1, "t": 1.1, "topic": "plain/topic", "qos": 0, "retain": False, "payload_json": {"x": 1}, "size": 7},
        {"v": 1, "t": 1.2, "topic": "$a2a/v1/reply/acme/support/coordinator/abc", "qos": 1, "retain": False,
         "correlation": "00ff", "payload_json": None, "payload_b64": "AAEC", "size": 3, "payload_format": 0,
         "user_properties": [["a2a-event-type", "artifact-chunk"], ["a2a-authorization", "[redacted]"]]},
    ]
    st = steps_of(recs)
    assert "empty payload" in step_html(st, 0)
    assert "not JSON (base64)" in step_html(st, 2) and "AAEC" in step_html(st, 2)
    assert "[redacted]" in step_html(st, 2)
    p = TrafficPlayer(recs)
    try:
        p.index = 1  # not drawn in the sequence chart: nothing highlighted, still shown
        assert p.highlighted is None and p.highlight_box(1) is None and "data-i='1'" in p.view.value
    finally:
        p.close()
    with pytest.raises(ValueError, match="no message"):
        TrafficPlayer([])


def test_chart_is_drawn_at_the_size_it_is_shown(player):
    """640 px wide at 96 dpi, shown 640 px wide: its smallest text (7 pt) is 9.3 px on screen; on
    a card with transparent corners (readable in JupyterLab's dark theme)."""
    from matplotlib.text import Text

    from a2a_nb.notebook.player import CHART_DPI, CHART_WIDTH_PX
    from a2a_nb.traffic.charts import SMALL

    img = pixels(player.chart.value)
    assert img.shape[1] == player.chart_width == CHART_WIDTH_PX and player.dpi == CHART_DPI
    assert player.chart.layout.width == f"{CHART_WIDTH_PX}px"
    _, ax = player._page(0)
    fig = ax.figure
    assert fig.get_size_inches()[0] * fig.dpi == CHART_WIDTH_PX
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip()]
    assert min(sizes) == SMALL
    assert player.smallest_text_px() == pytest.approx(SMALL * 96 / 72) and player.smallest_text_px() >= 9
    assert player.smallest_text_px(shown_width=480) < 9  # shrunk by a narrow window: smaller
    assert img[0, 0, 3] == 0 and img[img.shape[0] // 2, img.shape[1] // 2, 3] == 255


def test_long_topics_wrap_between_levels(happy):
    """Every ``/`` of a topic is a line-break opportunity (``<wbr>``): it never wraps inside a level."""
    from a2a_nb.notebook.player import breakable

    assert breakable("$a2a/v1/reply/acme/<b>") == "$a2a/<wbr>v1/<wbr>reply/<wbr>acme/<wbr>&lt;b&gt;"
    out = step_html(happy, 1)
    r = happy.iloc[1]
    for topic in (r["topic"], r["response_topic"]):
        assert breakable(topic) in out and topic not in out


def test_a_hostile_recording_plays():
    """Peers' mathtext and 100 kB names: the chart draws quickly, the HTML escapes them."""
    import time

    from tests.traffic.test_charts import hostile_records

    start = time.perf_counter()
    p = TrafficPlayer(hostile_records())
    try:
        for i in range(len(p)):
            p.index = i
            assert "<script" not in p.view.value
        assert time.perf_counter() - start < 5
    finally:
        p.close()
