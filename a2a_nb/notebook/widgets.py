"""Two small ipywidgets for the lessons: a discovery browser and a send form.

They only present: selection by skill tag is ``protocol.cards.card_matches`` (through
``Discovery.find``), sending is ``Requester.send`` / ``Requester.stream``. Both are fed from other
threads (paho's network thread for presence changes, a worker thread for a send), so every widget
update happens under a lock and by setting a trait or appending to ``Output.outputs``, never with
``with output:`` from a thread (it misroutes output and swallows exceptions).

Displayed in a notebook, each object sends a MIME bundle with the live widget AND a plain HTML
snapshot: JupyterLab shows the widget; GitHub, nbviewer or a kernel-less export show the HTML.
Without a kernel (plain Python, pytest) only the HTML is offered.

A saved notebook brings its widgets back from the saved widget state, but with no kernel behind
them: their buttons do nothing. Every view of the kit starts with :func:`offline_note`, a line that
stays hidden while the kernel is connected and, when it is not (ipywidgets marks a view whose model
has no live connection with the class ``jupyter-widgets-disconnected``), says what brings the widget
back: the kernel of a reopened notebook is a new one, so the cell alone would only meet names that
are not defined yet; the cells above it first, then the cell (tests/browser does exactly that).
"""
from __future__ import annotations

import html
import re
import threading
from typing import Any, Iterable, Optional, Union

import ipywidgets as W
from IPython import get_ipython

from ..agents.discovery import skill_tags
from ..protocol import messages, states
from .display import agents_table_html, cell_text, no_math

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def has_widget_frontend() -> bool:
    """True inside a Jupyter kernel (a frontend may render widgets); False in plain Python."""
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def widget_bundle(widget: W.Widget, snapshot_html: str, plain: str) -> dict:
    """A view's MIME bundle: the live widget where a frontend can render it, always with an HTML
    snapshot and text (what GitHub, nbviewer and nbval show)."""
    data = {"text/plain": plain, "text/html": snapshot_html}
    if has_widget_frontend():
        view = widget._repr_mimebundle_() or {}
        if WIDGET_MIME in view:
            data[WIDGET_MIME] = view[WIDGET_MIME]
    return data


OFFLINE_TEXT = "kernel not connected: select this cell, Run > Run All Above Selected Cell, then run this cell"
_OFFLINE_HTML = (
    "<style>.a2a-offline-note{display:none}"
    ".jupyter-widgets-disconnected .a2a-offline-note{display:block;margin:2px 0;padding:2px 8px;"
    "border-left:4px solid #f57c00;background:rgba(245,124,0,0.12);"
    "color:var(--jp-ui-font-color0,inherit)}</style>"
    f'<div class="a2a-offline-note">⚠ {OFFLINE_TEXT}</div>')


def offline_note() -> W.HTML:
    """A line that shows only while the widget has no kernel behind it (a reopened notebook, a
    kernel that was shut down): ``OFFLINE_TEXT``, what to do to use it again."""
    return W.HTML(_OFFLINE_HTML)


def parse_tags(text: str) -> list[str]:
    """``"ticket, root-cause-analysis"`` or ``"ticket root-cause-analysis"`` → two tags."""
    return [t for t in re.split(r"[\s,]+", text or "") if t]


KNOWN_TAGS = 100
"""Tags listed above the discovery browser's table; the rest are counted."""


class DiscoveryBrowser:
    """A tag filter and a live table of the Agent Cards a ``Discovery`` holds.

    The table is rebuilt whenever the filter changes and whenever the discovery reports a card
    (``Discovery.on_change``, called on paho's network thread). An ``on_change`` the discovery
    already had keeps being called; ``close()`` puts it back. Cards are a peer's data: the table
    shows what is readable of each and marks a card that is not valid (``agents_table_html``).
    """

    def __init__(self, discovery, tags: str = ""):
        self.discovery = discovery
        self.updates = 0
        self._lock = threading.Lock()
        self.filter = W.Text(value=tags, description="skill tags",
                             placeholder="e.g. root-cause-analysis (all tags must match)",
                             continuous_update=True, layout=W.Layout(width="32em"))
        self.known = W.HTML()
        self.table = W.HTML()
        self.widget = W.VBox([offline_note(), self.filter, self.known, self.table])
        self._previous = discovery.on_change
        discovery.on_change = self._on_change
        self.filter.observe(self._on_filter, names="value")
        self.refresh()

    # -- what is shown ---------------------------------------------------------------------------------
    @property
    def tags(self) -> list[str]:
        return parse_tags(self.filter.value)

    def entries(self) -> list:
        """The discovery's entries that have a skill carrying every tag of the filter; cards that
        are not valid too (the table marks them)."""
        return sorted(self.discovery.find(tags=self.tags, valid_only=False), key=lambda e: e.agent)

    def known_tags(self) -> list[str]:
        """Every text tag on the skills of the cards (also the readable ones of an invalid card)."""
        found: set[str] = set()
        for agent in self.discovery.agents():
            e = self.discovery.get(agent)
            if e is not None:
                found.update(skill_tags(e.card))
        return sorted(found)

    def render(self) -> str:
        entries = self.entries()
        total = len(self.discovery.agents())
        caption = (f"<p><small>{len(entries)} of {total} agent(s) on "
                   f"<code>$a2a/v1/discovery/{html.escape(self.discovery.org)}/"
                   f"{html.escape(self.discovery.unit)}/+</code>")
        if self.tags:
            caption += f" with skill tags {', '.join(f'<b>{cell_text(t)}</b>' for t in self.tags)}"
        caption += "</small></p>"
        return no_math(caption + agents_table_html(entries, self.tags))

    def refresh(self) -> None:
        """Rebuild the table (thread-safe: may run on paho's network thread)."""
        with self._lock:
            tags = self.known_tags()
            shown = ", ".join(cell_text(t) for t in tags[:KNOWN_TAGS])
            more = f" and {len(tags) - KNOWN_TAGS} more" if len(tags) > KNOWN_TAGS else ""
            self.known.value = no_math(f"<small>known tags: {shown or 'none yet'}{more}</small>")
            self.table.value = self.render()
            self.updates += 1

    # -- events ----------------------------------------------------------------------------------------
    def _on_filter(self, change) -> None:
        self.refresh()

    def _on_change(self, agent: str, entry) -> None:
        if self._previous is not None:
            try:
                self._previous(agent, entry)
            except Exception:  # someone else's callback must not stop the table
                pass
        self.refresh()

    def close(self) -> None:
        """Stop following the discovery and close the widgets."""
        if self.discovery.on_change == self._on_change:
            self.discovery.on_change = self._previous
        self.widget.close()
        for w in (self.filter, self.known, self.table):
            w.close()

    # -- display -----------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return widget_bundle(self.widget, self.known.value + self.table.value, repr(self))

    def __repr__(self) -> str:
        return f"<DiscoveryBrowser {len(self.entries())} agent(s) shown, filter {self.filter.value!r}>"


def discovery_browser(discovery, tags: str = "") -> DiscoveryBrowser:
    """A live table of the cards ``discovery`` sees, filtered by skill tags typed in a text box."""
    return DiscoveryBrowser(discovery, tags)


EVENT_LOG_CLASS = "a2a-event-log"
"""The CSS class of the send form's scrolling event log."""


class SendForm:
    """Agent dropdown, message text, stream checkbox, send button and a live event view.

    A click starts one worker thread that sends (``Requester.send``) or streams
    (``Requester.stream``) and appends one line per event to ``view`` (an ``Output``) and to
    ``lines``. When the last task stopped at input-required or auth-required, "continue the last
    task" sends the next text to that same task (new messageId, same Task.id and contextId).
    """

    def __init__(self, requester, agents: Union[Iterable[str], Any], text: str = ""):
        self.requester = requester
        names = agents.agents() if hasattr(agents, "agents") and callable(agents.agents) else list(agents)
        if not names:
            raise ValueError("send_form needs at least one agent name, e.g. send_form(requester, ['echo'])")
        self.agent = W.Dropdown(options=names, value=names[0], description="agent")
        self.text = W.Text(value=text, description="message", placeholder="what to send",
                           layout=W.Layout(width="40em"))
        self.stream = W.Checkbox(value=False, description="stream (SendStreamingMessage)", indent=False)
        self.follow_up = W.Checkbox(value=False, description="continue the last task", indent=False,
                                    disabled=True)
        self.button = W.Button(description="Send", button_style="primary", icon="paper-plane")
        self.status = W.HTML()
        self.view = W.Output(layout=W.Layout(flex="0 0 auto"))  # as tall as its lines: the box scrolls
        # The event log scrolls by itself to the newest line: a column-reverse flex box keeps its scroll
        # position anchored at the bottom (plain CSS, no JavaScript; a learner who scrolled up to read
        # stays where they are).
        self.log_box = W.Box([self.view], layout=W.Layout(border="1px solid #ddd", max_height="20em", overflow="auto",
                                                          display="flex", flex_flow="column-reverse"))
        self.log_box.add_class(EVENT_LOG_CLASS)
        self.widget = W.VBox([offline_note(), W.HBox([self.agent, self.stream, self.follow_up]),
                              W.HBox([self.text, self.button]), self.status, self.log_box])
        self.lines: list[str] = []
        self.last_task: Optional[dict] = None  # {"id", "contextId", "state"} of the last task seen
        self.errors = 0
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self.button.on_click(self._on_click)

    # -- the event view (thread-safe) ------------------------------------------------------------------
    def log(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)
            self.view.append_stdout(line + "\n")

    def clear(self) -> None:
        with self._lock:
            self.lines = []
            self.view.outputs = ()

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until the running send finished; True when nothing is running any more."""
        t = self._thread
        if t is not None:
            t.join(timeout)
        return not self.busy

    # -- sending ---------------------------------------------------------------------------------------
    def _on_click(self, _button=None) -> None:
        if self.busy:
            self.log("… still sending, wait for the reply")
            return
        text = self.text.value.strip()
        if not text:
            self.log("type a message first")
            return
        follow = self.follow_up.value and self.last_task is not None
        self.button.disabled = True
        self.status.value = "<small>sending…</small>"
        self._thread = threading.Thread(target=self._run, args=(self.agent.value, text, self.stream.value, follow),
                                        name="send-form", daemon=True)
        self._thread.start()

    def _run(self, agent: str, text: str, stream: bool, follow: bool) -> None:
        req = self.requester
        try:
            if follow:
                task = self.last_task
                assert task is not None  # the form offers "continue" only after a task
                target = req.routing.target(task["id"])
                self.log(f"→ continue task {task['id'][:8]}… on {target.label if target else agent}: “{text}”")
                result = req.continue_task(task, text, stream=stream)
            else:
                method = "SendStreamingMessage" if stream else "SendMessage"
                self.log(f"→ {method} to {agent}: “{text}”")
                result = req.stream(agent, text) if stream else req.send(agent, text)
            if stream:
                self._follow(result)
            else:
                self._show_reply(result)
        except Exception as exc:  # shown, not raised: the thread has no cell to raise into
            self.errors += 1
            self.log(f"✗ {type(exc).__name__}: {exc}")
        finally:
            interrupted = self.last_task is not None and states.is_interrupted(self.last_task.get("state") or "")
            self.follow_up.disabled = not interrupted
            if not interrupted:
                self.follow_up.value = False
            self.button.disabled = False
            self.status.value = ""

    def _remember(self, task_id: Optional[str], context_id: Optional[str], state: Optional[str]) -> None:
        if task_id:
            self.last_task = {"id": task_id, "contextId": context_id, "state": state}

    def _show_reply(self, reply) -> None:
        who = reply.responder or (reply.target.label if reply.target else "?")
        if reply.task is not None:
            line = f"← {who}: task {states.short_name(reply.state)}"
            if reply.text:
                line += f": “{reply.text}”"
            self.log(line)
            self._remember(reply.task_id, reply.context_id, reply.state)
        else:
            self.log(f"← {who}: message “{reply.text}”")
            self._remember(reply.task_id, reply.context_id, None)
        if reply.responder and reply.task_id:
            self.log(f"↪ replies carry a2a-responder-agent-id={reply.responder}: follow-ups go there")

    def _follow(self, stream) -> None:
        for ev in stream:
            who = ev.responder or stream.target.label
            if ev.reroute is not None:
                self.log(f"↪ handover: follow-ups for this task go to {ev.reroute.to.label}")
            if ev.kind in ("task", "statusUpdate", "recovered"):
                status = ev.data["status"]
                msg = status.get("message")
                extra = f": “{messages.text_of(msg)}”" if msg else ""
                self.log(f"← {who}: {ev.kind} {states.short_name(ev.state)}{extra}")
            elif ev.kind == "artifactUpdate":
                a = ev.data
                self.log(f"← {who}: artifact {a['artifact']['artifactId']}"
                         f"{' (append)' if a.get('append') else ''}{' (last chunk)' if a.get('lastChunk') else ''}")
            elif ev.kind == "message":
                self.log(f"← {who}: message “{messages.text_of(ev.data)}”")
            else:
                self.log(f"← {who}: {ev.kind}")
        view = stream.view
        self._remember(view.task_id, view.context_id, view.state)
        self.log(f"■ stream ended: {self._outcome(view)}, {len(stream.events)} event(s)")

    @staticmethod
    def _outcome(view) -> str:
        """How a stream ended: the task's last state, or the Message that was the stream's one item
        (a stateless agent such as echo: there is no task to track)."""
        if view.state:
            return f"task {states.short_name(view.state)}"
        if view.message is not None:
            return "message reply (the agent made no task)"
        return "no task state received"

    # -- display -----------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        body = "\n".join(self.lines) or "(no events yet)"
        snapshot = ("<p><small>send form (interactive in JupyterLab with a running kernel); events so far:"
                    f"</small></p><pre>{html.escape(body)}</pre>")
        return widget_bundle(self.widget, snapshot, repr(self))

    def __repr__(self) -> str:
        return f"<SendForm to {list(self.agent.options)}, {len(self.lines)} event line(s)>"


def send_form(requester, agents) -> SendForm:
    """A small form to send messages with ``requester`` to one of ``agents`` (names or a Discovery)."""
    return SendForm(requester, agents)
