"""Checks with odd or malformed input: the error mapping, Message Expiry, unknown user properties,
binary Correlation Data, a missing or foreign reply path; then whether the agent still answers, and
whether a bearer token ever came back.

Each ``bad_input`` check is followed by a liveness question (a GetTask for a task that does not
exist: Presence Subscriber Behavior 4). Profile: Mandatory Binding-Specific Error Mapping (JSON-RPC
over MQTT) 1-5, Responder Behavior (Interop) 2-5 and 8, Error Handling and Deduplication 3-5,
Request/Reply Mapping (MQTT v5) 3 and 6.
"""
from __future__ import annotations

import secrets

from ..protocol import errors, jsonrpc, messages, properties
from ..protocol.packet import encode_json
from ..traffic.lint import SHOULD
from .checks_card import expect_correlation
from .checks_tasks import expect_error
from .client import Exchange, json_of, short_bytes
from .rules import MUST, Outcome, check, failed, not_applicable, passed
from .probe_run import ProbeRun

ERROR_MAPPING = "Mandatory Binding-Specific Error Mapping (JSON-RPC over MQTT) 1-3"


def _as_without(run: ProbeRun, ex: Exchange, sent: str, why: str) -> Outcome:
    """Pass when ``ex`` got the same kind of answer as the same GetTask without the extra (its error
    code, or a result): the extra changed nothing."""
    plain = run.once("plain-get", lambda: run.call(jsonrpc.GET_TASK, messages.get_task_params(run.unknown_task_id())))
    if ex.first is None:
        return failed(sent, ex.came_back(), f"no correlated reply ({why})")
    if ex.error_code == plain.error_code and (ex.error is None) == (plain.error is None):
        return passed(sent, f"{ex.came_back()}, as without it")
    return failed(sent, f"{ex.came_back()}; without it: {plain.came_back()}", f"the answer changed ({why})")


@check("message-expiry", "request-expired", "a request whose Message Expiry has not run out is processed normally",
       level=SHOULD, section="Error Handling and Deduplication 4-5")
def message_expiry(run: ProbeRun) -> Outcome:
    ex = run.call(jsonrpc.GET_TASK, messages.get_task_params(run.unknown_task_id()), message_expiry=30)
    outcome = _as_without(run, ex, "GetTask of an unknown task with Message Expiry Interval 30 s",
                          "a request with time left is processed as any other")
    note = ("A request that runs out before processing should be dropped or answered -32003 request_expired; "
            "the broker never delivers a stale request to a connected agent, so only the fresh case is checked live.")
    return outcome if outcome.verdict != "pass" else passed(outcome.sent, outcome.received, note)


@check("unknown-properties", "unknown-properties", "unknown a2a- and other user properties are ignored",
       level=SHOULD, section="Error Handling and Deduplication 3")
def unknown_properties(run: ProbeRun) -> Outcome:
    ex = run.call(jsonrpc.GET_TASK, messages.get_task_params(run.unknown_task_id()),
                  user_properties=run.props(("a2a-probe-unknown", "1"), ("x-probe", "yes")))
    return _as_without(run, ex, "GetTask of an unknown task with user properties a2a-probe-unknown=1, x-probe=yes",
                       "properties the agent does not know change nothing")


def _bad_payload(run: ProbeRun, name: str, payload: bytes, code: int, why: str) -> Outcome:
    ex = run.raw(payload)
    shown = payload[:60].decode("utf-8", "replace")
    return expect_error(f"{name}: {shown!r}" if len(name) < 40 else name, ex, code, why)


@check("parse-error", "error-parse", "a payload that is not JSON is answered -32700", level=MUST,
       section=ERROR_MAPPING, bad_input=True)
def parse_error(run: ProbeRun) -> Outcome:
    return _bad_payload(run, "not JSON", b'{"jsonrpc": "2.0", "id": "probe", "method": "SendMessage", ',
                        errors.PARSE_ERROR, "JSON-RPC parse error")


@check("invalid-request", "error-invalid-request", "JSON that is not a JSON-RPC request is answered -32600",
       level=MUST, section=ERROR_MAPPING, bad_input=True)
def invalid_request(run: ProbeRun) -> Outcome:
    return _bad_payload(run, "no method", encode_json({"jsonrpc": "2.0", "id": "probe-no-method", "params": {}}),
                        errors.INVALID_REQUEST, "JSON-RPC invalid request")


@check("method-not-found", "error-method-not-found", "an unknown method is answered -32601", level=MUST,
       section=ERROR_MAPPING, bad_input=True)
def method_not_found(run: ProbeRun) -> Outcome:
    payload = encode_json(jsonrpc.request("ProbeNoSuchMethod", {}, "probe-unknown-method"))
    return _bad_payload(run, "unknown method", payload, errors.METHOD_NOT_FOUND, "JSON-RPC method not found")


@check("invalid-params", "error-invalid-params", "SendMessage with a malformed Message is answered -32602",
       level=MUST, section=ERROR_MAPPING, bad_input=True)
def invalid_params(run: ProbeRun) -> Outcome:
    message = {k: v for k, v in run.message().items() if k not in ("role", "parts")}
    payload = encode_json(jsonrpc.request(jsonrpc.SEND_MESSAGE, {"message": message}, "probe-bad-params"))
    return _bad_payload(run, "a Message with its Task.id and contextId but no role and no parts", payload,
                        errors.INVALID_PARAMS, "JSON-RPC invalid params: a Message needs a role and parts")


@check("task-id-uuid4", "task-id-uuid4", "SendMessage without Task.id, or with one that is not a UUIDv4, is "
       "rejected with -32602", bad_input=True)
def task_id_uuid4(run: ProbeRun) -> Outcome:
    sent = "SendMessage with Task.id 'probe-not-a-uuid', then without Task.id"
    got, binding_code = [], False
    for label, task_id in (("Task.id 'probe-not-a-uuid'", "probe-not-a-uuid"), ("no Task.id", None)):
        msg = run.message()
        if task_id is None:
            del msg["taskId"]
        else:
            msg["taskId"] = task_id
        payload = encode_json(jsonrpc.request(jsonrpc.SEND_MESSAGE, messages.send_message_params(msg),
                                              run.client.ids.jsonrpc_id()))
        ex = run.raw(payload)
        got.append(f"{label}: {ex.came_back()}")
        if ex.error is not None and errors.classify(ex.error).non_retryable_transport:
            binding_code = True  # -32005 transport_protocol_error: "invalid protocol input" read as binding metadata
            continue
        outcome = expect_error(label, ex, errors.INVALID_PARAMS, "responders must reject a missing or malformed "
                               "Task.id as invalid protocol input (Responder Behavior 4)")
        if outcome.verdict != "pass":
            return failed(sent, "; ".join(got), outcome.remark)
    interop = ("rejected with -32005 transport_protocol_error, where the kit answers -32602 invalid params (the "
               "profile names no code for this): both say \"do not retry unchanged\"" if binding_code else "")
    return passed(sent, "; ".join(got), interop=interop)


@check("no-reply-path", "no-reply-path", "a request without Correlation Data is rejected or dropped, never "
       "executed", level=SHOULD, section="Responder Behavior (Interop) 2", bad_input=True)
def no_reply_path(run: ProbeRun) -> Outcome:
    msg = run.message()
    payload = encode_json(jsonrpc.request(jsonrpc.SEND_MESSAGE, messages.send_message_params(msg),
                                          run.client.ids.jsonrpc_id()))
    ex = run.raw(payload, correlation=None)
    sent = "SendMessage with a Response Topic but no Correlation Data"
    executed = [r for r in ex.replies if isinstance(json_of(r.payload), dict) and "result" in json_of(r.payload)]
    if executed:
        return failed(sent, ex.came_back(), "the request was executed: a request without Correlation Data should be "
                      "rejected as invalid protocol input (or dropped), since no requester can match its reply")
    return passed(sent, ex.came_back() if ex.replies else "dropped (no reply)")


@check("reflected-response-topic", "reflected-response-topic", "a Response Topic outside $a2a/v1/reply/ is not "
       "published to (the kit's hardening: a reply there could overwrite a card or fake a request)", level=SHOULD,
       section="Responder Behavior (Interop) 2-3 (reply path checked as protocol input)", bad_input=True)
def reflected_response_topic(run: ProbeRun) -> Outcome:
    ex = run.call(jsonrpc.GET_TASK, messages.get_task_params(run.unknown_task_id()), response_topic=run.client.side_topic)
    sent = f"GetTask with Response Topic {run.client.side_topic} (an event topic of the probe's own)"
    if ex.replies:
        return failed(sent, f"a reply on {run.client.side_topic}",
                      "the agent published where the request told it to, outside the reply namespace: anyone can make "
                      "it publish with its rights onto discovery, request or event topics (its own retained card, "
                      "say). The profile's text asks for replies on the Response Topic; this kit drops such requests")
    return passed(sent, "nothing published there (the request was dropped)")


@check("correlation-binary", "reply-correlation", "a reply echoes binary (non-UTF-8) Correlation Data byte for byte",
       bad_input=True)
def correlation_binary(run: ProbeRun) -> Outcome:
    corr = b"\xff\x00\xfe" + secrets.token_bytes(8) + b"\x80"
    sent = run.send(run.message(), correlation=corr)
    return expect_correlation(sent, f"SendMessage, new task, binary Correlation Data {short_bytes(corr)} (not UTF-8)",
                              "no reply to a request whose Correlation Data is not UTF-8 text: Correlation Data is "
                              "bytes (MQTT v5 binary data); an agent that decodes it as text fails here. Keep it as "
                              "bytes and echo it unchanged")


@check("still-answers", "still-answers", "after every bad input the agent still answers", level=MUST,
       section="Responder Behavior (Interop) 3")
def still_answers(run: ProbeRun) -> Outcome:
    alive = run.alive()
    sent = f"GetTask of an unknown task after each of {len(run.bad_inputs)} bad inputs"
    if alive is None:
        return failed(sent, "no reply", "the agent no longer answers")
    return passed(sent, f"answered every time ({alive.came_back()} now)")


@check("no-bearer-echo", "no-bearer-echo", "no bearer token or a2a-authorization property comes back in any reply",
       passive=True)
def no_bearer_echo(run: ProbeRun) -> Outcome:
    traffic = [m for i, m in enumerate(list(run.client.traffic)) if i not in run.client.sent]
    sent = "every request of the probe" + (" (each with a2a-authorization: Bearer …)" if run.token else "")
    echoed = [m for m in traffic if any(properties.is_authorization_key(k) for k, _ in m.user_properties)]
    if echoed:
        return failed(sent, f"a2a-authorization on {echoed[0].topic}", "responders never echo bearer tokens")
    if run.token and any(run.token.encode() in m.payload or any(run.token in v for _, v in m.user_properties)
                         for m in traffic):
        return failed(sent, "the token's text in a reply", "the token came back in a payload or property")
    if not run.token:
        asks = "declares securitySchemes; give --token to check it" if run.card.get("securitySchemes") else \
            "asks for no bearer token"
        return not_applicable(f"no token was sent: the card {asks}. The traffic lint still looks for 'Bearer ' text "
                              "in everything the agent published", sent, f"{len(traffic)} messages from the agent")
    return passed(sent, f"{len(traffic)} messages from the agent, none with the token")

