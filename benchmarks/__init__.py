"""Benchmarks of the kit, kept outside the package (``a2a_nb`` has one paho user: its session, and
ships nothing it cannot import).

``python -m benchmarks`` (``__main__``; or ``make bench``) runs them from the root of a clone:

* ``run``: the kit against raw paho-mqtt on the same broker, in one run (SendMessage round trip,
  stream events per second), plus the recorder, ``load_traffic`` and the resource runs below;
* ``raw_floor``: the bare paho-mqtt request/reply and publish loops the kit is compared with;
* ``raw_load``: the load run's shape (200 concurrent streams, worker threads) in bare paho-mqtt;
* ``apart`` / ``apart_roles``: one side of a run (the agents, the raw responders, the raw publisher) in a
  process of its own;
* ``load``: concurrent tasks through a desk and a pool, a burst against the bounded desk, memory of
  many echo round trips;
* ``traffic``: the recorder at full stream speed and ``load_traffic`` throughput on synthetic records.
* ``probe``: how long the Core conformance probe takes against a local echo and ticket desk.
"""
