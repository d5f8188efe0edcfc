"""``python -m a2a_nb serve | send | story``: run the story's agents, talk to them, tell the story."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Optional

from .common import (CliError, UsageError, add_scope, check_recording_target, non_negative_seconds, one_of,
                     positive_int, positive_seconds, wait_for_signal)

HANDOVER_PLANS = ("none", "first-reply", "mid-stream", "double", "dies")
"""Same as ``story.cast.HANDOVER_PLANS`` (spelled out so the parser does not import the cast; a test checks)."""
SCENARIO_NAMES = ("happy", "handover", "no-handover", "multi-handover", "handover-unreachable", "pool", "full")
"""``story.scenarios.SCENARIOS`` plus ``full`` (all of them); a test checks they agree."""


def register(sub) -> None:
    s = sub.add_parser("serve", help="run an agent until Ctrl-C: echo, ticket-desk or analyst (pool member)")
    s.add_argument("agent", choices=["echo", "ticket-desk", "analyst"])
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
    m.add_argument("text")
    m.add_argument("--stream", action="store_true", help="SendStreamingMessage: print each event")
    m.add_argument("--task", metavar="TASK_ID", default=None,
                   help="continue this interrupted task (input-required): the text is the answer, sent on the "
                        "same Task.id and contextId with a new messageId")
    m.add_argument("--timeout", type=positive_seconds, default=15.0, help="first-reply timeout in seconds (default 15)")
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
    from ..mqtt.broker import ENV_CREDENTIALS, resolve
    from ..story.cast import TicketDesk, analyst_pool, echo_card, echo_handler

    url = resolve(args.broker).url_with_secret
    stoppers = []
    if args.agent == "echo":
        r = Responder("echo", echo_handler, org=args.org, unit=args.unit, card=echo_card(args.org, args.unit),
                      broker=url, options=ResponderOptions(inline=True))
        stoppers.append(r.stop)
        print(f"echo serving on {r.request_topic} ({resolve(args.broker).url})", flush=True)
    elif args.agent == "ticket-desk":
        desk = TicketDesk(org=args.org, unit=args.unit, broker=url, handover=args.handover, store_path=args.store,
                          pool=args.pool, pace=args.pace, max_analysts=args.max_analysts)
        stoppers.append(desk.stop)
        print(f"ticket-desk serving on {desk.desk.request_topic} (handover plan: {args.handover}; at most "
              f"{args.max_analysts} tickets at once, analysts analyst-1..analyst-{args.max_analysts})", flush=True)
        if desk.orphans_failed:
            print(f"{len(desk.orphans_failed)} task(s) in {args.store} were still running when the desk last "
                  "stopped: marked failed (a requester's GetTask says why)", flush=True)
    else:
        if not args.pool:
            raise UsageError("serve analyst needs --pool NAME (analysts without a pool are spawned by the desk)")
        # random member names let several processes serve one pool; on the secure broker members log
        # in with the numbered logins it issued (analyst-{pool}-1..4), so one process serves the pool
        secure_logins = bool(os.environ.get(ENV_CREDENTIALS))
        for member in analyst_pool(args.pool, args.members, org=args.org, unit=args.unit, broker=url,
                                   pace=args.pace, unique_names=not secure_logins):
            stoppers.append(member.stop)
            print(f"{member.agent} serving pool {args.pool} ({member.pool_mode} dispatch)", flush=True)

    def stop_all() -> None:
        for stop in stoppers:
            stop()

    wait_for_signal(then=stop_all)
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    from ..agents.requester import Requester
    from ..protocol import states
    from ..protocol.retry import RetryProfile

    from ..mqtt.broker import ENV_URL

    if not args.broker and not os.environ.get(ENV_URL):
        print(f"note: {ENV_URL} is not set, so this command started a private Mosquitto: agents served in other "
              f"shells are not on it (export {ENV_URL}=<the URL `python -m a2a_nb broker` prints>)",
              file=sys.stderr, flush=True)
    retry = RetryProfile(reply_first_timeout_s=args.timeout, stream_idle_timeout_s=max(30.0, args.timeout))
    req = Requester(sender_agent(args), org=args.org, unit=args.unit, broker=args.broker, retry=retry)
    t = time.perf_counter()
    try:
        if not args.agent.startswith("pool:"):  # a pool has no card of its own
            check_card(req.session, args.agent, args.org, args.unit)
        message = None
        task_id: Optional[str]
        if args.task:  # the same Task.id and contextId, a new messageId (Profile: Multi-Turn Conversation)
            task = req.get_task(args.task, to=args.agent)
            message = req.new_message(args.text, task_id=args.task, context_id=task["contextId"])
        if args.stream:
            stream = req.stream(args.agent, None if message else args.text, message=message)
            for ev in stream:
                print(f"{(time.perf_counter() - t) * 1000:8.1f} ms  {ev.kind:15s} "
                      f"{states.short_name(ev.state) if ev.state else ''} {_event_text(ev)}")
            task_id, state = stream.task_id, stream.state
            print(f"task {task_id}: {states.short_name(state) if state else '?'}")
        else:
            reply = req.send(args.agent, None if message else args.text, message=message)
            task_id, state = reply.task_id, reply.state
            print(reply.text or json.dumps(reply.result))
            print(f"task {task_id}: {states.short_name(state) if state else 'message reply'}; "
                  f"round trip {reply.rtt_s * 1000:.1f} ms; {len(reply.attempts)} attempt(s)")
        for r in req.routing.history_rows():
            print(f"routing: {r['cause']} {r['from']} → {r['to']}")
        if state is not None and states.is_interrupted(state):
            print(f"the task waits for your answer: python -m a2a_nb send {args.agent} \"ANSWER\" --task {task_id}"
                  + (" --stream" if args.stream else ""))
        return 0
    finally:  # A2AError, RequestTimeout, a lost broker: cli.main prints them (cli.explain)
        req.close()


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


def check_card(session, agent: str, org: str, unit: str, wait: float = CARD_LOOKUP_S) -> None:
    """Raise ``CliError`` "no card for AGENT in ORG/UNIT; known agents: ..." unless ``agent`` has a
    retained Agent Card on ``$a2a/v1/discovery/{org}/{unit}/+``, so a typo fails at once instead of
    after the reply timeout.

    Profile: Discovery Subscriber Behavior 1-2 (a scoped filter; retained cards are the current
    registrations), Presence Subscriber Behavior 3 (no retained card: the agent is unregistered or
    unavailable). The broker sends retained cards right after the SUBACK, so a known agent costs
    about a millisecond and an unknown one ``wait`` seconds. A login the broker does not let read the
    discovery topics skips the check."""
    from ..mqtt.session import SessionError
    from ..protocol import properties, topics
    from ..protocol.ids import validate_identifier

    validate_identifier(agent, "agent_id")  # ValueError: a usage mistake (exit 2)
    status: dict[str, Optional[str]] = {}  # agent → a2a-status of its card (None: not given)
    found = threading.Event()

    def on_card(msg) -> None:
        try:
            info = topics.parse_topic(msg.topic)
        except ValueError:
            return
        if info is None or info.kind != "discovery" or info.agent is None:
            return
        if not msg.payload:  # an empty retained message unregisters
            status.pop(info.agent, None)
            return
        status[info.agent] = msg.user_property(properties.STATUS)
        if info.agent == agent:
            found.set()

    flt = topics.discovery_filter(org, unit)
    try:
        session.subscribe(flt, handler=on_card)
    except SessionError:
        return
    try:
        if found.wait(wait):
            if status.get(agent) == properties.OFFLINE:  # advisory only (Presence Subscriber Behavior 2)
                print(f"note: the card of {agent} says {properties.STATUS}=offline; sending anyway",
                      file=sys.stderr, flush=True)
            return
    finally:
        session.unsubscribe(flt)
    names = ", ".join(name + (" (offline)" if st == properties.OFFLINE else "")
                      for name, st in sorted(status.items())) or "none"
    servable = agent in ("echo", "ticket-desk")
    raise CliError(f"no card for {agent} in {org}/{unit}; known agents: {names}",
                   hint=(f"serve it first (`python -m a2a_nb serve {agent} --org {org} --unit {unit}`) or "
                         if servable else "") + "check the agent name, --org and --unit")


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
                raise CliError(str(exc), hint="serve them first (`python -m a2a_nb serve ticket-desk`; for the "
                               "pool scenario also `serve analyst --pool analysts`) or drop --served") from None
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
    if args.record:
        print(f"recording: {args.record}")
    return 0 if all(r.ok for r in results) else 1


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
