"""Broker-managed status for the kit's embedded Mosquitto: the ``a2a_status`` plugin, built on demand.

Profile: Optional Broker-Managed Status via MQTT User Properties (Extended conformance 2). The plugin
(``plugins/a2a_status.c``, about 350 lines of C against Mosquitto 2.0's plugin API) makes the broker
mark each agent's card ``a2a-status=online``/``a2a-status-source=broker`` while the agent is connected
and publish it ``offline`` (source ``broker``) the moment its connection ends. It keeps a bounded copy
of each card (64 KiB payload, 4 KiB properties, 1,024 agents: ``docs/surfaces-retained.md``), and it
refuses (PUBACK 135) any PUBLISH with U+FEFF in a property string, which paho-mqtt 2.2 clients cannot
receive (``docs/paho-feff-bug.md``).

:func:`plugin_path` compiles it once per source version with the system C compiler into the user's
cache folder (``$XDG_CACHE_HOME/a2a_nb``, else ``~/.cache/a2a_nb``) and returns the shared library, or
None with the reason (:func:`unavailable_reason`) when no compiler or no Mosquitto headers are there
(Debian: ``apt-get install gcc mosquitto-dev libmosquitto-dev``). The broker then runs without it:
agents' own status still works; only the broker's word is missing.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("plugins") / "a2a_status.c"
HEADERS = ("mosquitto.h", "mosquitto_broker.h", "mosquitto_plugin.h", "mqtt_protocol.h")
BUILD_TIMEOUT_S = 60.0

_lock = threading.Lock()
_built: Optional[Path] = None
_why_not: Optional[str] = None


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "a2a_nb"


def plugin_path() -> Optional[Path]:
    """The built plugin (compiled on first use; later calls and processes reuse it), or None."""
    global _built, _why_not
    with _lock:
        if _built is not None or _why_not is not None:
            return _built
        try:
            _built = _build()
        except _Unavailable as exc:
            _why_not = str(exc)
            log.warning("broker-managed status is off: %s", exc)
        return _built


def unavailable_reason() -> Optional[str]:
    """Why :func:`plugin_path` returned None (None while it has not been asked, or when it built)."""
    return _why_not


class _Unavailable(Exception):
    pass


def _build() -> Path:
    source = SOURCE.read_bytes()
    target = cache_dir() / f"a2a_status-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise _Unavailable("no C compiler to build the a2a_status plugin (apt-get install gcc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="a2a_status-", suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", tmp, str(SOURCE)],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if done.returncode != 0:
            missing = [h for h in HEADERS if h in done.stderr]
            hint = (f"the Mosquitto plugin headers are missing ({', '.join(missing)}): apt-get install mosquitto-dev "
                    "libmosquitto-dev" if missing else " ".join(done.stderr.strip().splitlines()[-1:]))
            raise _Unavailable(f"the a2a_status plugin did not build: {hint}")
        os.replace(tmp, target)  # atomic: a process that finds the file finds it whole
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _Unavailable(f"the a2a_status plugin did not build: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
