"""Hand-made recordings (lists of v1 record dicts) for the frame, chart and lint tests.

``Traffic`` writes records the way the recorder would, with valid A2A v1.0 payloads from
``a2a_nb.protocol.messages``; a test then breaks exactly one thing.
"""
from __future__ import annotations

import base64
import json
import uuid
from typing import Any, Optional

from a2a_nb.protocol import jsonrpc, messages, states

ORG, UNIT = "acme", "support"
REPLY = f"$a2a/v1/reply/{ORG}/{UNIT}/coordinator/00000000000000aa"


def req_topic(agent: str) -> str:
    return f"$a2a/v1/request/{ORG}/{UNIT}/{agent}"


def pool_topic(pool: str) -> str:
    return f"$a2a/v1/request/{ORG}/{UNIT}/pool/{pool}"


def card_topic(agent: str) -> str:
    return f"$a2a/v1/discovery/{ORG}/{UNIT}/{agent}"


def uuid4(n: int) -> str:
    return str(uuid.UUID(int=n, version=4))


CARD = {
    "name": "Ticket desk", "description": "Root-cause analysis of support tickets", "version": "1.0.0",
    "supportedInterfaces": [{"url": req_topic("ticket-desk"), "protocolBinding": "urn:mqtt", "protocolVersion": "1.0"}],
    "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "rca", "name": "RCA", "description": "root cause", "tags": ["tickets"]}],
}


class Traffic:
    def __init__(self, t0: float = 1000.0, step: float = 0.01):
        self.records: list[dict] = []
        self.t = t0
        self.step = step
        self._n = 0

    def _next(self) -> int:
        self._n += 1
        return self._n

    def corr(self) -> str:
        return f"{0xC0000000 + self._next():032x}"

    def add(self, topic: str, payload: Any = None, *, rt: Optional[str] = None, corr: Optional[str] = None,
            props=(), retain: bool = False, qos: int = 1, raw: Optional[bytes] = None, pfi: Optional[int] = 1,
            dt: Optional[float] = None) -> int:
        self.t += self.step if dt is None else dt
        b64 = base64.b64encode(raw).decode() if raw is not None else None
        size = len(raw) if raw is not None else len(json.dumps(payload)) if payload is not None else 0
        self.records.append({
            "v": 1, "t": round(self.t, 6), "topic": topic, "qos": qos, "retain": retain, "response_topic": rt,
            "correlation": corr, "user_properties": [[k, v] for k, v in props],
            "content_type": "application/json" if raw is None else None, "message_expiry": None,
            "payload_format": pfi, "payload_json": payload, "payload_b64": b64, "size": size})
        return len(self.records) - 1

    # -- building blocks -----------------------------------------------------------------------------
    def card(self, agent: str = "ticket-desk", status: Optional[str] = "online", **kw) -> int:
        props = [("a2a-status", status), ("a2a-status-source", "agent")] if status else []
        kw.setdefault("retain", True)
        return self.add(card_topic(agent), kw.pop("payload", CARD), props=props, **kw)

    def request(self, to: str, method: str, params: dict, *, corr: Optional[str] = None, rid: Optional[str] = None,
                reply: Optional[str] = REPLY, **kw) -> tuple[str, str]:
        corr = corr if corr is not None else self.corr()
        rid = rid or f"rpc-{self._next()}"
        topic = pool_topic(to[5:]) if to.startswith("pool:") else req_topic(to)
        self.add(topic, jsonrpc.request(method, params, rid), rt=reply, corr=corr if corr != "" else None, **kw)
        return corr, rid

    def send(self, to: str, task: str, ctx: str, text: str = "Why is TCK-4821 stuck?", *, stream: bool = False,
             **kw) -> tuple[str, str]:
        msg = messages.user_message(text, message_id=f"TCK-4821-{self._next()}", task_id=task, context_id=ctx)
        method = jsonrpc.SEND_STREAMING_MESSAGE if stream else jsonrpc.SEND_MESSAGE
        return self.request(to, method, messages.send_message_params(msg), **kw)

    def result(self, corr: Optional[str], rid: Any, result: Any, *, topic: str = REPLY, **kw) -> int:
        return self.add(topic, jsonrpc.result_response(rid, result), corr=corr, **kw)

    def error(self, corr: Optional[str], rid: Any, error: dict, *, topic: str = REPLY, **kw) -> int:
        return self.add(topic, {"jsonrpc": "2.0", "id": rid, "error": error}, corr=corr, **kw)

    # -- A2A results -----------------------------------------------------------------------------------
    @staticmethod
    def task(task: str, ctx: str, state: str = states.COMPLETED) -> dict:
        return messages.send_message_result(messages.task(task, ctx, messages.task_status(state)))

    @staticmethod
    def bare_task(task: str, ctx: str, state: str = states.COMPLETED) -> dict:
        return messages.task(task, ctx, messages.task_status(state))

    @staticmethod
    def status(task: str, ctx: str, state: str, timestamp: Optional[str] = None) -> dict:
        st = messages.task_status(state)
        if timestamp:
            st["timestamp"] = timestamp
        return messages.stream_status(messages.status_update(task, ctx, st))

    @staticmethod
    def artifact(task: str, ctx: str, artifact_id: str = "report", text: str = "part", *, append: bool = False,
                 last: bool = False) -> dict:
        art = messages.artifact(artifact_id, text)
        return messages.stream_artifact(messages.artifact_update(task, ctx, art, append=append, last_chunk=last))

    @staticmethod
    def agent_message(task: str, ctx: str, text: str = "hi") -> dict:
        return messages.send_message_result(messages.agent_message(text, message_id="m-1", task_id=task,
                                                                    context_id=ctx))


T1, C1 = uuid4(0x1111), uuid4(0xC1)
T2, C2 = uuid4(0x2222), uuid4(0xC2)


def clean_conversation() -> Traffic:
    """A card, a blocking SendMessage, a stream with artifacts ending input-required, its continuation,
    a GetTask and an error reply: no findings at all."""
    tr = Traffic()
    tr.card("ticket-desk")
    c, r = tr.send("ticket-desk", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1))
    c, r = tr.send("ticket-desk", T2, C2, stream=True)
    tr.result(c, r, messages.stream_task(messages.task(T2, C2, messages.task_status(states.SUBMITTED))))
    tr.result(c, r, Traffic.status(T2, C2, states.WORKING))
    tr.result(c, r, Traffic.artifact(T2, C2, text="part 1"))
    tr.result(c, r, Traffic.artifact(T2, C2, text="part 2", append=True, last=True))
    tr.result(c, r, Traffic.status(T2, C2, states.INPUT_REQUIRED))
    c, r = tr.send("ticket-desk", T2, C2, "order 991")
    tr.result(c, r, Traffic.task(T2, C2))
    c, r = tr.request("ticket-desk", jsonrpc.GET_TASK, messages.get_task_params(T2))
    tr.result(c, r, Traffic.bare_task(T2, C2))
    c, r = tr.request("ticket-desk", jsonrpc.GET_TASK, messages.get_task_params(uuid4(0x999)))
    tr.error(c, r, {"code": -32001, "message": "Task not found", "data": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
         "domain": "a2a-protocol.org"}]})
    return tr
