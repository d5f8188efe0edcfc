"""Recorded traffic as a pandas DataFrame: one row per MQTT message, A2A fields pulled out.

``load_traffic`` reads a recording (file path, ``Recorder`` or list of record dicts, see
``records.py`` for the format) and names, for every message, what the profile says it is. It
builds the frame in four steps a learner can follow (and run one by one):

1. ``recorded_frame``: the record's own fields, one row per message (records -> DataFrame);
2. ``topic_frame``: what the topic says, read by ``protocol.topics.parse_topic`` (Profile: Topic
   Model): ``kind`` and the identifiers;
3. ``message_frame``: what the payload and the user properties say: the A2A method, Task.id /
   contextId / messageId (``protocol.messages.task_ids_of``, Request/Reply Mapping 6-8,
   Multi-Turn Conversation Patterns), the task state and the ``event`` (``status``, ``artifact``,
   ``task``, ``message``, ``result``, ``error``, ``binary`` or ``card``: Streaming Reply Mapping;
   ``protected``: a ubsp-v1 JWE, whose content only its recipient reads),
   binding user properties (``a2a-responder-agent-id``: Optional Task Handover, ``a2a-status``:
   Presence and Liveness), and who sent it to whom;
4. ``pair_replies``: each reply joined to its request by Correlation Data (Request/Reply Mapping
   3): the latest earlier request with that Correlation Data, else a later one (a reply recorded
   before its request). A reply gets ``request_i`` (the request's row), ``latency_s`` (time since
   that request), the request's ``method``, and its Task.id/contextId when it names none (error
   replies).

The readers of one message (``topic_info``, ``describe``, ``ends``) and the pairing (``pair``) are
``reading.py``'s, written without pandas: the lint reads recordings with them too.
"""
from __future__ import annotations

import os
from contextvars import ContextVar
from functools import wraps
from operator import itemgetter
from itertools import islice
from typing import Any, Callable, Concatenate, Iterable, Iterator, Optional, ParamSpec, TypeVar, Union

import numpy as np
import pandas as pd

from ..protocol.routing import FALLBACK, Replied, Sent, new_responder_cause, replay
from ..protocol.states import can_transition, is_state, short_name
from .reading import (BINDING_COLUMNS, DISCOVERY, EVENTS_LANE, ID_COLUMNS, KINDS, PAYLOAD_COLUMNS,  # noqa: F401
                      REQUEST_KINDS, describe, ends, pair, routing_steps, topic_info)
from .records import FORMAT_VERSION, complete_record, read_records, record_problem

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

Source = Union[str, os.PathLike, "pd.DataFrame", Iterable[dict]]

RECORD_COLUMNS = ("t", "topic", "qos", "retain", "correlation", "response_topic", "size", "content_type",
                  "payload_format", "message_expiry", "user_properties", "payload_json", "payload_b64")
TOPIC_COLUMNS = ("kind", "org", "unit", "agent", "pool", "reply_suffix")
MESSAGE_COLUMNS = ("task_id", "context_id", "message_id", "method", "jsonrpc_id", "state", "event",
                   "artifact_id", "append", "last_chunk", "error_code", "a2a_error", "responder_agent_id",
                   "status", "status_source", "from_agent", "to_agent")
"""The columns of each step (``load_traffic`` adds ``i``, ``dt``, ``request_i`` and ``latency_s``)."""


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
    try:
        df = recorded_frame(records)
        df = pd.concat([df, topic_frame(df["topic"])], axis=1)
        df = pd.concat([df, message_frame(df)], axis=1)
    except (TypeError, ValueError, AttributeError) as exc:  # records handed in by hand: say which one
        raise _first_bad_record(records, exc) from None
    df = pair_replies(df)[list(COLUMNS)]
    df.attrs["source"] = str(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    return df


def _first_bad_record(records: list, exc: Exception) -> Exception:
    """``ValueError`` naming the first record that is no v1 record (``records.record_problem``: a
    field of the wrong type), else ``exc`` as it was. A file is checked line by line as it is read
    (``read_records``); a list of records only when it cannot be read."""
    for k, rec in enumerate(records):
        problem = record_problem({"v": FORMAT_VERSION, **rec} if isinstance(rec, dict) else rec)  # "v" may be left out
        if problem is not None:
            return ValueError(f"record {k}: {problem}")
    return exc


def _records_of(source: Any) -> list[dict]:
    """The record dicts of a file path, a ``Recorder`` (anything with ``.records``) or an iterable."""
    if isinstance(source, (str, os.PathLike)):
        return read_records(source)
    recs = getattr(source, "records", None)
    if recs is not None and not isinstance(source, (list, tuple)):
        return list(recs)
    if isinstance(source, (bytes, bytearray, dict)) or not hasattr(source, "__iter__"):
        raise TypeError(f"load_traffic() takes a recording's path, a Recorder, a list of records or a DataFrame, "
                        f"not {type(source).__name__}")
    return source if isinstance(source, list) else list(source)


# -- 1. the recorded fields --------------------------------------------------------------------------

_TYPED = {"t": "float64", "qos": "int64", "retain": "bool", "size": "int64"}
"""Columns with a numeric dtype; every other column keeps Python values (None stays None)."""


def recorded_frame(records: list) -> pd.DataFrame:
    """The record fields of ``RECORD_COLUMNS`` plus ``i`` (the row) and ``dt`` (seconds since the first).

    A hand-made record may leave keys out (``records.complete_record`` fills them, or says why
    the record is no record).
    """
    try:
        columns = _columns_of(records)
    except (KeyError, TypeError):
        columns = _columns_of([complete_record(k, r) for k, r in enumerate(records)])
    df = pd.DataFrame(columns, dtype=object, copy=False).astype(_TYPED)  # object: None stays None
    df.insert(0, "i", df.index.to_series().astype("int64"))
    df.insert(2, "dt", df["t"] - (df["t"].iloc[0] if len(df) else 0.0))
    return df


_RECORD_ROW = itemgetter(*RECORD_COLUMNS)


def _columns_of(records: list[dict]) -> dict[str, np.ndarray]:
    """``RECORD_COLUMNS`` as object arrays (each record is read once)."""
    return _transpose(map(_RECORD_ROW, records), RECORD_COLUMNS, len(records))


def _transpose(rows: Iterator[tuple], columns: tuple, n: int, block: int = 2048) -> dict[str, np.ndarray]:
    """``n`` row tuples as one object array per column, a block of rows at a time.

    Each row tuple is gone before Python's cyclic GC moves it to an older generation: a few
    hundred thousand live tuples would make the GC walk them again and again while the frame is
    built (``zip(*rows)`` would also make one iterator object per row). ``np.fromiter`` keeps
    each value as it is (a list stays one value).
    """
    arrays = [np.empty(n, dtype=object) for _ in columns]
    start = 0
    while chunk := list(islice(rows, block)):
        end = start + len(chunk)
        for k, array in enumerate(arrays):
            array[start:end] = np.fromiter(map(itemgetter(k), chunk), dtype=object, count=len(chunk))
        start = end
    return dict(zip(columns, arrays))


def _rows_frame(rows: Iterator[tuple], columns: tuple, n: int) -> pd.DataFrame:
    """``n`` tuples of Python values (one per row) as the object columns ``columns``.

    ``dtype=object`` keeps each value as it is (pandas would infer types: ints with None would
    become floats with NaN, text a string dtype)."""
    return pd.DataFrame(_transpose(rows, columns, n), dtype=object, copy=False)


# -- 2. what the topic says --------------------------------------------------------------------------

def topic_frame(topics: pd.Series) -> pd.DataFrame:
    """``TOPIC_COLUMNS`` for each topic; each distinct topic is parsed once (``pd.factorize``)."""
    codes, distinct = pd.factorize(topics, use_na_sentinel=False)
    parsed = _rows_frame(map(topic_info, distinct), TOPIC_COLUMNS, len(distinct))
    return parsed.take(codes).set_axis(topics.index)


# -- 3. what the payload and the user properties say ---------------------------------------------------

def message_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``MESSAGE_COLUMNS`` for each row of a frame that has the recorded and topic columns.

    Task.id / contextId / messageId come from ``protocol.messages.task_ids_of`` (payload first,
    then the ``a2a-task-id`` / ``a2a-context-id`` user properties); a topic outside the profile
    names none.
    """
    # read from the arrays themselves: five fresh 200k-item lists (``tolist()``) would be walked
    # item by item by every GC collection while they are young (20-30 ms each)
    described = map(describe, df["kind"].to_numpy(), df["payload_json"].to_numpy(), df["user_properties"].to_numpy(),
                    df["payload_b64"].to_numpy(), df["payload_format"].to_numpy())
    columns = _transpose(described, ID_COLUMNS + PAYLOAD_COLUMNS + BINDING_COLUMNS, len(df))
    from_agent, to_agent = _ends(df)
    columns.update(from_agent=from_agent, to_agent=to_agent)
    return pd.DataFrame(columns, index=df.index, dtype=object, copy=False)


def _ends(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(from_agent, to_agent) of each message (``reading.ends``); a reply's sender is set by ``pair_replies``."""
    both = map(ends, df["kind"].to_numpy(), df["agent"].to_numpy(), df["pool"].to_numpy(),
               df["response_topic"].to_numpy())
    columns = _transpose(both, ("from_agent", "to_agent"), len(df))
    return columns["from_agent"], columns["to_agent"]


# -- 4. replies joined to their requests ---------------------------------------------------------------

def pair_replies(df: pd.DataFrame) -> pd.DataFrame:
    """Join each reply to its request by Correlation Data (Request/Reply Mapping 3).

    ``reading.pair`` finds the latest earlier request with the same Correlation Data; a reply
    with none gets the last request that used it (a reply recorded before its request). The reply
    then takes the request's ``method``, ``latency_s`` (time since the request), ``from_agent``
    when no ``a2a-responder-agent-id`` names the responder (the agent the request addressed), and
    its Task.id/contextId when it names no Task.id (error replies).
    """
    df = df.assign(request_i=None, latency_s=np.nan)
    kind = df["kind"].to_numpy()
    is_reply = kind == "reply"
    rows, req = pair(kind, df["correlation"].to_numpy())
    if rows:
        _inherit(df, np.array(rows, dtype="int64"), np.array(req, dtype="int64"))
    from_agent = df["from_agent"].to_numpy(copy=True)
    unnamed = is_reply & pd.isna(from_agent)  # a reply without its request: who it says it is from
    from_agent[unnamed] = df["responder_agent_id"].to_numpy()[unnamed]
    _put_column(df, "from_agent", from_agent)
    return df


def _inherit(df: pd.DataFrame, rows: np.ndarray, req: np.ndarray) -> None:
    """Reply rows ``rows`` take what they inherit from their request rows ``req`` (in place).

    Each column is changed as a NumPy array and put back whole: setting cells of a frame
    (``df.iloc[rows, col] = ...``) would copy the column's block first, each time."""
    column = {name: df[name].to_numpy(copy=True)
              for name in ("request_i", "method", "latency_s", "from_agent", "task_id", "context_id")}
    column["request_i"][rows] = req
    column["method"][rows] = column["method"][req]
    t = df["t"].to_numpy()
    column["latency_s"][rows] = t[rows] - t[req]
    responder = df["responder_agent_id"].to_numpy()[rows]
    column["from_agent"][rows] = np.where(pd.isna(responder), df["to_agent"].to_numpy()[req], responder)
    task_id, context_id = column["task_id"], column["context_id"]
    unnamed = pd.isna(task_id[rows])  # replies that name no Task.id (error replies) take the request's
    rows, req = rows[unnamed], req[unnamed]
    task_id[rows] = task_id[req]
    no_context = pd.isna(context_id[rows])
    context_id[rows[no_context]] = context_id[req[no_context]]
    for name, values in column.items():
        _put_column(df, name, values)


def _put_column(df: pd.DataFrame, name: str, values: np.ndarray) -> None:
    """Replace a column with ``values``, keeping their dtype (pandas would make text a string dtype)."""
    df[name] = pd.Series(values, index=df.index, dtype=values.dtype, copy=False)


# -- one analysis per call ------------------------------------------------------------------------

_ANALYSIS: ContextVar[Optional[tuple[pd.DataFrame, dict]]] = ContextVar("a2a_nb_traffic_analysis", default=None)
"""The frame a view or chart call is reading, and what was derived from it during that call."""
_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_analysis(fn: Callable[Concatenate[pd.DataFrame, _P], _R]) -> Callable[Concatenate[Source, _P], _R]:
    """Decorate a view or chart ``fn(df, ...)``: ``df`` goes through ``load_traffic`` once, and for
    the rest of the call every ``derived`` view asked about that frame (state transitions, the
    routing replay, task steps...) is computed once, however many helpers ask for it. Nothing is
    kept after the call: a frame changed in place between two calls is read afresh."""
    return _analysed(fn, memo=False)


def derived(fn: Callable[Concatenate[pd.DataFrame, _P], _R]) -> Callable[Concatenate[Source, _P], _R]:
    """``one_analysis``, and inside another call on the same frame its result is reused (the
    result is shared: callers read it, never change it in place)."""
    return _analysed(fn, memo=True)


def _analysed(fn: Any, memo: bool) -> Any:
    @wraps(fn)
    def call(df: Any, *args: Any, **kwargs: Any) -> Any:
        active = _ANALYSIS.get()
        if active is not None and df is active[0]:
            if not memo:
                return fn(df, *args, **kwargs)
            key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
            try:
                hash(key)
            except TypeError:  # an argument that is no key (a dict of names): computed each time
                return fn(df, *args, **kwargs)
            done = active[1]
            if key not in done:
                done[key] = fn(df, *args, **kwargs)
            return done[key]
        frame = load_traffic(df)
        token = _ANALYSIS.set((frame, {}))
        try:
            return fn(frame, *args, **kwargs)
        finally:
            _ANALYSIS.reset(token)
    return call


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
    """``states.short_name`` of a v1.0 state; any other value (None, an unknown name) unchanged, so
    a column of recorded states can be ``.map``-ped (charts, the player and notebook 07 do)."""
    return short_name(state) if is_state(state) else state


def _requests_by_row(df: pd.DataFrame) -> dict[int, Any]:
    req = df[df["kind"].isin(REQUEST_KINDS)]
    return dict(zip(req["i"], req["to_agent"]))


def _allowed(old: Any, new: Any) -> bool:
    try:
        return can_transition(old, new)
    except ValueError:  # not a v1.0 state name: show it as it is
        return True


@derived
def state_transitions(df: pd.DataFrame, strict: bool = True) -> pd.DataFrame:
    """Per task, every change of state: ``task_id, i, t, dt, state, short, previous, from_agent, event``.

    Read from status updates and Task snapshots in replies (Streaming Reply Mapping 5-7); a state
    repeated by the next message (a snapshot after a status update) is not a change. With
    ``strict`` a state the task cannot move to is skipped: back to submitted, or anything after a
    terminal state; such a stale item (for example a snapshot from another publisher that arrived
    late: MQTT orders messages per publisher only) is not the task's state.
    """
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


REROUTE_COLUMNS = ["i", "t", "dt", "task_id", "from", "to", "cause", "detail"]
"""The columns of ``reroutes``."""

OTHER = "other"
"""``routing_view``'s cause for a request that went where the requester's routing table would not
send it (not one of ``protocol.routing.CAUSES``)."""


@derived
def reroutes(df: pd.DataFrame) -> pd.DataFrame:
    """The requester's routing table, replayed from the recording: one row per reroute it made.

    ``protocol.routing.replay`` feeds the one ``RoutingTable`` every recorded request and reply of
    each task (Optional Task Handover 2-4, Optional Shared Subscription Dispatch 10-11, Requester
    Retry and Timeout Profile 9), so a task's rows are the reroutes its requester's live table
    recorded. Columns ``i`` (the reply that named a new responder, or the request that fell back),
    ``t, dt, task_id``, ``from`` and ``to`` (an agent, or ``pool:{id}``), ``cause`` (``handover``,
    ``pool-assigned`` or ``fallback``) and ``detail``.
    """
    positions, steps = _routing_steps(df)
    i, t, dt = df["i"].to_numpy(), df["t"].to_numpy(), df["dt"].to_numpy()
    moves = [(i[k], t[k], dt[k], r.task_id, r.from_.label, r.to.label, r.cause, r.detail)
             for k, r in zip(positions, replay(steps)) if r is not None]
    return _frame(moves, REROUTE_COLUMNS)


@derived
def new_responders(df: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """The replies that moved their task to a new responder, ``{i: (cause, responder)}``: the
    ``reroutes`` a reply made (every one but a fallback); later replies naming the same responder
    moved nothing."""
    moves = reroutes(df)
    return {int(i): (cause, to) for i, cause, to in zip(moves["i"], moves["cause"], moves["to"]) if cause != FALLBACK}


@derived
def reroutes_by_task(df: pd.DataFrame) -> dict[str, list[tuple[int, str, str]]]:
    """``reroutes`` per Task.id: ``[(i, to, cause)]`` in recorded order."""
    moves: dict[str, list[tuple[int, str, str]]] = {}
    table = reroutes(df)
    for i, task, to, cause in zip(table["i"], table["task_id"], table["to"], table["cause"]):
        moves.setdefault(task, []).append((int(i), to, cause))
    return moves


def _routing_steps(df: pd.DataFrame) -> tuple[list[int], list[Union[Sent, Replied]]]:
    """What ``replay`` reads (``reading.routing_steps``), with the position of each in ``df`` (a
    part of a recording keeps its ``i``)."""
    columns = [df[name].to_numpy().tolist() for name in ("i", "t", "task_id", "org", "unit", "agent", "pool",
                                                          "responder_agent_id", "kind")]
    i, t, task, org, unit, agent, pool, responder, kind = columns
    return routing_steps(i, t, task, org, unit, agent, pool, responder, kind, answered=df["request_i"].dropna())


def handovers(df: pd.DataFrame) -> pd.DataFrame:
    """Replies whose ``a2a-responder-agent-id`` differs from the agent their request addressed.

    Columns ``i, t, dt, task_id, addressed, responder, cause``: the cause the routing table gives
    a reply that names a new responder (``protocol.routing.new_responder_cause``): ``handover`` when
    a card agent delegated the task (Optional Task Handover 2), ``pool-assigned`` when the request
    went to a pool (Optional Shared Subscription Dispatch 10). Every such reply is a row; the
    reroutes they made are ``reroutes``.
    """
    addressed = _requests_by_row(df)
    sub = df[(df["kind"] == "reply") & df["responder_agent_id"].notna()]
    rows = []
    for i, t, dt, task, q, resp in zip(sub["i"], sub["t"], sub["dt"], sub["task_id"], sub["request_i"],
                                       sub["responder_agent_id"]):
        to = addressed.get(q) if q is not None else None
        if to is None or to == resp:
            continue
        rows.append((i, t, dt, task, to, resp, new_responder_cause(to.startswith("pool:"))))
    return _frame(rows, ["i", "t", "dt", "task_id", "addressed", "responder", "cause"])


@derived
def routing_view(df: pd.DataFrame) -> pd.DataFrame:
    """Per task operation (request with a Task.id): where it went and who answered.

    Columns ``task_id, i, t, dt, method, target, responder, answered, reroute, cause``. ``target``
    is the addressed agent (or ``pool:{id}``); ``responder`` the agent that answered it first
    (``a2a-responder-agent-id`` when present); ``reroute`` is True when the target differs from
    the task's previous operation, and ``cause`` says why: the cause of the routing table's
    latest reroute (``reroutes``) when the table routes the task to this target now (``handover``,
    Optional Task Handover 2-4; ``pool-assigned``, Shared Subscription Dispatch 11; ``fallback``
    to the card agent after the new agent went silent), else ``other``.
    """
    first_reply: dict[int, Any] = {}
    sub = df[df["request_i"].notna()]
    for q, who in zip(sub["request_i"], sub["from_agent"]):
        first_reply.setdefault(q, who)
    moves = reroutes_by_task(df)
    req = df[df["kind"].isin(REQUEST_KINDS) & df["task_id"].notna()]
    rows = []
    prev_target: dict[str, str] = {}
    for i, t, dt, task, method, target in zip(req["i"], req["t"], req["dt"], req["task_id"], req["method"],
                                              req["to_agent"]):
        before = prev_target.get(task)
        reroute = before is not None and before != target
        cause = None
        if reroute:
            made = [move for move in moves.get(task, ()) if move[0] <= i]
            cause = made[-1][2] if made and made[-1][1] == target else OTHER
        prev_target[task] = target
        rows.append((task, i, t, dt, method, target, first_reply.get(i), i in first_reply, reroute, cause))
    return _frame(rows, ["task_id", "i", "t", "dt", "method", "target", "responder", "answered", "reroute", "cause"],
                  bools=("answered", "reroute"))


@derived
def latency_view(df: pd.DataFrame) -> pd.DataFrame:
    """Per request: ``i, t, dt, method, target, task_id, latency_s`` (to the first reply, NaN when
    none came), ``replies`` (how many came back on its correlation) and ``error_code`` (of the
    first error reply)."""
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
    req = df[df["kind"].isin(REQUEST_KINDS)]
    rows = [(i, t, dt, m, to, task, first.get(i, float("nan")), count.get(i, 0), err.get(i))
            for i, t, dt, m, to, task in zip(req["i"], req["t"], req["dt"], req["method"], req["to_agent"],
                                             req["task_id"])]
    return _frame(rows, ["i", "t", "dt", "method", "target", "task_id", "latency_s", "replies", "error_code"],
                  ints=("i", "replies"))
