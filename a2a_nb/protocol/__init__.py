"""The sans-I/O core: every rule of the A2A over MQTT profile as pure functions and values.

No sockets, threads or paho here (docs/architecture.md, principle 1). A notebook can build and show
any message with these modules before anything is sent, and a unit test can check each rule in
microseconds. Docstrings cite the profile by section and rule (``Profile: Request/Reply Mapping 3``);
docs/profile.md links each section to its public text and to the modules that implement it.
"""
from . import cards, errors, ids, jsonrpc, messages, packet, properties, retry, states, topics
from .errors import A2AError
from .ids import IdSource, InvalidIdentifier
from .packet import MqttMessage, encode_json
from .retry import RetryProfile

__all__ = [
    "cards", "errors", "ids", "jsonrpc", "messages", "packet", "properties", "retry", "states",
    "topics", "A2AError", "IdSource", "InvalidIdentifier", "MqttMessage", "encode_json",
    "RetryProfile",
]
