"""JSON from a peer, parsed within bounds: its size and how deeply it nests.

Python's ``json`` parses nested arrays and objects by recursion. Around 1,000 levels it raises
``RecursionError`` (not ``ValueError``), and a value a little less deep parses but breaks later, in
whatever walks it recursively from a deeper stack: ``json.dumps`` for a view, ``repr`` in an
error message. So a value from a peer (an Agent Card, a line of a recording) is parsed here, and
refused with a ``ValueError`` that says why when it is longer than ``max_bytes`` or nests deeper
than ``max_depth`` (``MAX_DEPTH``, 64: an A2A message or card nests about 10 levels).

Checking the depth walks the value without recursion, and only when the text holds more opening
brackets than ``max_depth`` (a recorded A2A message holds about 50): most values are never walked.
"""
from __future__ import annotations

import json
import math
from typing import Any, Optional, Union

MAX_DEPTH = 64
"""Deepest nesting accepted from a peer: ``[]`` and ``{}`` are depth 1, ``{"a": [1]}`` depth 2."""


def depth_exceeds(value: Any, max_depth: int) -> bool:
    """True when ``value`` nests arrays/objects deeper than ``max_depth`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def too_deep(text: Union[str, bytes], value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Does ``value`` (parsed from ``text``) nest deeper than ``max_depth``? Walks it only when
    ``text`` has more ``[`` and ``{`` than ``max_depth``: with fewer it cannot."""
    if isinstance(text, str):
        openers = text.count("[") + text.count("{")
    else:
        openers = text.count(b"[") + text.count(b"{")
    return openers > max_depth and depth_exceeds(value, max_depth)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: valid JSON text, but no number Python (or JSON out) can hold
        raise ValueError(f"the number {text[:20]} is too large")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
"""Strict JSON: no ``NaN``/``Infinity``, no number too large for a float (built once)."""


def loads_bounded(data: Union[str, bytes, bytearray, memoryview], *, max_depth: int = MAX_DEPTH,
                  max_bytes: Optional[int] = None) -> Any:
    """``json.loads`` for a peer's bytes: ``ValueError`` (one line, what to fix) when they are longer
    than ``max_bytes`` (``len`` of ``data``: bytes, or characters of a ``str``), not UTF-8, not JSON
    (``NaN`` and ``Infinity`` are not, nor a number too large for a float such as ``1e400``), or
    nested deeper than ``max_depth``; never ``RecursionError``. What it returns, ``json.dumps``
    writes back as standard JSON."""
    if max_bytes is not None and len(data) > max_bytes:
        raise ValueError(f"{len(data):,} bytes, more than the {max_bytes:,} accepted")
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(f"nested more than {max_depth} levels deep") from None
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise ValueError(f"not JSON ({exc.msg} at {where})") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's int_max_str_digits
        raise ValueError(f"not usable JSON ({exc})") from None
    if too_deep(text, value, max_depth):
        raise ValueError(f"nested more than {max_depth} levels deep")
    return value
