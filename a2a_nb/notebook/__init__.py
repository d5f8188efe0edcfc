"""The notebook face: rich displays and widgets. They only present; the rules live in protocol/.

``display`` holds the HTML helpers (imported by the agents' ``_repr_html_``); ``widgets`` holds the
discovery browser and the send form; ``routing_table`` the view of a requester's routing table
(lesson 05). The widgets are imported on first use, so showing a reply never pulls in ipywidgets.
"""
from __future__ import annotations

__all__ = ["DiscoveryBrowser", "SendForm", "discovery_browser", "send_form", "RoutingTableView",
           "routing_table_view", "RoutingSnapshot", "routing_snapshot"]


def __getattr__(name: str):
    if name in ("RoutingTableView", "routing_table_view", "RoutingSnapshot", "routing_snapshot"):
        from . import routing_table

        return getattr(routing_table, name)
    if name in __all__:
        from . import widgets

        return getattr(widgets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
