"""The bridge's Mosquitto config lines (``a2a_nb.mqtt.bridged``), without starting a broker.

The lines are checked against a real Mosquitto 2.0.11 in ``tests/integration/test_bridged_brokers.py``;
here: what crosses comes from the kit's own topic rules, the credentials go where Mosquitto reads
them and nowhere else, and a TLS bridge needs its CA.
"""
from __future__ import annotations

import pytest

from a2a_nb.mqtt.bridged import BRIDGED_TREES, RECEIVE_MAXIMUM, bridge_config, describe
from a2a_nb.mqtt.broker import CONFIG_VALUE_MAX_BYTES, BrokerEndpoint, BrokerError, EmbeddedBroker, config_value
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


@pytest.mark.parametrize("url,part", [
    ("mqtt://u:s3cret%0Alistener%201884%200.0.0.0%0Aallow_anonymous%20true@127.0.0.1:1883", "password"),
    ("mqtt://u:s3cret%0D%0Aplugin%20%2Ftmp%2Fx.so@127.0.0.1:1883", "password"),
    ("mqtt://u:s3cret%00x@127.0.0.1:1883", "password"),
    ("mqtt://u:%20s3cret@127.0.0.1:1883", "password"),
    ("mqtt://u%0Aplugin%20%2Ftmp%2Fx.so:p@127.0.0.1:1883", "user"),
    ("mqtt://u%09:p@127.0.0.1:1883", "user"),
    ("mqtt://u%C2%85:p@127.0.0.1:1883", "user"),  # NEL, a C1 control
    ("mqtts://127.0.0.1:8883?ca=%2Ftmp%2Fca.crt%0Aplugin%20%2Ftmp%2Fx.so", "CA file"),
])
def test_a_url_part_mosquitto_would_read_otherwise_is_refused_not_written(url, part):
    """URL parts are data, never config: a control character (a newline starts a config line of its own),
    blanks Mosquitto trims; the error names the part, never the value."""
    with pytest.raises(BrokerError, match=part) as refused:
        bridge_config(BrokerEndpoint.from_url(url))
    assert "s3cret" not in str(refused.value) and "\n" not in str(refused.value)


def test_spaces_inside_a_password_or_a_ca_path_are_data_and_stay_one_value(tmp_path):
    ca = tmp_path / "my certs" / "ca.crt"
    ca.parent.mkdir()
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conf = lines(bridge_config(BrokerEndpoint.from_url(f"mqtts://u:pa%20ss%23@broker.example:8883?ca={ca}")))
    assert "remote_password pa ss#" in conf and f"bridge_cafile {ca}" in conf


def test_a_host_with_a_space_would_be_two_addresses_and_is_refused():
    with pytest.raises(BrokerError, match="host holds a space"):
        bridge_config(BrokerEndpoint(host="10.0.0.5 10.0.0.6"))
    with pytest.raises(BrokerError, match="--host"):
        EmbeddedBroker(host="127.0.0.1\nallow_anonymous true")


def test_config_value_bounds_the_length_as_mosquitto_does():
    assert config_value("x", "a" * CONFIG_VALUE_MAX_BYTES) == "a" * CONFIG_VALUE_MAX_BYTES
    with pytest.raises(BrokerError, match="longer than 65535 bytes"):
        config_value("x", "é" * (CONFIG_VALUE_MAX_BYTES // 2 + 1))
    with pytest.raises(BrokerError, match="empty"):
        config_value("x", "")


def test_an_unparsable_url_never_quotes_its_password():
    for url in ("mqtt://bridge:s3cret/plugin@127.0.0.1:1883", "mqtt://u:s3cret@h:99999", "mqtt://u:s3cret@h:x"):
        with pytest.raises(BrokerError) as refused:
            BrokerEndpoint.from_url(url)
        assert "s3cret" not in str(refused.value) and ":***@" in str(refused.value)
