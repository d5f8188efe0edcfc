"""The MQTT v5 session against a real Mosquitto: properties, reason codes, will, replacement."""
from __future__ import annotations

import queue
import time

import pytest

from a2a_nb.mqtt.session import Session, SessionError, Subscription, live_sessions, stop_all
from a2a_nb.protocol.packet import MqttMessage
from tests.helpers import uid


def wait_for(q: "queue.Queue", timeout=3.0):
    return q.get(timeout=timeout)


def test_client_id_is_org_unit_agent(broker_url):
    s = Session("acme", "support", "coordinator", broker=broker_url)
    assert s.client_id == "acme/support/coordinator"
    assert "acme/support/coordinator" in live_sessions()


def test_every_v5_property_round_trips(broker_url):
    s = Session("acme", "support", "props", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    topic = "$a2a/v1/reply/acme/support/props/abc"
    s.subscribe(topic, handler=got.put)
    sent = MqttMessage(
        topic, b'{"x":1}', qos=1, response_topic="$a2a/v1/reply/acme/support/props/r",
        correlation_data=bytes(range(16)), user_properties=(("a2a-a", "1"), ("a2a-b", "é"), ("a2a-a", "2")),
        content_type="application/json", message_expiry=120, payload_format=1,
    )
    assert s.publish(sent).reason_code == 0
    m = wait_for(got)
    assert m.payload == sent.payload and m.qos == 1 and not m.retain
    assert m.response_topic == sent.response_topic and m.correlation_data == sent.correlation_data
    assert m.user_properties == sent.user_properties and m.user_property("a2a-a") == "2"
    assert m.content_type == "application/json" and m.payload_format == 1
    assert 0 < m.message_expiry <= 120
    assert m.received_at is not None


def test_puback_16_no_matching_subscribers_is_surfaced(broker_url):
    s = Session("acme", "support", "lonely", broker=broker_url)
    r = s.publish(MqttMessage("$a2a/v1/request/acme/support/nobody-home", b"{}"))
    assert r.reason_code == 16 and r.no_subscribers and r.accepted


def test_qos0_publish_has_no_puback(broker_url):
    s = Session("acme", "support", "q0", broker=broker_url)
    assert s.publish(MqttMessage("$a2a/v1/event/acme/support/q0", b"e", qos=0)).reason_code == 0


def test_subscribe_returns_after_suback_with_granted_qos(broker_url):
    s = Session("acme", "support", "subber", broker=broker_url)
    assert s.subscribe("$a2a/v1/discovery/acme/support/+", qos=1) == 1
    assert s.subscribe(Subscription("$a2a/#", qos=2, retain_as_published=True)) == 2


def test_messages_without_handler_go_to_the_inbox(broker_url):
    s = Session("acme", "support", "inboxer", broker=broker_url)
    s.subscribe("$a2a/v1/event/acme/support/inboxer")
    s.publish(MqttMessage("$a2a/v1/event/acme/support/inboxer", b"1"))
    assert s.receive(3).payload == b"1"
    assert s.receive(0.05) is None


def test_retained_message_and_retain_as_published(broker_url):
    pub = Session("acme", "support", "retainer", broker=broker_url)
    topic = "$a2a/v1/discovery/acme/support/retainer"
    pub.publish(MqttMessage(topic, b'{"name":"r"}', retain=True))
    watcher = Session("acme", "support", "watcher", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    watcher.subscribe(topic, handler=got.put, retain_as_published=True)
    assert wait_for(got).retain is True
    pub.publish(MqttMessage(topic, b"", retain=True))  # clear


def test_will_with_user_properties_is_delivered_on_crash(broker_url):
    topic = "$a2a/v1/discovery/acme/support/mortal"
    will = MqttMessage(topic, b'{"name":"mortal"}', qos=1, retain=True,
                       user_properties=(("a2a-status", "offline"), ("a2a-status-source", "lwt")))
    watcher = Session("acme", "support", "undertaker", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    watcher.subscribe(topic, handler=got.put)
    agent = Session("acme", "support", "mortal", broker=broker_url, will=will)
    agent.close(send_will=True)
    m = wait_for(got)
    assert m.payload == will.payload
    assert m.user_property("a2a-status") == "offline" and m.user_property("a2a-status-source") == "lwt"
    Session("acme", "support", "cleaner", broker=broker_url).publish(MqttMessage(topic, b"", retain=True))


def test_graceful_close_sends_no_will(broker_url):
    topic = "$a2a/v1/discovery/acme/support/calm"
    will = MqttMessage(topic, b"{}", retain=False, user_properties=(("a2a-status", "offline"),))
    watcher = Session("acme", "support", "calm-watcher", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    watcher.subscribe(topic, handler=got.put)
    Session("acme", "support", "calm", broker=broker_url, will=will).close()
    with pytest.raises(queue.Empty):
        got.get(timeout=0.5)


def test_recreating_a_client_id_replaces_the_old_session(broker_url):
    first = Session("acme", "support", "rerun", broker=broker_url)
    second = Session("acme", "support", "rerun", broker=broker_url)
    assert first.closed and not second.closed
    time.sleep(0.3)  # the two must not kick each other off
    assert second.connected and second.connect_count == 1
    with pytest.raises(SessionError, match="closed"):
        first.publish(MqttMessage("$a2a/v1/event/acme/support/rerun", b"x"))


def test_stop_all_closes_every_session(broker_url):
    a = Session("acme", "support", "a1", broker=broker_url)
    b = Session("acme", "support", "b1", broker=broker_url)
    assert stop_all() >= 2
    assert a.closed and b.closed and live_sessions() == []


def test_unreachable_broker_gives_an_actionable_error():
    from a2a_nb.mqtt.broker import free_port

    with pytest.raises(SessionError, match="cannot reach the MQTT broker"):
        Session("acme", "support", "x", broker=f"mqtt://127.0.0.1:{free_port()}")


def test_session_reconnects_and_resubscribes_after_broker_restart(private_broker):
    s = Session("acme", "support", "phoenix", broker=private_broker.url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    s.subscribe("$a2a/v1/event/acme/support/phoenix", handler=got.put)
    private_broker.restart()
    assert s.wait_connected(10)
    deadline = time.time() + 10
    while s.connect_count < 2 and time.time() < deadline:
        time.sleep(0.05)
    other = Session("acme", "support", "poker", broker=private_broker.url)
    deadline = time.time() + 5
    while time.time() < deadline:
        other.publish(MqttMessage("$a2a/v1/event/acme/support/phoenix", b"again"))
        try:
            assert got.get(timeout=0.2).payload == b"again"
            break
        except queue.Empty:
            continue
    else:
        pytest.fail("no message after the broker restart: the session did not resubscribe")


def test_handler_exception_does_not_kill_the_session(broker_url):
    s = Session("acme", "support", "fragile", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()

    def bad(m):
        if m.payload == b"boom":
            raise RuntimeError("handler bug")
        got.put(m)

    s.subscribe("$a2a/v1/event/acme/support/fragile", handler=bad)
    s.publish(MqttMessage("$a2a/v1/event/acme/support/fragile", b"boom"))
    s.publish(MqttMessage("$a2a/v1/event/acme/support/fragile", b"fine"))
    assert wait_for(got).payload == b"fine"


def test_properties_are_set_through_paho_and_read_back_by_it():
    """The session builds PUBLISH properties with paho's public ``Properties`` API (a copied blank
    one); paho packs them and reads back exactly what was set."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    from a2a_nb.mqtt.session import _properties

    m = MqttMessage("t", b"x", response_topic="$a2a/v1/reply/a/b/c/é", correlation_data=bytes(range(32)),
                    user_properties=(("a2a-x", "1"), ("a2a-x", "2"), ("k", "v é")), content_type="application/json",
                    message_expiry=70000, payload_format=0)
    packed = _properties(m, PacketTypes.PUBLISH).pack()
    back = Properties(PacketTypes.PUBLISH)
    back.unpack(packed)
    assert back.ResponseTopic == m.response_topic and back.CorrelationData == m.correlation_data
    assert back.UserProperty == list(m.user_properties) and back.ContentType == m.content_type
    assert back.MessageExpiryInterval == 70000 and back.PayloadFormatIndicator == 0
    assert _properties(MqttMessage("t", b"x"), PacketTypes.PUBLISH) is None
    second = _properties(MqttMessage("t", b"x", correlation_data=b"c2"), PacketTypes.PUBLISH)
    assert second.json() == {"CorrelationData": b"c2".hex()}  # nothing of the first message leaked into the blank


def test_qos2_still_goes_through_paho_and_keeps_every_property(broker_url):
    """QoS 2 (PUBREC, PUBREL, PUBCOMP) is paho's: the message arrives once with every property."""
    s = Session("acme", "support", "q2", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    topic = "$a2a/v1/event/acme/support/q2"
    s.subscribe(topic, handler=got.put, qos=2)
    sent = MqttMessage(topic, b"exactly once", qos=2, correlation_data=b"c2", user_properties=(("a2a-x", "é"),),
                       content_type="text/plain")
    assert s.publish(sent).reason_code == 0
    m = wait_for(got)
    assert (m.qos, m.payload, m.correlation_data, m.user_properties, m.content_type) == \
        (2, b"exactly once", b"c2", (("a2a-x", "é"),), "text/plain")
    assert s.received == 1


def test_a_qos1_burst_arrives_whole_and_in_order(broker_url):
    """A burst of QoS 1 messages: all arrive, in order, with their user properties, and every
    publisher-side PUBACK is matched to its publish."""
    pub = Session("acme", "support", "burst-pub", broker=broker_url)
    sub = Session("acme", "support", "burst-sub", broker=broker_url)
    got: "queue.Queue[MqttMessage]" = queue.Queue()
    topic = "$a2a/v1/event/acme/support/burst"
    sub.subscribe(topic, handler=got.put)
    pending = [pub.publish_nowait(MqttMessage(topic, str(i).encode(), user_properties=(("a2a-stream-seq", str(i)),)))
               for i in range(500)]
    assert all(p.result().reason_code == 0 for p in pending)
    seen = [wait_for(got) for _ in range(500)]
    assert [m.payload for m in seen] == [str(i).encode() for i in range(500)]
    assert [m.user_property("a2a-stream-seq") for m in seen] == [str(i) for i in range(500)]


def test_qos0_and_qos1_deliveries_take_paho_s_own_path(broker_url, caplog):
    """Every PUBLISH is read by paho (no private override): its logger reports each one with the
    dup flag, and a callback added with paho's ``message_callback_add`` sees QoS 0 and 1 alike."""
    import logging

    s = Session("acme", "support", "public-path", broker=broker_url)
    topic = "$a2a/v1/event/acme/support/public-path"
    seen: "queue.Queue" = queue.Queue()
    s.subscribe(topic, qos=1)
    s._client.enable_logger(logging.getLogger("paho-under-test"))  # paho's public logging switch
    s._client.message_callback_add(topic, lambda client, userdata, m: seen.put((m.qos, m.dup, m.payload)))
    with caplog.at_level(logging.DEBUG, logger="paho-under-test"):
        s.publish(MqttMessage(topic, b"zero", qos=0))
        s.publish(MqttMessage(topic, b"one", qos=1))
        got = sorted([wait_for(seen), wait_for(seen)])
    assert got == [(0, False, b"zero"), (1, False, b"one")]
    received = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Received PUBLISH")]
    assert any("(d0, q0" in line for line in received) and any("(d0, q1" in line for line in received)


def test_qos0_publishes_leave_no_acknowledgement_behind(broker_url):
    """paho reports a QoS 0 message as published (``on_publish``) once written; the session drops
    that report. Kept, it would answer the QoS 1 publish that reuses its packet identifier after
    65,535 more, before that publish's own PUBACK (here: 16, nobody subscribed)."""
    s = Session("acme", "support", "mid-wrap", broker=broker_url)
    q0 = MqttMessage("$a2a/v1/event/acme/support/mid-wrap", b"", qos=0)
    for _ in range(65_535):  # every packet identifier paho hands out, once
        s.publish_nowait(q0)
    # the 65,535 QoS 0 packets go out first: a busy machine takes seconds to write them all
    r = s.publish(MqttMessage("$a2a/v1/request/acme/support/nobody-listens", b"{}", qos=1), timeout=120)
    assert r.reason_code == 16 and r.no_subscribers


def test_the_kit_uses_no_private_paho_name():
    """No ``._name`` of a paho object anywhere in a2a_nb/ (paho's private names are read from the
    installed paho: its Client, Properties, MQTTMessage, ...), no subclass of a paho class, no
    private paho module, no ``object.__new__`` / ``object.__setattr__`` around paho's API."""
    import ast
    import pathlib

    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    from paho.mqtt.reasoncodes import ReasonCode
    from paho.mqtt.subscribeoptions import SubscribeOptions

    import a2a_nb

    samples = [mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5), Properties(PacketTypes.PUBLISH),
               mqtt.MQTTMessage(), mqtt.MQTTMessageInfo(1), ReasonCode(PacketTypes.PUBACK), SubscribeOptions()]
    private = {n for o in samples for n in dir(o) if n.startswith("_") and not n.startswith("__")}
    paho_classes = {"Client", "Properties", "MQTTMessage", "MQTTMessageInfo", "ReasonCode", "ReasonCodes",
                    "SubscribeOptions"}
    found = []
    for path in sorted(pathlib.Path(a2a_nb.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports_paho = any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("paho") or isinstance(
            n, ast.Import) and any(a.name.startswith("paho") for a in n.names) for n in ast.walk(tree))
        for node in ast.walk(tree):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr in private and not (
                    isinstance(node.value, ast.Name) and node.value.id == "self"):  # the kit's own self._x
                found.append(f"{where} {ast.unparse(node)}")
            elif isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
                found += [f"{where} class {node.name}({b})" for b in bases & paho_classes]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("paho"):
                found += [f"{where} from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") or "._" in node.module]
            elif isinstance(node, ast.Import):
                found += [f"{where} import {a.name}" for a in node.names if a.name.startswith("paho") and "._" in a.name]
            elif imports_paho and isinstance(node, ast.Attribute) and ast.unparse(node) in (
                    "object.__new__", "object.__setattr__"):
                found.append(f"{where} {ast.unparse(node)}")
    assert found == [], "private paho use: " + "; ".join(found)


def test_messages_that_arrive_together_are_handed_over_together_in_order(broker_url):
    """The network thread reads while messages keep coming, then hands the run over at once
    (network_loop.py): 400 messages already waiting in the socket take a handful of hand-overs,
    none is lost and the order is kept."""
    import threading

    sender = Session("acme", "support", "flood-sender", broker=broker_url)
    receiver = Session("acme", "support", "flood-receiver", broker=broker_url)
    topic = "$a2a/v1/reply/acme/support/flood-receiver/x"
    first_in, release, got = threading.Event(), threading.Event(), []

    def handler(m: MqttMessage) -> None:
        got.append(int(m.payload))
        if len(got) == 1:  # hold the network thread until every message waits in its socket
            first_in.set()
            release.wait(5)

    receiver.subscribe(topic, handler=handler)
    sender.publish(MqttMessage(topic, b"0"))
    assert first_in.wait(3)
    bursts_before = receiver.bursts
    pending = [sender.publish_nowait(MqttMessage(topic, str(i).encode())) for i in range(1, 400)]
    assert all(p.result(5).reason_code == 0 for p in pending)  # the broker has sent them all on
    release.set()
    deadline = time.monotonic() + 5
    while len(got) < 400 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert got == list(range(400))
    assert receiver.received == 400
    # 4 here (up to 100 a burst); a broker that sends fewer unacknowledged messages at once needs more
    assert receiver.bursts - bursts_before <= 20


def test_threads_publishing_at_once_while_messages_arrive_lose_and_mix_nothing(broker_url):
    """Publishing threads write their own packets when the network thread is free, else hand them
    to it; reads and writes of one connection never overlap (network_loop.py's ``paho_lock``).
    Four threads publish 300 messages each from a session that is receiving a flood at the same
    time, up to 20 kB each through a small send buffer: every message arrives once, intact, in each
    thread's order. (A race between two writers is too narrow to provoke here; the lock rests on
    the reasoning in network_loop.py.)"""
    import threading

    import socket

    busy = Session("acme", "support", "busy-writer", broker=broker_url)
    # a small send buffer: 20 kB packets go out in pieces; a thread whose write stops half way leaves
    # the rest to the network thread (what a slow link does)
    busy._client.socket().setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    other = Session("acme", "support", "flooder", broker=broker_url)
    sink = Session("acme", "support", "sink", broker=broker_url)
    out_topic, in_topic = "$a2a/v1/reply/acme/support/sink/x", "$a2a/v1/reply/acme/support/busy-writer/x"
    got: "queue.Queue[bytes]" = queue.Queue()
    flood_in: "queue.Queue[bytes]" = queue.Queue()
    sink.subscribe(out_topic, handler=lambda m: got.put(m.payload))
    busy.subscribe(in_topic, handler=lambda m: flood_in.put(m.payload))

    def publish_from(k: int) -> None:
        for i in range(300):
            busy.publish_nowait(MqttMessage(out_topic, f"{k}:{i}:".encode() + b"x" * (i % 50) * 400))

    threads = [threading.Thread(target=publish_from, args=(k,)) for k in range(4)]
    flood = [other.publish_nowait(MqttMessage(in_topic, str(i).encode())) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(p.result(5).accepted for p in flood)
    seen: dict[int, list[int]] = {k: [] for k in range(4)}
    for _ in range(1200):
        k, i, pad = wait_for(got, 10).split(b":")
        assert pad == b"x" * (int(i) % 50) * 400
        seen[int(k)].append(int(i))
    assert all(seen[k] == list(range(300)) for k in range(4))
    assert sorted(int(wait_for(flood_in)) for _ in range(200)) == list(range(200))


def test_two_handlers_of_one_filter_both_get_every_message_and_one_can_leave(broker_url):
    """A pool member's presence watch and its ubsp-v1 key directory read the same event filter on one
    session: before, the second subscribe silently took the first one's messages (issue [16]: a pooled
    desk could not seal replies)."""

    from a2a_nb.mqtt.session import Session
    from a2a_nb.protocol.packet import MqttMessage
    from tests.waiting import wait_until

    unit = uid("fan")
    s = Session("acme", unit, "two-readers", broker=broker_url)
    first, second = [], []
    filter_ = f"$a2a/v1/event/acme/{unit}/+"
    s.subscribe(filter_, handler=first.append)
    s.subscribe(filter_, handler=second.append)
    pub = Session("acme", unit, "writer", broker=broker_url)
    pub.publish(MqttMessage(f"$a2a/v1/event/acme/{unit}/writer", b"1"))
    assert wait_until(lambda: first and second, 3) and first[0].payload == second[0].payload == b"1"
    s.unsubscribe(filter_, handler=second.append)
    pub.publish(MqttMessage(f"$a2a/v1/event/acme/{unit}/writer", b"2"))
    assert wait_until(lambda: len(first) == 2, 3) and len(second) == 1, "the other reader keeps the subscription"


def test_a_message_matched_before_the_unsubscribe_is_still_the_subscriber_s(broker_url):
    """The broker may deliver what it matched before it saw the UNSUBSCRIBE (MQTT 5 §3.10.4): the
    handler gets it, and it is never dropped as "a topic this client never subscribed to"."""
    pub = Session("acme", "unsub-race", "pub", broker=broker_url)
    sub = Session("acme", "unsub-race", "sub", broker=broker_url)
    topic, got = "a2a-nb-test/unsub-race", []
    for i in range(40):
        sub.subscribe(topic, handler=got.append)
        assert pub.publish(MqttMessage(topic, str(i).encode(), qos=1)).reason_code == 0  # the broker matched it
        sub.unsubscribe(topic)
    assert sub.unsolicited == 0 and [m.payload for m in got] == [str(i).encode() for i in range(40)]
