"""``python -m a2a_nb serve | send | story``: the two roles at work. ``serve`` runs responders (the
story's agents), ``send`` is a requester talking to one, ``story`` runs the coordinator's story with both."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from typing import Optional

from .common import (SERVABLE_AGENTS, CliError, UsageError, add_key_trust, add_scope, broker_lost,
                     check_recording_target, key_trust, no_card_hint, non_negative_seconds, one_of, positive_int,
                     positive_seconds, scope_options, wait_for_signal)

HANDOVER_PLANS = ("none", "first-reply", "mid-stream", "double", "dies")
"""Same as ``story.cast.HANDOVER_PLANS`` (spelled out so the parser does not import the cast; a test checks)."""
SCENARIO_NAMES = ("happy", "handover", "no-handover", "multi-handover", "handover-unreachable", "pool", "full")
"""``story.scenarios.SCENARIOS`` plus ``full`` (all of them); a test checks they agree."""


def register(sub) -> None:
    s = sub.add_parser("serve", help="run an agent until Ctrl-C: echo, ticket-desk or analyst (pool member)")
    s.add_argument("agent", choices=[*SERVABLE_AGENTS, "analyst"])
    s.add_argument("--handover", default="first-reply", choices=HANDOVER_PLANS,
                   type=one_of(HANDOVER_PLANS, "handover plan"),
                   help="ticket-desk handover plan (default first-reply)")
    s.add_argument("--max-analysts", type=positive_int, default=4,
                   help="ticket-desk: tickets worked on at once, one analyst connection each (analyst-1..N); "
                        "more get error -32004 (default 4)")
    s.add_argument("--pool", default=None, help="also consume the shared pool request topic of this pool")
    s.add_argument("--members", type=positive_int, default=1, help="analyst pool: how many members to run")
    s.add_argument("--store", default=None, help="SQLite file for the desk's tasks (survives a restart)")
    s.add_argument("--pace", type=non_negative_seconds, default=0.05,
                   help="seconds between the analyst's steps (default 0.05)")
    add_scope(s)
    s.set_defaults(func=cmd_serve)

    m = sub.add_parser("send", help="one SendMessage (or --stream) and print the reply, state and round trip")
    m.add_argument("agent", help="agent id, or pool:NAME")
    m.add_argument("text", help="the message text; - reads it from stdin (at most 256 KiB of UTF-8)")
    m.add_argument("--stream", action="store_true", help="SendStreamingMessage: print each event")
    m.add_argument("--json", action="store_true",
                   help="JSON lines: one per reply or stream event, then the result (task id, state, timing)")
    m.add_argument("--ubsp", action="store_true",
                   help="ubsp-v1: seal the request and read sealed replies (end-to-end JWE; keys of this machine's "
                        "key home, A2A_UBSP_DIR)")
    add_key_trust(m)
    m.add_argument("--task", metavar="TASK_ID", default=None,
                   help="continue this interrupted task (input-required): the text is the answer, sent on the "
                        "same Task.id and contextId with a new messageId, to the agent that answers for the task "
                        "now (the analyst a handover named, remembered from earlier sends)")
    m.add_argument("--timeout", type=positive_seconds, default=15.0, help="first-reply timeout in seconds (default 15)")
    m.add_argument("--idle-timeout", type=positive_seconds, default=None,
                   help="with --stream: seconds without an item before the stream asks for the task with GetTask "
                        "(default 30, or --timeout when longer)")
    add_scope(m)
    m.set_defaults(func=cmd_send)

    st = sub.add_parser("story", help="the coordinator's story, narrated step by step")
    st.add_argument("--scenario", default="happy", choices=SCENARIO_NAMES,
                    type=one_of(SCENARIO_NAMES, "scenario"),
                    help="which story to tell (default happy; full = all of them)")
    st.add_argument("--record", default=None, help="record the traffic to this JSON-lines file")
    st.add_argument("--charts", default=None, help="save the charts of the recording as PNG files in this folder")
    st.add_argument("--served", action="store_true", help="use agents already served (do not start them)")
    st.add_argument("--pace", type=non_negative_seconds, default=0.05, help="seconds between the analyst's steps")
    add_scope(st)
    st.set_defaults(func=cmd_story)


def cmd_serve(args: argparse.Namespace) -> int:
    from ..agents.responder import Responder, ResponderOptions
    from ..agents.store import TaskStoreError
    from ..mqtt.broker import ENV_CREDENTIALS, resolve
    from ..story.cast import DeskLoginError, TicketDesk, analyst_pool, echo_card, echo_handler

    url = resolve(args.broker).url_with_secret
    stoppers = []
    banner = []  # printed once Ctrl-C is caught (wait_for_signal): a user who reads it can stop cleanly
    local = _local_keys() if args.agent in SERVABLE_AGENTS else None
    if local is not None:
        stoppers.append(local.close)  # after the agents (stoppers run in reverse order)
    if args.agent == "echo":
        r = Responder("echo", echo_handler, org=args.org, unit=args.unit, card=echo_card(args.org, args.unit),
                      broker=url, options=ResponderOptions(inline=True, task_events=True), pool=args.pool,
                      ubsp=local.ubsp(args.org, args.unit, "echo") if local else None)
        stoppers.append(r.stop)
        stopping = "echo (its card will say offline)"
        banner.append(f"echo serving on {r.request_topic} ({resolve(args.broker).url})")
        if args.pool:
            banner.append(f"echo serving pool {args.pool} ({r.pool_mode} dispatch: {r.pool_mode_why or 'the broker dispatches'})")
    elif args.agent == "ticket-desk":
        try:
            desk = TicketDesk(org=args.org, unit=args.unit, broker=url, handover=args.handover,
                              store_path=args.store, pool=args.pool, pace=args.pace, max_analysts=args.max_analysts,
                              ubsp=local.ubsp(args.org, args.unit, "ticket-desk") if local else None, task_events=True)
        except DeskLoginError as exc:  # the analysts would log in as the desk (docs/secure-broker.md)
            raise CliError(str(exc), hint=exc.hint) from None
        except TaskStoreError as exc:  # a folder, a file of something else, a path it cannot write
            raise UsageError(str(exc)) from None
        stoppers.append(desk.stop)
        stopping = "ticket-desk and its analysts (its card will say offline)"
        banner.append(f"ticket-desk serving on {desk.desk.request_topic} (handover plan: {args.handover}; at most "
                      f"{args.max_analysts} tickets at once, analysts analyst-1..analyst-{args.max_analysts})")
        if desk.orphans_failed:
            banner.append(f"{len(desk.orphans_failed)} task(s) in {args.store} were still running when the desk last "
                          "stopped: marked failed (a requester's GetTask says why)")
    else:
        if not args.pool:
            raise UsageError("serve analyst needs --pool NAME (analysts without a pool are spawned by the desk)")
        # random member names let several processes serve one pool; on the secure broker members log
        # in with the numbered logins it issued (analyst-{pool}-1..4), so one process serves the pool
        secure_logins = bool(os.environ.get(ENV_CREDENTIALS))
        for member in analyst_pool(args.pool, args.members, org=args.org, unit=args.unit, broker=url,
                                   pace=args.pace, unique_names=not secure_logins):
            stoppers.append(member.stop)
            why = f": {member.pool_mode_why}" if member.pool_mode_why else ""
            banner.append(f"{member.agent} serving pool {args.pool} ({member.pool_mode} dispatch{why})")
        stopping = f"the members of pool {args.pool} (their presence will say offline)"

    if local is not None:
        banner.append(f"ubsp-v1 accepted: keys served on https://{local.server.host_port} (key home {local.home})")

    def stop_all() -> None:
        for stop in reversed(stoppers):
            stop()

    wait_for_signal(then=stop_all, stopping=stopping, ready="\n".join(banner))
    return 0


def _local_keys():
    """This machine's ubsp-v1 key home, opened (``a2a_nb.ubsp.local_keys``); None without the
    ``secure`` extra (joserfc), then agents answer plain requests only."""
    try:
        from ..ubsp.local_keys import LocalKeys
    except ImportError as exc:
        print(f"note: ubsp-v1 is off ({exc}; install the 'secure' extra)", file=sys.stderr, flush=True)
        return None
    return LocalKeys()


STDIN_MAX_BYTES = 256 * 1024
"""``send AGENT -``: the most text read from stdin (a responder's default request bound, 256 KiB)."""


def text_from_stdin(limit: int = STDIN_MAX_BYTES) -> str:
    """The text piped to ``send AGENT -``: UTF-8, at most ``limit`` bytes, one final newline dropped
    (``echo hi | ...``); ``UsageError`` otherwise (exit 2)."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"the text on stdin is longer than {limit // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the text on stdin is not UTF-8 (byte {exc.start})") from None
    text = text[:-1] if text.endswith("\n") else text
    if not text:
        raise UsageError("no text on stdin (send AGENT - reads the message from stdin)")
    return text


def cmd_send(args: argparse.Namespace) -> int:
    if args.text == "-":
        args.text = text_from_stdin()
    from ..agents.requester import Requester
    from ..mqtt.broker import ENV_URL
    from ..protocol import errors, states
    from ..protocol.errors import A2AError
    from ..protocol.retry import RetryProfile

    trust = key_trust(args)  # usage mistakes first, before anything connects
    if trust is not None and not args.ubsp:
        raise UsageError("--trust-host and --ca go with --ubsp")
    if not args.broker and not os.environ.get(ENV_URL):
        print(f"note: {ENV_URL} is not set, so this command started a private Mosquitto: agents served in other "
              f"shells are not on it (export {ENV_URL}=<the URL `python -m a2a_nb broker` prints>)",
              file=sys.stderr, flush=True)
    idle = args.idle_timeout if args.idle_timeout is not None else max(30.0, args.timeout)
    retry = RetryProfile(reply_first_timeout_s=args.timeout, stream_idle_timeout_s=idle)
    local = None
    if args.ubsp:
        if args.agent.startswith("pool:"):
            raise UsageError("--ubsp seals a request to one agent's key: a pool has none (send to an agent)")
        local = _local_keys()
        if local is None:
            from ..installed import install_extra_command
            raise UsageError(f"--ubsp needs the 'secure' extra ({install_extra_command('secure')})")
    try:
        slot = claim_sender(args)  # held until this send ends: no other send of this user takes its name
    except BaseException:
        if local is not None:
            local.close()
        raise
    agent = slot.agent
    try:
        req = Requester(agent, org=args.org, unit=args.unit, broker=args.broker, retry=retry,
                        routes_path=routes_path(), ubsp=local.ubsp(args.org, args.unit, agent, trust) if local else None)
    except BaseException:
        if local is not None:
            local.close()
        slot.release()
        raise
    req.on_notice = _say  # the broker gone and back, a stream recovered: said while it happens
    req.on_attempt = _say_attempt
    started = time.time()
    streams: list = []  # the stream being read, for watch_presence
    try:
        message = None
        if args.task:  # the same Task.id and contextId, a new messageId (Profile: Multi-Turn Conversation)
            to = follow_up_target(req, args)
            task = req.get_task(args.task, to=to)
            message = req.new_message(args.text, task_id=args.task, context_id=task["contextId"])
            first = req.routing.card(args.task)
            watched = first.label if first is not None else to
        else:
            to = watched = args.agent
            if not to.startswith("pool:"):  # a pool has no card of its own
                require_card(req.session, to, args.org, args.unit)
        if not watched.startswith("pool:"):
            watch_presence(req.session, watched, args.org, args.unit, streams)
        try:
            task_id, state, outcome = _print_send(req, to, args, message, streams)
        except A2AError as exc:
            if exc.code != errors.TASK_NOT_FOUND or not any(s.recoveries for s in streams):
                raise
            raise CliError(f"the agent answered error {exc.code} (TaskNotFound) when the stream was recovered: "
                           f"{exc.message}", hint="the agent no longer knows the task: it restarted without its "
                           "tasks (`serve ticket-desk --store FILE` keeps them across a restart)") from None
        reroutes = [r for r in req.routing.reroutes() if r.at >= started]  # the routes file also holds earlier sends
        answer = None
        if task_id is not None and state is not None and states.is_interrupted(state):
            now = req.routing.target(task_id)  # the analyst a handover named: the answer goes there
            answer = (f"python -m a2a_nb send {now.label if now else args.agent} "
                      f"\"ANSWER\" --task {task_id}{scope_options(args.org, args.unit)}"
                      + (" --stream" if args.stream else "") + (" --ubsp" if args.ubsp else ""))
        if args.json:
            outcome.update(reroutes=[{"cause": r.cause, "from": str(r.from_), "to": str(r.to)} for r in reroutes],
                           answer_with=answer, exit_code=0)
            if local is not None:
                outcome["ubsp"] = {"sealed": req.stats.sent, "replies": req.stats.replies,
                                   "refused": req.stats.refused, "plaintext_errors": req.stats.plaintext_errors}
            print(json.dumps(outcome, ensure_ascii=False), flush=True)
            return 0
        for r in reroutes:
            print(f"routing: {r.cause} {r.from_} → {r.to}")
        if local is not None:
            print(f"ubsp-v1: {req.stats.sent} request(s) sealed, {req.stats.replies} sealed repl(ies) received"
                  + (f", {req.stats.refused} refused" if req.stats.refused else "")
                  + (f", {req.stats.plaintext_errors} plaintext error(s)" if req.stats.plaintext_errors else ""))
        if answer is not None:
            print(f"the task waits for your answer: {answer}")
        return 0
    finally:  # A2AError, RequestTimeout, a lost broker: cli.main prints them (cli.explain)
        req.close()
        if local is not None:
            local.close()
        slot.release()


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _say_attempt(attempt) -> None:
    """``Requester.on_attempt``: an attempt that was not answered, said as it is settled."""
    if not attempt.outcome.startswith("answered"):
        why = "not sent: no connection to the broker" if attempt.reason_code == -1 else attempt.outcome
        scope, name = attempt.topic.rsplit("/", 1)
        _say(f"attempt {attempt.number} to {'pool:' if scope.endswith('/pool') else ''}{name}: {why}")


def watch_presence(session, agent: str, org: str, unit: str, streams: list) -> None:
    """While ``send`` waits, say when the card of ``agent`` changes (Profile: Presence and Liveness):
    ``offline`` (the agent stopped, or died and its last will spoke) or ``online`` again (it restarted,
    or the broker did and it re-announced itself). On ``online`` again, a stream being read recovers at
    once (GetTask) instead of at its idle timeout: items sent meanwhile are lost, and an agent restarted
    without its store no longer knows the task. The first card (the retained one) is only noted."""
    from ..mqtt.session import SessionError
    from ..protocol import cards, properties, topics

    seen: list[str] = []

    def on_card(msg) -> None:
        read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
        if read is None:
            return
        status = (read.status or properties.ONLINE) if read.registered else "unregistered"
        first = not seen
        seen.append(status)
        if first:
            return
        if status != properties.ONLINE:
            _say(f"{agent}: its card says {status} (the agent stopped, or died and its last will spoke); waiting")
            return
        _say(f"{agent}: its card says online again (the agent or the broker restarted)")
        for stream in streams:
            stream.recover_now(f"{agent} announced itself again")

    try:
        session.subscribe(topics.discovery_topic(org, unit, agent), handler=on_card)
    except SessionError:  # a login that may not read cards: no watch
        pass


def _print_send(req, to: str, args: argparse.Namespace, message: Optional[dict],
                streams: list) -> tuple[Optional[str], Optional[str], dict]:
    """Send (or stream) the request and print what came back: the reply, then one line saying what it
    was: a task and its state, or a Message (the agent made no task). With ``--json`` each reply or
    stream event is one JSON line instead (:func:`_json_line`) and the summary line is left to the
    caller. Returns the Task.id and state (None, None for a Message) and the summary as a dict
    (``task_id``, ``state``, ``message_reply``, ``ms``, ``events`` or ``attempts``). A stream is put
    in ``streams`` while it is read."""
    from ..protocol import states

    t = time.perf_counter()
    if args.stream:
        stream = req.stream(to, None if message else args.text, message=message)
        streams.append(stream)
        for ev in stream:
            ms = (time.perf_counter() - t) * 1000
            if args.json:
                _json_line(ev.kind, ms, ev.state, _event_text(ev), ev.data, task_id=stream.task_id)
            else:
                print(f"{ms:8.1f} ms  {ev.kind:15s} {states.short_name(ev.state) if ev.state else ''} {_event_text(ev)}")
        task_id, state = stream.task_id, stream.state
        ms = (time.perf_counter() - t) * 1000
        summary: dict = {"events": len(stream.events)}
        timing = f"{len(stream.events)} event(s) in {ms:.1f} ms"
    else:
        reply = req.send(to, None if message else args.text, message=message)
        state = reply.state
        task_id = reply.task_id if state else None  # a Message reply: no task exists
        ms = reply.rtt_s * 1000
        summary = {"attempts": len(reply.attempts)}
        if args.json:
            _json_line("reply", ms, state, reply.text, reply.result, task_id=task_id)
        else:
            print(reply.text or json.dumps(reply.result))
        timing = f"round trip {ms:.1f} ms; {len(reply.attempts)} attempt(s)"
    outcome = {"result": "message" if state is None else "task", "task_id": task_id,
               "state": states.short_name(state) if state else None, "ms": round(ms, 3), **summary}
    if args.json:
        return task_id, state, outcome
    if state is None:  # a SendMessage may be answered with a Message: then no task exists (A2A v1.0)
        print(f"message reply (the agent made no task); {timing}")
        return None, None, outcome
    print(f"task {task_id}: {states.short_name(state)}; {timing}")
    return task_id, state, outcome


def _json_line(kind: str, ms: float, state: Optional[str], text: Optional[str], data, task_id: Optional[str]) -> None:
    """``send --json``: one reply or stream event as a JSON line: ``kind`` (``reply``, or the stream
    item's kind: ``task``, ``statusUpdate``, ``artifactUpdate``, ``message``, ...), ``ms`` since the
    request, ``task_id``, ``state`` (short name), ``text`` (what the text output prints) and ``data``
    (the JSON-RPC result or stream item as received)."""
    from ..protocol import states

    print(json.dumps({"kind": kind, "ms": round(ms, 3), "task_id": task_id,
                      "state": states.short_name(state) if state else None, "text": text or "", "data": data},
                     ensure_ascii=False, default=str), flush=True)


def routes_path() -> Optional[str]:
    """The file where ``send`` keeps its routing table between runs (Task.id → the agent that answers
    for it, from ``a2a-responder-agent-id``): each ``send`` is a new process, and a follow-up with
    ``--task`` must reach the analyst a handover named, as lesson 05 teaches.

    ``$XDG_STATE_HOME/a2a_nb/routes.sqlite`` (default ``~/.local/state/a2a_nb/``), folder and file
    readable by their owner only; the store keeps the most recent routes (``SqliteRoutes``). None,
    after a note, when it cannot be made: ``send`` then works without it."""
    folder = state_folder()
    path = folder / "routes.sqlite"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        os.chmod(path, 0o600)
    except OSError as exc:
        print(f"note: cannot keep routes in {path} ({exc.strerror or exc}): a follow-up with --task will not know "
              "which analyst a handover named", file=sys.stderr, flush=True)
        return None
    from ..agents.routes_store import set_aside_if_damaged

    damaged = set_aside_if_damaged(str(path))  # a damaged file is moved aside: this send goes on
    if damaged:
        print(damaged, file=sys.stderr, flush=True)
    return str(path)


def state_folder():
    """``$XDG_STATE_HOME/a2a_nb`` (default ``~/.local/state/a2a_nb``): where ``send`` keeps what outlives
    one run (the routes file, the sender slots)."""
    from pathlib import Path

    state_home = os.environ.get("XDG_STATE_HOME", "")
    return (Path(state_home) if os.path.isabs(state_home) else Path.home() / ".local" / "state") / "a2a_nb"


def claim_sender(args: argparse.Namespace):
    """The name this ``send`` uses, held while it runs (``sender_slots.py``): ``cli``, else the next free
    of ``cli-2``, ``cli-3``, ... (on ``broker --secure``: the ``cli`` logins the credentials file holds);
    a login in the URL is the only name, taken in turns."""
    from ..mqtt.broker import ENV_CREDENTIALS, ENV_URL, BrokerEndpoint
    from . import sender_slots

    base = sender_agent(args)
    url = args.broker or os.environ.get(ENV_URL)
    credentials = os.environ.get(ENV_CREDENTIALS)
    if url and BrokerEndpoint.from_url(url).username:
        names = [base]
    elif credentials:
        names = sender_slots.slot_names(base, sender_slots.credential_agents(credentials, args.org, args.unit)) \
            or [base]
    else:
        names = sender_slots.slot_names(base)
    try:
        return sender_slots.claim(state_folder() / "senders", args.org, args.unit, names)
    except TimeoutError as exc:
        raise CliError(f"{exc}: not sent", hint="wait for the other sends to finish, or start fewer at once") \
            from None


def follow_up_target(req, args: argparse.Namespace) -> str:
    """Where ``send AGENT TEXT --task ID`` goes: to the agent that answers for task ID now, by the
    routes of earlier sends (Profile: Optional Task Handover: follow-ups go to the agent named by the
    latest ``a2a-responder-agent-id``; lesson 05). AGENT may name it, or the agent the task was first
    sent to (the card agent, e.g. ``ticket-desk``); anything else is refused, since that agent would
    not know the task. A task the routes do not know goes to AGENT, which must then have a card."""
    now, first = req.routing.target(args.task), req.routing.card(args.task)
    named = req.address(args.agent)
    if now is None:
        try:
            require_card(req.session, args.agent, args.org, args.unit)
        except CliError as exc:
            raise CliError(f"cannot tell where task {args.task} is: earlier sends did not route it, and there is {exc}",
                           hint="an agent without a card (an analyst) is reached only for a task a handover gave it "
                                "in an earlier `send`: check the task id, or answer through the agent the task was "
                                "first sent to") from None
        return args.agent
    if named not in (now, first):
        raise CliError(f"task {args.task} is answered by {now}, not by {named}",
                       hint=f"send the answer there: python -m a2a_nb send {now.label} {shlex.quote(args.text)} "
                            f"--task {args.task}{scope_options(args.org, args.unit)}")
    if named != now:
        print(f"routing: task {args.task} was handed over from {first.label} to {now.label}: sending there",
              flush=True, file=sys.stderr if getattr(args, "json", False) else sys.stdout)  # --json: stdout is JSON
    return now.label


def sender_agent(args: argparse.Namespace) -> str:
    """The agent id ``send`` uses: ``cli``, or, when the broker URL logs in as ``{org}/{unit}/{agent}``
    (``broker --secure`` renames every client after its login), that ``agent``: a login
    ``acme/support/coordinator`` can only read the coordinator's reply topics."""
    import os

    from ..mqtt.broker import ENV_URL, BrokerEndpoint

    url = args.broker or os.environ.get(ENV_URL)
    username = BrokerEndpoint.from_url(url).username if url else None
    if not username or username.count("/") != 2:
        return "cli"
    org, unit, agent = username.split("/")
    if (org, unit) != (args.org, args.unit):
        raise UsageError(f"the broker login {username} is in {org}/{unit}, but send works in {args.org}/{args.unit}: "
                         f"add --org {org} --unit {unit}")
    return agent


CARD_LOOKUP_S = 0.25
"""How long ``send`` waits for the target's retained card before saying there is none."""


def require_card(session, agent: str, org: str, unit: str, wait: float = CARD_LOOKUP_S) -> None:
    """Raise ``CliError`` "no card for AGENT in ORG/UNIT; known agents: ..." unless ``agent`` has a
    retained Agent Card on ``$a2a/v1/discovery/{org}/{unit}/+``, so a typo fails at once instead of
    after the reply timeout.

    Profile: Discovery Subscriber Behavior 1-2 (a scoped filter; retained cards are the current
    registrations), Presence Subscriber Behavior 3 (no retained card: the agent is unregistered or
    unavailable). The broker sends retained cards right after the SUBACK, so a known agent costs
    about a millisecond and an unknown one ``wait`` seconds. A login the broker does not let read the
    discovery topics skips the check. Any card counts, valid or not: whether it is valid is not
    ``send``'s to judge (``python -m a2a_nb probe AGENT`` does). The agent's own card topic is read
    first; the unit's cards only when it has none, to name the known ones."""
    from ..mqtt.session import SessionError
    from ..protocol import cards, properties, topics
    from ..protocol.ids import validate_identifier

    validate_identifier(agent, "agent_id")  # ValueError: a usage mistake (exit 2)
    status: dict[str, Optional[str]] = {}  # agent → a2a-status of its card (None: not given)
    found = threading.Event()

    def on_card(msg) -> None:
        read = cards.read_card_message(msg.topic, msg.payload, msg.user_properties)
        if read is None:
            return
        if not read.registered:  # an empty retained message unregisters
            status.pop(read.agent, None)
            return
        status[read.agent] = read.status
        if read.agent == agent:
            found.set()

    def read_cards(flt: str) -> bool:
        """Subscribe to ``flt`` for ``wait`` seconds: did ``agent``'s card come? (The retained cards come
        right after the SUBACK.) True when the login may not read it: no check then."""
        try:
            session.subscribe(flt, handler=on_card)
        except SessionError:
            return True  # a login that may not read cards: no check
        try:
            return found.wait(wait)
        finally:
            session.unsubscribe(flt)

    # The agent's own card topic first, then (only to name the known agents) the whole unit: a card
    # of another agent there that paho cannot read (docs/surfaces-retained.md) never stops a send.
    if read_cards(topics.discovery_topic(org, unit, agent)) or read_cards(topics.discovery_filter(org, unit)):
        if status.get(agent) == properties.OFFLINE:  # advisory only (Presence Subscriber Behavior 2)
            print(f"note: the card of {agent} says {properties.STATUS}=offline; sending anyway",
                  file=sys.stderr, flush=True)
        return
    names = ", ".join(name + (" (offline)" if st == properties.OFFLINE else "")
                      for name, st in sorted(status.items())) or "none"
    raise CliError(f"no card for {agent} in {org}/{unit}; known agents: {names}", hint=no_card_hint(agent, org, unit))


def _event_text(ev) -> str:
    from ..protocol import messages

    if ev.kind == "statusUpdate" and ev.data["status"].get("message"):
        return messages.text_of(ev.data["status"]["message"])
    if ev.kind == "artifactUpdate":  # each chunk in full: text parts as text, data parts as JSON
        parts = ev.data["artifact"].get("parts", [])
        shown = [p["text"] if "text" in p else json.dumps(p["data"], ensure_ascii=False) if "data" in p
                 else f"({len(p.get('raw', ''))} base64 chars)" for p in parts]
        return f"artifact {ev.data['artifact']['artifactId']}: " + " ".join(shown)
    if ev.kind == "message":
        return messages.text_of(ev.data)
    return ""


def cmd_story(args: argparse.Namespace) -> int:
    from ..agents.requester import RequestTimeout
    from ..mqtt.broker import resolve
    from ..story.scenarios import SCENARIOS, AlreadyServed, run_scenario

    names = list(SCENARIOS) if args.scenario == "full" else [args.scenario]
    _check_story_outputs(args)
    url = resolve(args.broker).url_with_secret
    recorder = None
    if args.record or args.charts:
        from ..traffic.recorder import Recorder

        recorder = Recorder(broker=url, path=args.record).start()
    results = []
    try:
        for seed, name in enumerate(names, start=4821):
            print(f"\n=== {name} ===")
            try:
                results.append(run_scenario(name, url, served=args.served, pace=args.pace, seed=seed))
            except AlreadyServed as exc:
                raise CliError(str(exc), hint="tell the story with the served agents (`story --served`), or stop "
                               "them first") from None
            except RuntimeError as exc:  # discovery found no served agent (not a subclass: those are outages)
                if not args.served or type(exc) is not RuntimeError:
                    raise
                raise CliError(str(exc), hint=f"serve them first: {name} needs {served_as(name)}; or drop "
                               "--served") from None
            except RequestTimeout as exc:  # nobody answered: with --served, the agents it needs are not there
                if not args.served or broker_lost(args) is not None:
                    raise
                raise CliError(f"timeout: {exc}", hint=f"{name} needs {served_as(name)}; or drop --served") from None
    finally:
        if recorder is not None:
            recorder.wait_idle(0.3)
            recorder.stop()
    if args.charts and recorder is not None:
        _save_charts(recorder, args.charts, results)
    print()
    for r in results:
        print(f"{'OK ' if r.ok else 'BAD'} {r.name}: expected {r.expected}, observed {r.observed}, "
              f"final {r.final_state}")
        if args.served and not r.ok:  # the served agents are not the ones this scenario is told with
            print(f"    with --served, {r.name} needs {served_as(r.name)}")
    if args.record:
        print(f"recording: {args.record}")
    return 0 if all(r.ok for r in results) else 1


PLAN_WORDS = {"first-reply": "handing tickets over at once (the default)", "mid-stream": "handing over mid-stream",
              "none": "without handover", "double": "handing over twice per ticket",
              "dies": "with analysts that die after asking for input"}
"""What each ``serve ticket-desk --handover`` plan does, in the words ``story --served`` uses."""


def served_as(name: str) -> str:
    """What scenario ``name`` needs served for ``story --served``, and the command that serves it:
    the desk with the scenario's handover plan, or the pool's members."""
    from ..story.scenarios import SCENARIOS

    spec = SCENARIOS[name]
    if spec.get("pool"):
        return f"the pool {spec['pool']} served: `python -m a2a_nb serve analyst --pool {spec['pool']} --members 3`"
    plan = spec["handover"]
    option = "" if plan == "first-reply" else f" --handover {plan}"
    return f"the desk served {PLAN_WORDS[plan]}: `python -m a2a_nb serve ticket-desk{option}`"


def _check_story_outputs(args: argparse.Namespace) -> None:
    """``--record`` and ``--charts`` are checked before the story starts, not after it ran (exit 2)."""
    from pathlib import Path

    if args.record:
        check_recording_target(args.record, "--record")
    if args.charts and Path(args.charts).exists() and not Path(args.charts).is_dir():
        raise UsageError(f"--charts {args.charts} is a file; give a folder for the PNG files")


def _save_charts(recorder, folder: str, results: list) -> None:
    """Every chart of the story's traffic, rows named by scenario, plus ``index.md`` (charts.save_charts)."""
    from ..traffic import charts

    names = {task: r.name for r in results for task in r.task_ids}
    for path, about in charts.save_charts(recorder, folder, names=names):
        print(f"chart: {path}  ({about})")
