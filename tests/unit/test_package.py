"""The core stays sans-I/O: no paho, sockets, threads or a2a-sdk in a2a_nb/protocol."""
import ast
from pathlib import Path

import a2a_nb.protocol as protocol

MINE = ("ids", "topics", "properties", "jsonrpc", "errors", "states", "messages", "cards", "retry",
        "packet")
FORBIDDEN = ("paho", "socket", "threading", "asyncio", "subprocess", "a2a")


def test_reexports():
    for name in MINE:
        assert hasattr(protocol, name)
    assert protocol.MqttMessage is protocol.packet.MqttMessage
    assert protocol.A2AError is protocol.errors.A2AError
    assert protocol.IdSource is protocol.ids.IdSource
    assert protocol.RetryProfile is protocol.retry.RetryProfile


def test_core_modules_import_no_io():
    root = Path(protocol.__file__).parent
    for name in MINE + ("__init__",):
        tree = ast.parse((root / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module or ""]
            else:
                continue
            for m in mods:
                assert m.split(".")[0] not in FORBIDDEN, f"{name}.py imports {m}"
