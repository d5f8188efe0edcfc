"""Sub-commands that run agents and tools: added here as the kit grows."""
from __future__ import annotations


def add_parsers(sub) -> None:
    return None
