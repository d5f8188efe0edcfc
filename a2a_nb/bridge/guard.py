"""Who may call the bridge: the Host a request names, the web page (Origin) it comes from, and the
media type of a JSON-RPC body.

The bridge listens on ``127.0.0.1``, but every web page the user visits runs in a browser on the
same machine. A page can POST to ``http://127.0.0.1:PORT/`` with ``Content-Type: text/plain`` (a
"simple" request: the browser sends it without asking first, only the answer is hidden from the
page), which started and cancelled tasks; and a page whose DNS name is rebound to 127.0.0.1 is
same-origin with the bridge, so it could read tasks too. Three rules close both:

* **Host** must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (the bridge listens on IPv4 loopback
  only, so not ``[::1]``), or a name the operator adds (``--allow-host NAME``, or ``NAME:PORT`` for a
  port-forward). A rebinding name is none of them: HTTP 403.
* **Origin**, when a request has one (browsers send it on every POST and every cross-origin
  request), must be the bridge's own origin or one the operator allows (``--allow-origin URL``):
  else HTTP 403. Without Origin (curl, the a2a-sdk client, any program) a request is fine. Allowed
  origins, and only they, get CORS headers, on the preflight (``OPTIONS``) too.
* **Media type**: a JSON-RPC body must be ``application/json`` (A2A's JSON-RPC binding; what the
  a2a-sdk client sends) or ``application/a2a+json`` (A2A's own JSON media type), else HTTP 415. A
  browser sends these types cross-origin only after a preflight, which the Origin rule refuses.

Refusals are counted in the bridge's stats and logged once per interval (``RefusalLog``).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .connections import RefusalLog

LOCAL_NAMES = ("127.0.0.1", "localhost")
JSONRPC_MEDIA_TYPES = ("application/json", "application/a2a+json")
CORS_HEADERS = {"Access-Control-Allow-Methods": "GET, POST",
                "Access-Control-Allow-Headers": "Content-Type, Authorization, A2A-Version, A2A-Extensions",
                "Access-Control-Max-Age": "600"}
SHOWN_CHARS = 80


def shown(value: str) -> str:
    """A peer's header value as the bridge repeats it (a reply, a log line): quoted, escaped, at
    most ``SHOWN_CHARS`` characters."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 4] + '..."'


def split_host(entry: str) -> tuple[str, Optional[str]]:
    """``name``, ``name:8421``, ``[::1]``, ``[::1]:8421`` -> (host, port or None). Whatever follows
    the host is returned as the port, for the caller to check."""
    if entry.startswith("["):
        host, bracket, rest = entry.partition("]")
        host += bracket
    else:
        host, colon, rest = entry.partition(":")
        rest = colon + rest
    return host, (rest[1:] if rest.startswith(":") else rest) if rest else None


def host_entry(value: str) -> str:
    """An operator's ``--allow-host`` value, checked: a host name or address, optionally with
    ``:PORT`` (IPv6 in brackets). Raises ValueError with what is wrong."""
    name = value.strip().lower()
    host, port = split_host(name)
    if not host or host == "[]" or (host.startswith("[") and not host.endswith("]")) \
            or any(c in host for c in "/@\\?# \t") or (port is not None and not port.isdigit()):
        raise ValueError(f"not a host name: {value!r} (give a name like my-laptop.local, optionally with :PORT)")
    return name


def origin_entry(value: str) -> str:
    """An operator's ``--allow-origin`` value as browsers write an Origin (``https://tool.example``,
    default port left out). Raises ValueError for anything that is not a single http(s) origin."""
    parts = urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.username or port == -1 \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"not an origin: {value!r} (give scheme://host[:port], e.g. https://tool.example)")
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def json_media_type(content_type: Optional[str]) -> bool:
    """Is ``content_type`` one a JSON-RPC body may have (parameters such as charset aside)?"""
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() in JSONRPC_MEDIA_TYPES


@dataclass(frozen=True)
class Allowed:
    """The Host values and Origins the bridge on ``port`` answers."""

    port: int
    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def on_port(cls, port: int, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> "Allowed":
        """``127.0.0.1:PORT``, ``localhost:PORT`` and the operator's names (a name without a port gets
        the bridge's); origins: the bridge's own (``http://`` + each such Host) and the operator's."""
        allowed: set[str] = set()
        for entry in (*LOCAL_NAMES, *(host_entry(h) for h in hosts)):
            has_port = split_host(entry)[1] is not None
            allowed.add(entry if has_port else f"{entry}:{port}")
            if not has_port and port == 80:
                allowed.add(entry)  # a client leaves the default port out
        own = {f"http://{h}" for h in allowed}
        return cls(port, frozenset(allowed), frozenset(own | {origin_entry(o) for o in origins}))


class Guard:
    """ASGI middleware in front of the bridge's routes: the Host and Origin rules, CORS for allowed
    origins (see the module docstring). ``count`` tells the bridge's stats (``refused_host``,
    ``refused_origin``)."""

    def __init__(self, app: ASGIApp, allowed: Allowed, refusals: RefusalLog, count: Callable[[str], None]):
        self.app, self.allowed, self.refusals, self.count = app, allowed, refusals, count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is None:
            await self.app(scope, receive, send)
        elif scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await Response(status_code=204, headers=self._cors(origin, CORS_HEADERS))(scope, receive, send)
        else:
            async def send_with_cors(message: Message) -> None:
                if message["type"] == "http.response.start":
                    MutableHeaders(scope=message).update(self._cors(origin))
                await send(message)

            await self.app(scope, receive, send_with_cors)

    def _refusal(self, headers: Headers) -> Optional[Response]:
        hosts, origins = headers.getlist("host"), headers.getlist("origin")
        if len(hosts) != 1 or hosts[0].lower() not in self.allowed.hosts:
            got = f"Host {shown(hosts[0])}" if len(hosts) == 1 else f"{len(hosts)} Host headers"
            self.count("refused_host")
            self.refusals.note("refused a request for a foreign Host (a DNS-rebinding web page?)", got)
            return self._forbidden(f"{got}: this bridge answers to Host 127.0.0.1:{self.allowed.port} and "
                                   f"localhost:{self.allowed.port} (add names with --allow-host)")
        if origins and (len(origins) != 1 or origins[0].lower() not in self.allowed.origins):
            got = shown(origins[0])
            self.count("refused_origin")
            self.refusals.note("refused a request from a web page", got)
            return self._forbidden(f"this bridge refuses requests from web pages (this one came from {got}); "
                                   "allow a site's pages with --allow-origin")
        return None

    @staticmethod
    def _forbidden(why: str) -> Response:
        return JSONResponse({"error": why}, status_code=403)

    @staticmethod
    def _cors(origin: str, extra: Optional[dict[str, str]] = None) -> dict[str, str]:
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin", **(extra or {})}
