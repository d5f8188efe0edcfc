"""Recorded traffic: the record format and recorder (JSON lines), pandas frames, charts and
conformance checks.

Names load lazily, so ``from a2a_nb.traffic import Recorder`` does not import pandas or matplotlib.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Recorder": "recorder", "read_records": "records", "write_records": "records",
    "to_record": "records", "from_record": "records",
    "load_traffic": "frame", "state_transitions": "frame", "routing_view": "frame", "latency_view": "frame",
    "handovers": "frame", "reroutes": "frame",
    "sequence_chart": "charts", "state_timeline": "charts", "reroute_chart": "charts", "latency_chart": "charts",
    "mermaid_sequence": "charts", "show_mermaid": "charts",
    "check_traffic": "lint", "lint_file": "lint", "main_lint": "lint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'a2a_nb.traffic' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
