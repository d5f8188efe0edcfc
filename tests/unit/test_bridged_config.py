"""The bridge's Mosquitto config lines (``a2a_nb.mqtt.bridged``), without starting a broker.

The lines are checked against a real Mosquitto 2.0.11 in ``tests/integration/test_bridged_brokers.py``;
here: what crosses comes from the kit's own topic rules, the credentials go where Mosquitto reads
them and nowhere else, and a TLS bridge needs its CA.
"""
from __future__ import annotations

import pytest

from a2a_nb.mqtt.bridged import BRIDGED_TREES, RECEIVE_MAXIMUM, bridge_config, describe
from a2a_nb.mqtt.broker import BrokerEndpoint, BrokerError
from a2a_nb.protocol import pools, topics


def lines(text: str) -> list[str]:
    return text.splitlines()


def test_the_profile_tree_and_the_pool_claims_cross_both_ways_at_qos_1_over_mqtt_v5():
    conf = lines(bridge_config(BrokerEndpoint.from_url("mqtt://10.0.0.5:1884"), client_id="b-1"))
    assert "address 10.0.0.5:1884" in conf and "remote_clientid b-1" in conf
    assert "bridge_protocol_version mqttv50" in conf
    assert [line for line in conf if line.startswith("topic ")] == [f"topic {t} both 1" for t in BRIDGED_TREES]
    assert topics.ALL_A2A == "$a2a/#" and f"{pools.CLAIMS_PREFIX}/#" in BRIDGED_TREES
    assert not any("probe" in t for t in BRIDGED_TREES)  # the $share probe asks about the local broker only
    for option in ("cleansession true", "start_type automatic", "notifications true", "try_private true"):
        assert option in conf
    # Receive Maximum 0 (the embedded broker's "no limit") would make the remote refuse the bridge's CONNECT
    assert conf[0] == f"max_inflight_messages {RECEIVE_MAXIMUM}" and 0 < RECEIVE_MAXIMUM < 65535
    assert not any(line.startswith(("remote_username", "remote_password", "bridge_cafile")) for line in conf)


def test_credentials_go_into_the_config_and_never_into_the_banner():
    remote = BrokerEndpoint.from_url("mqtt://bridge%40acme:s3cr%3At@broker.example:1883")
    conf = lines(bridge_config(remote))
    assert "remote_username bridge@acme" in conf and "remote_password s3cr:t" in conf
    said = describe(remote)
    assert "s3cr" not in said and "***" in said and "$a2a/#" in said and "both ways, QoS 1, MQTT v5" in said


def test_each_bridge_gets_its_own_client_id_and_ipv6_is_bracketed():
    ids = {line for text in (bridge_config(BrokerEndpoint()), bridge_config(BrokerEndpoint()))
           for line in lines(text) if line.startswith("remote_clientid ")}
    assert len(ids) == 2  # two bridged brokers on one machine must not take each other's connection over
    assert "address [::1]:1883" in lines(bridge_config(BrokerEndpoint(host="::1")))


def test_a_tls_bridge_needs_the_remote_ca(tmp_path, monkeypatch):
    monkeypatch.delenv("A2A_BROKER_CA", raising=False)
    with pytest.raises(BrokerError, match="CA certificate"):
        bridge_config(BrokerEndpoint.from_url("mqtts://broker.example:8883"))
    with pytest.raises(BrokerError, match="does not exist"):
        bridge_config(BrokerEndpoint.from_url(f"mqtts://broker.example:8883?ca={tmp_path / 'missing.crt'}"))
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conf = lines(bridge_config(BrokerEndpoint.from_url(f"mqtts://broker.example:8883?ca={ca}")))
    assert f"bridge_cafile {ca}" in conf and "address broker.example:8883" in conf
