"""The notebook's view of one MQTT message never shows a bearer token (Profile: OAuth 2.0 and OIDC
over MQTT User Properties 6)."""
from a2a_nb.notebook.display import mqtt_properties_rows
from a2a_nb.protocol.packet import MqttMessage


def test_user_property_rows_are_redacted_in_any_letter_case():
    msg = MqttMessage("$a2a/v1/request/acme/support/echo", b"{}", user_properties=(
        ("a2a-authorization", "Bearer secret"), ("A2A-Authorization", "Bearer other"), ("a2a-task-id", "t1")))
    rows = dict(mqtt_properties_rows(msg))
    assert rows["user property a2a-authorization"] == rows["user property A2A-Authorization"] == "[redacted]"
    assert rows["user property a2a-task-id"] == "t1"
    assert "secret" not in repr(rows) and "other" not in repr(rows)


def test_the_packet_bytes_view_adds_up_to_the_packet_and_never_shows_a_token():
    from a2a_nb.mqtt.wire import encode_publish
    from a2a_nb.notebook.display import publish_bytes_html

    msg = MqttMessage("$a2a/v1/request/acme/support/desk", b'{"jsonrpc":"2.0"}', response_topic="$a2a/v1/reply/a/b/c/d",
                      correlation_data=b"ab" * 16, message_expiry=20,
                      user_properties=(("a2a-authorization", "Bearer s3cret"), ("a2a-task-id", "t1")))
    page = publish_bytes_html(msg, mid=1)
    assert "s3cret" not in page and "a2a-authorization=[redacted]" in page
    assert "<code>02 00 00 00 14</code>" in page  # Message Expiry Interval: identifier 0x02, then 20 as 4 bytes
    assert "<code>09 00 20 + 32 bytes</code>" in page  # Correlation Data: identifier, length 32, the 32 bytes
    assert "<code>17 bytes</code>" in page and '<code>{&quot;jsonrpc&quot;:&quot;2.0&quot;}</code>' in page  # the payload
    plain = MqttMessage("t", b"{}", qos=0)
    assert f"{len(encode_publish(plain))} bytes in all" in publish_bytes_html(plain)
