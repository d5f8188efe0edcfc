"""A peer's text made safe to show: invisible characters escaped, long text cut.

Text from a peer (an agent's error message, a Task.id, a user property) reaches a terminal, a JUnit
file or a DataFrame. Raw, an ESC starts a terminal escape sequence (colours, a cleared screen, a
changed window title), a BEL rings, a NUL or another C0 control makes an XML file ill-formed, a lone
surrogate cannot even be written as UTF-8, and a right-to-left override reorders what a reader sees.
``safe_text`` shows each such character as its Python escape (``\\x1b``, ``\\x07``, ``\\u202e``) and
cuts the text to a length a report line can hold; ``quoted`` does the same for ``repr`` of a value.

Escaped: Unicode categories Cc (C0 and C1 controls, DEL; newline and tab too, since a report field
is one line), Cf (format characters: bidi overrides, zero-width characters, the BOM), Cs
(surrogates), Zl and Zp (line and paragraph separators), and the non-characters U+FFFE and U+FFFF
(not allowed in XML).
"""
from __future__ import annotations

import unicodedata
from typing import Any

HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories of the characters ``safe_text`` escapes."""


def _escaped(ch: str) -> str:
    if unicodedata.category(ch) in HIDDEN or ch in "\ufffe\uffff":
        return ch.encode("unicode_escape").decode("ascii")  # '\x1b', '\u202e', '\ud800', '\n'
    return ch


def safe_text(value: Any, limit: int = 200) -> str:
    """``value`` (``str()`` of it) with every invisible character escaped, at most ``limit``
    characters long: a longer text ends with ``…`` and its length, e.g. ``xxxx… (10,485,760
    characters)``. Only the first ``limit`` characters are looked at, so a 10 MB text costs no more
    than a short one."""
    text = value if isinstance(value, str) else str(value)
    return _cut(text, limit, f" ({len(text):,} characters)")


def quoted(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a message, escaped and cut to ``limit`` characters (ending ``…`` when
    cut); a long string or list is cut before ``repr`` sees all of it."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit + 1]
    elif isinstance(value, (list, tuple)) and len(value) > limit:
        value = value[:limit]
    try:
        text = repr(value)
    except RecursionError:  # a value nested deeper than repr can go
        text = f"<{type(value).__name__} nested too deeply to show>"
    return _cut(text, limit, "")


def _cut(text: str, limit: int, length_note: str) -> str:
    head = "".join(_escaped(ch) for ch in text[:limit])
    if len(head) <= limit and len(text) <= limit:
        return head
    tail = "…" + length_note
    return head[:max(limit - len(tail), 1)] + tail


__all__ = ["HIDDEN", "quoted", "safe_text"]
