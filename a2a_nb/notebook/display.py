"""HTML for the kit's objects in a notebook (``_repr_html_``): presentation only."""
from __future__ import annotations

import html
import json
from dataclasses import replace
from typing import Any

from ..agents.reprs import json_block
from ..mqtt.wire import publish_fields
from ..protocol.ids import readable_correlation
from ..protocol.properties import redact
from ..protocol.safe_text import safe_text

# -- discovery (presence badges and the card table of the discovery browser) -----------------------
PRESENCE_COLOURS = {"online": "#43a047", "offline": "#9e9e9e"}
TABLE_ROWS = 200
"""Agents shown in one table; the rest are counted below it."""
CELL_CHARS = 60
"""A peer's text (name, skill id, tag, problem) is cut to this many characters in a cell."""


NO_MATH = "tex2jax_ignore mathjax_ignore"
"""The classes JupyterLab's MathJax leaves alone (the ones pandas gives its tables)."""


def no_math(body: str) -> str:
    """HTML that JupyterLab must show as it is: MQTT topics start with ``$`` (``$a2a/...``), and
    two of them in one output would otherwise be typeset as math, the text between them in italics."""
    return f'<div class="{NO_MATH}">{body}</div>'


def cell_text(text: Any, limit: int = CELL_CHARS) -> str:
    """A peer's text for a cell: invisible characters (a right-to-left override, ESC) shown escaped,
    cut to ``limit`` characters (``safe_text``), then HTML-escaped."""
    return html.escape(safe_text(text, limit))


def presence_badge(status: Any, source: Any = None) -> str:
    """``online``/``offline`` as a coloured label, with its ``a2a-status-source`` in small print."""
    if not status:
        return '<span style="color:#9e9e9e">unknown</span>'
    colour = PRESENCE_COLOURS.get(status, "#607d8b")
    src = f' <small style="color:#757575">({cell_text(source)})</small>' if source else ""
    return (f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
            f'font-family:monospace">{cell_text(status)}</span>{src}')


def agents_table_html(entries, highlight_tags=(), max_rows: int = TABLE_ROWS) -> str:
    """One row per discovered agent (``Discovery`` entries): presence, skills and their tags,
    capabilities and what is wrong with the card. Tags named in ``highlight_tags`` are bold.

    Cards are a peer's data: what is readable is shown (text names, skills with a text id, text
    tags), every text cut to ``CELL_CHARS`` and escaped; an invalid card says so in its row
    ("card not valid: skills must be a non-empty list", every problem in the tooltip). At most
    ``max_rows`` rows; the others are counted."""
    wanted = {t.lower() for t in highlight_tags}
    if not entries:
        return "<p><i>no agent matches</i></p>"

    def tag(t: str) -> str:
        text = cell_text(t)
        return f"<b>{text}</b>" if t.lower() in wanted else text

    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("agent", "name", "status", "skills (tags)", "streaming", "card problems"))
    rows = []
    for e in entries[:max_rows]:
        card = e.card if isinstance(e.card, dict) else {}
        skills = card.get("skills")
        skills = [s for s in skills if isinstance(s, dict)] if isinstance(skills, list) else []
        shown = []
        for s in skills[:20]:
            tags = s.get("tags") if isinstance(s.get("tags"), list) else []
            sid = s.get("id") if isinstance(s.get("id"), str) else "?"
            shown.append(f"<code>{cell_text(sid)}</code> ({', '.join(tag(t) for t in tags[:20] if isinstance(t, str))})")
        if len(skills) > 20:
            shown.append(f"<small>… {len(skills) - 20} more</small>")
        caps = card.get("capabilities")
        streaming = "yes" if isinstance(caps, dict) and caps.get("streaming") is True else "no"
        name = card.get("name")
        problems = e.problems
        if problems:
            listed = "\n".join(str(p)[:200] for p in problems[:10]) + (
                f"\n… {len(problems) - 10} more" if len(problems) > 10 else "")
            verdict = (f"<span style='color:#c62828' title='{html.escape(listed, quote=True)}'>"
                       f"{cell_text(e.verdict, 2 * CELL_CHARS)}</span>")
        else:
            verdict = "0"
        rows.append(
            f"<tr><td style='text-align:left'><code>{cell_text(e.agent)}</code></td>"
            f"<td style='text-align:left'>{cell_text(name) if isinstance(name, str) else ''}</td>"
            f"<td style='text-align:left'>{presence_badge(e.status, e.status_source)}</td>"
            f"<td style='text-align:left'>{'<br>'.join(shown)}</td><td>{streaming}</td>"
            f"<td style='text-align:left'>{verdict}</td></tr>")
    more = (f"<p><small>… and {len(entries) - max_rows} more agent(s) not shown</small></p>"
            if len(entries) > max_rows else "")
    return no_math(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}")


# -- one MQTT message: its v5 properties next to its JSON payload ----------------------------------
def mqtt_properties_rows(msg) -> list[tuple[str, str]]:
    """The MQTT side of a message (``protocol.packet.MqttMessage``) as (name, value) rows."""
    rows = [("topic", msg.topic), ("QoS", str(msg.qos)), ("retain", str(msg.retain).lower())]
    if msg.response_topic is not None:
        rows.append(("Response Topic", msg.response_topic))
    if msg.correlation_data is not None:
        rows.append(("Correlation Data", readable_correlation(msg.correlation_data)))
    if msg.content_type is not None:
        rows.append(("Content Type", msg.content_type))
    if msg.payload_format is not None:
        rows.append(("Payload Format Indicator", str(msg.payload_format)))
    if msg.message_expiry is not None:
        rows.append(("Message Expiry Interval", f"{msg.message_expiry} s"))
    for k, v in redact(msg.user_properties):
        rows.append((f"user property {k}", v))
    if not msg.user_properties:
        rows.append(("user properties", "none"))
    return rows


def mqtt_side_by_side_html(msg, limit: int = 6000) -> str:
    """Left: the JSON payload (what A2A defines). Right: the MQTT v5 properties (what the binding adds)."""
    try:
        payload = json.loads(msg.payload)
        body = json_block(payload, limit)
    except ValueError:
        body = f"<pre>{html.escape(repr(msg.payload[:200]))}</pre>"
    props = "".join(f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(k)}</th>"
                    f"<td style='text-align:left'><code>{html.escape(v)}</code></td></tr>"
                    for k, v in mqtt_properties_rows(msg))
    return no_math("<table><thead><tr><th style='text-align:left'>JSON payload (A2A)</th>"
                   "<th style='text-align:left'>MQTT v5 packet (the binding)</th></tr></thead><tbody><tr>"
                   f"<td style='vertical-align:top;text-align:left'>{body}</td>"
                   f"<td style='vertical-align:top'><table>{props}</table></td></tr></tbody></table>")


def publish_bytes_html(msg, mid: int = 1, short: int = 6) -> str:
    """The PUBLISH packet of ``msg`` as the broker receives it, piece by piece (``mqtt.wire``): where
    each piece starts, its bytes in hex (for a long piece its structure bytes, then how many value
    bytes follow), its name and what it says. A bearer token is replaced by ``[redacted]`` before
    the packet is built, so with a token the sizes are those of the redacted packet."""
    msg = replace(msg, user_properties=redact(msg.user_properties))
    rows, offset = [], 0
    for f in publish_fields(msg, mid):
        shown = f.data if len(f.data) <= short else f.data[:f.value_at]
        rest = len(f.data) - len(shown)
        hexed = " + ".join(part for part in (shown.hex(" "), f"{rest} bytes" if rest else "") if part)
        rows.append(f"<tr><td style='text-align:right'>{offset}</td><td style='text-align:left'><code>{hexed}</code></td>"
                    f"<td style='text-align:left'>{html.escape(f.name)}</td>"
                    f"<td style='text-align:left'><code>{html.escape(f.says)}</code></td></tr>")
        offset += len(f.data)
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in ("byte", "hex", "piece", "what it says"))
    return no_math(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
                   f"<small>{offset} bytes in all (MQTT v5 §3.3 PUBLISH)</small>")
