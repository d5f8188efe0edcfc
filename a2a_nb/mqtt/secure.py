"""A secured Mosquitto: TLS only, one password per agent, and topic rights derived from identity.

What :class:`SecureBroker` generates in its work folder (and keeps across ``restart()``):

* ``ca.crt`` / ``ca.key``: a throw-away certificate authority (EC P-256), made with ``cryptography``;
* ``server.crt`` / ``server.key``: the broker's certificate, SAN ``127.0.0.1``, ``::1`` and ``localhost``;
* ``passwd``: the Mosquitto password file (PBKDF2-SHA512 ``$7$`` hashes, by ``mosquitto_passwd`` when
  it is installed, else by :func:`hash_password`, the same format written in Python);
* ``acl``: the topic rights (below); ``credentials.json`` (mode 0600): every agent's password, for
  agents started in another shell.

**Identity.** Each agent logs in with username ``{org}/{unit}/{agent}``; the listener sets
``use_username_as_clientid true``, so the broker replaces whatever Client ID a client sent with its
username. The Client ID the profile asks for (``{org}/{unit}/{agent}``, Client Session Requirements 3)
is thereby *proven* by the password: nobody can take over another agent's Client ID, and ``%u`` in
the ACL is the agent's own ``{org}/{unit}/{agent}``.

**Topic rights** (Mosquitto checks reads at delivery time: a SUBSCRIBE to someone else's topic is
acknowledged, but nothing that the ACL does not allow is ever delivered)::

    pattern read      $a2a/v1/request/%u        only my own request topic
    pattern read      $a2a/v1/reply/%u/#        only my own reply topics
    pattern write     $a2a/v1/discovery/%u      only my own card (and my last will)
    pattern readwrite $a2a/v1/event/%u          my events
    pattern readwrite $a2a-nb-probe/%u          my pool start-up probe (outside $a2a/)
    (every user)      write $a2a/v1/request/#   requests to any agent or pool
    (every user)      write $a2a/v1/reply/#     replies to any Response Topic
    (every user)      read  $a2a/v1/discovery/# every card
    (every user)      read  $a2a/v1/event/#     every event
    (pool members)    read  $a2a/v1/request/{org}/{unit}/pool/{pool}
    (pool members)    write $a2a-nb-pool/{org}/{unit}/{pool}/{agent}   its claims of pooled requests
    (pool members)    read  $a2a-nb-pool/{org}/{unit}/{pool}/+         the other members' claims
    (observers)       read  $a2a/#              e.g. the traffic recorder

An agent with valid credentials therefore cannot read another agent's requests (and the bearer
tokens in them) or replies, and cannot publish or delete another agent's card. It *can* publish a
reply to another agent's reply topic: a responder must be able to answer any Response Topic. The
requester ignores replies whose Correlation Data it did not send; the optional ``ubsp-v1`` profile
(end-to-end JWE) is what closes that gap in full.

**Pools** (``a2a_nb.protocol.pools``): a login that is not a pool member can neither read the pool's
requests nor write its claims; it can announce a presence only on its own event topic, under its own
name, which the members' allow-list does not count. So no client outside ``pools`` can make the
members leave requests unclaimed, and a member that stops answering has its requests taken over.

**One listener.** The broker listens with TLS only; there is no plain listener. The kit's start-up
check only opens a TCP connection to the port (no MQTT), which the TLS listener accepts as well.

Credentials for the story's cast are made at start; ``credentials(agent)`` makes more on demand
(password file + ACL rewritten, then Mosquitto reloads them on SIGHUP, and the call returns once the
broker logged the reload).
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from ..protocol import pools as pool_claims
from ..protocol.ids import client_id as make_client_id
from .broker import BrokerEndpoint, BrokerError, EmbeddedBroker

ORG, UNIT = "acme", "support"

DESK_ANALYSTS: tuple[str, ...] = ("analyst-1", "analyst-2", "analyst-3", "analyst-4")
"""The ticket desk's analyst slots at its default capacity (``story.cast.MAX_ANALYSTS``; a test checks
they agree): pre-issued, so a desk served in another shell logs each analyst in as itself."""

CLI_LOGINS: tuple[str, ...] = ("cli", *(f"cli-{n}" for n in range(2, 9)))
"""The logins of ``python -m a2a_nb send``: one per command running at once (the broker renames every
client after its login, so two sends with one login would take each other's session over); each
``send`` claims a free one (``a2a_nb.commands.sender_slots``)."""

CAST: tuple[str, ...] = (
    "ticket-desk", *DESK_ANALYSTS, "coordinator", "coordinator-discovery", "discovery", "echo", *CLI_LOGINS, "bridge",
    "analyst-analysts-1", "analyst-analysts-2", "analyst-analysts-3", "analyst-analysts-4",
)
"""Agents of the story that get credentials at start (any other agent: ``credentials(agent)``);
``cli`` .. ``cli-8`` are ``python -m a2a_nb send`` (:data:`CLI_LOGINS`), ``bridge`` is ``python -m a2a_nb bridge``."""

POOLS: Mapping[str, tuple[str, ...]] = {
    "analysts": ("analyst-analysts-1", "analyst-analysts-2", "analyst-analysts-3", "analyst-analysts-4"),
}
"""Pool id -> the agents allowed to read its request topic."""

PBKDF2_ITERATIONS = 101  # mosquitto_passwd's default for $7$
SALT_BYTES = 12
HASH_BYTES = 64


# -- passwords ----------------------------------------------------------------------------------------
def hash_password(password: str, salt: Optional[bytes] = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """Mosquitto 2.0's ``$7$`` hash: ``$7$<iterations>$<base64 salt>$<base64 PBKDF2-HMAC-SHA512>``."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations, HASH_BYTES)
    return f"$7${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_password(password: str, hashed: str) -> bool:
    """Check a password against a ``$7$`` hash (what Mosquitto does at CONNECT)."""
    try:
        _, kind, iterations, salt, digest = hashed.split("$")
    except ValueError:
        return False
    if kind != "7":
        return False
    expected = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), base64.b64decode(salt), int(iterations),
                                   len(base64.b64decode(digest)))
    return secrets.compare_digest(expected, base64.b64decode(digest))


def find_mosquitto_passwd() -> Optional[str]:
    found = shutil.which("mosquitto_passwd")
    if found:
        return found
    for candidate in ("/usr/bin/mosquitto_passwd", "/usr/local/bin/mosquitto_passwd",
                      "/opt/homebrew/bin/mosquitto_passwd"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def write_password_file(path: Union[str, Path], users: Mapping[str, str], use_tool: Optional[bool] = None) -> str:
    """Write ``username:hash`` lines for ``users`` (username -> password). Returns which hasher ran:
    ``"mosquitto_passwd"`` when installed (unless ``use_tool=False``), else ``"python"``."""
    path = Path(path)
    for name in users:
        if ":" in name or "\n" in name or not name:
            raise ValueError(f"a Mosquitto username cannot be empty or contain ':' or a newline: {name!r}")
    tool = find_mosquitto_passwd() if use_tool is not False else None
    if use_tool and tool is None:
        raise BrokerError("mosquitto_passwd is not installed")
    if tool is not None:
        path.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
        os.chmod(path, 0o600)
        done = subprocess.run([tool, "-U", str(path)], capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            return "mosquitto_passwd"
        path.unlink(missing_ok=True)  # never leave plain passwords behind
        if use_tool:
            raise BrokerError(f"mosquitto_passwd failed: {done.stderr.strip()}")
    path.write_text("".join(f"{u}:{hash_password(p)}\n" for u, p in users.items()))
    os.chmod(path, 0o600)
    return "python"


# -- ACL ----------------------------------------------------------------------------------------------
def acl_text(users: Iterable[str], pools: Optional[Mapping[str, Iterable[str]]] = None,
             observers: Iterable[str] = ()) -> str:
    """The Mosquitto ACL file (see the module docstring). ``users`` and the members in ``pools``
    (pool id -> usernames allowed to read that pool's request topic) are ``{org}/{unit}/{agent}``."""
    lines = [
        "# generated by a2a_nb.mqtt.secure: username = Client ID = {org}/{unit}/{agent}",
        "# (use_username_as_clientid true), so %u below is the agent's own identity.",
        "pattern read $a2a/v1/request/%u",
        "pattern read $a2a/v1/reply/%u/#",
        "pattern write $a2a/v1/discovery/%u",
        "pattern readwrite $a2a/v1/event/%u",
        "# the pool members' start-up probe (does $share deliver on $ topics?), see Responder._join_pool",
        "pattern readwrite $a2a-nb-probe/%u",
    ]
    pool_rights: dict[str, list[str]] = {}
    for pool, members in dict(pools or {}).items():
        for member in members:
            org, unit, agent = member.split("/", 2)
            pool_rights.setdefault(member, []).extend([
                f"topic read $a2a/v1/request/{org}/{unit}/pool/{pool}",
                f"topic write {pool_claims.claims_topic(org, unit, pool, agent)}",
                f"topic read {pool_claims.claims_filter(org, unit, pool)}"])
    observers = set(observers)
    for user in sorted(set(users)):
        lines += ["", f"user {user}",
                  "topic write $a2a/v1/request/#",
                  "topic write $a2a/v1/reply/#",
                  "topic read $a2a/v1/discovery/#",
                  "topic read $a2a/v1/event/#"]
        lines += pool_rights.get(user, [])
        if user in observers:
            lines.append("topic read $a2a/#")
    return "\n".join(lines) + "\n"


# -- certificates -------------------------------------------------------------------------------------
def make_certificates(folder: Union[str, Path], hosts: Iterable[str] = ("127.0.0.1", "::1", "localhost"),
                      days: int = 30) -> dict[str, Path]:
    """A CA and a server certificate it signed (EC P-256), written as PEM files in ``folder``.

    Returns the paths: ``ca`` (the file clients trust), ``ca_key``, ``cert``, ``key``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    now = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "a2a_nb"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "a2a_nb teaching CA")])
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now)
        .not_valid_after(now + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a2a_nb broker")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + _dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    plain = serialization.NoEncryption()
    pkcs8 = serialization.PrivateFormat.PKCS8
    paths = {"ca": folder / "ca.crt", "ca_key": folder / "ca.key", "cert": folder / "server.crt",
             "key": folder / "server.key"}
    paths["ca"].write_bytes(ca_cert.public_bytes(pem))
    paths["cert"].write_bytes(cert.public_bytes(pem))
    for name, k in (("ca_key", ca_key), ("key", key)):
        paths[name].write_bytes(k.private_bytes(pem, pkcs8, plain))
        os.chmod(paths[name], 0o600)
    return paths


def _give_to_mosquitto(*paths: Path) -> None:
    """Started as root, Mosquitto drops to the ``mosquitto`` user and reloads files as that user."""
    if os.geteuid() != 0:
        return
    try:
        import pwd

        user = pwd.getpwnam("mosquitto")
    except (KeyError, ImportError):
        for p in paths:
            os.chmod(p, 0o644)
        return
    for p in paths:
        os.chown(p, user.pw_uid, user.pw_gid)


# -- the broker ---------------------------------------------------------------------------------------
class SecureBroker(EmbeddedBroker):
    """A private Mosquitto with TLS, passwords and identity-derived ACLs (see the module docstring).

    ``cast`` agents (in ``org``/``unit``) get credentials at start; ``pools`` maps a pool id to the
    agents allowed to consume it; ``observers`` may read every ``$a2a/#`` topic (a recorder).
    ``broker.credentials("ticket-desk")`` is the :class:`BrokerEndpoint` that agent connects with.
    ``broker_status``: load the ``a2a_status`` plugin where it can be built (``status_plugin.py``): the
    broker marks cards online/offline itself and refuses PUBLISHes that paho clients cannot read
    (U+FEFF in a property: ``docs/surfaces-retained.md``).
    """

    def __init__(self, port: Optional[int] = None, host: str = "127.0.0.1", *, org: str = ORG, unit: str = UNIT,
                 cast: Iterable[str] = CAST, pools: Mapping[str, Iterable[str]] = POOLS,
                 observers: Iterable[str] = ("recorder",), workdir: Optional[str] = None,
                 use_mosquitto_passwd: Optional[bool] = None, start_timeout: float = 10.0,
                 broker_status: bool = True):
        folder = Path(workdir or tempfile.mkdtemp(prefix="a2a-nb-secure-broker-"))
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(port=port, host=host, start_timeout=start_timeout, workdir=str(folder),
                         listener_options="", extra_config="", broker_status=broker_status)
        self.org, self.unit = org, unit
        self.folder = folder
        if workdir is None:
            self.owned_paths.append(folder)
        self._creds_lock = threading.RLock()
        self._passwords: dict[str, str] = {}
        self._pools: dict[str, list[str]] = {}
        self._observers: set[str] = set()
        self._use_tool = use_mosquitto_passwd
        self.hasher: Optional[str] = None
        self.reloads = 0
        self.files = make_certificates(folder, hosts=sorted({host, "127.0.0.1", "::1", "localhost"}))
        self.files.update(passwd=folder / "passwd", acl=folder / "acl", credentials=folder / "credentials.json")
        for agent in cast:
            self._add_user(self.username(agent))
        for pool, members in pools.items():
            self._pools[pool] = [self.username(m) for m in members]
            for m in self._pools[pool]:
                self._add_user(m)
        for agent in observers:
            self._observers.add(self._add_user(self.username(agent)))
        self._write_files()
        self.listener_options = "\n".join([
            "allow_anonymous false",
            "use_username_as_clientid true",
            f"cafile {self.files['ca']}",
            f"certfile {self.files['cert']}",
            f"keyfile {self.files['key']}",
            "require_certificate false",
        ])
        self.extra_config = f"password_file {self.files['passwd']}\nacl_file {self.files['acl']}"

    # -- identities --------------------------------------------------------------------------------
    def username(self, agent: str, org: Optional[str] = None, unit: Optional[str] = None) -> str:
        """``{org}/{unit}/{agent}``; a name that already has slashes is taken as it is."""
        if "/" in agent:
            return make_client_id(*agent.split("/", 2))
        return make_client_id(org or self.org, unit or self.unit, agent)

    def _add_user(self, username: str) -> str:
        if username not in self._passwords:
            self._passwords[username] = secrets.token_urlsafe(18)
        return username

    @property
    def users(self) -> list[str]:
        with self._creds_lock:
            return sorted(self._passwords)

    def credentials(self, agent: str, org: Optional[str] = None, unit: Optional[str] = None,
                    pools: Iterable[str] = ()) -> BrokerEndpoint:
        """The endpoint (TLS, CA file, username, password) for ``agent``; creates the account (and
        reloads the broker) when the agent is new or joins a new pool."""
        user = self.username(agent, org, unit)
        with self._creds_lock:
            changed = user not in self._passwords
            self._add_user(user)
            for pool in pools:
                members = self._pools.setdefault(pool, [])
                if user not in members:
                    members.append(user)
                    changed = True
            if changed:
                self._write_files()
                if self.running:
                    self.reload()
            password = self._passwords[user]
        return replace(self.endpoint.with_credentials(user, password), username_is_client_id=True)

    def _write_files(self) -> None:
        with self._creds_lock:
            self.hasher = write_password_file(self.files["passwd"], self._passwords, self._use_tool)
            self.files["acl"].write_text(acl_text(self._passwords, self._pools, self._observers))
            creds = self.files["credentials"]
            creds.write_text(json.dumps({"ca": str(self.files["ca"]), "users": self._passwords}, indent=1))
            os.chmod(creds, 0o600)
            _give_to_mosquitto(self.files["passwd"], self.files["acl"], self.files["key"], self.files["cert"],
                               self.files["ca"])

    # -- broker ------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> BrokerEndpoint:
        if self.port is None:
            raise BrokerError("the secure broker is not started; call start() first")
        # inflight=0: the generated config has no Receive Maximum (max_inflight_messages 0)
        return BrokerEndpoint(host=self.host, port=self.port, tls=True, ca_file=str(self.files["ca"]), inflight=0)

    @property
    def url(self) -> str:
        """``mqtts://host:port?ca=/path/ca.crt&...`` (no credentials: see ``credentials``)."""
        return self.endpoint.url_with_secret  # without a username there is no secret in it, only the CA path

    def reload(self, timeout: float = 5.0) -> None:
        """SIGHUP: Mosquitto re-reads the password file and the ACL; returns once it logged that."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        before = self.log_text().count("Reloading config")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_text().count("Reloading config") > before:
                # Mosquitto is single-threaded and re-reads the files right after logging this line,
                # before it handles any other client: a CONNECT sent from now on sees the new files.
                self.reloads += 1
                return
            time.sleep(0.01)
        raise BrokerError(f"mosquitto did not reload its password file within {timeout:.0f} s")

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self.running else "stopped"
        return f"<SecureBroker {state}, {len(self._passwords)} accounts>"
