"""HTML for the agents' own objects in a notebook (their ``_repr_html_``): presentation only.

It lives next to the agents so that their ``_repr_html_`` methods import nothing from the notebook
layer above them; :mod:`a2a_nb.notebook.display` builds the richer views on these pieces.
"""
from __future__ import annotations

import html
import json
from typing import Any

from ..protocol import states


def badge(state: Any) -> str:
    if not state:
        return ""
    colour = states.COLOURS.get(state, "#607d8b")
    return (f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
            f'font-family:monospace">{html.escape(states.short_name(state))}</span>')


def json_block(obj: Any, limit: int = 4000) -> str:
    text = json.dumps(obj, indent=2, ensure_ascii=False)
    if len(text) > limit:
        text = text[:limit] + "\n…"
    return f'<pre style="font-size:11px;max-height:18em;overflow:auto">{html.escape(text)}</pre>'


def reply_html(reply) -> str:
    rows = [("method", reply.method), ("state", badge(reply.state) if reply.state else "message"),
            ("round trip", f"{reply.rtt_s * 1000:.1f} ms"), ("attempts", str(len(reply.attempts))),
            ("answered by", html.escape(reply.responder or (reply.target.label if reply.target else "")))]
    if reply.text:
        rows.append(("text", html.escape(reply.text)))
    table = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>" for k, v in rows)
    return f"<table>{table}</table><details><summary>result JSON</summary>{json_block(reply.result)}</details>"


def task_view_html(view) -> str:
    arts = "".join(f"<li><code>{html.escape(a['artifactId'])}</code>: {len(a.get('parts', []))} part(s)</li>"
                   for a in view.artifacts.as_list())
    trail = " → ".join(badge(s) for _, s, _ in view.transitions)
    return (f"<div><b>task</b> <code>{html.escape(view.task_id)}</code> {badge(view.state)}<br>"
            f"states: {trail}<br>{html.escape(view.text)}<ul>{arts}</ul></div>")


def stream_html(stream) -> str:
    return task_view_html(stream.view) + f"<small>{len(stream.events)} event(s), {stream.duplicates} duplicate(s) dropped</small>"
