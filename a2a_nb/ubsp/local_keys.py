"""ubsp-v1 on one machine, the way the command line uses it: a key home, a key server, one trust.

Profile: Optional Untrusted-Broker Security Profile 5-7; Security Metadata and Trust 1-3. The broker
may be anywhere and is not trusted; the keys are served by this machine. Every ``serve`` and ``send``
process of one user shares a *key home* (``A2A_UBSP_DIR``, default ``~/.a2a_nb/ubsp``):

* ``tls/``: a CA of the kit's own and a certificate for ``127.0.0.1`` it signed (made once, renewed
  when it is near its end); each process serves its agents' public keys over HTTPS with it;
* ``agents/``: each agent's private keys (mode 0600), so an agent keeps its identity across restarts,
  and beside them the ``jti`` values it opened (``*.seen``, :mod:`.replays`): a request captured on
  the broker is refused after a restart too, with or without ``--store``.

An agent's card (or a requester's key metadata) then holds only a ``jwksUri`` such as
``https://127.0.0.1:PORT/jwks/acme%2Fsupport%2Fecho.json``, and every process trusts exactly that:
HTTPS on ``127.0.0.1`` with a certificate from the home's CA. Whoever can write to the broker can
swap a card, but cannot serve keys from this machine with that CA: inline keys are not trusted.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional, Union

from ..mqtt.secure import make_certificates
from .key_server import KeyServer
from .keys import AgentKeys
from .protection import Ubsp
from .replays import KeptReplayCache
from .trust import KeyTrust

ENV_DIR = "A2A_UBSP_DIR"
CA_DAYS = 30
RENEW_DAYS = 5


def key_home() -> Path:
    """The folder ``A2A_UBSP_DIR`` names, else ``~/.a2a_nb/ubsp``."""
    return Path(os.environ.get(ENV_DIR) or Path.home() / ".a2a_nb" / "ubsp")


class LocalKeys:
    """The key home, opened by one process: its key server runs until :meth:`close`."""

    def __init__(self, home: Union[str, Path, None] = None):
        self.home = Path(home) if home is not None else key_home()
        tls = _certificates(self.home / "tls")
        self.server = KeyServer(tls)
        self.trust = KeyTrust(allowed_hosts=("127.0.0.1",), ca_file=str(tls["ca"]))

    def ubsp(self, org: str, unit: str, agent: str, trust: Optional[KeyTrust] = None) -> Ubsp:
        """``agent``'s ubsp-v1 protection: its keys (made on first use, then kept), served here, and
        the home's trust (``trust``: believe other key servers instead)."""
        name = f"{org}/{unit}/{agent}"
        keys = self._keys(name, agent)
        self.server.publish(name, keys.public_jwks())
        return Ubsp(keys, trust or self.trust, {"jwksUri": self.server.url_for(name)})

    def _keys(self, name: str, agent: str) -> AgentKeys:
        path = self.home / "agents" / (name.replace("/", ".") + ".jwks.json")
        replays = KeptReplayCache(path.with_name(name.replace("/", ".") + ".seen"))
        if path.exists():
            return AgentKeys(agent, json.loads(path.read_text()), replays=replays)
        keys = AgentKeys(agent, replays=replays)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_private(path, json.dumps(keys.private_jwks()))
        return keys

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> "LocalKeys":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _certificates(folder: Path) -> dict[str, Path]:
    """The home's CA and server certificate, made (or renewed) atomically: two processes starting
    at once end up with the same files."""
    paths = {"ca": folder / "ca.crt", "ca_key": folder / "ca.key", "cert": folder / "server.crt",
             "key": folder / "server.key"}
    if all(p.exists() for p in paths.values()) and not _near_end(paths["cert"]):
        return paths
    folder.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".tls-", dir=folder.parent))
    make_certificates(fresh, hosts=("127.0.0.1", "localhost"), days=CA_DAYS)
    if all(p.exists() for p in paths.values()) and not _near_end(paths["cert"]):
        shutil.rmtree(fresh, ignore_errors=True)  # another process made them meanwhile: never replace a good set
        return paths                               # (its key server already serves with that CA's certificate)
    old: Optional[Path] = None
    if folder.exists():
        old = folder.with_name(f".tls-old-{os.getpid()}")
        folder.rename(old)
    try:
        fresh.rename(folder)
    except OSError:  # another process was quicker: use its files
        shutil.rmtree(fresh, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return paths


def _near_end(cert: Path) -> bool:
    from cryptography import x509

    try:
        ends = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc
    except (ValueError, OSError):
        return True
    return ends - _dt.datetime.now(_dt.timezone.utc) < _dt.timedelta(days=RENEW_DAYS)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
