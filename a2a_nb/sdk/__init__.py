"""The official ``a2a-sdk`` over MQTT: an MQTT transport for its client, and any ``AgentExecutor``
served on the profile.

* Client: ``client = await sdk.connect(card)`` (or register ``sdk.mqtt_transport_producer()`` on
  your own ``ClientFactory`` under :data:`~a2a_nb.protocol.card_interface.MQTT_BINDING`) gives the
  SDK's ``Client``; its calls travel over MQTT v5 through the kit's :class:`~a2a_nb.agents.requester.Requester`
  (Response Topic + Correlation Data, requester-made Task.id, retries, handover followed).
* Server: ``sdk.serve(executor, card)`` puts an ``AgentExecutor`` behind the kit's
  :class:`~a2a_nb.agents.responder.Responder` (retained card, presence and Last Will, task store,
  idempotent resend, GetTask / CancelTask / ListTasks, pools); ``python -m a2a_nb serve-sdk module:factory``.

Needs the ``sdk`` extra (``a2a-sdk``, ``protobuf``); nothing here is imported by the rest of the kit.
"""
from .client import MqttTransport, connect, mqtt_client_factory, mqtt_transport_producer
from .server import ExecutorHandler, ServedExecutor, serve

__all__ = ["MqttTransport", "connect", "mqtt_client_factory", "mqtt_transport_producer", "ExecutorHandler", "ServedExecutor",
           "serve"]
