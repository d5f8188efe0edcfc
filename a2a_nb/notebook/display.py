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

# -- discovery (presence badges and the card table of the discovery browser) -----------------------
PRESENCE_COLOURS = {"online": "#43a047", "offline": "#9e9e9e"}


def presence_badge(status: Any, source: Any = None) -> str:
    """``online``/``offline`` as a coloured label, with its ``a2a-status-source`` in small print."""
    if not status:
        return '<span style="color:#9e9e9e">unknown</span>'
    colour = PRESENCE_COLOURS.get(status, "#607d8b")
    src = f' <small style="color:#757575">({html.escape(str(source))})</small>' if source else ""
    return (f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
            f'font-family:monospace">{html.escape(str(status))}</span>{src}')


def agents_table_html(entries, highlight_tags=()) -> str:
    """One row per discovered agent (``Discovery`` entries): presence, skills and their tags,
    capabilities and the number of card problems. Tags named in ``highlight_tags`` are bold."""
    wanted = {t.lower() for t in highlight_tags}
    if not entries:
        return "<p><i>no agent matches</i></p>"

    def tag(t: str) -> str:
        text = html.escape(t)
        return f"<b>{text}</b>" if t.lower() in wanted else text

    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("agent", "name", "status", "skills (tags)", "streaming", "card problems"))
    rows = []
    for e in entries:
        card = e.card or {}
        skills = "<br>".join(
            f"<code>{html.escape(str(s.get('id', '')))}</code> ({', '.join(tag(t) for t in s.get('tags', []))})"
            for s in card.get("skills", []) if isinstance(s, dict))
        streaming = "yes" if (card.get("capabilities") or {}).get("streaming") else "no"
        problems = len(e.problems)
        rows.append(
            f"<tr><td style='text-align:left'><code>{html.escape(e.agent)}</code></td>"
            f"<td style='text-align:left'>{html.escape(str(card.get('name', '')))}</td>"
            f"<td style='text-align:left'>{presence_badge(e.status, e.status_source)}</td>"
            f"<td style='text-align:left'>{skills}</td><td>{streaming}</td>"
            f"<td>{problems if problems else '0'}</td></tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


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
    return ("<table><thead><tr><th style='text-align:left'>JSON payload (A2A)</th>"
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
    return (f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<small>{offset} bytes in all (MQTT v5 §3.3 PUBLISH)</small>")
