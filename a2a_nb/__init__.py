"""a2a_nb: learn the A2A protocol over MQTT v5 in Jupyter notebooks.

The protocol rules live in :mod:`a2a_nb.protocol` (pure functions), the MQTT edge in
:mod:`a2a_nb.mqtt`, the agents in :mod:`a2a_nb.agents`, recordings and charts in
:mod:`a2a_nb.traffic`.
"""
from .mqtt.session import stop_all

__version__ = "0.1.0"
__all__ = ["stop_all", "__version__"]
