"""Recorded traffic as a pandas DataFrame: one row per MQTT message, A2A fields pulled out.

``load_traffic`` reads a recording (file path, ``Recorder`` or list of record dicts, see
``recorder.py`` for the format) and names, for every message, what the profile says it is: its
topic kind and identifiers (Profile: Topic Model), its Correlation Data and Response Topic
(Request/Reply Mapping), the A2A method, Task.id / contextId / messageId (Request/Reply Mapping 6-8,
Multi-Turn Conversation Patterns), the task state or stream event it carries (Streaming Reply
Mapping), binding user properties (``a2a-responder-agent-id``: Optional Task Handover,
``a2a-status``: Presence and Liveness), who sent it to whom, and the reply latency.

Replies are joined to their request by Correlation Data: they inherit the request's ``method``,
and its Task.id/contextId when they carry none (error replies), and get ``latency_s`` (time since
that request) and ``request_i`` (the request's row).

Built with plain Python loops over the record dicts and one column per list: a few hundred
thousand messages per second, so a whole classroom's recording loads at once.
"""
from __future__ import annotations

import gc
import os
from operator import itemgetter
from typing import Any, Iterable, Optional, Union

import numpy as np
import pandas as pd

from ..protocol import properties as P
from ..protocol.messages import task_ids_of  # noqa: F401  (re-exported: the rule lives in the core)
from ..protocol.states import can_transition
from ..protocol.topics import is_a2a_topic, parse_topic

COLUMNS = (
    "i", "t", "dt", "topic", "kind", "org", "unit", "agent", "pool", "reply_suffix", "qos", "retain",
    "correlation", "response_topic", "method", "jsonrpc_id", "task_id", "context_id", "message_id",
    "state", "event", "artifact_id", "append", "last_chunk", "error_code", "a2a_error",
    "responder_agent_id", "status", "status_source", "from_agent", "to_agent", "latency_s",
    "request_i", "size", "content_type", "payload_format", "message_expiry", "payload_json",
    "payload_b64", "user_properties",
)
"""Every column of ``load_traffic``, in order."""

SUMMARY_COLUMNS = ("i", "dt", "kind", "from_agent", "to_agent", "method", "event", "state", "task_id",
                   "responder_agent_id", "error_code", "latency_s")
"""A narrow selection that fits a notebook: ``df[list(SUMMARY_COLUMNS)]``."""

KINDS = ("discovery", "request", "pool", "reply", "event", "other", "invalid")
"""``kind`` values: the five of ``parse_topic``, ``other`` (not ``$a2a/v1/``) and ``invalid``
(a ``$a2a/v1/`` topic that breaks the Topic Model or Identifier Format)."""

EVENTS = ("status", "artifact", "task", "message", "result", "error", "binary", "card")
"""``event`` values (None for requests, events and an empty discovery payload)."""

DISCOVERY = "discovery"
EVENTS_LANE = "events"

Source = Union[str, os.PathLike, "pd.DataFrame", Iterable[dict]]


def _topic_info(topic: str) -> tuple:
    """(kind, org, unit, agent, pool, reply_suffix) for a topic; cached by the caller."""
    try:
        info = parse_topic(topic)
    except (ValueError, TypeError):
        return ("invalid", None, None, None, None, None)
    if info is None:
        return ("invalid" if is_a2a_topic(topic) else "other", None, None, None, None, None)
    return (info.kind, info.org, info.unit, info.agent, info.pool, info.reply_suffix)


def _records_of(source: Any) -> list[dict]:
    if isinstance(source, (str, os.PathLike)):
        from .records import read_records

        return read_records(source)
    recs = getattr(source, "records", None)
    if recs is not None and not isinstance(source, (list, tuple)):
        return list(recs)
    return source if isinstance(source, list) else list(source)


_DEFAULTS: dict[str, Any] = {"t": 0.0, "qos": 0, "retain": False, "correlation": None, "response_topic": None,
                              "size": 0, "content_type": None, "payload_format": None, "message_expiry": None,
                              "user_properties": None, "payload_json": None, "payload_b64": None}
_RECORD_FIELDS = itemgetter("t", "topic", "qos", "retain", "correlation", "response_topic", "size", "content_type",
                            "payload_format", "message_expiry", "user_properties", "payload_json", "payload_b64")


def _normalized(k: int, rec: Any) -> dict:
    if not isinstance(rec, dict) or "topic" not in rec:
        raise ValueError(f"record {k} is not a recording record (a dict with at least 'topic'; see "
                         f"a2a_nb/traffic/FORMAT.md): {str(rec)[:120]}")
    return {**_DEFAULTS, **rec}


_WANTED_PROPS = frozenset({P.RESPONDER_AGENT_ID, P.STATUS, P.STATUS_SOURCE, P.TASK_ID, P.CONTEXT_ID,
                           P.ARTIFACT_ID, P.LAST_CHUNK, P.EVENT_TYPE})


def load_traffic(source: Source) -> pd.DataFrame:
    """One row per recorded message; columns in ``COLUMNS`` (see the module docstring).

    ``source``: a recording file path, a ``Recorder``, a list of record dicts, or a DataFrame made
    by this function (returned as it is). ``from_agent``/``to_agent``: a request goes from the
    agent of its Response Topic to the topic's agent (or ``pool:{id}``); a reply goes from
    ``a2a-responder-agent-id`` (else the agent its request addressed) to the agent of the reply
    topic; a card goes from its agent to ``discovery``; an event to ``events``.
    """
    if isinstance(source, pd.DataFrame):
        return source
    records = _records_of(source)
    # Building millions of small objects makes the cyclic GC walk all records again and again;
    # nothing created here forms a cycle, so it is paused (and restored) around the build.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        df = _build(records)
    finally:
        if was_enabled:
            gc.enable()
    df.attrs["source"] = str(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    return df


def _build(records: list) -> pd.DataFrame:
    n = len(records)

    # one pass over the records (each dict is touched once, while it is in the CPU cache)
    try:
        rows = list(map(_RECORD_FIELDS, records))
    except (KeyError, TypeError):
        rows = list(map(_RECORD_FIELDS, [_normalized(k, r) for k, r in enumerate(records)]))
    tcache: dict[str, tuple] = {}
    infos: list = [None] * n
    (c_t, c_topic, c_qos, c_retain, c_corr, c_rtopic, c_size, c_ctype, c_pfi, c_exp, c_props, c_payload,
     c_b64) = (list(map(itemgetter(k), rows)) for k in range(13))
    del rows

    none = [None] * n
    c_method, c_jid, c_tid, c_cid, c_mid = none[:], none[:], none[:], none[:], none[:]
    c_state, c_event, c_aid, c_append, c_last = none[:], none[:], none[:], none[:], none[:]
    c_ecode, c_aerr, c_resp, c_status, c_ssrc = none[:], none[:], none[:], none[:], none[:]
    c_from, c_to, c_req = none[:], none[:], none[:]
    c_lat = [float("nan")] * n

    requests: dict[str, int] = {}  # correlation hex -> row of the latest request using it
    replies: list[int] = []
    wanted = _WANTED_PROPS
    K_RESP, K_TASK_ID, K_CTX_ID = P.RESPONDER_AGENT_ID, P.TASK_ID, P.CONTEXT_ID

    for i, topic, p, raw_props in zip(range(n), c_topic, c_payload, c_props):
        ti = tcache.get(topic)
        if ti is None:
            ti = tcache[topic] = _topic_info(topic)
        infos[i] = ti
        kind = ti[0]
        props = None
        if raw_props:
            for kv in raw_props:
                if kv[0] in wanted:
                    if props is None:
                        props = {}
                    props[kv[0]] = kv[1]  # MQTT allows repeats: the last value wins
            if props is not None:
                c_resp[i] = props.get(K_RESP)
                c_status[i] = props.get(P.STATUS)
                c_ssrc[i] = props.get(P.STATUS_SOURCE)

        tid = cid = mid = None
        if kind == "reply":
            replies.append(i)
            corr = c_corr[i]
            if corr is not None:
                c_req[i] = requests.get(corr)  # the latest request with this correlation so far
            c_to[i] = ti[3]
            ev = None
            if type(p) is dict:
                c_jid[i] = p.get("id")
                r = p.get("result")
                if type(r) is dict:
                    body = r.get("statusUpdate")
                    if type(body) is dict:
                        ev = "status"
                        tid = body.get("taskId")
                        cid = body.get("contextId")
                        st = body.get("status")
                        if type(st) is dict:
                            c_state[i] = st.get("state")
                            sm = st.get("message")
                            if type(sm) is dict:
                                mid = sm.get("messageId")
                    else:
                        body = r.get("artifactUpdate")
                        if type(body) is dict:
                            ev = "artifact"
                            tid = body.get("taskId")
                            cid = body.get("contextId")
                            art = body.get("artifact")
                            if type(art) is dict:
                                c_aid[i] = art.get("artifactId")
                            c_append[i] = body.get("append") is True
                            c_last[i] = body.get("lastChunk") is True
                        else:
                            body = r.get("task")
                            if type(body) is not dict and "status" in r and "id" in r:
                                body = r  # GetTask / CancelTask answer with a bare Task
                            if type(body) is dict:
                                ev = "task"
                                tid = body.get("id")
                                cid = body.get("contextId")
                                st = body.get("status")
                                if type(st) is dict:
                                    c_state[i] = st.get("state")
                            else:
                                body = r.get("message")
                                if type(body) is dict:
                                    ev = "message"
                                    tid = body.get("taskId")
                                    cid = body.get("contextId")
                                    mid = body.get("messageId")
                                else:
                                    ev = "result"
                elif "error" in p:
                    ev = "error"
                    err = p["error"]
                    if type(err) is dict:
                        c_ecode[i] = err.get("code")
                        data = err.get("data")
                        if type(data) is dict:
                            c_aerr[i] = data.get("a2a_error")
                elif "result" in p:
                    ev = "result"
            elif p is None and c_b64[i] and props is not None and (c_pfi[i] == 0 or P.EVENT_TYPE in props):
                ev = "binary"
                c_aid[i] = props.get(P.ARTIFACT_ID)
                last = props.get(P.LAST_CHUNK)
                if last is not None:
                    c_last[i] = last == "true"
            elif p is None and c_b64[i]:
                ev = "binary"
            c_event[i] = ev
        elif kind == "request" or kind == "pool":
            c_to[i] = ti[3] if kind == "request" else "pool:" + ti[4]
            rtopic = c_rtopic[i]
            if rtopic is not None:
                ri = tcache.get(rtopic)
                if ri is None:
                    ri = tcache[rtopic] = _topic_info(rtopic)
                c_from[i] = ri[3]
            if type(p) is dict:
                c_method[i] = p.get("method")
                c_jid[i] = p.get("id")
                params = p.get("params")
                if type(params) is dict:
                    m = params.get("message")
                    if type(m) is dict:
                        tid = m.get("taskId")
                        cid = m.get("contextId")
                        mid = m.get("messageId")
                    else:
                        tid = params.get("id")
                        cid = params.get("contextId")
            corr = c_corr[i]
            if corr is not None:
                requests[corr] = i
        elif kind == "discovery":
            c_from[i] = ti[3]
            c_to[i] = DISCOVERY
            if p is not None:
                c_event[i] = "card"
        elif kind == "event":
            c_from[i] = ti[3]
            c_to[i] = EVENTS_LANE
        else:
            continue
        if tid is None and props is not None:
            tid = props.get(K_TASK_ID)
            if cid is None:
                cid = props.get(K_CTX_ID)
        c_tid[i] = tid
        c_cid[i] = cid
        c_mid[i] = mid

    # replies: join to their request by Correlation Data (the latest earlier request that used it;
    # else a later one: a reply recorded before its request), inherit method, Task.id/contextId,
    # measure latency
    for i in replies:
        q = c_req[i]
        if q is None:
            corr = c_corr[i]
            q = requests.get(corr) if corr is not None else None
            if q is None:
                continue
            c_req[i] = q
        c_method[i] = c_method[q]
        c_lat[i] = c_t[i] - c_t[q]
        if c_from[i] is None:
            c_from[i] = c_resp[i] if c_resp[i] is not None else c_to[q]
        if c_tid[i] is None:
            c_tid[i] = c_tid[q]
            if c_cid[i] is None:
                c_cid[i] = c_cid[q]
    for i in replies:
        if c_from[i] is None:
            c_from[i] = c_resp[i]

    c_kind, c_org, c_unit, c_agent, c_pool, c_suffix = (list(map(itemgetter(k), infos)) for k in range(6))
    t = pd.Series(c_t, dtype="float64")
    cols: dict[str, Any] = {
        "i": pd.RangeIndex(n).to_series(index=pd.RangeIndex(n)).astype("int64"),
        "t": t,
        "dt": t - (c_t[0] if n else 0.0),
        "topic": c_topic, "kind": c_kind, "org": c_org, "unit": c_unit, "agent": c_agent,
        "pool": c_pool, "reply_suffix": c_suffix,
        "qos": pd.Series(c_qos, dtype="int64"),
        "retain": pd.Series(c_retain, dtype="bool"),
        "correlation": c_corr, "response_topic": c_rtopic, "method": c_method, "jsonrpc_id": c_jid,
        "task_id": c_tid, "context_id": c_cid, "message_id": c_mid, "state": c_state, "event": c_event,
        "artifact_id": c_aid, "append": c_append, "last_chunk": c_last, "error_code": c_ecode,
        "a2a_error": c_aerr, "responder_agent_id": c_resp, "status": c_status, "status_source": c_ssrc,
        "from_agent": c_from, "to_agent": c_to,
        "latency_s": pd.Series(c_lat, dtype="float64"),
        "request_i": c_req,
        "size": pd.Series(c_size, dtype="int64"),
        "content_type": c_ctype, "payload_format": c_pfi, "message_expiry": c_exp,
        "payload_json": c_payload, "payload_b64": c_b64, "user_properties": c_props,
    }
    for k, v in cols.items():
        if isinstance(v, list):  # object columns: much faster than str inference or Series(list)
            cols[k] = pd.Series(np.fromiter(v, dtype=object, count=n), dtype=object, copy=False)
    return pd.DataFrame(cols, copy=False)


# -- views ------------------------------------------------------------------------------------------

def _frame(rows: list, columns: list[str], floats: tuple = ("t", "dt", "latency_s"),
           ints: tuple = ("i",), bools: tuple = ()) -> pd.DataFrame:
    """A small DataFrame with honest dtypes (None stays None in text and code columns)."""
    data = list(zip(*rows)) if rows else [()] * len(columns)
    cols: dict[str, Any] = {}
    for name, values in zip(columns, data):
        if name in floats:
            cols[name] = pd.Series(values, dtype="float64")
        elif name in ints:
            cols[name] = pd.Series(values, dtype="int64")
        elif name in bools:
            cols[name] = pd.Series(values, dtype="bool")
        else:
            cols[name] = pd.Series(values, dtype=object)
    return pd.DataFrame(cols)


def short_state(state: Any) -> Any:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required`` (other values unchanged)."""
    if isinstance(state, str) and state.startswith("TASK_STATE_"):
        return state[len("TASK_STATE_"):].lower().replace("_", "-")
    return state


def _requests_by_row(df: pd.DataFrame) -> dict[int, Any]:
    req = df[df["kind"].isin(("request", "pool"))]
    return dict(zip(req["i"], req["to_agent"]))


def _allowed(old: Any, new: Any) -> bool:
    try:
        return can_transition(old, new)
    except ValueError:  # not a v1.0 state name: show it as it is
        return True


def state_transitions(df: Source, strict: bool = True) -> pd.DataFrame:
    """Per task, every change of state: ``task_id, i, t, dt, state, short, previous, from_agent, event``.

    Read from status updates and Task snapshots in replies (Streaming Reply Mapping 5-7); a state
    repeated by the next message (a snapshot after a status update) is not a change. With
    ``strict`` a state the task cannot move to is skipped: back to submitted, or anything after a
    terminal state; such a stale item (for example a snapshot from another publisher that arrived
    late: MQTT orders messages per publisher only) is not the task's state.
    """
    df = load_traffic(df)
    sub = df[df["state"].notna() & df["task_id"].notna()]
    rows = []
    last: dict[str, Any] = {}
    for i, t, dt, task, state, who, ev in zip(sub["i"], sub["t"], sub["dt"], sub["task_id"], sub["state"],
                                              sub["from_agent"], sub["event"]):
        prev = last.get(task)
        if prev == state or (strict and not _allowed(prev, state)):
            continue
        last[task] = state
        rows.append((task, i, t, dt, state, short_state(state), prev, who, ev))
    return _frame(rows, ["task_id", "i", "t", "dt", "state", "short", "previous", "from_agent", "event"])


def handovers(df: Source) -> pd.DataFrame:
    """Replies whose ``a2a-responder-agent-id`` differs from the agent their request addressed.

    Columns ``i, t, dt, task_id, addressed, responder, cause``: ``handover`` when a card agent
    delegated the task (Optional Task Handover 2), ``pool-assigned`` when the request went to a
    pool (Optional Shared Subscription Dispatch 10).
    """
    df = load_traffic(df)
    addressed = _requests_by_row(df)
    sub = df[(df["kind"] == "reply") & df["responder_agent_id"].notna()]
    rows = []
    for i, t, dt, task, q, resp in zip(sub["i"], sub["t"], sub["dt"], sub["task_id"], sub["request_i"],
                                       sub["responder_agent_id"]):
        to = addressed.get(q) if q is not None else None
        if to is None or to == resp:
            continue
        rows.append((i, t, dt, task, to, resp, "pool-assigned" if to.startswith("pool:") else "handover"))
    return _frame(rows, ["i", "t", "dt", "task_id", "addressed", "responder", "cause"])


def routing_view(df: Source) -> pd.DataFrame:
    """Per task operation (request with a Task.id): where it went and who answered.

    Columns ``task_id, i, t, dt, method, target, responder, answered, reroute, cause``. ``target``
    is the addressed agent (or ``pool:{id}``); ``responder`` the agent that answered it first
    (``a2a-responder-agent-id`` when present); ``reroute`` is True when the target differs from
    the task's previous operation, and ``cause`` says why: ``handover`` (a reply named that agent,
    Optional Task Handover 2-4), ``pool-assigned`` (first direct request after a pooled reply,
    Shared Subscription Dispatch 11), ``fallback`` (back to the first target after the new agent
    went silent) or ``other``.
    """
    df = load_traffic(df)
    first_reply: dict[int, Any] = {}
    seen_responder: dict[str, list] = {}  # task -> [(i, agent)] from replies
    sub = df[df["request_i"].notna()]
    for i, q, who, resp, task in zip(sub["i"], sub["request_i"], sub["from_agent"], sub["responder_agent_id"],
                                     sub["task_id"]):
        first_reply.setdefault(q, who)
        if resp is not None and task is not None:
            seen_responder.setdefault(task, []).append((i, resp))
    req = df[df["kind"].isin(("request", "pool")) & df["task_id"].notna()]
    rows = []
    prev_target: dict[str, str] = {}
    first_target: dict[str, str] = {}
    for i, t, dt, task, method, target in zip(req["i"], req["t"], req["dt"], req["task_id"], req["method"],
                                              req["to_agent"]):
        before = prev_target.get(task)
        first_target.setdefault(task, target)
        reroute = before is not None and before != target
        cause = None
        if reroute:
            named = [a for (j, a) in seen_responder.get(task, ()) if j < i]
            if named and named[-1] == target:
                cause = "pool-assigned" if str(before).startswith("pool:") else "handover"
            elif target == first_target[task]:
                cause = "fallback"
            else:
                cause = "other"
        prev_target[task] = target
        rows.append((task, i, t, dt, method, target, first_reply.get(i), i in first_reply, reroute, cause))
    return _frame(rows, ["task_id", "i", "t", "dt", "method", "target", "responder", "answered", "reroute", "cause"],
                  bools=("answered", "reroute"))


def latency_view(df: Source) -> pd.DataFrame:
    """Per request: ``i, t, dt, method, target, task_id, latency_s`` (to the first reply, NaN when
    none came), ``replies`` (how many came back on its correlation) and ``error_code`` (of the
    first error reply)."""
    df = load_traffic(df)
    first: dict[int, float] = {}
    count: dict[int, int] = {}
    err: dict[int, Any] = {}
    sub = df[df["request_i"].notna()]
    for q, lat, code in zip(sub["request_i"], sub["latency_s"], sub["error_code"]):
        count[q] = count.get(q, 0) + 1
        if q not in first or lat < first[q]:
            first[q] = lat
        if code is not None and q not in err:
            err[q] = code
    req = df[df["kind"].isin(("request", "pool"))]
    rows = [(i, t, dt, m, to, task, first.get(i, float("nan")), count.get(i, 0), err.get(i))
            for i, t, dt, m, to, task in zip(req["i"], req["t"], req["dt"], req["method"], req["to_agent"],
                                             req["task_id"])]
    return _frame(rows, ["i", "t", "dt", "method", "target", "task_id", "latency_s", "replies", "error_code"],
                  ints=("i", "replies"))
