"""Charts of recorded traffic: sequence, task states, rerouting, latency; and Mermaid text.

Every chart is one call that takes the DataFrame of ``load_traffic`` (or anything it accepts) and
returns a matplotlib ``Figure`` sized for a notebook. The figure is closed in pyplot before it is
returned, so nothing accumulates in pyplot's state and it is shown once: make it the last
expression of a cell (or ``display(fig)``; ``fig.savefig(...)`` works too).

What is drawn follows the profile: request/reply arrows (Request/Reply Mapping), stream items
ending at terminal or interrupted states (Streaming Reply Mapping 5-7), handovers and pool
assignment announced by ``a2a-responder-agent-id`` (Optional Task Handover, Optional Shared
Subscription Dispatch 10), fallbacks to the card agent (Requester Retry and Timeout Profile).

Readable wherever a learner opens them:

* **Size.** A figure is ``WIDTH`` inches at ``DPI`` (96, the CSS pixels of an inch, so a point is
  4/3 of a pixel as in HTML): 768 px, which a JupyterLab cell shows at its natural size in a
  1280 px window. No text is smaller than ``SMALL`` (7 pt, 9.3 px). The player draws its sequence
  chart at the width it shows it (``sequence_chart(..., width=...)``).
* **Light and dark themes: a card.** A PNG cannot follow JupyterLab's theme, and either simple
  choice fails in one of them: a white figure is a glaring box with hard edges in the dark theme,
  and a transparent one leaves black text on a near-black page. Every chart is therefore drawn on
  a *card*: a white panel with a grey, rounded frame, and a transparent figure around it. The
  colours (states, tasks, text) are chosen once, against white, and stay readable in both themes;
  in the dark theme the chart reads as a framed card, not as a hole in the page. Everything is
  laid out inside the card (a test checks that the figure's tight bounding box is the card).
* **A recording is a peer's data.** Agent names, methods, artifact ids, states and Context ids in
  labels come from other programs. ``_label`` cuts each to a few dozen characters (a 100 kB name
  drawn in full takes matplotlib tens of seconds) and escapes ``$`` so that no label is parsed as
  mathtext; ``_mermaid_text`` does the same for the Mermaid text.
"""
from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from typing import Any, Optional

import matplotlib.pyplot as plt  # headless (CI, a terminal over ssh), matplotlib draws with Agg by itself
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch

from ..protocol import states as S
from ..protocol.routing import FALLBACK, HANDOVER, POOL_ASSIGNED
from .frame import (DISCOVERY, EVENTS_LANE, REQUEST_KINDS, derived, latency_view, new_responders,
                    one_analysis, routing_view, short_state, state_transitions)

WIDTH = 8.0  # inches: 768 px at DPI
DPI = 96  # CSS pixels per inch: a point is 4/3 px, as in the notebook's own text
SMALL = 7.0  # points: the smallest text of every chart, 9.3 px at DPI
LABEL_CHARS = 40  # a label from the recording is cut to this many characters
CARD_FACE = "white"
CARD_EDGE = "#9e9e9e"

KIND_COLORS = {
    "request": "#1f77b4",
    "pool": "#17becf",
    "reply": "#2ca02c",
    "discovery": "#7f7f7f",
    "event": "#9467bd",
}
ERROR_COLOR = "#d62728"
STATE_ORDER = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, S.FAILED, S.CANCELED,
               S.REJECTED]


def _card(fig: Figure) -> None:
    """Draw the figure on a card: a white panel with a grey rounded frame, transparent around it
    (see the module docstring). The frame is in inches, so it keeps its shape at any dpi."""
    fig.patch.set_facecolor("none")
    w, h = fig.get_size_inches()
    inset = 0.03
    card = FancyBboxPatch((inset, inset), w - 2 * inset, h - 2 * inset, boxstyle="round,pad=0,rounding_size=0.12",
                          transform=fig.dpi_scale_trans, facecolor=CARD_FACE, edgecolor=CARD_EDGE, lw=1.2, zorder=-100)
    card.set_gid("card")
    fig.add_artist(card)


def _figure(height: float, width: float = WIDTH, rows: int = 1, height_ratios: Optional[list] = None) -> tuple[Figure, Any]:
    """A new figure of ``rows`` axes stacked (an array of shape (rows, 1)), on its card, outside pyplot."""
    fig, axes = plt.subplots(rows, 1, figsize=(width, height), dpi=DPI, squeeze=False,
                             gridspec_kw={"height_ratios": height_ratios} if height_ratios else None)
    plt.close(fig)  # keep pyplot stateless: the caller owns the figure
    _card(fig)
    for ax in axes[:, 0]:
        ax.set_facecolor("none")  # the card shows through
    return fig, axes


def _new(height: float, width: float = WIDTH) -> tuple[Figure, Any]:
    fig, axes = _figure(height, width)
    return fig, axes[0, 0]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def _label(value: Any, limit: int = LABEL_CHARS) -> str:
    """Text from a recording, fit for a chart: on one line, at most ``limit`` characters (cut with
    "…") and every ``$`` escaped, so matplotlib draws it as it is and never as mathtext."""
    text = _CONTROL.sub(" ", str(value)[:limit + 1])
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text.replace("$", r"\$")


def _two_lines(name: str, width: int = 14) -> str:
    """A long CamelCase name on two lines, cut before its last capital that keeps the first line
    within ``width`` (``SendStreaming`` / ``Message``): between two words, never inside one."""
    if len(name) <= width:
        return name
    cuts = [k for k in range(1, min(len(name), width + 1)) if name[k].isupper() and name[k - 1].islower()]
    return f"{name[:cuts[-1]]}\n{name[cuts[-1]:]}" if cuts else name


def _wrap(label: str, chars: int) -> str:
    """Each line of ``label`` broken between words to at most ``chars`` characters (a longer word
    stays whole): neighbouring labels of evenly spaced hops then do not run into each other."""
    return "\n".join(textwrap.fill(line, chars, break_long_words=False, break_on_hyphens=False) or line
                     for line in label.split("\n"))


def _empty(title: str, note: str) -> Figure:
    fig, ax = _new(2.5)
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, note, ha="center", va="center", fontsize=10, color="#555555", transform=ax.transAxes)
    return fig


def _short_id(task_id: Any) -> str:
    s = str(task_id)
    return s[:8] + "…" if len(s) > 12 else s


# -- labels shared by the sequence chart and the Mermaid text ------------------------------------------

def message_label(row: dict) -> str:
    """A short label for one message: ``SendMessage``, ``statusUpdate working``, ``artifact report``,
    ``task completed``, ``error -32001``, ``card online``, ``reply (sealed)`` ..."""
    kind, ev = row.get("kind"), row.get("event")
    if ev == "protected":  # ubsp-v1: a JWE, only its recipient knows what is inside
        return "request (sealed)" if kind in REQUEST_KINDS else "reply (sealed)"
    if kind in REQUEST_KINDS:
        return str(row.get("method") or "request")
    if kind == "discovery":
        if ev is None:
            return "card removed"
        return f"card {row['status']}" if row.get("status") else "card"
    if kind == "event":
        return "event"
    if ev == "status":
        return f"statusUpdate {short_state(row.get('state'))}"
    if ev == "artifact":
        last = " (last chunk)" if row.get("last_chunk") else ""
        return f"artifact {row.get('artifact_id')}{last}"
    if ev == "task":
        return f"task {short_state(row.get('state'))}"
    if ev == "error":
        code, name = row.get("error_code"), row.get("a2a_error")
        return f"error {code} {name}" if name else f"error {code}"
    if ev == "binary":
        return f"binary chunk {row.get('artifact_id') or ''}".rstrip()
    return str(ev or kind or "message")


def _arrows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["from_agent"].notna() & df["to_agent"].notna()]


def _lanes(sub: pd.DataFrame, pseudo_last: bool = False) -> list[str]:
    """Participants in order of first appearance (``discovery``/``events`` last if asked)."""
    lanes: dict[str, None] = {}
    for a, b in zip(sub["from_agent"], sub["to_agent"]):
        lanes.setdefault(a, None)
        lanes.setdefault(b, None)
    out = list(lanes)
    if pseudo_last:
        pseudo = (DISCOVERY, EVENTS_LANE)
        out = [a for a in out if a not in pseudo] + [a for a in out if a in pseudo]
    return out


# -- charts -------------------------------------------------------------------------------------------

@one_analysis
def sequence_chart(df: pd.DataFrame, max_messages: int = 60, title: Optional[str] = None, width: float = WIDTH) -> Figure:
    """A sequence diagram: one lane per agent (plus ``discovery`` / ``events``), one arrow per
    message in recorded order, coloured by kind (error replies red); handovers and pool
    assignments (the reply whose ``a2a-responder-agent-id`` moved the task to a new responder, as
    the requester's routing table did: ``reroutes``) are starred and labelled. Shows the first
    ``max_messages`` messages. ``width`` in inches (at ``DPI``): the player draws it at the width it
    shows it."""
    sub = _arrows(df)
    total = len(sub)
    sub = sub.iloc[:max_messages]
    title = title or "Who sent what to whom"
    if total == 0:
        return _empty(title, "no A2A messages in this recording")
    if total > len(sub):
        title += f" (first {len(sub)} of {total} messages)"
    lanes = _lanes(sub, pseudo_last=True)
    x_of = {a: k for k, a in enumerate(lanes)}
    rows = sub.to_dict("records")
    n = len(rows)
    fig, ax = _new(min(7.0, max(4.0, 1.5 + 0.19 * n)), width)
    for k in range(len(lanes)):
        ax.axvline(k, color="#dddddd", lw=1.5, zorder=0)
    hand = new_responders(df)
    show_text = n <= 40
    kinds_seen: dict[str, None] = {}
    for y, r in enumerate(rows):
        x0, x1 = x_of[r["from_agent"]], x_of[r["to_agent"]]
        color = ERROR_COLOR if r.get("event") == "error" else KIND_COLORS.get(r["kind"], "#333333")
        kinds_seen.setdefault("error" if r.get("event") == "error" else r["kind"], None)
        style = "-|>"
        ls = "--" if r["kind"] == "reply" else "-"
        if x0 == x1:
            ax.plot([x0], [y], marker="o", color=color, ms=4)
        else:
            ax.annotate("", xy=(x1, y), xytext=(x0, y),
                        arrowprops=dict(arrowstyle=style, color=color, lw=1.3, ls=ls, shrinkA=0, shrinkB=2))
        if show_text:
            ax.text((x0 + x1) / 2, y - 0.12, _label(message_label(r)), ha="center", va="bottom", fontsize=SMALL,
                    color=color)
        h = hand.get(int(r["i"]))
        if h is not None:
            ax.plot([x0], [y], marker="*", ms=13, color="#ff7f0e", mec="black", mew=0.6, zorder=5)
            ax.annotate(f"{_label(h[0], 16)} → {_label(h[1], 24)}", xy=(x0, y), xytext=(8, -3),
                        textcoords="offset points", fontsize=SMALL, color="#b35900", fontweight="bold")
    ax.set_xlim(-0.6, len(lanes) - 0.4)
    ax.set_ylim(n - 0.4, -1.0)
    ax.set_xticks(range(len(lanes)))
    ax.set_xticklabels([_label(a, 24) for a in lanes], fontsize=8)
    ax.xaxis.tick_top()
    if show_text:
        ax.set_yticks(range(n))
        ax.set_yticklabels([f"{r['dt'] * 1000:.0f} ms" for r in rows], fontsize=SMALL)
    ax.set_ylabel("time since first message (message order)", fontsize=8)
    for side in ("right", "bottom"):
        ax.spines[side].set_visible(False)
    handles = [Line2D([0], [0], color=ERROR_COLOR if k == "error" else KIND_COLORS.get(k, "#333333"), lw=2,
                      ls="--" if k in ("reply", "error") else "-", label="error reply" if k == "error" else k)
               for k in kinds_seen]
    if hand:
        handles.append(Line2D([0], [0], marker="*", color="#ff7f0e", mec="black", ls="", ms=11,
                              label="handover / pool assignment"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=len(handles), fontsize=SMALL,
              frameon=False)
    ax.set_title(title, pad=24, fontsize=10)
    fig.tight_layout()
    return fig


@derived
def task_steps(df: pd.DataFrame) -> pd.Series:
    """Each task message's step: its number among the messages of its task (requests and replies),
    1 for the first request. Indexed like ``df``; NaN for messages of no task (cards, events)."""
    has = df["task_id"].notna()
    steps = pd.Series(np.nan, index=df.index)
    steps[has] = df[has].groupby("task_id", sort=False).cumcount() + 1
    return steps


def _ticket_of(requests: pd.DataFrame) -> Optional[str]:
    """The ticket a task is about (``TCK-4821``), read from its first request's text; else its contextId."""
    for payload, ctx in zip(requests["payload_json"], requests["context_id"]):
        params = payload.get("params") if isinstance(payload, dict) else None
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            text = part.get("text") if isinstance(part, dict) else None
            found = _TICKET.search(text) if isinstance(text, str) else None
            if found:
                return found.group(0)
        if ctx:
            return str(ctx)
    return None


_TICKET = re.compile(r"\b[A-Z]{2,}-\d+\b")


@derived
def task_labels(df: pd.DataFrame, names: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """A row label per task a learner can recognise: ``names[task_id]`` (a scenario name, say) or
    the ticket it is about, then a short task id: ``handover · 07287499``. Fit for a chart: a long
    name is cut and ``$`` escaped (``_label``)."""
    names = names or {}
    labels: dict[str, str] = {}
    tasks = df[df["task_id"].notna()]
    for task, rows in tasks.groupby("task_id", sort=False):
        first = names.get(task) or _ticket_of(rows[rows["kind"].isin(REQUEST_KINDS)]) or "task"
        labels[task] = f"{_label(first, 32)} · {_label(str(task)[:8])}"
    return labels


@derived
def route_marks(df: pd.DataFrame) -> pd.DataFrame:
    """Where each task went, in order: the first request's target (``sent``), every reply naming a
    new responder (``handover`` / ``pool-assigned``, Optional Task Handover 2-4, Optional Shared
    Subscription Dispatch 10), every fallback to the card agent (Requester Retry and Timeout
    Profile) and every request that got no reply (``no reply``). Columns: ``i``, ``task_id``,
    ``mark``, ``agent``."""
    rv = routing_view(df)
    rows: list[tuple] = []
    seen: set = set()
    for i, task, target, cause, answered in zip(rv["i"], rv["task_id"], rv["target"], rv["cause"], rv["answered"]):
        if task not in seen:
            seen.add(task)
            rows.append((int(i), task, "sent", target))
        if cause == FALLBACK:
            rows.append((int(i), task, FALLBACK, target))
        if not answered:
            rows.append((int(i), task, "no reply", target))
    tasks = dict(zip(df["i"], df["task_id"]))
    for i, (cause, responder) in new_responders(df).items():
        rows.append((i, tasks.get(i), cause, responder))
    out = pd.DataFrame(rows, columns=["i", "task_id", "mark", "agent"])
    return out.sort_values("i", kind="stable").reset_index(drop=True)


MARK_STYLE = {  # marker, size, face colour, text prefix
    "sent": ("o", 6, "#555555", "to "),
    HANDOVER: ("*", 12, "#ff7f0e", "→ "),
    POOL_ASSIGNED: ("*", 12, "#17becf", "pool → "),
    FALLBACK: ("D", 7, "#8c564b", "fallback → "),
    "no reply": ("o", 6, "white", ""),
}


def _state_segments(df: pd.DataFrame, tasks: list, x: str) -> pd.DataFrame:
    """The segments ``state_timeline`` draws: per task, each state from where it was reported to
    where the next one was (or the task's last message); terminal states have no width."""
    tr = state_transitions(df)
    steps = task_steps(df)
    pos = dict(zip(df["i"], steps if x == "step" else df["dt"]))
    last = df[df["task_id"].notna()].groupby("task_id", sort=False)["i"].max()
    rows = []
    for task in tasks:
        sub = tr[tr["task_id"] == task]
        xs, sts = [float(pos[i]) for i in sub["i"]], list(sub["state"])
        end = float(pos[int(last[task])]) + (1.0 if x == "step" else 0.0)
        for k, (x0, st) in enumerate(zip(xs, sts)):
            x1 = x0 if S.is_terminal(st) else (xs[k + 1] if k + 1 < len(xs) else end)
            rows.append((task, st, x0, x1))
    return pd.DataFrame(rows, columns=["task_id", "state", "start", "end"])


@one_analysis
def state_timeline(df: pd.DataFrame, title: Optional[str] = None, max_tasks: int = 20, x: str = "step",
                   names: Optional[Mapping[str, str]] = None) -> Figure:
    """Per task, the states it passed through, in order (Streaming Reply Mapping 5-7).

    ``x="step"`` (the default) spaces a task's messages evenly (step 1 is its first request), so a
    ``submitted`` acknowledged a millisecond later and a short ``input-required`` pause are as
    visible as a long stream; ``x="time"`` draws seconds since the first message instead.
    Interrupted states (input-required, auth-required) are hatched: the task waits for the
    requester; a terminal state is a black-edged square: the task never changes again. On each
    row: where the task was sent, every reply naming a new responder (star), every fallback to the
    card agent (diamond) and every request that got no reply (hollow circle), with the agent's
    name on the step axis (on the time axis marks can be milliseconds apart). Rows are labelled
    ``names[task_id]`` (or the ticket) and a short task id. Each state segment's artist has the gid
    ``state:<task_id>:<state>``, so what is drawn can be counted.
    """
    if x not in ("step", "time"):
        raise ValueError(f"x={x!r}: use 'step' (message order within each task) or 'time' (seconds)")
    tr = state_transitions(df)
    title = title or ("Task states, step by step" if x == "step" else "Task states over time")
    if tr.empty:
        return _empty(title, "no task states in this recording (no Task or status update replies)")
    tasks = list(dict.fromkeys(tr["task_id"]))
    more = len(tasks) - max_tasks
    tasks = tasks[:max_tasks]
    seg = _state_segments(df, tasks, x)
    span = max(float(seg["end"].max()), 1e-3)
    pad = 0.0 if x == "step" else span * 0.004  # a visible sliver for a state that lasted no time
    labels = task_labels(df, names)
    fig, ax = _new(min(7.0, max(3.0, 1.5 + 0.6 * len(tasks))))
    seen: dict[str, None] = {}
    y_of = {t: k for k, t in enumerate(tasks)}
    for task, st, x0, x1 in zip(seg["task_id"], seg["state"], seg["start"], seg["end"]):
        y, color = y_of[task], S.COLOURS.get(st, "#333333")
        seen.setdefault(st, None)
        if S.is_terminal(st):
            (art,) = ax.plot([x0], [y], marker="s", ms=10, color=color, mec="black", mew=1.2, zorder=4)
        else:
            bars = ax.barh(y, max(x1 - x0, pad), left=x0, height=0.42, color=color, lw=0.6,
                           edgecolor="black" if S.is_interrupted(st) else color,
                           hatch="//" if S.is_interrupted(st) else None)
            art = bars.patches[0]
        art.set_gid(f"state:{task}:{st}")
    for task in tasks:
        last = seg[seg["task_id"] == task].iloc[-1]
        ax.text(last["end"] + span * 0.015, y_of[task], _label(short_state(last["state"]), 24), va="center",
                fontsize=8)
    marks_seen = _draw_route_marks(ax, df, y_of, x)
    ax.set_yticks(range(len(tasks)))
    ax.set_yticklabels([labels.get(t, _short_id(t)) for t in tasks], fontsize=8)
    ax.set_ylim(len(tasks) - 0.45, -0.75)
    lo = min(float(seg["start"].min()), 0.0)  # below 0 only in a file whose times are out of order
    ax.set_xlim((0.5, span * 1.08 + 1) if x == "step" else (lo - (span - lo) * 0.02, span * 1.12))
    ax.set_xlabel("step: message number within the task (its first request is 1)" if x == "step"
                  else "seconds since first message", fontsize=8)
    if more > 0:
        title += f" (first {max_tasks} of {max_tasks + more} tasks)"
    ax.set_title(title, fontsize=10)
    order = [s for s in STATE_ORDER if s in seen] + [s for s in seen if s not in STATE_ORDER]
    handles: list[Any] = [Patch(facecolor=S.COLOURS.get(s, "#333333"), hatch="//" if S.is_interrupted(s) else None,
                                edgecolor="black" if (S.is_interrupted(s) or S.is_terminal(s)) else "none",
                                label=_label(short_state(s), 24) + (" (terminal)" if S.is_terminal(s) else ""))
                          for s in order]
    handles += [_mark_handle(m) for m in MARK_STYLE if m in marks_seen]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=SMALL, frameon=False)
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", color="#eeeeee")
    fig.tight_layout()
    return fig


def _mark_handle(mark: str) -> Line2D:
    marker, ms, face, _ = MARK_STYLE[mark]
    text = {"sent": "first sent to", HANDOVER: "reply naming a new responder", POOL_ASSIGNED: "pool assignment",
            FALLBACK: "fallback to the card agent", "no reply": "request with no reply"}[mark]
    return Line2D([0], [0], marker=marker, ms=min(ms, 10), mfc=face, color="black", mew=0.7, ls="", label=text)


def _draw_route_marks(ax: Any, df: pd.DataFrame, y_of: dict, x: str) -> set:
    """The route marks of ``route_marks`` on each task's row, just above its bar; on the step axis
    the agent's name next to each mark (``no reply`` has none)."""
    marks = route_marks(df)
    pos = dict(zip(df["i"], task_steps(df) if x == "step" else df["dt"]))
    seen: set = set()
    for i, task, mark, agent in zip(marks["i"], marks["task_id"], marks["mark"], marks["agent"]):
        if task not in y_of:
            continue
        seen.add(mark)
        marker, ms, face, prefix = MARK_STYLE[mark]
        y, xm = y_of[task] - (0.0 if mark in ("sent", "no reply") else 0.3), float(pos[i])
        ax.plot([xm], [y], marker=marker, ms=ms, mfc=face, color="black", mew=0.7, ls="", zorder=6,
                gid=f"mark:{task}:{mark}")
        if x == "time":  # marks a few ms apart would overprint their names: the step axis writes them
            continue
        if mark == "sent":  # below the row: the marks above it are the reroutes
            ax.annotate(prefix + _label(agent, 24), xy=(xm, y), xytext=(-4, -7), textcoords="offset points",
                        fontsize=SMALL, va="top", color="#333333")
        elif mark != "no reply":
            ax.annotate(prefix + _label(agent, 24), xy=(xm, y), xytext=(5, 2), textcoords="offset points",
                        fontsize=SMALL, va="bottom", color="#333333", fontweight="bold")
    return seen


@derived
def route_hops(df: pd.DataFrame) -> pd.DataFrame:
    """Every hop of every task, in order: each operation the requester sent (``kind="request"``:
    its target, whether it was answered, the cause of a reroute), each reply that named a new
    responder (``kind="named"``: Optional Task Handover 2-4, Optional Shared Subscription
    Dispatch 10), so the first hop of a double handover, which no request was sent to, is a row
    too; and, before a ``named`` reply, the replies the previous responder had sent on the same
    request (``kind="replied"``, one row for all of them): a handover mid-stream comes after some,
    a handover at once after none. Columns: ``task_id``, ``hop`` (0, 1, ... per task), ``i``,
    ``kind``, ``agent``, ``method``, ``answered``, ``cause``, ``detail`` (for ``named``: in which
    reply of its request; for ``replied``: how many replies and what they carried)."""
    rv = routing_view(df)
    rows = [(task, int(i), "request", target, method, bool(ans), cause or None, None)
            for task, i, target, method, ans, cause in zip(rv["task_id"], rv["i"], rv["target"], rv["method"],
                                                            rv["answered"], rv["cause"])]
    rows += _reply_hops(df)
    out = pd.DataFrame(rows, columns=["task_id", "i", "kind", "agent", "method", "answered", "cause", "detail"])
    order = list(dict.fromkeys(rv["task_id"]))
    out["_task"] = out["task_id"].map({t: k for k, t in enumerate(order)})
    out = out.sort_values(["_task", "i"], kind="stable").drop(columns="_task").reset_index(drop=True)
    out.insert(1, "hop", out.groupby("task_id", sort=False).cumcount())
    return out


def _reply_hops(df: pd.DataFrame) -> list[tuple]:
    """The ``named`` and ``replied`` rows of ``route_hops``: each reply that named a new responder,
    the number of that reply among the replies to its request (1: the first, a handover at once),
    and the replies sent before it on the same request since the previous handover."""
    replies = {int(r["i"]): r for r in df[df["kind"] == "reply"].to_dict("records")}
    stream: dict[int, list[int]] = {}  # request row -> its replies' rows, in order
    for i, r in replies.items():
        q = r.get("request_i")
        if q is not None and q == q:
            stream.setdefault(int(q), []).append(i)
    rows: list[tuple] = []
    since: dict[int, int] = {}  # request row -> its last reply that named a new responder
    for i, (cause, responder) in sorted(new_responders(df).items()):
        r = replies[i]
        q = int(r["request_i"])
        items = stream.get(q, [i])
        before = [k for k in items if since.get(q, -1) < k < i]
        if before:
            what = ", ".join(dict.fromkeys(_reply_what(replies[k]) for k in before))
            count = f"{len(before)} repl{'y' if len(before) == 1 else 'ies'}"
            rows.append((r["task_id"], before[0], "replied", replies[before[0]]["from_agent"], r["method"], True,
                         None, f"{count}\n{what}"))
        n = items.index(i) + 1
        rows.append((r["task_id"], i, "named", responder, r["method"], True, cause,
                     "in the first reply" if n == 1 else f"mid-stream, reply {n}"))
        since[q] = i
    return rows


def _reply_what(row: dict) -> str:
    """What a reply carried, in a word or two: its state (``working``), ``artifact``, ``error``."""
    if row.get("event") in ("status", "task") and row.get("state"):
        return _label(short_state(row["state"]), 20)
    return _label(row.get("event") or "reply", 20)


def _hop_label(kind: str, method: Any, answered: bool, cause: Any, detail: Any = None) -> str:
    if not isinstance(cause, str):
        cause = None
    if kind == "named":
        return f"{_label(cause, 16)}\n{detail}" if detail else f"{_label(cause, 16)}\n(in a reply)"
    if kind == "replied":
        return str(detail)
    text = _two_lines(_label(method or "request", 24))
    if cause:
        text = f"{_label(cause, 16)}\n{text}"
    return text if answered else f"{text}\nno reply"


@one_analysis
def reroute_chart(df: pd.DataFrame, title: Optional[str] = None, max_tasks: int = 10,
                  names: Optional[Mapping[str, str]] = None) -> Figure:
    """Where each task went, hop by hop: one panel per task, one row per agent it met.

    A hop is an operation the requester sent (circle: filled if answered, hollow if no reply ever
    came), a reply that named a new responder (star: Optional Task Handover 2-4; pool assignment,
    Optional Shared Subscription Dispatch 10), or the replies an agent sent on a request before
    another one took over (square: a handover mid-stream has one, a handover in the first reply
    none). Hops are evenly spaced, in order, and labelled underneath with their method and the
    cause of a reroute (``handover``, ``pool-assigned``, ``fallback`` to the card agent: Requester
    Retry and Timeout Profile), a star with the reply it came in. Markers of a task share its
    colour. Tasks with a reroute come first."""
    hops = route_hops(df)
    title = title or "Where each task went, hop by hop"
    if hops.empty:
        return _empty(title, "no task operations in this recording")
    tasks = list(dict.fromkeys(hops["task_id"]))
    rerouted = set(hops[hops["cause"].map(lambda c: isinstance(c, str))]["task_id"])
    chosen = ([t for t in tasks if t in rerouted] + [t for t in tasks if t not in rerouted])[:max_tasks]
    chosen = [t for t in tasks if t in chosen]  # keep recorded order among those shown
    agents = {t: list(dict.fromkeys(hops[hops["task_id"] == t]["agent"])) for t in chosen}
    labels = task_labels(df, names)
    ratios = [len(a) + 1.6 for a in agents.values()]
    height = min(11.0, max(3.0, 0.8 + 0.36 * sum(ratios)))
    fig, axes = _figure(height, rows=len(chosen), height_ratios=ratios)
    n_hops = int(hops[hops["task_id"].isin(chosen)]["hop"].max()) + 1
    cmap = plt.get_cmap("tab10")
    for k, (task, ax) in enumerate(zip(chosen, axes[:, 0])):
        _draw_task_hops(ax, hops[hops["task_id"] == task], agents[task], cmap(k % 10), n_hops)
        ax.set_xlim(-0.5, n_hops - 0.5)
        ax.set_title(labels.get(task, _short_id(task)), loc="left", fontsize=9, color=cmap(k % 10),
                     fontweight="bold", pad=3)
    shown = f" ({len(chosen)} of {len(tasks)} tasks)" if len(chosen) < len(tasks) else ""
    axes[0, 0].set_title(title + shown, fontsize=10, pad=3)  # on the line of the first panel's task name
    handles = [Line2D([0], [0], marker="o", color="#555555", ls="", label="request, answered"),
               Line2D([0], [0], marker="o", color="#555555", mfc="white", mew=1.5, ls="", label="request, no reply"),
               Line2D([0], [0], marker="s", color="#555555", ms=6, ls="", label="replies before a handover"),
               Line2D([0], [0], marker="*", color="#555555", ms=11, ls="", label="reply naming a new responder")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=SMALL + 0.5, frameon=False,
               bbox_to_anchor=(0.5, 0.01))
    fig.tight_layout(rect=(0, 0.04, 1, 0.99))
    return fig


def _draw_task_hops(ax: Any, hops: pd.DataFrame, agents: list, color: Any, n_hops: int) -> None:
    """One task's panel: its hops joined in order, each labelled under its marker, in lines no wider
    than the space between two hops."""
    y_of = {a: k for k, a in enumerate(agents)}
    hop_px = (WIDTH - 1.4) * DPI / max(n_hops, 1)  # the axes take the card's width less the agent names
    chars = max(8, int(hop_px / (SMALL * 4 / 3 * 0.58)))  # 0.58 em: an average character of the font
    xs, ys = list(hops["hop"]), [y_of[a] for a in hops["agent"]]
    ax.plot(xs, ys, "-", color=color, lw=1.2, alpha=0.6)
    for x, y, kind, method, ans, cause, detail in zip(xs, ys, hops["kind"], hops["method"], hops["answered"],
                                                      hops["cause"], hops["detail"]):
        marker, ms, edge, mew = {"named": ("*", 14, "black", 0.6), "replied": ("s", 7, color, 1.2)}.get(
            kind, ("o", 8, color, 1.6))
        ax.plot([x], [y], marker=marker, ms=ms, color=color, mfc=color if ans else CARD_FACE, mec=edge, mew=mew,
                ls="", zorder=5, gid=f"hop:{kind}")
        bold = isinstance(cause, str)
        ax.annotate(_wrap(_hop_label(kind, method, ans, cause, detail), chars), xy=(x, y), xytext=(0, -8),
                    textcoords="offset points", ha="center", va="top", fontsize=SMALL,
                    color="black" if bold else "#555555", fontweight="bold" if bold else "normal", zorder=6,
                    bbox=dict(boxstyle="square,pad=0.1", fc=CARD_FACE, ec="none", alpha=0.85))  # over the line
    ax.set_yticks(range(len(agents)))
    ax.set_yticklabels([_label(a, 24) for a in agents], fontsize=8)
    ax.set_ylim(len(agents) - 0.1, -0.5)
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):  # the labels under the last row may reach the bottom edge
        ax.spines[side].set_visible(False)
    ax.grid(axis="y", color="#eeeeee")


@one_analysis
def latency_chart(df: pd.DataFrame, title: Optional[str] = None, log: Optional[bool] = None) -> Figure:
    """Time from each request to its first reply, by method: a box per method plus every request
    as a dot. ``log`` defaults to a log scale when latencies span more than two decades."""
    lv = latency_view(df)
    answered = lv[lv["latency_s"].notna()]
    title = title or "Latency to the first reply, by method"
    if answered.empty:
        return _empty(title, "no answered requests in this recording")
    methods = list(dict.fromkeys(answered["method"].fillna("?")))
    data = [answered[answered["method"].fillna("?") == m]["latency_s"].to_numpy() * 1000 for m in methods]
    fig, ax = _new(4.5)
    ax.boxplot(data, showfliers=False, widths=0.5, medianprops=dict(color="#d62728", lw=1.5))
    rng = np.random.default_rng(0)
    for k, values in enumerate(data, start=1):
        ax.plot(k + rng.uniform(-0.15, 0.15, len(values)), values, "o", ms=3.5, alpha=0.55, color="#1f77b4")
    ax.set_xticks(range(1, len(methods) + 1))
    ax.set_xticklabels([f"{_two_lines(_label(m, 24), 20)}\n(n={len(v)})" for m, v in zip(methods, data)], fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    allv = np.concatenate(data)
    positive = allv[allv > 0]
    if log is None:
        log = positive.size > 0 and positive.max() / max(positive.min(), 1e-6) > 100
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("latency (ms)", fontsize=8)
    missing = int(lv["latency_s"].isna().sum())
    if missing:
        title += f" ({missing} request(s) never answered)"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", color="#eeeeee")
    fig.tight_layout()
    return fig


# -- Mermaid ------------------------------------------------------------------------------------------

MERMAID_LOOK = '%%{init: {"theme": "default"}}%%'
"""Drawn the same in every JupyterLab theme: Mermaid's light theme, its messages on a white card
(``MERMAID_CARD``, a ``rect`` around them; the participants and notes are boxes of their own).
JupyterLab draws a diagram once, in the colours of the theme of that moment, so a diagram drawn in
the theme's colours becomes unreadable when the learner switches theme (dark text left on a dark
page, or light text on a white one)."""
MERMAID_CARD = "rgb(255, 255, 255)"


def _mermaid_text(s: Any, limit: int = LABEL_CHARS) -> str:
    """A label from the recording, fit for a line of Mermaid: on one line, cut to ``limit``
    characters, no ``;`` (a statement break), ``#`` (an entity code) or ``%%`` (a comment, or a
    ``%%{init: ...}%%`` directive that would restyle the diagram), and each ``$`` written as the
    entity ``#36;``, so ``$$...$$`` is never drawn as math (Mermaid 10.9+ renders it)."""
    text = _CONTROL.sub(" ", str(s)[:limit + 1])
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    while "%%" in text:
        text = text.replace("%%", "% ")
    return text.replace(";", ",").replace("#", "no. ").replace("$", "#36;")


@one_analysis
def mermaid_sequence(df: pd.DataFrame, max_messages: int = 200) -> str:
    """The traffic as a Mermaid ``sequenceDiagram`` (deterministic: participants in order of first
    appearance, one line per message, short labels; handovers as notes; the messages on a white card,
    ``MERMAID_CARD``). JupyterLab 4.1+ and GitHub render it; ``show_mermaid(text)`` displays it in a cell."""
    sub = _arrows(df)
    total = len(sub)
    sub = sub.iloc[:max_messages]
    lanes = _lanes(sub)
    pid = {a: f"p{k + 1}" for k, a in enumerate(lanes)}
    hand = new_responders(df)
    lines = ["sequenceDiagram"]
    lines += [f"    participant {pid[a]} as {_mermaid_text(a)}" for a in lanes]
    lines.append(f"    rect {MERMAID_CARD}")  # the messages on a white card: readable in a light and a dark theme
    for r in sub.to_dict("records"):
        a, b = pid[r["from_agent"]], pid[r["to_agent"]]
        arrow = {"request": "->>", "pool": "->>", "reply": "-->>"}.get(r["kind"], "-)")
        lines.append(f"    {a}{arrow}{b}: {_mermaid_text(message_label(r))}")
        h = hand.get(int(r["i"]))
        if h is not None:
            lines.append(f"    Note over {a}: {_mermaid_text(h[0])} to {_mermaid_text(h[1])}")
    if total > len(sub):
        lines.append(f"    Note over {pid[lanes[0]]}: {total - len(sub)} more messages not shown")
    lines.append("    end")
    return "\n".join(lines) + "\n"




class Mermaid:
    """Mermaid text that a notebook draws as a diagram and nbval can compare as text (``text/plain``).

    The diagram is a ``mermaid`` block of Markdown (``text/markdown``), which JupyterLab 4.1+ draws
    as it shows the output. Not the ``text/vnd.mermaid`` type: JupyterLab's renderer for that one writes
    the drawn SVG back into the output, so opening a lesson that holds one marks it unsaved."""

    def __init__(self, text: str):
        self.text = text

    def markdown(self) -> str:
        """The diagram as a Markdown ``mermaid`` block, in Mermaid's light theme (``MERMAID_LOOK``). The fence
        is longer than any run of backticks in the text (a label from a recording cannot close it)."""
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", self.text)), default=0))
        return f"{fence}mermaid\n{MERMAID_LOOK}\n{self.text.rstrip(chr(10))}\n{fence}\n"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/markdown": self.markdown(), "text/plain": self.text}

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def show_mermaid(text: str) -> Mermaid:
    """Wrap Mermaid text for display: make it the last expression of a cell."""
    if not isinstance(text, str):
        text = mermaid_sequence(text)
    return Mermaid(text)


# -- a folder of charts -------------------------------------------------------------------------------

@one_analysis
def scenario_frames(df: pd.DataFrame) -> list[tuple[Any, pd.DataFrame]]:
    """The recording cut into one piece per task, in order, so that every message is in exactly one
    piece: a task's piece runs from the message after the previous task's last message to its own
    last message (cards and events in between belong to the task that follows); messages after
    the last task join the last piece. Pairs of (task id, frame); one ``(None, df)`` pair when the
    recording has no task."""
    tasks = df[df["task_id"].notna()]
    if tasks.empty:
        return [(None, df)]
    last = tasks.groupby("task_id", sort=False)["i"].max().sort_values(kind="stable")
    pieces, start = [], -1
    for n, (task, end) in enumerate(last.items()):
        stop = df["i"].max() if n == len(last) - 1 else end
        pieces.append((task, df[(df["i"] > start) & (df["i"] <= stop)]))
        start = end
    return pieces


@one_analysis
def save_charts(df: pd.DataFrame, folder: Any, names: Optional[Mapping[str, str]] = None) -> list[tuple[Any, str]]:
    """Write every chart of a recording as PNG files into ``folder`` and an ``index.md`` that links
    each with a line on what it shows, then shows them one after the other: the state and reroute
    charts of all tasks, the latency chart, and one sequence chart per task (``scenario_frames``)
    with every one of its messages, so no message is left out. ``names`` maps task ids to the
    names rows are labelled with (the story's scenarios). Returns the (path, description) pairs
    written, the index last."""
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    labels = task_labels(df, names)
    written: list[tuple[Any, str]] = []

    def save(fig: Figure, name: str, about: str) -> None:
        fig.savefig(out / name, dpi=100, bbox_inches="tight")
        written.append((out / name, about))

    save(state_timeline(df, names=names, max_tasks=len(labels) or 1), "states.png",
         "every task's states in message order (step axis), with where it was sent, handovers and fallbacks")
    save(state_timeline(df, names=names, max_tasks=len(labels) or 1, x="time"), "states-time.png",
         "the same states against time: how long each one lasted")
    save(reroute_chart(df, names=names, max_tasks=len(labels) or 1), "reroutes.png",
         "each task's hops: every agent it was sent to or handed over to, in order, and requests with no reply")
    save(latency_chart(df), "latency.png", "time from each request to its first reply, by method")
    for n, (task, piece) in enumerate(scenario_frames(df), start=1):
        label = labels.get(task, "recording") if task is not None else "recording"
        count = len(_arrows(piece))
        slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        save(sequence_chart(piece, max_messages=max(count, 1), title=f"{label}: who sent what to whom"),
             f"sequence-{n}-{slug}.png", f"{label}: all {count} messages, who sent what to whom")
    index = out / "index.md"
    lines = ["# Charts of the recorded traffic", ""]
    lines += [f"- [{path.name}]({path.name}): {about}" for path, about in written]
    for path, about in written:  # then each chart in place, for a Markdown viewer (JupyterLab, GitHub)
        lines += ["", f"## {path.name}", "", about, "", f"![{about}]({path.name})"]
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.append((index, "this index"))
    return written
