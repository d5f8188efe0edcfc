"""The I/O edge: where the broker is (``broker``) and the MQTT v5 client (``session``)."""
from .broker import BrokerEndpoint, BrokerError, EmbeddedBroker, resolve, shared_broker
from .session import PublishResult, Session, SessionError, Subscription, live_sessions, stop_all

__all__ = [
    "BrokerEndpoint", "BrokerError", "EmbeddedBroker", "resolve", "shared_broker",
    "PublishResult", "Session", "SessionError", "Subscription", "live_sessions", "stop_all",
]
