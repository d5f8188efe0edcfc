"""The roles a benchmark child plays (started by :class:`benchmarks.apart.Apart`):

* ``kit-agents ORG UNIT EVENTS POOL_MEMBERS``: the load run's desk and pool (``load.LoadAgents``);
* ``raw-responders UNIT EVENTS``: the raw load shape's responders (``raw_load.RawResponders``);
* ``raw-publisher TOPIC N``: the raw loop's publisher (``raw_floor.RawPublisher``), which publishes
  ``N`` messages when the parent says ``go``.

Each prints ``ready`` once set up, runs until its standard input closes, then prints one JSON line of
what it counted.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable

from a2a_nb.mqtt.broker import resolve


def _serve(counts: Callable[[], dict[str, Any]]) -> None:
    """The child's life: ``ready``, then wait for the parent to close standard input, then the counts."""
    print("ready", flush=True)
    sys.stdin.read()
    print(json.dumps(counts()), flush=True)


def main(argv: list[str]) -> None:
    role, url, rest = argv[0], argv[1], argv[2:]
    endpoint = resolve(url)
    if role == "kit-agents":
        from .load import LoadAgents

        agents = LoadAgents(endpoint, events=int(rest[2]), pool_members=int(rest[3]), org=rest[0], unit=rest[1])
        try:
            _serve(lambda: {"executions": agents.executions(), "pool_mode": agents.pool_mode()})
        finally:
            agents.stop()
    elif role == "raw-responders":
        from .raw_load import RawResponders

        responders = RawResponders(endpoint, rest[0], events=int(rest[1]))
        try:
            _serve(lambda: {"requests": responders.requests})
        finally:
            responders.close()
    elif role == "raw-publisher":
        from .raw_floor import RawPublisher

        publisher = RawPublisher(endpoint, rest[0])
        try:
            print("ready", flush=True)
            if sys.stdin.readline().strip() == "go":
                publisher.publish(int(rest[1]))
            sys.stdin.read()
            print(json.dumps({"published": publisher.published}), flush=True)
        finally:
            publisher.close()
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
