"""``bench`` names what paho's public Properties API costs per message (the issue's note quotes it)."""
from __future__ import annotations

from benchmarks import raw_floor


def test_paho_costs_measures_each_message_shape():
    costs = raw_floor.paho_costs(repeat=1, number=20)
    shapes = ("item", "request", "numbered_item")
    assert set(costs) == {"new_properties_us"} | {f"{op}_{s}_us" for op in ("pack", "read") for s in shapes}
    assert all(v > 0 for v in costs.values())
