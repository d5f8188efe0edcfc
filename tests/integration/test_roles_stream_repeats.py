"""A chunk sent twice on purpose is not a copy (Profile: Error Handling and Deduplication 1-2).

The kit's requester tells a stream item from a QoS 1 copy by its payload bytes; the runtime numbers
(``a2a-stream-seq``) only an item whose payload the reply path already carried. Real Mosquitto.
"""
from __future__ import annotations

import threading

from a2a_nb.agents import Requester, Responder
from a2a_nb.protocol.packet import MqttMessage
from a2a_nb.protocol.streams import STREAM_SEQ
from tests.integration._roles_support import FAST, RawClient, traffic, wait_until  # noqa: F401
from tests.helpers import uid


def test_repeated_chunks_arrive_numbered_and_their_copies_are_dropped(broker_url, traffic):
    agent = uid("dots")
    gate = threading.Event()

    def handler(ctx):
        ctx.artifact("progress", ".")
        for _ in range(2):
            ctx.artifact("progress", ".", append=True)
        gate.wait(5)
        ctx.complete("done")

    Responder(agent, handler, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    stream = req.stream(agent, "go")
    seen = [next(stream) for _ in range(4)]  # task snapshot and three "." chunks
    assert [e.kind for e in seen] == ["task", "artifactUpdate", "artifactUpdate", "artifactUpdate"]
    # the first "." (append false) differs from the appends; the second append repeats the first append
    assert [e.mqtt.user_property(STREAM_SEQ) for e in seen] == [None, None, None, "4"]
    raw = RawClient(broker_url)
    for e in seen:  # the broker delivering everything again (QoS 1)
        m = e.mqtt
        raw.publish(MqttMessage(m.topic, m.payload, qos=1, correlation_data=m.correlation_data,
                                user_properties=m.user_properties))
    assert wait_until(lambda: req.stats.replies >= 8, 3)
    gate.set()
    assert [e.kind for e in stream] == ["statusUpdate"]
    assert stream.duplicates == 4
    assert stream.view.artifacts.text("progress") == "..."
