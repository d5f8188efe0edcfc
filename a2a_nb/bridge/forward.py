"""What each HTTP JSON-RPC request becomes over MQTT: one call of the kit's Requester.

The bridge is an HTTP *server* in front of an MQTT *requester*, so two bindings' rules meet here:

* **Task.id.** Over HTTP the server names a new task; over MQTT the requester does, before the first
  publish, so that a retry can never create a second task (Profile: Request/Reply Mapping 6,
  Requester Retry and Timeout Profile 3-4). A message without ``taskId`` gets a fresh UUIDv4, and a
  ``contextId`` when it has none (Multi-Turn Conversation Patterns 1). A ``taskId`` the HTTP client
  sends must name a task that exists, as in core A2A: when the bridge has no route for it, the agent
  is asked (GetTask) and its -32001 is the answer.
* **Routing and retries** are the requester's: fresh Correlation Data per attempt, follow-ups of a
  handed-over task sent to the analyst named by ``a2a-responder-agent-id`` (Optional Task Handover
  3-4), fallback to the card agent when the analyst is silent.
* **Bearer tokens** ride on each request as ``a2a-authorization`` (OAuth 2.0 and OIDC over MQTT User
  Properties 2), over TLS only (5); nothing the bridge answers contains them (6).
* **Errors** are JSON-RPC errors: the agent's pass through unchanged; the bridge's own failures
  (no reply, a lost broker, a reply that breaks the profile) are mapped by :func:`as_error`.

* **Params** go on as the HTTP client sent them (``Requester.call`` / ``call_stream``), after the
  check the agent would make (-32602 at once): nothing is unpacked or rebuilt, so every field
  (``configuration``, ``metadata``, ``historyLength``, ``includeArtifacts``, ...) reaches the agent.
  Only a new message gains its ``taskId`` and ``contextId``. Their size is bounded by the HTTP body
  limit (``app``).

Everything here blocks (the Requester's calls do); the HTTP app runs it on worker threads.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from ..agents.auth import UNAUTHENTICATED, auth_error
from ..agents.requester import ProtocolError, Requester, RequestTimeout, Stream, StreamEvent
from ..mqtt.session import SessionError
from ..protocol import errors, jsonrpc, properties
from ..protocol.errors import A2AError
from ..protocol.ids import IdSource
from ..protocol.inbound import check_params

log = logging.getLogger(__name__)

UNARY_METHODS = frozenset({jsonrpc.SEND_MESSAGE, jsonrpc.GET_TASK, jsonrpc.CANCEL_TASK, jsonrpc.LIST_TASKS})
STREAMING_METHODS = (jsonrpc.SEND_STREAMING_MESSAGE, jsonrpc.SUBSCRIBE_TO_TASK)
"""The methods the bridge carries over MQTT; the others are answered here (see ``_not_forwarded``)."""


def with_task_ids(message: Any, ids: IdSource) -> Any:
    """The HTTP client's message with the ids the MQTT binding needs: a new ``taskId`` (UUIDv4) and
    ``contextId`` where it has none. Anything that is not a message is returned as it is (the params
    check says what is wrong with it)."""
    if not isinstance(message, dict):
        return message
    filled = dict(message)
    if not filled.get("contextId"):
        filled["contextId"] = ids.context_id()
    if not filled.get("taskId"):
        filled["taskId"] = ids.task_id()
    return filled


def bearer_token(authorization: Optional[str]) -> Optional[str]:
    """The token of an HTTP ``Authorization: Bearer <token>`` header (None without the header).

    Raises the kit's UNAUTHENTICATED error for any other scheme: only bearer tokens have a place on
    an MQTT request (``a2a-authorization``). The message never repeats the header."""
    if authorization is None:
        return None
    try:
        return properties.parse_bearer(authorization)
    except ValueError:
        raise auth_error(UNAUTHENTICATED, "the bridge passes on only 'Authorization: Bearer <token>'") from None


def as_error(exc: BaseException, agent: str, broker_connected: bool = True) -> A2AError:
    """The JSON-RPC error an HTTP client gets for ``exc``.

    An agent's error is passed on unchanged. No reply after every attempt is -32004
    ``responder_unavailable`` (the MQTT binding's retry-eligible error: try again later), which says
    so when the bridge's own broker connection is down (``broker_connected`` False: the agent was
    never reached); a reply that breaks the profile is -32006 InvalidAgentResponse; anything else is
    -32603, its details in the bridge's log only."""
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, (RequestTimeout, SessionError)) and not broker_connected:
        return errors.responder_unavailable(f"the bridge lost its MQTT broker and is reconnecting, so {agent} "
                                            f"could not be reached: {exc}")
    if isinstance(exc, RequestTimeout):
        return errors.responder_unavailable(f"{agent} did not answer over MQTT: {exc}")
    if isinstance(exc, ProtocolError):
        return errors.invalid_agent_response(str(exc))
    if isinstance(exc, SessionError):
        return errors.internal_error("the bridge lost its MQTT broker")
    log.error("bridge to %s failed", agent, exc_info=exc)
    return errors.internal_error(f"the bridge failed ({type(exc).__name__}); see its log")


def stream_result(event: StreamEvent) -> dict[str, Any]:
    """The StreamResponse of one stream item, ``{"task" | "message" | "statusUpdate" |
    "artifactUpdate": ...}``. A Task fetched to recover a silent stream is sent as a Task item."""
    kind = "task" if event.kind == "recovered" else event.kind
    return {kind: event.data}


class Forwarder:
    """Sends the JSON-RPC methods of HTTP clients to ``agent`` with ``requester`` (blocking calls)."""

    def __init__(self, requester: Requester, agent: str):
        self.requester, self.agent = requester, agent

    # -- the two entry points ----------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any], token: Optional[str] = None) -> Any:
        """The ``result`` of a unary method; raises ``A2AError`` (and the Requester's exceptions)."""
        if method not in UNARY_METHODS:
            raise _not_forwarded(method)
        req = self._as_caller(token)
        return req.call(method, self._prepared(req, method, params), to=self.agent).result

    def open_stream(self, method: str, params: dict[str, Any],
                    token: Optional[str] = None) -> tuple[Stream, dict[str, Any]]:
        """Start a streaming method: the Stream and its first item (an error in it raises here, so
        the HTTP client gets it as a plain JSON-RPC error before any event)."""
        if method not in STREAMING_METHODS:
            raise _not_forwarded(method)
        req = self._as_caller(token)
        stream = req.call_stream(method, self._prepared(req, method, params), to=self.agent)
        try:
            return stream, stream_result(next(stream))
        except BaseException:
            stream.close()
            raise

    # -- helpers -----------------------------------------------------------------------------------
    def _as_caller(self, token: Optional[str]) -> Requester:
        if token is None:
            return self.requester
        try:
            return self.requester.with_token(token)
        except ValueError:  # a plain mqtt:// broker: the token may not travel (Profile: OAuth 5)
            raise auth_error(UNAUTHENTICATED, "this bridge's MQTT broker is not TLS, so it cannot pass "
                             "a bearer token on; run it against an mqtts:// broker") from None

    def _prepared(self, req: Requester, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` checked as the agent would check them (-32602 at once), a message with the
        MQTT ids filled in; a ``taskId`` the HTTP client sent must name a task it may see."""
        if method not in (jsonrpc.SEND_MESSAGE, jsonrpc.SEND_STREAMING_MESSAGE):
            check_params(method, params)
            return params
        message = params.get("message")
        given = message.get("taskId") if isinstance(message, dict) else None
        params = {**params, "message": with_task_ids(message, self.requester.ids)}
        check_params(method, params)
        if given and req.routing.target(given) is None:
            # not routed by this bridge: the agent says whether it exists (-32001 if not, or if it is
            # another caller's), as an HTTP server would for a taskId it never created
            req.get_task(given, history_length=0, to=self.agent)
        return params


def _not_forwarded(method: str) -> A2AError:
    """The answer to a method the bridge does not carry over MQTT (-32601 for unknown names)."""
    jsonrpc.check_method(method)
    if method == jsonrpc.GET_EXTENDED_AGENT_CARD:
        return errors.extended_agent_card_not_configured()
    return errors.push_notification_not_supported()
