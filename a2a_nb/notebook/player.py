"""A step-through player over a recording: one MQTT message at a time, with the task states it left.

``TrafficPlayer(source)`` takes what ``load_traffic`` takes (a recording file, a ``Recorder``, a list
of records or the DataFrame) and shows, for the message under the slider:

- what it is: ``#i`` (the DataFrame's row, as lint findings name it), time since the first message,
  who sent it to whom, and a short label (``SendStreamingMessage``, ``statusUpdate working`` ...);
  a reply that announced a new responder, or a request that went somewhere new, says so;
- every task seen so far and its state *after* this message (``state_transitions`` up to ``#i``);
- its MQTT v5 packet (topic, QoS, retain, Response Topic, Correlation Data, user properties ...) next
  to its JSON payload;
- the sequence chart (``sequence_chart``) of the page of messages around it, the message highlighted.

It only presents: message kinds, states, reroutes and labels all come from ``a2a_nb.traffic``. The
chart is drawn once per page of ``window`` messages and re-rendered as a small PNG per step (cached),
so the Play button stays responsive. It is drawn at the size it is shown: ``chart_width`` pixels
(640) at ``dpi`` 96, the CSS pixels of an inch, so its smallest text (``SMALL``, 7 pt) is 9.3 px on
screen, and the page shows the PNG at that width (narrower only when the window is). Like every
chart of ``a2a_nb.traffic.charts`` it sits on a white card with a rounded frame and transparent
corners, readable in JupyterLab's light and dark themes. In the packet table a long topic wraps
after a ``/``, never inside a word. Without a widget frontend (plain Python, GitHub, nbviewer) the
player shows a plain HTML table of the first steps; ``step_html(df, i)`` renders one step by itself.
"""
from __future__ import annotations

import bisect
import html
import io
import numbers
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image as PILImage

from ..agents.reprs import badge, json_block
from ..protocol.safe_text import safe_text
from ..protocol.states import is_state
from ..traffic.charts import SMALL, message_label, sequence_chart
from ..traffic.frame import Source, load_traffic, new_responders, routing_view, short_state, state_transitions
from ..traffic.records import from_record
from .display import cell_text, mqtt_properties_rows, no_math
from .widgets import offline_note, widget_bundle

HIGHLIGHT_RGB = np.array([255, 214, 102], dtype=np.uint16)  # the current message's row, multiplied in
MARK_RGBA = np.array([214, 39, 40, 255], dtype=np.uint8)  # a red bar at the row's left edge
FALLBACK_ROWS = 20
CHART_WIDTH_PX = 640  # the chart's width as drawn and as shown (CSS pixels)
CHART_DPI = 96  # CSS pixels per inch: a point is 4/3 px


def _short(task_id: Any) -> str:
    s = str(task_id)
    return s[:8] + "…" if len(s) > 12 else s


def _ms(dt: float) -> str:
    return f"+{dt * 1000:.0f} ms"


LABEL_CHARS = 40  # a state, agent or label from the recording, in a table cell or a line
VALUE_CHARS = 300  # a value of the packet table (topic, Correlation Data, user property)
PROPERTY_ROWS = 50  # user properties listed in the packet table; the rest are counted


def _cut(text: Any, limit: int = LABEL_CHARS) -> str:
    """A peer's text for a table cell: cut to ``limit`` characters, escaped."""
    return cell_text(text, limit)


def _plain(text: Any, limit: int = LABEL_CHARS) -> str:
    """A peer's text for a line of text: invisible characters escaped, cut to ``limit`` characters."""
    return safe_text(text, limit)


def _state_badge(state: Any) -> str:
    """The coloured badge of a v1.0 state; a recorded value that is none is shown as it is, cut short."""
    if not state:
        return ""
    return badge(state) if is_state(state) else f"<code>{_cut(state)}</code> <small>(not a v1.0 state)</small>"


@dataclass
class Steps:
    """What the player needs about a recording, computed once from ``a2a_nb.traffic``."""

    df: pd.DataFrame
    rows: list[dict]
    trail: dict[str, tuple[list[int], list[str]]]  # task -> (rows where its state changed, states)
    first_seen: dict[str, int]  # task -> first row that names it
    announced: dict[int, tuple[str, str, str]]  # reply row -> (cause, addressed, responder): first of each
    rerouted: dict[int, tuple[str, str]]  # request row -> (cause, target)
    arrows: list[int] = field(default_factory=list)  # rows drawn in the sequence chart

    def __len__(self) -> int:
        return len(self.rows)


def steps_of(source: Source) -> Steps:
    """The per-recording data behind ``step_html`` and the player (a ``Steps`` is accepted too)."""
    if isinstance(source, Steps):
        return source
    df = load_traffic(source)
    tr = state_transitions(df)
    trail: dict[str, tuple[list[int], list[str]]] = {}
    for task, i, state in zip(tr["task_id"], tr["i"], tr["state"]):
        rows, sts = trail.setdefault(task, ([], []))
        rows.append(int(i))
        sts.append(state)
    first_seen: dict[str, int] = {}
    for i, task in zip(df["i"], df["task_id"]):
        if task is not None and task not in first_seen:
            first_seen[task] = int(i)
    rows = df["i"].to_numpy()
    request_of, addressed = pd.Series(df["request_i"].to_numpy(), rows), pd.Series(df["to_agent"].to_numpy(), rows)
    announced = {i: (cause, addressed[request_of[i]], resp) for i, (cause, resp) in new_responders(df).items()
                 if request_of[i] in addressed.index}  # the text names the agent the request went to
    rv = routing_view(df)
    rerouted = {int(i): (cause, target) for i, cause, target, re in zip(rv["i"], rv["cause"], rv["target"],
                                                                         rv["reroute"]) if re}
    arrows = [int(i) for i, a, b in zip(df["i"], df["from_agent"], df["to_agent"]) if a is not None and b is not None]
    return Steps(df, df.to_dict("records"), trail, first_seen, announced, rerouted, arrows)


def task_states(source: Source, i: int) -> list[dict]:
    """Every task named up to message ``#i``, in order of first appearance, with its state after
    that message: ``task_id, state, short, trail`` (short states so far), ``changed`` (this message
    changed it) and ``current`` (the message belongs to the task)."""
    st = steps_of(source)
    cur_task = st.rows[i]["task_id"] if 0 <= i < len(st) else None
    out = []
    for task, first in st.first_seen.items():
        if first > i:
            continue
        rows, sts = st.trail.get(task, ([], []))
        k = bisect.bisect_right(rows, i)
        state = sts[k - 1] if k else None
        out.append({"task_id": task, "state": state, "short": short_state(state) if state else None,
                    "trail": [short_state(s) for s in sts[:k]], "changed": bool(k) and rows[k - 1] == i,
                    "current": task == cur_task})
    return out


def step_text(source: Source, i: int) -> str:
    """One step as a line of text: ``#4 +114 ms reply analyst-0bbfd2 → coordinator: statusUpdate
    input-required``, plus what it changed (a new responder, a reroute, a task state)."""
    st = steps_of(source)
    i = _check(st, i)
    r = st.rows[i]
    line = (f"#{i} {_ms(r['dt'])} {r['kind']} {_plain(r['from_agent'] or '?')} → {_plain(r['to_agent'] or '?')}: "
            f"{_plain(message_label(r), 2 * LABEL_CHARS)}")
    notes = []
    if i in st.announced:
        cause, addressed, resp = st.announced[i]
        notes.append(f"{cause}: a2a-responder-agent-id={_plain(resp)} (the request went to {_plain(addressed)})")
    if i in st.rerouted:
        cause, target = st.rerouted[i]
        notes.append(f"reroute ({cause}) to {_plain(target)}")
    for t in task_states(st, i):
        if t["current"]:
            trail = " → ".join(_plain(s) for s in t["trail"]) if t["trail"] else "(no state yet)"
            notes.append(f"task {_short(t['task_id'])} {trail}")
    return line + "".join(f" | {n}" for n in notes)


def _check(st: Steps, i: Any) -> int:
    """``i`` as a row number of the recording (numpy integers welcome), or IndexError."""
    if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= int(i) < len(st):
        raise IndexError(f"message #{i} is not in this recording: it has {len(st)} messages (#0 to #{len(st) - 1})")
    return int(i)


def _notes_html(st: Steps, i: int) -> str:
    r = st.rows[i]
    notes = []
    if i in st.announced:
        cause, addressed, resp = st.announced[i]
        notes.append(f"↪ <b>{html.escape(cause)}</b>: this reply carries <code>a2a-responder-agent-id="
                     f"{_cut(resp)}</code>; the request went to <code>{_cut(addressed)}</code>. "
                     "Follow-ups for the task go to the new responder.")
    if i in st.rerouted:
        cause, target = st.rerouted[i]
        notes.append(f"↪ <b>reroute ({html.escape(str(cause))})</b>: this operation goes to "
                     f"<code>{_cut(target)}</code>, not where the task's previous one went.")
    q = r.get("request_i")
    if r["kind"] == "reply" and q is not None and q == q:
        lat = r.get("latency_s")
        notes.append(f"answers request #{int(q)} (same Correlation Data)"
                     + (f", {lat * 1000:.1f} ms after it" if lat == lat and lat is not None else ""))
    if r["event"] == "error":
        notes.append(f"error reply: code {_cut(r.get('error_code'))}")
    return "".join(f"<div style='margin:2px 0'>{n}</div>" for n in notes)


def _states_html(st: Steps, i: int) -> str:
    tasks = task_states(st, i)
    if not tasks:
        return "<p><i>no task yet</i></p>"
    rows = []
    for t in tasks:
        trail = " → ".join(_cut(s) for s in t["trail"]) or "<i>no state yet</i>"
        mark = "▶ " if t["current"] else ""
        changed = " <small>(changed here)</small>" if t["changed"] else ""
        style = "font-weight:bold" if t["current"] else ""
        rows.append(f"<tr style='{style}'><td style='text-align:left'>{mark}<code>{html.escape(_short(t['task_id']))}"
                    f"</code></td><td style='text-align:left'>{_state_badge(t['state'])}{changed}</td>"
                    f"<td style='text-align:left'>{trail}</td></tr>")
    return ("<table><thead><tr><th style='text-align:left'>task</th><th style='text-align:left'>state now</th>"
            f"<th style='text-align:left'>states so far</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def packet_rows(r: dict) -> list[tuple[str, str]]:
    """The MQTT side of a recorded message as (name, value) rows (``display.mqtt_properties_rows``),
    each value cut to ``VALUE_CHARS``, at most ``PROPERTY_ROWS`` user properties. A recorded
    Correlation Data that is not hex text (a hand-edited file) is shown as it is, marked."""
    corr = r.get("correlation")
    bare = {**r, "payload_b64": None, "payload_json": None, "size": 0}  # the packet table needs no payload
    try:
        msg, odd = from_record(bare), None
    except ValueError:
        msg, odd = from_record({**bare, "correlation": None}), corr
    rows = list(mqtt_properties_rows(msg))
    if odd is not None:
        at = next((k for k, (name, _) in enumerate(rows) if name == "Content Type" or name.startswith("user prop")),
                  len(rows))
        rows.insert(at, ("Correlation Data", f"{_plain(odd, VALUE_CHARS)} (as recorded: not hex text)"))
    props = [k for k, (name, _) in enumerate(rows) if name.startswith("user property ")]
    if len(props) > PROPERTY_ROWS:
        rows = rows[:props[PROPERTY_ROWS]] + [("user properties", f"… {len(props) - PROPERTY_ROWS} more")] + \
            rows[props[-1] + 1:]
    return [(_plain(k, VALUE_CHARS), _plain(v, VALUE_CHARS)) for k, v in rows]


def _payload_html(r: dict) -> str:
    """The recorded payload: its JSON (cut by ``json_block``), the start of its base64, or why there is none."""
    if r["payload_json"] is not None:
        try:
            return json_block(r["payload_json"])
        except (RecursionError, ValueError):  # records handed in by hand, never read from a file
            return "<p><i>payload nested too deeply to show</i></p>"
    if r["payload_b64"]:
        return (f"<p>{_cut(r['size'])} bytes, not JSON (base64):</p>"
                f"<pre>{html.escape(str(r['payload_b64'])[:400])}</pre>")
    if r["size"]:
        return (f"<p><i>{_cut(r['size'])} bytes, none of them in the recording: the JSON literal null, or a payload "
                "the recorder left out (its line would pass the recording's bound, see FORMAT.md)</i></p>")
    return "<p><i>empty payload</i></p>"


def _packet_html(st: Steps, i: int) -> str:
    r = st.rows[i]
    props = packet_rows(r) + [("payload size", f"{r['size']} bytes")]
    table = "".join(f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(k)}</th>"
                    f"<td style='text-align:left;overflow-wrap:anywhere'><code>{breakable(str(v))}</code></td></tr>"
                    for k, v in props)
    body = _payload_html(r)
    # two fixed columns (packet 45 %, payload 55 %) that long topics wrap inside: the payload never
    # ends up squeezed to a strip or pushed out of view
    return ("<table style='width:100%;table-layout:fixed'><colgroup><col style='width:45%'><col style='width:55%'>"
            "</colgroup><thead><tr><th style='text-align:left'>MQTT v5 packet</th>"
            "<th style='text-align:left'>JSON payload</th></tr></thead><tbody><tr>"
            f"<td style='vertical-align:top'><table style='width:100%'>{table}</table></td>"
            f"<td style='vertical-align:top;text-align:left'>{body}</td></tr></tbody></table>")


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each ``/``: a topic
    such as ``$a2a/v1/reply/acme/support/coordinator/e1f9...`` wraps between its levels, never inside
    one (the cell's ``overflow-wrap:anywhere`` only cuts a single level too long for the column)."""
    return html.escape(text).replace("/", "/<wbr>")


def step_html(source: Source, i: int) -> str:
    """One step of a recording as HTML: the message ``#i`` (who, what, when), what it changed, the
    state of every task after it, and its MQTT v5 packet next to its JSON payload."""
    st = steps_of(source)
    i = _check(st, i)
    r = st.rows[i]
    head = (f"<b>message #{i}</b> of {len(st)} · {_ms(r['dt'])} · {html.escape(str(r['kind']))} · "
            f"<code>{_cut(r['from_agent'] or '?')}</code> → "
            f"<code>{_cut(r['to_agent'] or '?')}</code> · <b>{_cut(message_label(r), 2 * LABEL_CHARS)}</b>")
    return (f"<div class='a2a-step' data-i='{i}'><div>{head}</div>{_notes_html(st, i)}"
            f"<h4 style='margin:6px 0 2px'>Task states after this message</h4>{_states_html(st, i)}"
            f"<h4 style='margin:6px 0 2px'>The message</h4>{_packet_html(st, i)}</div>")


def steps_table_html(source: Source, limit: int = FALLBACK_ROWS) -> str:
    """The first ``limit`` steps as a plain table (the player without a widget frontend)."""
    st = steps_of(source)
    rows = []
    for i in range(min(limit, len(st))):
        r = st.rows[i]
        current = [t for t in task_states(st, i) if t["current"]]
        state = _state_badge(current[0]["state"]) if current else ""
        task = html.escape(_short(r["task_id"])) if r["task_id"] is not None else ""
        notes = []
        if i in st.announced:
            notes.append(f"{st.announced[i][0]} → {_plain(st.announced[i][2])}")
        if i in st.rerouted:
            notes.append(f"reroute ({st.rerouted[i][0]})")
        rows.append(f"<tr><td>#{i}</td><td>{_ms(r['dt'])}</td><td style='text-align:left'>"
                    f"{_cut(r['from_agent'] or '?')} → {_cut(r['to_agent'] or '?')}</td>"
                    f"<td style='text-align:left'>{_cut(message_label(r), 2 * LABEL_CHARS)}</td>"
                    f"<td style='text-align:left'><code>{task}</code></td><td>{state}</td>"
                    f"<td style='text-align:left'>{html.escape('; '.join(notes))}</td></tr>")
    more = f"<p><small>… and {len(st) - limit} more message(s)</small></p>" if len(st) > limit else ""
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("#", "time", "from → to", "message", "task", "task state after", "routing"))
    return (f"<p><small>step-through player (interactive in JupyterLab with a running kernel); "
            f"the first {min(limit, len(st))} of {len(st)} messages:</small></p>"
            f"<table class='a2a-steps'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}")


class TrafficPlayer:
    """Step through a recording: a Play button and a slider over the message index.

    ``player.index = 12`` (or moving the slider) shows message ``#12``; ``player.view.value`` is
    its HTML (``step_html``), ``player.chart.value`` the PNG of its sequence-chart page with the
    message highlighted (``player.highlighted`` is that message's row). ``window`` is how many
    messages one chart page holds; ``interval_ms`` the Play speed. The chart is drawn
    ``chart_width`` pixels wide at ``dpi`` and shown at that width (``smallest_text_px`` says how
    big its smallest text is on screen).
    """

    def __init__(self, source: Source, *, window: int = 20, interval_ms: int = 1200, dpi: int = CHART_DPI,
                 chart_width: int = CHART_WIDTH_PX, fallback_rows: int = FALLBACK_ROWS, cache: int = 128):
        import ipywidgets as W

        self.steps = steps_of(source)
        self.df = self.steps.df
        n = len(self.steps)
        if n == 0:
            raise ValueError("this recording holds no message: record some traffic first "
                             "(`with Recorder(path=...)` or `python -m a2a_nb record --out FILE`)")
        self.window = max(2, int(window))
        self.dpi = dpi
        self.chart_width = int(chart_width)
        self.fallback_rows = fallback_rows
        self.highlighted: Optional[int] = None
        self._pages: dict[int, tuple[np.ndarray, Any]] = {}  # page -> (RGB pixels, axes)
        self._png: "OrderedDict[int, bytes]" = OrderedDict()
        self._cache = cache
        self.play = W.Play(value=0, min=0, max=n - 1, step=1, interval=interval_ms, description="play")
        self.slider = W.IntSlider(value=0, min=0, max=n - 1, description="message #", continuous_update=False,
                                  layout=W.Layout(width="28em"))
        self._link = W.link((self.play, "value"), (self.slider, "value"))
        self.prev = W.Button(description="◀", tooltip="previous message", layout=W.Layout(width="3em"))
        self.next = W.Button(description="▶", tooltip="next message", layout=W.Layout(width="3em"))
        self.prev.on_click(lambda _b: self.step(-1))
        self.next.on_click(lambda _b: self.step(+1))
        # The chart keeps the PNG's shape: a fixed width, its own height (``height="auto"`` and
        # ``align_self``: a flex row would otherwise stretch it to the step view's height). The view
        # takes the rest of the row and wraps below the chart on narrow windows.
        self.chart = W.Image(format="png", layout=W.Layout(width=f"{self.chart_width}px", max_width="100%", height="auto",
                                                           flex="0 0 auto", align_self="flex-start",
                                                           object_fit="contain"))
        self.view = W.HTML(layout=W.Layout(flex="1 1 480px", min_width="0"))
        self.widget = W.VBox([offline_note(), W.HBox([self.play, self.prev, self.next, self.slider]),
                              W.HBox([self.chart, self.view], layout=W.Layout(flex_flow="row wrap",
                                                                              align_items="flex-start"))])
        self.slider.observe(self._on_index, names="value")
        self.show(0)

    # -- stepping ----------------------------------------------------------------------------------
    @property
    def index(self) -> int:
        return int(self.slider.value)

    @index.setter
    def index(self, i: int) -> None:
        self.slider.value = _check(self.steps, i)

    def __len__(self) -> int:
        return len(self.steps)

    def step(self, delta: int) -> int:
        """Move by ``delta`` messages (clamped to the recording); the new index."""
        self.slider.value = min(max(self.index + delta, 0), len(self.steps) - 1)
        return self.index

    def _on_index(self, change) -> None:
        self.show(int(change["new"]))

    def show(self, i: int) -> None:
        """Render message ``#i`` into the view and the chart (what the slider does)."""
        i = _check(self.steps, i)
        self.view.value = no_math(step_html(self.steps, i))
        self.chart.value = self.chart_png(i)

    def text(self, i: Optional[int] = None) -> str:
        """The current step (or ``#i``) as one line of text (``step_text``)."""
        return step_text(self.steps, self.index if i is None else i)

    # -- the chart ---------------------------------------------------------------------------------
    def chart_position(self, i: int) -> tuple[int, Optional[int]]:
        """(page, row in the page's chart) of message ``#i``; row is None for a message the
        sequence chart does not draw (a topic outside the profile): its page is the previous one's."""
        arrows = self.steps.arrows
        k = bisect.bisect_left(arrows, i)
        if k < len(arrows) and arrows[k] == i:
            return k // self.window, k % self.window
        return max(k - 1, 0) // self.window, None

    def _page(self, page: int) -> tuple[np.ndarray, Any]:
        """The page's sequence chart, drawn once ``chart_width`` pixels wide at ``dpi`` into an RGBA
        array (transparent around its card), and its axes."""
        if page not in self._pages:
            rows = self.steps.arrows[page * self.window:(page + 1) * self.window]
            df = self.df
            sub = df[df["i"].isin(rows)] if rows else df.iloc[:0]
            last = len(self.steps.arrows) - 1
            title = (f"messages #{rows[0]} to #{rows[-1]} (page {page + 1} of {last // self.window + 1})"
                     if rows else "no message to draw")
            fig = sequence_chart(sub, max_messages=self.window, title=title, width=self.chart_width / self.dpi)
            fig.set_dpi(self.dpi)
            canvas = FigureCanvasAgg(fig)  # its own canvas: the figure is not in pyplot
            canvas.draw()
            self._pages[page] = (np.asarray(canvas.buffer_rgba()).copy(), fig.axes[0])
        return self._pages[page]

    def highlight_box(self, i: int) -> Optional[tuple[int, int, int, int]]:
        """Pixel box ``(top, bottom, left, right)`` of message ``#i``'s row in its page's PNG, or
        None when the chart does not draw it."""
        page, y = self.chart_position(i)
        if y is None:
            return None
        img, ax = self._page(page)
        height = img.shape[0]
        (_, y0), (_, y1) = ax.transData.transform([(0, y - 0.5), (0, y + 0.5)])
        top, bottom = sorted((int(round(height - y0)), int(round(height - y1))))
        box = ax.bbox
        return max(top, 0), min(bottom, height), int(box.x0), int(box.x1)

    def chart_png(self, i: int) -> bytes:
        """The PNG of message ``#i``'s chart page with ``#i`` highlighted (cached).

        The page is drawn once; each step only tints the message's row (a multiply blend, so the
        arrow and its label stay readable) and marks its left edge, then encodes the PNG: about
        ten milliseconds instead of a full matplotlib redraw."""
        page, y = self.chart_position(i)
        self.highlighted = i if y is not None else None
        png = self._png.get(i)
        if png is not None:
            self._png.move_to_end(i)
            return png
        base, _ax = self._page(page)
        img = base.copy()
        box = self.highlight_box(i)
        if box is not None:
            top, bottom, left, right = box
            band = img[top:bottom, left:right, :3]
            band[:] = (band.astype(np.uint16) * HIGHLIGHT_RGB // 255).astype(np.uint8)
            img[top:bottom, max(left - 6, 0):left] = MARK_RGBA
        buf = io.BytesIO()
        # a chart has few colours: a 64-colour palette PNG is a third of the size (the notebook
        # stores the widget's last picture) and costs a few milliseconds
        PILImage.fromarray(img).quantize(colors=64, method=PILImage.Quantize.FASTOCTREE).save(buf, format="PNG")
        png = buf.getvalue()
        self._png[i] = png
        while len(self._png) > self._cache:
            self._png.popitem(last=False)
        return png

    def smallest_text_px(self, shown_width: Optional[float] = None) -> float:
        """The size on screen, in CSS pixels, of the chart's smallest text (``SMALL`` points) when
        the PNG is shown ``shown_width`` pixels wide (by default as wide as it is drawn)."""
        shown = self.chart_width if shown_width is None else shown_width
        return SMALL * self.dpi / 72 * shown / self.chart_width

    # -- display -----------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        return no_math(steps_table_html(self.steps, self.fallback_rows))

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return widget_bundle(self.widget, self._repr_html_(), repr(self))

    def __repr__(self) -> str:
        return f"<TrafficPlayer {len(self.steps)} messages, at #{self.index}>"

    def close(self) -> None:
        """Close the widgets (the figures are not in pyplot: they go with the player)."""
        self._link.unlink()
        for w in (self.play, self.slider, self.prev, self.next, self.chart, self.view, *self.widget.children,
                  self.widget):
            w.close()
        self._pages.clear()
        self._png.clear()


def traffic_player(source: Source, **kw: Any) -> TrafficPlayer:
    """A step-through player over a recording (file, ``Recorder``, records or DataFrame)."""
    return TrafficPlayer(source, **kw)


__all__ = ["TrafficPlayer", "traffic_player", "step_html", "step_text", "steps_table_html", "task_states",
           "steps_of", "Steps"]
