"""Recorded traffic: the record format and recorder (JSON lines), pandas frames, charts and
conformance checks.

Names load lazily, so ``from a2a_nb.traffic import Recorder`` does not import pandas or matplotlib.
"""
from __future__ import annotations

from ..lazy_names import lazy_names

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
__getattr__, __dir__ = lazy_names(__name__, {name: f".{module}" for name, module in _EXPORTS.items()})
