"""Recorded traffic: the record format and recorder (JSON lines), pandas frames, charts and
conformance checks.

Names load lazily, so ``from a2a_nb.traffic import Recorder`` does not import pandas or matplotlib.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # the names this package offers: a type checker reads these lines, lazy_names loads each on first use
    from .charts import latency_chart, mermaid_sequence, reroute_chart, sequence_chart, show_mermaid, state_timeline
    from .frame import handovers, latency_view, load_traffic, reroutes, routing_view, state_transitions
    from .lint import check_traffic, lint_file, main_lint
    from .recorder import Recorder
    from .records import from_record, read_records, to_record, write_records

__getattr__, __dir__, __all__ = lazy_names(__name__)
