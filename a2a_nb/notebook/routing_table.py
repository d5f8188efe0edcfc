"""A view of a requester's routing table: per task, the card agent, the agent answering now, and
every reroute (time, cause, from, to, detail).

Presentation only: the rules (a task starts at the card agent, ``a2a-responder-agent-id`` on any
reply or stream item reroutes it, the latest value wins, a silent handover target falls back to the
card agent) live in ``protocol/routing.py`` (Profile: Optional Task Handover; user story 07).

The view never changes by itself behind a cell's back unless asked to: ``refresh()`` (or the
*Refresh* button) rebuilds it from the table, and the *auto refresh* checkbox (``auto=True``)
starts a small daemon thread that calls ``refresh()`` whenever the table changed. Updates only set
widget traits, under a lock, so they may come from any thread.

Displayed in a notebook it sends the live widget AND a plain HTML snapshot (GitHub, nbviewer, a
kernel-less export); outside a kernel only the HTML is offered.

A lesson that tells a story step by step shows :func:`routing_snapshot` (or ``view.snapshot()``)
where the story advances: static HTML of the table as it is at that moment, which never changes
afterwards, so *Run All* reads top to bottom. The live view belongs where the learner plays.
"""
from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import ipywidgets as W

from ..protocol.routing import FALLBACK, HANDOVER, POOL_ASSIGNED, Address, RoutingTable
from .display import no_math
from .widgets import offline_note, widget_bundle

CAUSE_COLOURS = {HANDOVER: "#1e88e5", FALLBACK: "#fb8c00", POOL_ASSIGNED: "#8e24aa"}


def clock(at: float) -> str:
    """``HH:MM:SS.mmm`` local time of a unix timestamp."""
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"


def _table_of(source: Any) -> RoutingTable:
    table = getattr(source, "routing", source)
    if not isinstance(table, RoutingTable):
        raise TypeError(f"routing_table_view needs a Requester or a RoutingTable, got {type(source).__name__}")
    return table


def _agent(addr: Address) -> str:
    return (f'<code title="{html.escape(str(addr))} → requests on {html.escape(addr.topic)}">'
            f"{html.escape(addr.label)}</code>")


def _cause(cause: str) -> str:
    colour = CAUSE_COLOURS.get(cause, "#607d8b")
    return (f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
            f'font-family:monospace">{html.escape(cause)}</span>')


def _routes_of(table: RoutingTable, task_ids: Optional[list[str]]) -> list:
    routes = list(table.routes.values())
    if task_ids is not None:
        wanted = set(task_ids)
        routes = [r for r in routes if r.task_id in wanted]
    return routes


def _rows_of(table: RoutingTable, task_ids: Optional[list[str]]) -> list[dict]:
    history = list(table.history)
    out = []
    for r in _routes_of(table, task_ids):
        moves = [{"at": h.at, "time": clock(h.at), "cause": h.cause, "from": h.from_.label, "to": h.to.label,
                  "detail": h.detail} for h in history if h.task_id == r.task_id]
        out.append({"task_id": r.task_id, "card": r.card.label, "current": r.current.label,
                    "rerouted": r.current != r.card, "reroutes": moves})
    return out


def _render(table: RoutingTable, task_ids: Optional[list[str]], *, times: bool = True) -> str:
    """The table as HTML: per task its card agent, current agent (bold when routed away) and every
    reroute; ``times=False`` numbers the reroutes instead of giving their clock time."""
    routes = _routes_of(table, task_ids)
    if not routes:
        return "<p><i>no task in the routing table yet</i></p>"
    history = list(table.history)
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("task", "card agent", "current agent", "reroutes"))
    first_column = "time" if times else "#"
    body = []
    for r in routes:
        moves = [h for h in history if h.task_id == r.task_id]
        if moves:
            inner = "".join(
                f"<tr><td style='text-align:left'>{clock(h.at) if times else n}</td>"
                f"<td style='text-align:left'>{_cause(h.cause)}"
                f"</td><td style='text-align:left'>{_agent(h.from_)}</td><td style='text-align:left'>"
                f"{_agent(h.to)}</td><td style='text-align:left'><small>{html.escape(h.detail)}</small></td></tr>"
                for n, h in enumerate(moves, 1))
            reroutes = ("<table><thead><tr>" + "".join(
                f"<th style='text-align:left'>{h}</th>" for h in (first_column, "cause", "from", "to", "detail"))
                + f"</tr></thead><tbody>{inner}</tbody></table>")
        else:
            reroutes = "<i>no reroute</i>"
        current = _agent(r.current)
        if r.current != r.card:
            current = f"<b>{current}</b>"
        body.append(
            f"<tr><td style='text-align:left;vertical-align:top'><code title='{html.escape(r.task_id)}'>"
            f"{html.escape(r.task_id[:8])}…</code></td>"
            f"<td style='text-align:left;vertical-align:top'>{_agent(r.card)}</td>"
            f"<td style='text-align:left;vertical-align:top'>{current}</td>"
            f"<td style='text-align:left;vertical-align:top'>{reroutes}</td></tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _counts(rows: list[dict]) -> str:
    return f"{len(rows)} task(s), {sum(len(r['reroutes']) for r in rows)} reroute(s)"


@dataclass(frozen=True)
class RoutingSnapshot:
    """The routing table as it was when the snapshot was taken: ``rows`` (as
    :meth:`RoutingTableView.rows`) and ``html``. It never changes afterwards, whatever the table
    does, so a lesson shows one per step where the story advances. The reroutes are numbered, not
    timed: a stored notebook shows the same snapshot on every run."""

    rows: tuple[dict, ...]
    html: str

    @property
    def tasks(self) -> int:
        return len(self.rows)

    @property
    def reroutes(self) -> int:
        return sum(len(r["reroutes"]) for r in self.rows)

    def _repr_html_(self) -> str:
        return no_math(f"<small>routing table snapshot: {_counts(list(self.rows))} (it does not change "
                       f"afterwards)</small>{self.html}")

    def __repr__(self) -> str:
        lines = [f"<routing table snapshot: {_counts(list(self.rows))}>"]
        for r in self.rows:
            moves = ", ".join(f"{m['cause']} {m['from']} → {m['to']}" for m in r["reroutes"]) or "no reroute"
            lines.append(f"  {r['task_id'][:8]}… card {r['card']}, now {r['current']}: {moves}")
        return "\n".join(lines)


def routing_snapshot(requester: Any, *, task_ids: Optional[Iterable[str]] = None) -> RoutingSnapshot:
    """A static snapshot of ``requester.routing`` (a Requester or a RoutingTable) as it is now."""
    table = _table_of(requester)
    wanted = list(task_ids) if task_ids is not None else None
    return RoutingSnapshot(tuple(_rows_of(table, wanted)), _render(table, wanted, times=False))


class RoutingTableView:
    """Per task of ``requester.routing``: card agent, current agent and its reroutes."""

    def __init__(self, requester: Any, *, task_ids: Optional[Iterable[str]] = None, auto: bool = False,
                 interval_s: float = 0.5):
        self.table = _table_of(requester)
        self.task_ids = list(task_ids) if task_ids is not None else None
        self.interval_s = interval_s
        self.refreshes = 0
        self.last_html = ""
        self._lock = threading.Lock()
        self._seen: Optional[tuple] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.button = W.Button(description="Refresh", icon="refresh", tooltip="rebuild from the routing table")
        self.auto = W.Checkbox(value=False, description="auto refresh", indent=False)
        self.caption = W.HTML()
        self.html = W.HTML()
        self.widget = W.VBox([offline_note(), W.HBox([self.button, self.auto]), self.caption, self.html])
        self.button.on_click(lambda _b: self.refresh())
        self.auto.observe(self._on_auto, names="value")
        self.refresh()
        if auto:
            self.set_auto(True)

    # -- what is shown ---------------------------------------------------------------------------------
    def _routes(self) -> list:
        return _routes_of(self.table, self.task_ids)

    def rows(self) -> list[dict]:
        """One dict per task: ``task_id``, ``card``, ``current`` (agent labels), ``rerouted`` and
        ``reroutes`` (a list of dicts with ``at``, ``time``, ``cause``, ``from``, ``to``, ``detail``)."""
        return _rows_of(self.table, self.task_ids)

    def signature(self) -> tuple:
        """Changes whenever the table does (what auto refresh compares)."""
        routes = self._routes()
        return (len(self.table.history), tuple((r.task_id, r.current) for r in routes))

    def render(self) -> str:
        return _render(self.table, self.task_ids)

    def snapshot(self) -> RoutingSnapshot:
        """The table as it is now, as static HTML that never changes (see :func:`routing_snapshot`)."""
        return routing_snapshot(self.table, task_ids=self.task_ids)

    def refresh(self) -> None:
        """Rebuild the view from the routing table (thread-safe)."""
        with self._lock:
            routes = self._routes()
            moves = sum(1 for h in list(self.table.history) if self.task_ids is None or h.task_id in self.task_ids)
            caption = (f"<small>routing table: {len(routes)} task(s), {moves} reroute(s); "
                       f"refreshed at {clock(time.time())}</small>")
            self.last_html = self.render()
            self._seen = self.signature()
            self.caption.value = caption
            self.html.value = no_math(self.last_html)
            self.refreshes += 1

    # -- auto refresh ----------------------------------------------------------------------------------
    def _on_auto(self, change) -> None:
        self.set_auto(bool(change["new"]))

    def set_auto(self, on: bool) -> None:
        """Start or stop refreshing whenever the routing table changes (checked every ``interval_s``)."""
        if self.auto.value != on:
            self.auto.value = on  # calls back into set_auto through the observer
            return
        if on and (self._thread is None or not self._thread.is_alive()):
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="routing-table-view", daemon=True)
            self._thread.start()
        elif not on and self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def auto_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self.signature() != self._seen:
                    self.refresh()
            except Exception:  # a table changing under our feet: try again next time
                continue

    def close(self) -> None:
        """Stop auto refresh and close the widgets."""
        self.set_auto(False)
        for w in (self.button, self.auto, self.caption, self.html, self.widget):
            w.close()

    # -- display -----------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return widget_bundle(self.widget, self.last_html, repr(self))

    def __repr__(self) -> str:
        routes = self._routes()
        moved = sum(1 for r in routes if r.current != r.card)
        return f"<RoutingTableView {len(routes)} task(s), {moved} routed away from their card agent>"


def routing_table_view(requester: Any, *, task_ids: Optional[Iterable[str]] = None, auto: bool = False,
                       interval_s: float = 0.5) -> RoutingTableView:
    """A view of ``requester.routing`` (a Requester or a RoutingTable): refresh button, optional auto refresh."""
    return RoutingTableView(requester, task_ids=task_ids, auto=auto, interval_s=interval_s)
