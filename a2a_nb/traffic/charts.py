"""Charts of recorded traffic: sequence, task states, rerouting, latency; and Mermaid text.

Every chart is one call that takes the DataFrame of ``load_traffic`` (or anything it accepts) and
returns a matplotlib ``Figure`` sized for a notebook (10 inches wide). The figure is closed in
pyplot before it is returned, so nothing accumulates in pyplot's state and it is shown once: make
it the last expression of a cell (or ``display(fig)``; ``fig.savefig(...)`` works too).

What is drawn follows the profile: request/reply arrows (Request/Reply Mapping), stream items
ending at terminal or interrupted states (Streaming Reply Mapping 5-7), handovers and pool
assignment announced by ``a2a-responder-agent-id`` (Optional Task Handover, Optional Shared
Subscription Dispatch 10), fallbacks to the card agent (Requester Retry and Timeout Profile).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

import matplotlib

if ("matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND")
        and "ipykernel" not in sys.modules and sys.platform.startswith("linux")
        and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
    matplotlib.use("Agg")  # headless (CI, a terminal over ssh): draw to memory

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ..protocol import states as S  # noqa: E402
from .frame import (DISCOVERY, EVENTS_LANE, Source, handovers, latency_view, load_traffic, routing_view, short_state,  # noqa: E402
                    state_transitions)

WIDTH = 10.0

KIND_COLORS = {
    "request": "#1f77b4",
    "pool": "#17becf",
    "reply": "#2ca02c",
    "discovery": "#7f7f7f",
    "event": "#9467bd",
}
ERROR_COLOR = "#d62728"
STATE_COLORS = {
    S.SUBMITTED: "#c7c7c7",
    S.WORKING: "#1f77b4",
    S.INPUT_REQUIRED: "#ff7f0e",
    S.AUTH_REQUIRED: "#e6b800",
    S.COMPLETED: "#2ca02c",
    S.FAILED: "#d62728",
    S.CANCELED: "#8c564b",
    S.REJECTED: "#7b0000",
}
STATE_ORDER = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, S.FAILED, S.CANCELED,
               S.REJECTED]


def _new(height: float) -> tuple[Figure, Any]:
    fig, ax = plt.subplots(figsize=(WIDTH, height))
    plt.close(fig)  # keep pyplot stateless: the caller owns the figure
    return fig, ax


def _empty(title: str, note: str) -> Figure:
    fig, ax = _new(2.5)
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, note, ha="center", va="center", fontsize=11, color="#555555", transform=ax.transAxes)
    return fig


def _short_id(task_id: Any) -> str:
    s = str(task_id)
    return s[:8] + "…" if len(s) > 12 else s


# -- labels shared by the sequence chart and the Mermaid text ------------------------------------------

def message_label(row: dict) -> str:
    """A short label for one message: ``SendMessage``, ``statusUpdate working``, ``artifact report``,
    ``task completed``, ``error -32001``, ``card online`` ..."""
    kind, ev = row.get("kind"), row.get("event")
    if kind in ("request", "pool"):
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


def _handover_rows(df: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """The reply where each task moves to a new responder (later replies from the same one are not
    new handovers)."""
    h = handovers(df)
    current: dict = {}
    rows: dict[int, tuple[str, str]] = {}
    for i, task, cause, responder in zip(h["i"], h["task_id"], h["cause"], h["responder"]):
        if current.get(task) != responder:
            current[task] = responder
            rows[int(i)] = (cause, responder)
    return rows


# -- charts -------------------------------------------------------------------------------------------

def sequence_chart(df: Source, max_messages: int = 60, title: Optional[str] = None) -> Figure:
    """A sequence diagram: one lane per agent (plus ``discovery`` / ``events``), one arrow per
    message in recorded order, coloured by kind (error replies red); handovers and pool
    assignments (a reply whose ``a2a-responder-agent-id`` is not the addressed agent) are starred
    and labelled. Shows the first ``max_messages`` messages."""
    df = load_traffic(df)
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
    fig, ax = _new(min(6.0, max(4.0, 1.4 + 0.16 * n)))
    for k in range(len(lanes)):
        ax.axvline(k, color="#dddddd", lw=1.5, zorder=0)
    hand = _handover_rows(df)
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
            ax.text((x0 + x1) / 2, y - 0.12, message_label(r), ha="center", va="bottom", fontsize=7, color=color)
        h = hand.get(int(r["i"]))
        if h is not None:
            ax.plot([x0], [y], marker="*", ms=13, color="#ff7f0e", mec="black", mew=0.6, zorder=5)
            ax.annotate(f"{h[0]} → {h[1]}", xy=(x0, y), xytext=(8, -3), textcoords="offset points",
                        fontsize=7, color="#b35900", fontweight="bold")
    ax.set_xlim(-0.6, len(lanes) - 0.4)
    ax.set_ylim(n - 0.4, -1.0)
    ax.set_xticks(range(len(lanes)))
    ax.set_xticklabels(lanes, fontsize=9)
    ax.xaxis.tick_top()
    if show_text:
        ax.set_yticks(range(n))
        ax.set_yticklabels([f"{r['dt'] * 1000:.0f} ms" for r in rows], fontsize=7)
    ax.set_ylabel("time since first message (message order)")
    for side in ("right", "bottom"):
        ax.spines[side].set_visible(False)
    handles = [Line2D([0], [0], color=ERROR_COLOR if k == "error" else KIND_COLORS.get(k, "#333333"), lw=2,
                      ls="--" if k in ("reply", "error") else "-", label="error reply" if k == "error" else k)
               for k in kinds_seen]
    if hand:
        handles.append(Line2D([0], [0], marker="*", color="#ff7f0e", mec="black", ls="", ms=11,
                              label="handover / pool assignment"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=len(handles), fontsize=7,
              frameon=False)
    ax.set_title(title, pad=24)
    fig.tight_layout()
    return fig


def state_timeline(df: Source, title: Optional[str] = None, max_tasks: int = 20) -> Figure:
    """Per task, its state over time as coloured segments (Streaming Reply Mapping 5-7).

    Interrupted states (input-required, auth-required) are hatched: the task waits for the
    requester; terminal states end in a black-edged square: the task never changes again.
    """
    df = load_traffic(df)
    tr = state_transitions(df)
    title = title or "Task states over time"
    if tr.empty:
        return _empty(title, "no task states in this recording (no Task or status update replies)")
    tasks = list(dict.fromkeys(tr["task_id"]))
    more = len(tasks) - max_tasks
    tasks = tasks[:max_tasks]
    end = float(df["dt"].max()) if len(df) else 0.0
    span = max(end, 1e-3)
    fig, ax = _new(min(6.0, max(3.0, 1.3 + 0.45 * len(tasks))))
    seen: dict[str, None] = {}
    for y, task in enumerate(tasks):
        sub = tr[tr["task_id"] == task]
        dts, sts = list(sub["dt"]), list(sub["state"])
        for k, (x, st) in enumerate(zip(dts, sts)):
            seen.setdefault(st, None)
            color = STATE_COLORS.get(st, "#333333")
            if S.is_terminal(st):
                ax.plot([x], [y], marker="s", ms=10, color=color, mec="black", mew=1.2, zorder=4)
                continue
            x_end = dts[k + 1] if k + 1 < len(dts) else end
            width = max(x_end - x, span * 0.004)
            ax.barh(y, width, left=x, height=0.5, color=color, edgecolor="black" if S.is_interrupted(st) else color,
                    hatch="//" if S.is_interrupted(st) else None, lw=0.6)
        ax.text(dts[-1] + span * 0.025, y, short_state(sts[-1]), va="center", fontsize=8)
    ax.set_yticks(range(len(tasks)))
    ax.set_yticklabels([_short_id(t) for t in tasks], fontsize=8, family="monospace")
    ax.invert_yaxis()
    ax.set_xlim(-span * 0.02, span * 1.15)
    ax.set_xlabel("seconds since first message")
    ax.set_ylabel("Task.id")
    if more > 0:
        title += f" (first {max_tasks} of {max_tasks + more} tasks)"
    ax.set_title(title)
    order = [s for s in STATE_ORDER if s in seen] + [s for s in seen if s not in STATE_ORDER]
    handles = [Patch(facecolor=STATE_COLORS.get(s, "#333333"), hatch="//" if S.is_interrupted(s) else None,
                     edgecolor="black" if (S.is_interrupted(s) or S.is_terminal(s)) else "none",
                     label=short_state(s) + (" (terminal)" if S.is_terminal(s) else ""))
               for s in order]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.grid(axis="x", color="#eeeeee")
    fig.tight_layout()
    return fig


def reroute_chart(df: Source, title: Optional[str] = None, max_tasks: int = 10) -> Figure:
    """Which agent each operation of a task went to, over time.

    One line per task through its operations (filled marker: answered, hollow: no reply);
    reroutes are annotated with their cause (``handover``, ``pool-assigned``, ``fallback``) and
    replies that announced a new responder are starred (Optional Task Handover 2-4).
    """
    df = load_traffic(df)
    rv = routing_view(df)
    title = title or "Where each task's operations went"
    if rv.empty:
        return _empty(title, "no task operations in this recording")
    tasks = list(dict.fromkeys(rv["task_id"]))
    interesting = [t for t in tasks if rv[rv["task_id"] == t]["reroute"].any()]
    chosen = (interesting + [t for t in tasks if t not in interesting])[:max_tasks]
    rv = rv[rv["task_id"].isin(chosen)]
    hv = handovers(df)
    hv = hv[hv["task_id"].isin(chosen)]
    targets = list(dict.fromkeys(list(rv["target"]) + list(hv["responder"])))
    y_of = {a: k for k, a in enumerate(targets)}
    fig, ax = _new(min(6.0, max(3.5, 1.6 + 0.5 * len(targets))))
    cmap = plt.get_cmap("tab10")
    span = max(float(df["dt"].max()), 1e-3)
    for k, task in enumerate(chosen):
        sub = rv[rv["task_id"] == task]
        color = cmap(k % 10)
        xs, ys = list(sub["dt"]), [y_of[t] for t in sub["target"]]
        ax.plot(xs, ys, "-", color=color, lw=1.2, alpha=0.7, drawstyle="steps-post")
        for x, y, ans in zip(xs, ys, sub["answered"]):
            ax.plot([x], [y], "o", ms=7, color=color, mfc=color if ans else "white", mew=1.5)
        for x, y, cause, method in zip(xs, ys, sub["cause"], sub["method"]):
            if cause:  # staggered per task so two reroutes at the same moment stay readable
                right = x > span * 0.7  # near the right edge: write to the left of the point
                ax.annotate(f"{cause} ({method})", xy=(x, y), xytext=(-6 if right else 6, -14 - 10 * (k % 3)),
                            textcoords="offset points", fontsize=7, color=color, fontweight="bold",
                            ha="right" if right else "left")
        hsub = hv[hv["task_id"] == task]
        for x, resp in zip(hsub["dt"], hsub["responder"]):
            ax.plot([x], [y_of[resp]], marker="*", ms=12, color="#ff7f0e", mec="black", mew=0.6, zorder=5)
    ax.set_yticks(range(len(targets)))
    ax.set_yticklabels(targets)
    ax.set_ylim(len(targets) - 0.5, -0.7)
    ax.set_xlim(-span * 0.02, span * 1.1)
    ax.set_xlabel("seconds since first message")
    ax.set_ylabel("addressed agent")
    handles = [Line2D([0], [0], color=cmap(k % 10), marker="o", label=_short_id(t)) for k, t in enumerate(chosen)]
    handles += [Line2D([0], [0], marker="o", color="#555555", mfc="white", ls="", label="no reply"),
                Line2D([0], [0], marker="*", color="#ff7f0e", mec="black", ls="", ms=11,
                       label="reply naming a new responder")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
              title="Task.id", title_fontsize=8)
    ax.grid(axis="x", color="#eeeeee")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def latency_chart(df: Source, title: Optional[str] = None, log: Optional[bool] = None) -> Figure:
    """Time from each request to its first reply, by method: a box per method plus every request
    as a dot. ``log`` defaults to a log scale when latencies span more than two decades."""
    df = load_traffic(df)
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
    ax.set_xticklabels([f"{m}\n(n={len(v)})" for m, v in zip(methods, data)], fontsize=8)
    allv = np.concatenate(data)
    positive = allv[allv > 0]
    if log is None:
        log = positive.size > 0 and positive.max() / max(positive.min(), 1e-6) > 100
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("latency (ms)")
    missing = int(lv["latency_s"].isna().sum())
    if missing:
        title += f" ({missing} request(s) never answered)"
    ax.set_title(title)
    ax.grid(axis="y", color="#eeeeee")
    fig.tight_layout()
    return fig


# -- Mermaid ------------------------------------------------------------------------------------------

def _mermaid_text(s: str) -> str:
    return str(s).replace(";", ",").replace("#", "no. ").replace("\n", " ")


def mermaid_sequence(df: Source, max_messages: int = 200) -> str:
    """The traffic as a Mermaid ``sequenceDiagram`` (deterministic: participants in order of first
    appearance, one line per message, short labels; handovers as notes). JupyterLab 4.1+ and
    GitHub render it; ``show_mermaid(text)`` displays it in a cell."""
    df = load_traffic(df)
    sub = _arrows(df)
    total = len(sub)
    sub = sub.iloc[:max_messages]
    lanes = _lanes(sub)
    pid = {a: f"p{k + 1}" for k, a in enumerate(lanes)}
    hand = _handover_rows(df)
    lines = ["sequenceDiagram"]
    lines += [f"    participant {pid[a]} as {_mermaid_text(a)}" for a in lanes]
    for r in sub.to_dict("records"):
        a, b = pid[r["from_agent"]], pid[r["to_agent"]]
        arrow = {"request": "->>", "pool": "->>", "reply": "-->>"}.get(r["kind"], "-)")
        lines.append(f"    {a}{arrow}{b}: {_mermaid_text(message_label(r))}")
        h = hand.get(int(r["i"]))
        if h is not None:
            lines.append(f"    Note over {a}: {h[0]} to {_mermaid_text(h[1])}")
    if total > len(sub):
        lines.append(f"    Note over {pid[lanes[0]]}: {total - len(sub)} more messages not shown")
    return "\n".join(lines) + "\n"


class Mermaid:
    """Mermaid text that a notebook renders as a diagram (MIME ``text/vnd.mermaid``) and nbval can
    compare as text (``text/plain``)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/vnd.mermaid": self.text, "text/plain": self.text}

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def show_mermaid(text: str) -> Mermaid:
    """Wrap Mermaid text for display: make it the last expression of a cell."""
    if not isinstance(text, str):
        text = mermaid_sequence(text)
    return Mermaid(text)
