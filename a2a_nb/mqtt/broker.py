"""Where the broker is: an embedded Mosquitto on a free loopback port, or any MQTT v5 broker named by
``A2A_BROKER_URL``.

The embedded broker gets a generated config (MQTT v5 is Mosquitto 2's default; ``set_tcp_nodelay
true`` avoids the 40 ms Nagle/delayed-ACK trap; persistence off; logs in a temp dir that stays
writable after Mosquitto drops root privileges). It is started, waited for until it accepts TCP
connections, and stopped by a context manager or at interpreter exit.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..error_base import A2ANbError
from .failover import split_urls

ENV_URL = "A2A_BROKER_URL"
ENV_CA = "A2A_BROKER_CA"
ENV_CREDENTIALS = "A2A_BROKER_CREDENTIALS"
"""Path of a ``credentials.json`` written by ``broker --secure``: agents whose URL has no username log
in as themselves from it (see :func:`login_from_file`)."""

INSTALL_HINT = (
    "install it with `sudo apt-get install mosquitto` (Debian/Ubuntu), `brew install mosquitto` "
    "(macOS) or `conda install -c conda-forge mosquitto`, or point the kit at a running MQTT v5 "
    "broker with A2A_BROKER_URL=mqtt://host:1883"
)


class BrokerError(A2ANbError, RuntimeError):
    """The broker cannot be started or reached; the message says what to do about it."""


CONFIG_VALUE_MAX_BYTES = 65535
"""The longest value Mosquitto 2 reads from a config line (and the longest MQTT string)."""


def config_value(what: str, value: str, *, token: bool = False) -> str:
    """``value``, checked to be read back by Mosquitto 2 as exactly this one value of one
    ``mosquitto.conf`` line; else :class:`BrokerError` naming ``what`` (never the value: it may be a password).

    A config file has no escapes: Mosquitto reads one option per line (a newline starts the next
    option, so ``s3cret%0Aallow_anonymous%20true`` in a URL's password would add a line of its own),
    trims blanks at both ends, takes a string option up to the end of its line (at most 65,535 bytes
    of UTF-8) and splits other options at spaces. So every value the kit writes from user input (a
    URL's host, user, password, a CA path, ``--host``) is data: one with a control character, blanks
    at either end, nothing at all or, when ``token``, a space inside, is refused, never rewritten.
    """
    for at, char in enumerate(value):
        if unicodedata.category(char) in ("Cc", "Cs"):  # C0 (newline, CR, tab, NUL), DEL, C1, lone surrogates
            raise BrokerError(f"{what} holds a control character (U+{ord(char):04X} at position {at + 1}): "
                              "it would not stay one value of Mosquitto's config; remove it")
        if token and char == " ":
            raise BrokerError(f"{what} holds a space (position {at + 1}): Mosquitto would read two values")
    if value != value.strip(" ") or not value:
        raise BrokerError(f"{what} is empty or starts or ends with a space: Mosquitto would trim it")
    if len(value.encode("utf-8")) > CONFIG_VALUE_MAX_BYTES:
        raise BrokerError(f"{what} is longer than {CONFIG_VALUE_MAX_BYTES} bytes, more than Mosquitto reads")
    return value


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600: it may hold a password), owned by
    the user Mosquitto runs as when started as root (it drops privileges, and re-reads its config as
    that user on SIGHUP)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT
        f.write(text)
    if os.geteuid() == 0:
        uid, gid = _mosquitto_user()
        os.chown(path, uid, gid)


@dataclass(frozen=True)
class BrokerEndpoint:
    """How to reach a broker: ``mqtt://[user:pass@]host:port`` or ``mqtts://...`` (TLS).

    A CA file for ``mqtts`` comes from ``?ca=/path`` in the URL or from ``A2A_BROKER_CA``.
    ``inflight`` is how many QoS 1 publishes a client keeps unacknowledged: it must not exceed the
    broker's Receive Maximum (MQTT v5 §3.3.4). Unknown brokers get 20 (paho's default; most brokers
    allow more: ``?inflight=N`` raises it); the embedded Mosquitto allows any number, which is 0
    here: paho's "no limit", also its fast path (with a limit it rescans its queue on every PUBACK).
    """

    host: str = "127.0.0.1"
    port: int = 1883
    tls: bool = False
    username: Optional[str] = None
    password: Optional[str] = None
    ca_file: Optional[str] = None
    inflight: int = 20
    username_is_client_id: bool = False  # the broker renames clients after their login (secure broker)
    ca_from: str = field(default="", compare=False)  # where ca_file was named, for error messages
    alternates: tuple["BrokerEndpoint", ...] = ()
    """The other brokers of a comma-separated URL list, in order: where a session fails over to (``failover.py``)."""

    @classmethod
    def from_url(cls, url: str) -> "BrokerEndpoint":
        """One broker URL, or a comma-separated list of them (the first, with the rest as ``alternates``;
        all ``mqtt://`` or all ``mqtts://``: a session keeps one TLS setting)."""
        first, *rest = split_urls(url) or [url]
        endpoint = cls._from_one_url(first)
        if not rest:
            return endpoint
        alternates = tuple(cls._from_one_url(u) for u in rest)
        if any(a.tls != endpoint.tls for a in alternates):
            raise BrokerError("a broker list mixes mqtt:// and mqtts:// URLs: a session keeps one TLS setting, so "
                              "list brokers of one kind")
        return replace(endpoint, alternates=alternates)

    @property
    def brokers(self) -> tuple["BrokerEndpoint", ...]:
        """This broker and its alternates, in the order a session tries them."""
        return (replace(self, alternates=()),) + self.alternates

    @classmethod
    def _from_one_url(cls, url: str) -> "BrokerEndpoint":
        parts = urlsplit(url.strip())
        shown = _without_password(url.strip())  # error messages never show a password
        if parts.scheme not in ("mqtt", "mqtts"):
            raise BrokerError(
                f"broker URL {shown!r} must start with mqtt:// or mqtts:// (for example mqtt://127.0.0.1:1883)"
            )
        if not parts.hostname:
            raise BrokerError(f"broker URL {shown!r} has no host (for example mqtt://127.0.0.1:1883)")
        tls = parts.scheme == "mqtts"
        try:
            port = parts.port or (8883 if tls else 1883)
        except ValueError:  # not its words: they quote the text after the colon, perhaps a password
            raise BrokerError(f"broker URL {shown!r} has an invalid port; the port is a number "
                              "from 1 to 65535, for example mqtt://127.0.0.1:1883") from None
        query = parse_qs(parts.query)
        ca = query.get("ca", [None])[0] or os.environ.get(ENV_CA) or None
        ca_from = "?ca= in the broker URL" if query.get("ca", [None])[0] else ENV_CA if ca else ""
        try:
            inflight = int(query.get("inflight", ["20"])[0])
        except ValueError:
            raise BrokerError(f"broker URL {shown!r}: inflight must be a number (0 = no limit)") from None
        return cls(
            host=parts.hostname,
            port=port,
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            ca_file=ca,
            inflight=inflight,
            ca_from=ca_from,
        )

    @property
    def url(self) -> str:
        """The URL without the password (safe to print)."""
        return self._url(show_password=False)

    @property
    def url_with_secret(self) -> str:
        return self._url(show_password=True)

    def _url(self, show_password: bool) -> str:
        auth = ""
        if self.username:
            auth = quote(self.username, safe="")
            if self.password:
                auth += ":" + (quote(self.password, safe="") if show_password else "***")
            auth += "@"
        host = f"[{self.host}]" if ":" in self.host else self.host
        params = []
        if self.ca_file and show_password:
            params.append(f"ca={self.ca_file}")
        if self.inflight != 20:
            params.append(f"inflight={self.inflight}")
        query = "?" + "&".join(params) if params else ""
        own = f"{'mqtts' if self.tls else 'mqtt'}://{auth}{host}:{self.port}{query}"
        return ",".join([own] + [a._url(show_password) for a in self.alternates])

    def ca_file_problem(self) -> Optional[str]:
        """Why ``ca_file`` cannot be used (it does not exist, is a folder, cannot be read), naming it;
        None when it can be read or there is none. The session asks before it loads the file, so a
        wrong path is named instead of ``[Errno 2] No such file or directory``."""
        if not self.ca_file:
            return None
        p = Path(self.ca_file)
        if not p.exists():
            why = "does not exist"
        elif p.is_dir():
            why = "is a folder, not a certificate file"
        elif not os.access(p, os.R_OK):
            why = "cannot be read (permissions)"
        else:
            return None
        named = f" ({self.ca_from})" if self.ca_from else ""
        return (f"the CA file {self.ca_file}{named} {why}: give the broker's CA certificate, for `broker --secure` "
                "the ca.crt its banner names")

    def with_credentials(self, username: str, password: str) -> "BrokerEndpoint":
        return replace(self, username=username, password=password)


def find_mosquitto() -> str:
    """Path of the ``mosquitto`` binary (Debian installs it in /usr/sbin, often not on PATH)."""
    found = shutil.which("mosquitto")
    if found:
        return found
    for candidate in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/opt/homebrew/sbin/mosquitto"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise BrokerError(f"mosquitto not found: {INSTALL_HINT}")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_accepts(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class EmbeddedBroker:
    """A private Mosquitto for this process (or for a notebook, a test session, a Binder pod).

    ``port=None`` picks a free loopback port. ``extra_config`` lines are appended to the generated
    config (the secure variant uses it for password files, ACLs and TLS listeners). ``broker_status``:
    load the ``a2a_status`` plugin where it can be built (``status_plugin.py``), so the broker marks
    each agent's card online/offline itself (Profile: Optional Broker-Managed Status).
    """

    def __init__(
        self,
        port: Optional[int] = None,
        host: str = "127.0.0.1",
        extra_config: str = "",
        listener_options: str = "allow_anonymous true",
        start_timeout: float = 10.0,
        workdir: Optional[str] = None,
        broker_status: bool = False,
    ):
        self.host = config_value("the address to listen on (--host)", host, token=True)
        self.broker_status = broker_status
        self._requested_port = port
        self.port: Optional[int] = None
        self.extra_config = extra_config
        self.listener_options = listener_options
        self.start_timeout = start_timeout
        self._workdir_arg = workdir
        self.workdir: Optional[Path] = None
        self._proc: Optional[subprocess.Popen] = None
        self._watchdog: Optional[subprocess.Popen] = None
        self.owned_paths: list[Path] = []  # temp folders this broker made; removed by stop()
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "EmbeddedBroker":
        with self._lock:
            if self.running:
                return self
            try:
                return self._start_locked()
            except BrokerError:
                paths, self.owned_paths = self.owned_paths, []
                for path in paths:
                    shutil.rmtree(path, ignore_errors=True)
                raise

    def _start_locked(self) -> "EmbeddedBroker":
        """The start-up steps; runs under ``self._lock``."""
        binary = find_mosquitto()
        if self._workdir_arg:
            self.workdir = Path(self._workdir_arg)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="a2a-nb-broker-"))
            self.owned_paths.append(self.workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        _make_writable_after_privilege_drop(self.workdir)
        attempts = 1 if self._requested_port else 5
        last_error = ""
        for _ in range(attempts):
            port = self._requested_port or free_port(self.host)
            if self._requested_port and port_accepts(self.host, port):
                raise BrokerError(
                    f"port {port} on {self.host} is already in use (another broker?): pick another "
                    "port with --port, or leave it out to use a free one"
                )
            started, last_error = self._launch(binary, port)
            if started:
                self.port = port
                atexit.register(self.stop)
                return self
            if "Address already in use" not in last_error:
                break
        if "Address already in use" in last_error:
            raise BrokerError(
                f"port {self._requested_port or port} is already in use: pick another port with --port, "
                "or leave it out to use a free one"
            )
        raise BrokerError(f"mosquitto did not start: {last_error.strip() or 'no log output'}")

    def _launch(self, binary: str, port: int) -> tuple[bool, str]:
        assert self.workdir is not None
        conf = self.workdir / "mosquitto.conf"
        log = self.workdir / "mosquitto.log"
        if log.exists():
            log.unlink()
        write_private(conf, self.config_text(port))
        self._proc = subprocess.Popen(
            [binary, "-c", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._watchdog = _watchdog(self._proc.pid)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = (self._proc.stderr.read() or b"").decode(errors="replace") if self._proc.stderr else ""
                text = err + (log.read_text(errors="replace") if log.exists() else "")
                self._proc = None
                return False, text
            if port_accepts(self.host, port):
                return True, ""
            time.sleep(0.02)
        self._terminate()
        return False, f"no connection accepted on {self.host}:{port} within {self.start_timeout:.0f} s"

    def config_text(self, port: int) -> str:
        assert self.workdir is not None
        lines = [
            "# generated by a2a_nb: a private broker for one notebook or test session",
            "per_listener_settings false",
            "persistence false",
            "set_tcp_nodelay true",
            f"log_dest file {config_value('the broker folder', str(self.workdir / 'mosquitto.log'))}",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            "max_keepalive 65535",
            "# streams burst: no Receive Maximum, and QoS 1 messages queue for a slow subscriber instead of being dropped",
            "max_inflight_messages 0",
            "max_queued_messages 100000",
            self._status_plugin_line(),
            f"listener {port} {config_value('the address to listen on (--host)', self.host, token=True)}",
            "protocol mqtt",
            self.listener_options,
            self.extra_config,
        ]
        return "\n".join(line for line in lines if line) + "\n"

    def _status_plugin_line(self) -> str:
        if not self.broker_status:
            return ""
        from .status_plugin import plugin_path

        built = plugin_path()
        if built is None:
            return ""
        assert self.workdir is not None
        path = self.workdir / built.name  # Mosquitto loads it after dropping root: a copy it can read
        shutil.copyfile(built, path)
        path.chmod(0o644)
        return f"plugin {path}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def endpoint(self) -> BrokerEndpoint:
        if self.port is None:
            raise BrokerError("the embedded broker is not started; call start() first")
        return BrokerEndpoint(host=self.host, port=self.port, inflight=0)  # our config: no Receive Maximum

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def log_path(self) -> Optional[Path]:
        return self.workdir / "mosquitto.log" if self.workdir else None

    def log_text(self) -> str:
        path = self.log_path
        return path.read_text(errors="replace") if path and path.exists() else ""

    def stop(self) -> None:
        """Stop the broker and remove the temp folders it made (its config, log, and for the secure
        variant its keys and passwords: nothing is left behind in /tmp)."""
        with self._lock:
            self._terminate()
            paths, self.owned_paths = self.owned_paths, []
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)

    def crash(self) -> None:
        """Kill the broker without a word (SIGKILL), as a crash or a pulled plug does: clients lose
        their connections with no DISCONNECT, wills are not sent by a clean shutdown either. For fault
        tests; ``restart()`` (or ``start()``) brings it back on the same port."""
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)

    def restart(self, pause: float = 0.0) -> None:
        """Stop, stay down ``pause`` seconds, start again on the same port (fault tests: clients
        must reconnect)."""
        port = self.port
        with self._lock:
            self._terminate()
        if pause > 0:
            time.sleep(pause)
        self._requested_port = port
        self.start()

    def _terminate(self) -> None:
        watchdog, self._watchdog = getattr(self, "_watchdog", None), None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait(timeout=5)
            if watchdog.stdin:
                watchdog.stdin.close()
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stderr:
            proc.stderr.close()

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self.running else "stopped"
        return f"<EmbeddedBroker {state}>"


def _watchdog(pid: int) -> Optional[subprocess.Popen]:
    """A tiny ``sh`` that stops the broker when this process dies, however it dies: it waits on a
    pipe only we hold, and the kernel closes it with us (a SIGKILLed notebook kernel runs no
    ``atexit``; the kernel's parent-death signal would not do, as Mosquitto drops root privileges)."""
    try:
        return subprocess.Popen(["sh", "-c", f"read _; kill -TERM {pid} 2>/dev/null"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None


def _mosquitto_user() -> tuple[int, int]:
    """The user and group Mosquitto started as root drops to: ``mosquitto``, else ``nobody``."""
    import pwd

    for name in ("mosquitto", "nobody"):
        try:
            user = pwd.getpwnam(name)
            return user.pw_uid, user.pw_gid
        except KeyError:
            continue
    return os.geteuid(), os.getegid()


def _make_writable_after_privilege_drop(path: Path) -> None:
    """Mosquitto started as root drops to the ``mosquitto`` user: it must still write its log. The
    folder stays private (0700) to that user: its config may hold a password."""
    if os.geteuid() != 0:
        return
    try:
        uid, gid = _mosquitto_user()
        os.chown(path, uid, gid)
        os.chmod(path, 0o700)
    except OSError:
        os.chmod(path, 0o1777)


_shared: Optional[EmbeddedBroker] = None
_shared_lock = threading.Lock()


def shared_broker() -> EmbeddedBroker:
    """The process-wide embedded broker, started on first use and stopped at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = EmbeddedBroker().start()
        return _shared


def _without_password(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: whatever follows ``user:`` up to the last
    ``@`` (a password with a ``/``, ``?`` or ``#`` not written ``%2F``... ends URL parsing early, and the
    error about that URL must not show it either)."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    userinfo, host = rest.rsplit("@", 1)
    if ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


def resolve(url: Optional[str] = None, client_id: Optional[str] = None) -> BrokerEndpoint:
    """The broker to use: an explicit URL, else ``A2A_BROKER_URL``, else the embedded Mosquitto.

    With ``client_id`` (a :class:`~a2a_nb.mqtt.session.Session` passes its own) and
    ``A2A_BROKER_CREDENTIALS`` set, a URL without a username gets that client's own login from the
    credentials file: every agent started in another shell connects as itself, never with somebody
    else's identity (Profile: Client Session Requirements 3, one Client ID per agent).
    """
    if url is not None and not isinstance(url, str):
        raise TypeError(f"broker: a URL such as 'mqtt://127.0.0.1:1883' (a str) or a BrokerEndpoint, "
                        f"not {type(url).__name__}")
    url = url or os.environ.get(ENV_URL)
    endpoint = BrokerEndpoint.from_url(url) if url else shared_broker().endpoint
    credentials = os.environ.get(ENV_CREDENTIALS)
    if client_id is None or endpoint.username or not credentials:
        return endpoint
    return login_from_file(endpoint, credentials, client_id)


def login_from_file(endpoint: BrokerEndpoint, path: str, client_id: str) -> BrokerEndpoint:
    """``endpoint`` with the login of ``client_id`` (``{org}/{unit}/{agent}``) from a ``credentials.json``
    written by :class:`~a2a_nb.mqtt.secure.SecureBroker` (``{"ca": path, "users": {username: password}}``).

    The secure broker renames every client after its username (``use_username_as_clientid``), so the
    username must be the client's own ID; the file's CA is used unless the URL names one.
    """
    import json

    try:
        data = json.loads(Path(path).read_text())
        users, ca = data["users"], data.get("ca")
    except OSError as exc:
        raise BrokerError(f"{ENV_CREDENTIALS}={path}: cannot read it ({exc.strerror or exc}); it is the "
                          "credentials.json that `python -m a2a_nb broker --secure` printed") from None
    except (ValueError, KeyError, TypeError):
        raise BrokerError(f"{ENV_CREDENTIALS}={path} is not a credentials.json written by "
                          "`python -m a2a_nb broker --secure`") from None
    if client_id not in users:
        raise BrokerError(f"{ENV_CREDENTIALS}={path} has no login for {client_id}: the secure broker issues "
                          "logins for the story's cast only (ticket-desk, analyst-1.., coordinator, cli, "
                          "echo, ...); use one of those agent names, or put user:password in the URL")
    return replace(endpoint, username=client_id, password=users[client_id], ca_file=endpoint.ca_file or ca,
                   username_is_client_id=True, ca_from=endpoint.ca_from if endpoint.ca_file else f"named in {path}",
                   alternates=tuple(login_from_file(a, path, client_id) for a in endpoint.alternates))
