"""The notebook face: rich displays and widgets. They only present; the rules live in protocol/.

``display`` holds the HTML helpers (imported by the agents' ``_repr_html_``); ``widgets`` holds the
discovery browser and the send form; ``routing_table`` the view of a requester's routing table
(lesson 05). The widgets are imported on first use, so showing a reply never pulls in ipywidgets.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # the names this package offers: a type checker reads these lines, lazy_names loads each on first use
    from .routing_table import RoutingSnapshot, RoutingTableView, routing_snapshot, routing_table_view
    from .widgets import DiscoveryBrowser, SendForm, discovery_browser, send_form

__getattr__, __dir__, __all__ = lazy_names(__name__)
