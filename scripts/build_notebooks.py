#!/usr/bin/env python3
"""Build the lessons in notebooks/ from the Python source below, execute them, save them with outputs.

    .venv/bin/python scripts/build_notebooks.py            # every lesson
    .venv/bin/python scripts/build_notebooks.py 01 02      # only lessons whose name starts so
    .venv/bin/python scripts/build_notebooks.py --no-execute

Why outputs are stored: nbval compares a fresh run with the stored outputs, and a cell that was
never executed is not compared at all. So every lesson is executed here, against a Mosquitto this
script starts (``EmbeddedBroker``) and names in ``A2A_BROKER_URL`` exactly as ``tests/conftest.py``
does for the test run. Ids are seeded (``seed=`` on ``Requester`` and ``TicketDesk``) and agent names
fixed, so the stored outputs are what the tests see; cells showing timings or live widgets carry
the ``nbval-ignore-output`` tag. The kernel is ``python3`` of the current environment.

Every lesson has the same frame: title, What you will learn, Time needed, Prerequisites, numbered
steps, Summary, What's next (``tests/notebooks/test_hygiene.py`` checks it).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import textwrap
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(ROOT))

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
IGNORE = "nbval-ignore-output"
TIMEOUT_S = 120
BUILD_PORT = 18830


def md(text: str) -> dict:
    return {"cell_type": "markdown", "source": textwrap.dedent(text).strip("\n")}


def code(text: str, *tags: str) -> dict:
    return {"cell_type": "code", "source": textwrap.dedent(text).strip("\n"), "tags": list(tags)}


# ================================================================================================
# 00 · Start here
# ================================================================================================
START_HERE = [
    md("""
    # 00 · Start here: the broker, the cast and the topic model

    This kit teaches the **A2A protocol v1.0** (Agent2Agent) carried over **MQTT v5**, following the
    *A2A over MQTT* profile. Every lesson tells a piece of one story: a **coordinator** agent, facing a
    user, hands support ticket **TCK-4821** ("order status not updating after checkout") to a
    **ticket-analysis agent**, and follows the task until the root cause comes back. Underneath runs a
    real Eclipse Mosquitto broker: everything you see in these notebooks really crossed it.

    ## What you will learn
    - where the kit's broker comes from (its own Mosquitto, or the one `A2A_BROKER_URL` names) and how
      to check that it answers;
    - who the agents of the story are and which MQTT client IDs they use;
    - the topic model of the profile: discovery, request, reply, event and pool topics;
    - how the lessons are organised.

    ## Time needed
    About 10 minutes. The notebook itself runs in a few seconds.

    ## Prerequisites
    - Python basics (functions, dicts, `print`). No MQTT or A2A knowledge is needed.
    - Run the cells from top to bottom (Shift+Enter, or *Run > Run All Cells*).
    """),
    md("""
    ## Step 1. The broker

    MQTT is publish/subscribe: clients never talk to each other directly, they publish messages to
    **topics** on a **broker**, and the broker forwards each message to every client subscribed to a
    matching topic filter. The kit needs one MQTT v5 broker:

    - if the environment variable `A2A_BROKER_URL` is set (`mqtt://host:port`), the kit uses that
      broker (this is what Binder and the test suite do);
    - otherwise it starts its own Mosquitto on a free port of `127.0.0.1` and stops it when the kernel
      exits. You never start a broker by hand.

    `broker.resolve()` answers the question "which broker?":
    """),
    code("""
    import os

    import a2a_nb
    from a2a_nb.mqtt import broker

    endpoint = broker.resolve()
    if os.environ.get(broker.ENV_URL):
        print(f"using the broker named by {broker.ENV_URL}")
    else:
        print("A2A_BROKER_URL is not set: the kit started its own Mosquitto on a free loopback port")
    print("broker URL:", endpoint.url)
    """),
    md("""
    Is it answering? A `Session` is one MQTT v5 client. Its client ID follows the profile's pattern
    `{org}/{unit}/{agent}`; the story's organisation is `acme`, its unit `support`.

    We publish with **QoS 1**, so the broker acknowledges every message with a PUBACK that carries a
    **reason code**. Code 16, *No matching subscribers*, is not an error: the broker took the message
    but nobody was subscribed to that topic. It is the cheapest hint that nobody is listening.
    """),
    code("""
    from a2a_nb.mqtt import Session
    from a2a_nb.protocol import MqttMessage

    probe = Session("acme", "support", "lesson-00-probe")
    print(probe)

    hello = MqttMessage("lessons/00/hello", b"hello, broker", qos=1)
    result = probe.publish(hello)
    print("nobody subscribed:", result.reason_code, result.reason)
    """),
    code("""
    probe.subscribe("lessons/00/#")            # a filter: '#' matches any number of levels
    result = probe.publish(hello)
    received = probe.receive(timeout=5)
    print("with a subscriber:", result.reason_code, result.reason)
    print("received:", received.topic, received.payload)
    """),
    md("""
    ## Step 2. The cast

    Four agents appear in the lessons. Every one is an MQTT client with its own client ID. Only agents
    that want to be found publish an **Agent Card** (lesson 01); the analysts the desk spawns do not:
    the coordinator learns about them from the replies themselves (a user property named
    `a2a-responder-agent-id`, lesson 02).
    """),
    code("""
    import pandas as pd
    from a2a_nb.protocol import ids

    cast = pd.DataFrame([
        {"agent": "coordinator", "role": "requester (A2A client)", "card": "no",
         "job": "faces the user, picks an agent by skill, sends the ticket, tracks the task"},
        {"agent": "ticket-desk", "role": "responder (A2A server)", "card": "yes, retained",
         "job": "publishes the card; takes each ticket and hands it to one of its analysts"},
        {"agent": "analyst-1", "role": "responder spawned by the desk", "card": "no",
         "job": "finds the root cause; its replies name it, so follow-ups go straight to it"},
        {"agent": "echo", "role": "responder (a test agent)", "card": "yes, retained",
         "job": "answers every message with the same text"},
    ])
    cast["MQTT client ID"] = [ids.client_id("acme", "support", agent) for agent in cast["agent"]]
    cast
    """),
    md("""
    The desk runs at most four analysts at once, `analyst-1` to `analyst-4`, each with its own client
    ID and no card; it starts one when a ticket needs it and reuses it for the next ticket once it is
    free. When all four are busy, a new ticket is refused with error -32004 (*responder unavailable*:
    retry later) before any task exists: a burst of tickets never opens a connection per ticket.

    ## Step 3. The topic model

    The profile puts everything under `$a2a/v1/`, then a **kind**, then `{org}/{unit}` and the agent.
    `a2a_nb.protocol.topics` builds each name and checks every identifier, so a stray `/` can never
    add a level. These are pure functions: nothing is sent.
    """),
    code("""
    from a2a_nb.protocol import IdSource, topics

    ORG, UNIT = "acme", "support"
    reply_suffix = IdSource().reply_suffix()   # a requester draws one per reply topic, always at random

    topic_model = pd.DataFrame([
        ("discovery", topics.discovery_topic(ORG, UNIT, "ticket-desk"),
         "ticket-desk (its card, retained)", "whoever looks for agents"),
        ("discovery filter", topics.discovery_filter(ORG, UNIT), "",
         "the coordinator: every card of the unit"),
        ("request", topics.request_topic(ORG, UNIT, "ticket-desk"), "coordinator", "ticket-desk"),
        ("request after a handover", topics.request_topic(ORG, UNIT, "analyst-1"), "coordinator",
         "analyst-1"),
        ("reply", topics.reply_topic(ORG, UNIT, "coordinator", reply_suffix), "ticket-desk, analysts",
         "coordinator"),
        ("event", topics.event_topic(ORG, UNIT, "ticket-desk"), "ticket-desk", "whoever follows its events"),
        ("pool request", topics.pool_topic(ORG, UNIT, "analysts"), "coordinator", ""),
        ("pool subscription", topics.shared_pool_subscription(ORG, UNIT, "analysts"), "",
         "each analyst of a pool (one of them gets each request)"),
    ], columns=["kind", "topic", "published by", "subscribed by"])
    topic_model
    """),
    md("""
    The parser reads a topic back, and the builders refuse identifiers that would change the topic's
    structure:
    """),
    code("""
    print(topics.parse_topic(topics.reply_topic(ORG, UNIT, "coordinator", reply_suffix)))

    try:
        topics.request_topic(ORG, UNIT, "ticket/desk")
    except ids.InvalidIdentifier as exc:
        print(exc)
    """),
    md("""
    One MQTT rule surprises everybody once: a filter that starts with a wildcard (`#` or `+`) does
    **not** match topics that start with `$`. A client subscribed to `#` sees none of the A2A traffic;
    it must subscribe to `$a2a/#`. The PUBACK reason code shows it on the real broker
    (`retain_handling=2` skips messages other lessons left retained on the broker):
    """),
    code("""
    a2a_topic = topics.event_topic(ORG, UNIT, "lesson-00-probe")

    probe.subscribe("#", retain_handling=2)
    print("subscribed to '#':      ", probe.publish(MqttMessage(a2a_topic, b"ping")).reason)
    probe.subscribe("$a2a/#", retain_handling=2)
    print("subscribed to '$a2a/#': ", probe.publish(MqttMessage(a2a_topic, b"ping")).reason)
    """),
    md("""
    ## Step 4. How the lessons work

    | lesson | in the story |
    |---|---|
    | **00 · Start here** (this one) | the broker, the cast, the topics |
    | [01 · Discovery](01-discovery.ipynb) | the coordinator finds the ticket desk by a skill tag in its retained Agent Card, and watches agents go offline and online |
    | [02 · Send and track](02-send-and-track.ipynb) | it sends ticket TCK-4821, the analyst asks for reproduction steps (INPUT_REQUIRED), the coordinator answers on the same task and follows it with GetTask to COMPLETED |
    | [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) | the report arrives event by event, chunk by chunk, assembled by artifactId; binary chunks |
    | [04 · Input required](04-input-required.ipynb) | the pause for reproduction steps, answered on the same task; a new turn in the same context |
    | [05 · Handover](05-handover.ipynb) | the desk hands the task to a spawned analyst; the routing table follows `a2a-responder-agent-id`; its three failure cases |
    | [06 · Recovery](06-recovery.ipynb) | timeouts, dropped streams, polling, cancel past the time limit, an unreachable analyst |
    | [07 · Traffic analysis](07-traffic-analysis.ipynb) | the whole story's recording in pandas, charts, a sequence diagram, profile checks, a step-through player |
    | [08 · Security](08-security.ipynb) | a secured broker (TLS, a password per agent, ACLs), an intruder with a stolen password, bearer tokens the desk checks, and why both are needed |

    Every lesson has the same frame: *What you will learn*, *Time needed*, *Prerequisites*, numbered
    steps, a *Summary* and *What's next*. Each one starts the agents it needs and stops them at the
    end, so you can open any lesson on its own and run it top to bottom.

    The whole story, as the walkthrough tells it (the lessons follow it step by step):

    ```mermaid
    sequenceDiagram
        participant U as User
        participant C as Coordinator (A2A client)
        participant S as Ticket analyst (A2A server)
        U->>C: "What is wrong with this ticket?"
        C->>S: read the retained Agent Card (discovery)
        C->>S: SendMessage (analysis request, messageId m1)
        S-->>C: Task(WORKING)
        S-->>C: Task(INPUT_REQUIRED): missing reproduction steps
        C->>S: SendMessage (supplement, messageId m2, same taskId and contextId)
        S-->>C: Task(WORKING)
        S-->>C: Artifact: structured report (chunked, lastChunk)
        S-->>C: Task(COMPLETED) + concluding Message
        C-->>U: Root cause and recommendation
    ```

    Good habits: re-running a cell that creates an agent replaces the old MQTT client (one live client
    per client ID), so cells can be run again; *Kernel > Restart Kernel and Run All Cells* gives a
    clean slate.

    ## Step 5. Clean up

    `a2a_nb.stop_all()` disconnects every MQTT client this kernel opened. Each lesson ends with it.
    """),
    code("""
    closed = a2a_nb.stop_all()
    print(f"closed {closed} MQTT session(s)")
    """),
    md("""
    ## Summary
    - The kit uses the broker named by `A2A_BROKER_URL`, or starts its own Mosquitto; `broker.resolve()`
      tells which.
    - Every agent is an MQTT v5 client with client ID `{org}/{unit}/{agent}`; QoS 1 publishes return
      a reason code (16 = nobody subscribed).
    - A2A over MQTT uses `$a2a/v1/{discovery|request|reply|event}/{org}/{unit}/...`; the builders in
      `a2a_nb.protocol.topics` make and check these names without sending anything.
    - `#` does not match `$a2a/...`: subscribe to `$a2a/#` explicitly.

    ## What's next
    [01 · Discovery](01-discovery.ipynb): the ticket desk publishes its Agent Card, and the coordinator
    picks it by skill tag, not by name.
    """),
]


# ================================================================================================
# 01 · Discovery
# ================================================================================================
DISCOVERY = [
    md("""
    # 01 · Discovery: find the ticket desk by skill, not by name

    Before the coordinator can hand over ticket TCK-4821 it must find an agent that can analyse
    tickets. Over MQTT every agent publishes its **Agent Card** as a *retained* message on its
    discovery topic; a new subscriber gets all current cards at once. The coordinator chooses by what
    the card says (skills and their tags, capabilities, security), never by the agent's name.

    ## What you will learn
    - what a retained Agent Card looks like on the broker (topic, user properties, JSON);
    - the three checks of the walkthrough: skills and tags, capabilities, security schemes;
    - selecting agents by skill tag with `Discovery.find`;
    - checking a card for mistakes with `protocol.cards.check_card`;
    - presence: `a2a-status` online/offline, set by the agent or by the broker's last will;
    - a live table of all cards (pandas, and a small widget).

    ## Time needed
    About 15 minutes. The notebook runs in a few seconds.

    ## Prerequisites
    - [00 · Start here](00-start-here.ipynb): the broker, the cast and the topic model.
    - Knowing that a *retained* MQTT message stays on the broker and is delivered to every new
      subscriber of its topic (the one new idea of this lesson is built on it).
    """),
    md("""
    ## Step 1. Start the ticket desk and the echo agent

    `TicketDesk` is the story's card agent (with the analysts it spawns later); `Responder` is the
    plain responder role, here with the echo handler. Both publish their card, retained, when they
    start. `seed=` makes every id they draw the same on every run.
    """),
    code("""
    import json

    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Responder
    from a2a_nb.agents.discovery import Discovery
    from a2a_nb.mqtt import Session
    from a2a_nb.protocol import cards, topics
    from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler

    desk = TicketDesk(handover="first-reply", seed=4821)
    echo = Responder("echo", echo_handler, card=echo_card())
    print(desk.desk)
    print(echo)
    """),
    md("""
    ## Step 2. The retained card on the broker

    Any client can read a card: subscribe to the discovery topic and the broker delivers the retained
    message at once. Look at the MQTT side first: the message is flagged *retained*, its content type
    is JSON, and two user properties carry the agent's **presence**.
    """),
    code("""
    looker = Session("acme", "support", "lesson-01-looker")
    looker.subscribe(topics.discovery_topic("acme", "support", "ticket-desk"))
    card_message = looker.receive(timeout=5)
    looker.close()

    print("topic:          ", card_message.topic)
    print("retained:       ", card_message.retain)
    print("content type:   ", card_message.content_type)
    print("user properties:", card_message.user_properties)
    """),
    md("""
    The payload is an A2A v1.0 `AgentCard`. Its only interface is MQTT: `supportedInterfaces[0].url`
    is the desk's request topic, where requests must be published.
    """),
    code("""
    desk_card = card_message.json()
    print(json.dumps(desk_card, indent=2))
    """),
    md("""
    ## Step 3. What the coordinator checks in a card

    A `Discovery` subscribes to `$a2a/v1/discovery/acme/support/+` and keeps the current card and
    presence of every agent. `wait_for` blocks until an agent's card is there with the status asked for.
    """),
    code("""
    disco = Discovery(agent="lesson-01-discovery")
    for agent in ("ticket-desk", "echo"):
        entry = disco.wait_for(agent, status="online")
        print(f"{agent}: {entry.status} (source: {entry.status_source}), card problems: {entry.problems}")
    """),
    md("""
    **Skills and tags.** A skill's tags are more reliable than its name: names are for humans, tags are
    what requesters match on.
    """),
    code("""
    skills = pd.DataFrame([
        {"agent": agent, "skill id": s["id"], "name": s["name"], "tags": ", ".join(s["tags"])}
        for agent in ("ticket-desk", "echo") for s in disco.get(agent).card["skills"]
    ])
    skills
    """),
    md("""
    **Capabilities.** A long analysis should not be a blind wait: the coordinator wants `streaming` or
    `pushNotifications`.
    """),
    code("""
    pd.DataFrame({agent: disco.get(agent).card["capabilities"] for agent in ("ticket-desk", "echo")})
    """),
    md("""
    **Security schemes.** Neither agent of this lesson asks for credentials:
    """),
    code("""
    for agent in ("ticket-desk", "echo"):
        card = disco.get(agent).card
        print(f"{agent}: securitySchemes {card.get('securitySchemes', 'none')}, "
              f"securityRequirements {card.get('securityRequirements', 'none')}")
    """),
    md("""
    A desk that does would declare a scheme and a requirement naming it. Here is such a card, built
    with the same builders (and not published). Over MQTT a bearer token travels in the user property
    `a2a-authorization`. `cards.card_matches` is the selection rule `Discovery.find` uses: with the
    scheme names you hold, is at least one requirement satisfied?
    """),
    code("""
    secured = cards.agent_card(
        name="Ticket desk (secured)", description="The same desk, for callers with an access token.",
        version="1.0.0", org="acme", unit="support", agent="ticket-desk-secured",
        skills=desk_card["skills"], streaming=True,
        security_schemes={"bearer": cards.bearer_scheme("access token from the ACME identity provider")},
        security_requirements=[cards.requirement("bearer")],
    )
    print(json.dumps({k: secured[k] for k in ("securitySchemes", "securityRequirements")}, indent=2))
    for held in ([], ["bearer"]):
        usable = cards.card_matches(secured, tags=["root-cause-analysis"], schemes=held)
        print(f"credentials held: {held!s:10} -> usable: {usable}")
    """),
    md("""
    ## Step 4. Select by skill tag

    The walkthrough's three checks in one call: a skill with all the tags, the capabilities, and
    (optionally) security requirements the requester can meet; `online_only` skips agents whose
    presence says offline.
    """),
    code("""
    def names(entries):
        return sorted(e.agent for e in entries)

    print("root-cause-analysis + streaming, online:",
          names(disco.find(tags=["root-cause-analysis"], capabilities=["streaming"], online_only=True)))
    print("tag 'echo':                             ", names(disco.find(tags=["echo"])))
    print("tags 'ticket' AND 'echo' on one skill:  ", names(disco.find(tags=["ticket", "echo"])))
    print("holding only a bearer token:            ", names(disco.find(tags=["ticket"], schemes=["bearer"])))
    """),
    md("""
    The last line finds the desk: a card without security requirements suits every caller.

    ## Step 5. Check a card

    `cards.check_card` lists what is wrong with a card in words a person can act on (`agent_card`
    refuses to build a card with problems, so a broken card never leaves your cell). Here is the echo
    card with five mistakes, including a field from A2A v0.3 that v1.0 moved:
    """),
    code("""
    broken = json.loads(json.dumps(disco.get("echo").card))   # a deep copy
    del broken["version"]
    broken["url"] = "mqtt://broker.example:1883"
    broken["capabilities"]["streaming"] = "yes"
    broken["skills"][0]["tags"] = []
    broken["securityRequirements"] = [cards.requirement("oauth", ["tickets.read"])]

    for problem in cards.check_card(broken):
        print("-", problem)
    print("the published echo card:", cards.check_card(disco.get("echo").card) or "no problems")
    """),
    md("""
    ## Step 6. Presence: online, crashed, back

    The card carries `a2a-status` (`online`/`offline`) and `a2a-status-source`:

    - `agent`: the agent said so itself (it publishes `online` when it starts and `offline` when it
      stops gracefully);
    - `lwt`: the **broker** said so. Every card agent connects with a *last will*: an `offline` copy of
      its card that the broker publishes, retained, if the connection ends without a clean goodbye.

    `crash()` disconnects as if the process had died (it asks the broker to send the will), so we can
    watch it without killing anything.
    """),
    code("""
    def presence(agent):
        e = disco.get(agent)
        return f"{e.status} (source: {e.status_source})"

    print("running:            ", presence("echo"))

    echo.crash()
    disco.wait_for("echo", status="offline")
    print("after crash():      ", presence("echo"))

    echo.start()
    disco.wait_for("echo", status="online")
    print("after start():      ", presence("echo"))

    echo.stop()
    disco.wait_for("echo", status="offline")
    print("after stop():       ", presence("echo"))

    echo.start()
    disco.wait_for("echo", status="online")
    print("started again:      ", presence("echo"))
    """),
    md("""
    The discovery kept every change it saw for the echo card, in order:
    """),
    code("""
    [(status, source) for _, status, source in disco.get("echo").history]
    """),
    md("""
    Presence is advisory: an `offline` card stays on the broker (retained) so a requester can tell
    "known but down" from "unknown". Only an empty retained message removes a card (`unregister()`).

    ## Step 7. All cards as a table

    `Discovery.table()` gives one row per card, ready for pandas. On a broker shared with other
    programs (or the test suite) you may see more agents in `acme/support`; this lesson shows its own
    two.
    """),
    code("""
    table = pd.DataFrame(disco.table())
    table[table["agent"].isin(["ticket-desk", "echo"])].reset_index(drop=True)
    """),
    md("""
    ## Step 8. A live discovery browser

    The same table as a widget that follows the broker: type a skill tag in the box (every tag you
    type must be on one skill), and the table changes as agents come and go. Its output is live, so the
    stored notebook shows a snapshot.
    """),
    code("""
    from a2a_nb.notebook import discovery_browser

    browser = discovery_browser(disco)
    browser
    """, IGNORE),
    md("""
    Try it: run the next cell and watch the echo row turn offline (source `lwt`) and back online.
    """),
    code("""
    echo.crash()
    disco.wait_for("echo", status="offline")
    echo.start()
    _ = disco.wait_for("echo", status="online")
    """, IGNORE),
    md("""
    ## Step 9. Clean up

    A graceful `stop()` leaves each card on the broker marked `offline` (source `agent`). The
    browser above stays open: its filter still works on the cards it has seen.
    """),
    code("""
    desk.stop()
    echo.stop()
    disco.close()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s) left open")
    """),
    md("""
    ## Summary
    - An agent's Agent Card is a **retained** message on `$a2a/v1/discovery/{org}/{unit}/{agent}`;
      subscribers get every current card at once.
    - The coordinator selects by **skill tags**, **capabilities** and **security requirements**
      (`Discovery.find`, `cards.card_matches`), not by name.
    - `cards.check_card` explains what is wrong with a card; `cards.agent_card` refuses to build one.
    - Presence rides on the card: `a2a-status` plus `a2a-status-source` (`agent` or `lwt`); the broker's
      last will marks a crashed agent offline.

    ## What's next
    [02 · Send and track](02-send-and-track.ipynb): the coordinator sends ticket TCK-4821 to the desk it
    found and follows the task to the end.
    """),
]


# ================================================================================================
# 02 · Send and track
# ================================================================================================
SEND_AND_TRACK = [
    md("""
    # 02 · Send a ticket and track its task

    The coordinator found the ticket desk (lesson 01). Now it hands over ticket TCK-4821: one
    `SendMessage` request over MQTT, a reply matched by **Correlation Data**, a **task** that pauses
    for input, a follow-up on the same task, and `GetTask` until the task is done.

    ## What you will learn
    - the identifier conventions: a `contextId` named after the ticket, `messageId`s that embed it,
      and a `Task.id` the requester makes;
    - what a request looks like on the wire, built *before* sending: topic, MQTT v5 properties,
      JSON-RPC payload;
    - the two kinds of result: a `Message` (echo) and a `Task` (the desk);
    - answering `INPUT_REQUIRED` on the same task and tracking it with `GetTask` and backoff;
    - the JSON payload next to the MQTT properties of a reply;
    - the eight task states and what the coordinator does in each.

    ## Time needed
    About 20 minutes. The notebook runs in a few seconds.

    ## Prerequisites
    - [00 · Start here](00-start-here.ipynb) (topics, client IDs) and
      [01 · Discovery](01-discovery.ipynb) (cards, the ticket desk).
    - JSON. JSON-RPC 2.0 helps but is explained on the way.
    """),
    md("""
    ## Step 1. The agents and the coordinator

    The same desk and echo agent as in lesson 01, and the coordinator: a `Requester`. On creation it
    subscribes to its own **reply topic** before it ever sends anything: replies can only arrive where
    somebody listens. The lesson seeds its ids (`seed=4821`) so that Task.ids and names are the same on
    every run, but never the reply topic's suffix or the Correlation Data: a reply is accepted because
    of them, so whoever could guess them could forge one. Those always come from `secrets`.
    """),
    code("""
    import json

    import pandas as pd
    from IPython.display import HTML

    import a2a_nb
    from a2a_nb.agents import Requester, Responder
    from a2a_nb.notebook.display import mqtt_side_by_side_html
    from a2a_nb.protocol import IdSource, MqttMessage, encode_json, ids, jsonrpc, messages, states, topics
    from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler
    from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

    desk = TicketDesk(handover="first-reply", seed=4821)
    echo = Responder("echo", echo_handler, card=echo_card())
    coordinator = Requester("coordinator", seed=4821)
    print(coordinator)
    """),
    md("""
    ## Step 2. Identifiers that tell the story

    Two decisions are made now and never changed:

    - the **contextId** is named after the ticket (`ctx-tck4821`): every later task about this ticket
      (re-analysis, supplements, escalation) shares it;
    - each **messageId** embeds the ticket (`coord-tck4821-m1`, `-m2`, ...): on a timeout the same
      message is resent verbatim, and the agent recognises the duplicate instead of analysing twice.

    Over MQTT the **requester** also makes the `Task.id`, a UUIDv4, and puts it in the very first
    message (the profile's request/reply mapping). Over HTTP the server would make it; here the
    coordinator knows the id before anything is sent.
    """),
    code("""
    print("contextId:", CONTEXT_ID)
    message = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m1")
    print(json.dumps(message, indent=2))
    print("Task.id is a UUIDv4 made by the requester:", ids.is_uuid4(message["taskId"]))
    """),
    md("""
    ## Step 3. The request, built before it is sent

    Everything the coordinator will publish can be built with the pure functions of
    `a2a_nb.protocol` and looked at first:

    - the **topic**: the desk's request topic (named in its card);
    - the **MQTT v5 properties**: a *Response Topic* (where to answer), *Correlation Data* (16 random
      bytes that come back with the reply and match it to this request) and a *Message Expiry
      Interval* (a request nobody takes in time is dropped by the broker);
    - the **payload**: a JSON-RPC 2.0 request with method `SendMessage` and the message as params.
    """),
    code("""
    envelope = jsonrpc.request(jsonrpc.SEND_MESSAGE, messages.send_message_params(message), id="req-101")
    preview = MqttMessage(
        topic=topics.request_topic("acme", "support", "ticket-desk"),
        payload=encode_json(envelope),
        qos=1,
        response_topic=coordinator.reply_topic,
        correlation_data=IdSource(seed=101).correlation(),
        message_expiry=coordinator.retry.message_expiry_s(),
    )
    print("PUBLISH to      ", preview.topic, "(QoS 1)")
    print("Response Topic  ", preview.response_topic)
    print("Correlation Data", preview.correlation_data.hex())
    print("Message Expiry  ", preview.message_expiry, "s")
    print("user properties ", preview.user_properties or "none")
    print(json.dumps(envelope, indent=2))
    """),
    md("""
    When it really sends, the requester draws a fresh JSON-RPC `id` and fresh Correlation Data for
    every publish (a retry gets new Correlation Data but keeps the same `messageId` and `Task.id`);
    everything else is exactly what you see above.

    ## Step 4. A first request: echo answers with a Message

    `send` publishes, waits for the PUBACK, then for the reply with matching Correlation Data. A
    stateless agent like echo answers with a **Message**: no task to track.
    """),
    code("""
    hello = coordinator.send("echo", "hello from the coordinator")
    print("result holds a", "message" if hello.message else "task")
    print("text:", hello.text)
    print(json.dumps(hello.result, indent=2))
    """),
    md("""
    ## Step 5. The ticket: the desk answers with a Task

    Now the message from step 2 goes to the ticket desk. `send` is *blocking* (the A2A v1.0 default):
    the reply comes when the task reaches a terminal or interrupted state. The desk hands the ticket
    to an analyst it spawns; the analyst reads the ticket, and needs the reproduction steps:
    **INPUT_REQUIRED**.
    """),
    code("""
    reply = coordinator.send("ticket-desk", message=message)
    print("same Task.id:", reply.task_id == message["taskId"])
    print("state:       ", reply.state)
    print("answered by: ", reply.responder)
    print("the analyst: ", reply.text)
    """),
    md("""
    The reply came from `analyst-1`, not from the desk: it carries the user property
    `a2a-responder-agent-id`. That is a **handover**: the coordinator's routing table now sends
    everything about this task to the analyst's own request topic.
    """),
    code("""
    print("follow-ups go to:", coordinator.routing.target(reply.task_id).topic)
    pd.DataFrame(coordinator.routing.history_rows())[["from", "to", "cause", "detail"]]
    """),
    md("""
    The kit's rich view of a reply (with the round-trip time, so its numbers change on every run):
    """),
    code("""
    reply
    """, IGNORE),
    md("""
    ## Step 6. Answer on the same task, then track it with GetTask

    The coordinator asks the user and sends the reproduction steps as a **new message** (new
    `messageId`: this is new input, not a resend) on the **same task** (same `Task.id` and
    `contextId`):
    """),
    code("""
    answer = coordinator.new_message(REPRO_TEXT, task_id=reply.task_id, context_id=reply.context_id,
                                     message_id="coord-tck4821-m2")
    print(json.dumps(answer, indent=2))
    """),
    md("""
    This time we do not wait for the end: `return_immediately=True` asks the agent to acknowledge at
    once, and the coordinator tracks the task itself. No target is given (`None`): the routing table
    knows that this task now belongs to the analyst. (`coordinator.continue_task(reply, text)` does
    both steps in one call.)
    """),
    code("""
    ack = coordinator.send(None, message=answer, return_immediately=True)
    print("published to:", ack.attempts[0].topic)
    print("acknowledged for the same task:", ack.task_id == reply.task_id)
    """),
    md("""
    Tracking without a stream means **GetTask with backoff**: ask, wait 0.2 s, ask, wait 0.4 s, 0.8 s,
    ... (at most 2 s between two asks) until the task is terminal. Each ask is this small request:
    """),
    code("""
    print(json.dumps(jsonrpc.request(jsonrpc.GET_TASK, messages.get_task_params(reply.task_id), id="req-103"),
                     indent=2))
    """),
    code("""
    sent_before = coordinator.stats.sent
    final = coordinator.poll(reply.task_id, until=states.is_terminal, interval_s=0.2, max_interval_s=2.0)
    print("final state:", final["status"]["state"])
    """),
    md("""
    How many asks it took depends on your machine's speed (this cell's output changes from run to run):
    """),
    code("""
    print(f"GetTask requests sent: {coordinator.stats.sent - sent_before}")
    """, IGNORE),
    md("""
    The result comes in two layers: the **Artifact** (the structured report, streamed in chunks that
    the task assembled by `artifactId`) and the **status message** (the conclusion for the user).
    """),
    code("""
    report_artifact = final["artifacts"][0]
    report = {}
    for data in messages.data_of(report_artifact):
        report.update(data)

    print("artifact:       ", report_artifact["artifactId"], "-", report_artifact["name"])
    print("root cause:     ", report["rootCause"])
    print("confidence:     ", report["confidence"])
    print("affected orders:", len(report["affectedOrders"]))
    print("first action:   ", report["recommendedActions"][0])
    print()
    print("conclusion:", messages.text_of(final["status"]["message"]))
    """),
    md("""
    ## Step 7. The JSON and the MQTT packet, side by side

    A reply is two things at once. The **JSON payload** is pure A2A: a JSON-RPC response whose
    `result` holds the Task. The **MQTT v5 packet** is what the binding adds: it arrived on the
    coordinator's reply topic, with the Correlation Data of the request it answers, and with the
    user property that announced the handover. `reply.mqtt` is that packet as a plain value.
    """),
    code("""
    packet = reply.mqtt
    print("topic:            ", packet.topic)
    print("Correlation Data: ", packet.correlation_data.hex())
    print("sent with request:", reply.attempts[-1].correlation == packet.correlation_data.hex())
    print("user properties:  ", packet.user_properties)
    """),
    code("""
    HTML(mqtt_side_by_side_html(reply.mqtt))
    """),
    md("""
    ## Step 8. The task states

    A2A v1.0 has eight task states. `a2a_nb.protocol.states` says which group each belongs to and
    whether it ends a reply stream; the last column is the coordinator's action from the walkthrough.
    """),
    code("""
    ACTION = {
        states.SUBMITTED: "wait: stream, push, or GetTask with backoff",
        states.WORKING: "wait: stream, push, or GetTask with backoff",
        states.INPUT_REQUIRED: "ask the user, send the answer on the same task (new messageId)",
        states.AUTH_REQUIRED: "complete the authorization the status message describes",
        states.COMPLETED: "read the artifacts and the final message, hand them to the user",
        states.FAILED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
        states.CANCELED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
        states.REJECTED: "decide by reason: retry (new task, same contextId), switch agents, escalate",
    }

    def group(state):
        if states.is_active(state):
            return "active"
        return "interrupted" if states.is_interrupted(state) else "terminal"

    pd.DataFrame([
        {"state": s, "short name": states.short_name(s), "group": group(s),
         "ends a stream": states.ends_stream(s), "coordinator does": ACTION[s]}
        for s in ACTION
    ])
    """),
    md("""
    Our task went `working` → `input-required` → `working` → `completed`. A terminal task never changes
    again: to analyse the ticket once more, the coordinator starts a **new task in the same context**.

    ## Step 9. Whose task is it?

    A task belongs to the requester that created it. The desk knows who that is from the request's
    reply topic: `$a2a/v1/reply/acme/support/coordinator/...` names the coordinator (and on a broker
    with a password per agent, lesson 08, nobody else may read replies there). Anyone else asking about
    the coordinator's task, to the desk or to the analyst, gets the answer for a task that does not
    exist (-32001), and their `ListTasks` does not show it. The same holds for `CancelTask`,
    `SubscribeToTask` and a message continuing the task.
    """),
    code("""
    from a2a_nb.protocol.errors import A2AError

    stranger = Requester("stranger")
    for agent in ("ticket-desk", coordinator.routing.target(reply.task_id).agent):
        try:
            stranger.get_task(reply.task_id, to=agent)
        except A2AError as err:
            print(f"stranger's GetTask at {agent}: error {err.code}: {err.message}")
    print("tasks the stranger can list:   ", len(stranger.list_tasks("ticket-desk")["tasks"]))
    print("tasks the coordinator can list:", len(coordinator.list_tasks("ticket-desk")["tasks"]))
    stranger.close()
    """),
    md("""
    ## Step 10. Try it yourself: a send form

    Pick an agent, type, send. With *stream* ticked the form uses `SendStreamingMessage` and shows every
    event as it arrives; when a task stops at input-required, tick *continue the last task* and send
    the answer. (Live output: the stored notebook shows a snapshot.)
    """),
    code("""
    from a2a_nb.notebook import send_form

    form = send_form(coordinator, ["ticket-desk", "echo"])
    form.text.value = TICKET_TEXT
    form
    """, IGNORE),
    md("""
    ## Step 11. Clean up, when you are done with the form

    The form needs the agents and the coordinator, so *Run All* leaves them running: this cell only
    defines `clean_up()`. Call it when you are done (the form then stops working), or shut the kernel
    down (*Kernel ▸ Shut Down Kernel*): the broker then marks the agents offline by their last will.
    """),
    code("""
    def clean_up():
        \"\"\"Stop the agents and close this notebook's MQTT sessions (the form above stops working).\"\"\"
        desk.stop()
        echo.stop()
        print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


    print("the agents keep running for the form above: call clean_up() when you are done")
    """),
    md("""
    ## Summary
    - The coordinator makes the `Task.id` (UUIDv4) and names the `contextId` after the ticket; each
      `messageId` embeds the ticket and is reused only for a verbatim resend.
    - A request is a JSON-RPC payload on the agent's request topic, with *Response Topic* and
      *Correlation Data*; the reply comes back on the reply topic with the same Correlation Data.
    - Echo answers with a Message; the desk answers with a Task. `a2a-responder-agent-id` on a reply
      hands the task over to another agent, and the routing table follows it.
    - `INPUT_REQUIRED` is answered on the same task with a new message; `GetTask` with backoff tracks
      a task to a terminal state; the report is an Artifact, the conclusion the status message.
    - A task belongs to its requester: to anyone else it does not exist.

    ## What's next
    [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb): the same ticket with
    `SendStreamingMessage`, where every status change and every report chunk arrives as its own event
    (the send form above already shows it; tick *stream*).
    """),
]


# ================================================================================================
# 03 · Streaming and artifacts
# ================================================================================================
STREAMING = [
    md("""
    # 03 · Streaming and artifacts: the report arrives piece by piece

    In lesson 02 the coordinator waited for each answer as a whole. A root-cause analysis takes a
    while, and the walkthrough wants no blind wait: with `SendStreamingMessage` every status change
    and every piece of the report arrives as its **own MQTT message** the moment the analyst has it.
    The report is an **Artifact** streamed in chunks; the conclusion for the user is a **Message**.

    ## What you will learn
    - how a stream travels over MQTT: one PUBLISH per event on the coordinator's reply topic, all with
      the Correlation Data of the one request;
    - the three kinds of stream item (Task snapshot, `TaskStatusUpdateEvent`, `TaskArtifactUpdateEvent`)
      and which states end a stream;
    - aggregating artifact chunks by `artifactId` (`append`, `lastChunk`) without assuming chunk counts;
    - reading the structured report: data parts as pandas tables, and the text summary;
    - the final Message next to the Artifact, and a stream that is only a Message;
    - the optional native **binary** artifact mode: raw bytes, `a2a-chunk-seqno`, `a2a-last-chunk`,
      byte-exact reassembly.

    ## Time needed
    About 20 minutes. The notebook runs in a few seconds.

    ## Prerequisites
    - [02 · Send and track](02-send-and-track.ipynb): Task.id, contextId, messageId, Correlation Data,
      task states.
    - pandas basics (a DataFrame is a table).
    """),
    md("""
    ## Step 1. The agents

    The ticket desk again, this time with `handover="none"`: the desk does the analysis itself, so
    every event of this lesson comes from one agent (handing a task over to another agent is
    lesson 05). The echo agent is here for one comparison in step 7.
    """),
    code("""
    import base64
    import csv
    import io

    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Requester, Responder
    from a2a_nb.protocol import messages, properties, states
    from a2a_nb.protocol.artifacts import ArtifactSet
    from a2a_nb.story import analysis, ticket_data
    from a2a_nb.story.cast import REPORT_ID, TicketDesk, echo_card, echo_handler
    from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

    desk = TicketDesk(handover="none", seed=4821)
    echo = Responder("echo", echo_handler, card=echo_card())
    coordinator = Requester("coordinator", seed=4821)
    print(desk.desk)
    print(coordinator)
    """),
    md("""
    ## Step 2. Start the stream

    This time the coordinator already has the reproduction steps and puts them in the first message
    (on a line starting with `Reproduction:`), so the analyst never has to stop and ask (that pause is
    lesson 04).

    `coordinator.stream(...)` publishes one `SendStreamingMessage` request and returns as soon as the
    first event is in; iterating over the stream hands out the events one by one as they arrive, and
    the loop ends by itself when the stream ends.
    """),
    code("""
    first = coordinator.new_message(TICKET_TEXT + "\\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                                    message_id="coord-tck4821-m1")
    print(messages.text_of(first))
    print()

    stream = coordinator.stream("ticket-desk", message=first)
    for event in stream:
        print(event)
    print()
    print("the stream ended by itself:", stream.done, "| task state:", states.short_name(stream.state))
    """),
    md("""
    The events really arrived one at a time: the analyst waits a little between its steps (`pace`).
    Arrival times after the first event (they change on every run):
    """),
    code("""
    t0 = stream.events[0].mqtt.received_at
    print("  ".join(f"+{(e.mqtt.received_at - t0) * 1000:.0f} ms" for e in stream.events))
    """, IGNORE),
    md("""
    ## Step 3. Each event is its own MQTT message

    Every item was a separate PUBLISH on the coordinator's reply topic carrying the **same**
    Correlation Data: the one of the request. That is how the coordinator knows they all belong to
    this stream (Streaming Reply Mapping, rules 1-2). The kit's agents also number the items of a
    stream in the user property `a2a-stream-seq`, so a copy delivered twice (QoS 1 allows it) is
    recognised and dropped.
    """),
    code("""
    def event_row(ev):
        row = {"kind": ev.kind, "state": states.short_name(ev.state) if ev.state else "",
               "artifact id": "", "append": "", "lastChunk": "", "parts": ""}
        if ev.kind == "artifactUpdate":
            art = ev.data["artifact"]
            row.update({"artifact id": art["artifactId"], "append": ev.data.get("append", False),
                        "lastChunk": ev.data.get("lastChunk", False),
                        "parts": ", ".join("data" if "data" in p else "text" for p in art["parts"])})
        row["a2a-stream-seq"] = ev.mqtt.user_property("a2a-stream-seq")
        row["Correlation Data"] = ev.mqtt.correlation_data.hex()[:12] + "…"
        return row

    events = pd.DataFrame([event_row(ev) for ev in stream.events])
    events
    """),
    code("""
    print("topics used:       ", set(ev.mqtt.topic for ev in stream.events))
    print("correlations used: ", len(set(ev.mqtt.correlation_data for ev in stream.events)))
    print("duplicates dropped:", stream.duplicates)
    """),
    md("""
    The first item is a **Task** snapshot (state `submitted`), then `statusUpdate`s and
    `artifactUpdate`s. `lastChunk: true` on the last piece of the report seals the *artifact*; it
    does not end the stream. What ends a stream over MQTT is the state (rules 5-7 of the profile's
    Streaming Reply Mapping): a terminal state, or an interrupted one (`input-required`,
    `auth-required`: the task goes on later, on a new request). A `message` result ends it too.
    """),
    code("""
    pd.DataFrame([
        {"state": states.short_name(s), "terminal": states.is_terminal(s), "ends the stream": states.ends_stream(s)}
        for s in (states.SUBMITTED, states.WORKING, states.INPUT_REQUIRED, states.AUTH_REQUIRED,
                  states.COMPLETED, states.FAILED, states.CANCELED, states.REJECTED)
    ])
    """),
    md("""
    ## Step 4. Aggregate the chunks by `artifactId`

    The coordinator does not know in advance how many chunks a report has, and must not care. It
    keeps one artifact per `artifactId`:

    - `append` false or absent: the chunk creates (or replaces) the artifact;
    - `append: true`: the chunk's parts are added to the end;
    - `lastChunk: true`: this artifact is complete.

    The stream did exactly that as the events came in; `stream.view` is the task as assembled so far:
    """),
    code("""
    arts = stream.view.artifacts
    report = arts.get(REPORT_ID)
    print("artifacts:", [a["artifactId"] for a in arts.as_list()])
    print("name:     ", report["name"])
    print("sealed:   ", arts.is_sealed(REPORT_ID))
    pd.DataFrame([
        {"part": i, "kind": "data" if "data" in p else "text",
         "content": ", ".join(p["data"]) if "data" in p else p["text"][:70] + "…"}
        for i, p in enumerate(report["parts"])
    ])
    """),
    md("""
    Nothing depends on how the agent cut the report. Replaying the same four parts cut into one, two
    or four chunks gives the same artifact (`ArtifactSet` is the pure rule the stream uses):
    """),
    code("""
    def replay(cuts):
        assembled, start = ArtifactSet(), 0
        for n, size in enumerate(cuts):
            piece = messages.artifact(REPORT_ID, report["parts"][start:start + size])
            assembled.apply(messages.artifact_update(stream.task_id, CONTEXT_ID, piece, append=n > 0,
                                                     last_chunk=start + size == len(report["parts"])))
            start += size
        return assembled.get(REPORT_ID)["parts"] == report["parts"] and assembled.is_sealed(REPORT_ID)

    for cuts in ([4], [2, 2], [1, 3], [1, 1, 1, 1]):
        print(f"chunks of {cuts}: same report: {replay(cuts)}")
    """),
    md("""
    ## Step 5. Read the report

    The report's **data parts** are plain JSON objects; merged, they are the structured report the
    walkthrough promises: root cause, confidence, affected orders, recommended actions.
    """),
    code("""
    data = {}
    for piece in arts.data(REPORT_ID):
        data.update(piece)

    print("ticket:     ", data["ticket"])
    print("confidence: ", data["confidence"])
    print("root cause: ", data["rootCause"])
    """),
    md("""
    The affected orders, ready for pandas:
    """),
    code("""
    affected = pd.DataFrame(data["affectedOrders"])
    affected
    """),
    code("""
    print("evidence:")
    for key, value in data["evidence"].items():
        print(f"  {key}: {value}")
    print("recommended actions:")
    for n, action in enumerate(data["recommendedActions"], 1):
        print(f"  {n}. {action}")
    """),
    md("""
    And the **text part**, a summary written for people:
    """),
    code("""
    print(arts.text(REPORT_ID))
    """),
    md("""
    ## Step 6. The final Message next to the Artifact

    The result comes in two layers (walkthrough, section 4): the **Artifact** is the report, for
    programs; the **Message** in the final status is the conclusion, in words, for the user. The
    Message is an agent message (`ROLE_AGENT`) with its own `messageId`, tied to the task and its
    context:
    """),
    code("""
    conclusion = stream.view.status["message"]
    print("role:     ", conclusion["role"])
    print("messageId:", conclusion["messageId"])
    print("same task:", conclusion["taskId"] == stream.task_id, "| contextId:", conclusion["contextId"])
    print()
    print(messages.text_of(conclusion))
    """),
    md("""
    The agent keeps both in the task, so a coordinator that missed the stream gets the complete
    delivery with one `GetTask`, identical to what the stream assembled:
    """),
    code("""
    task = coordinator.get_task(stream.task_id)
    print("state:                    ", states.short_name(task["status"]["state"]))
    print("same report as assembled: ", task["artifacts"] == arts.as_list())
    print("same conclusion:          ", task["status"]["message"] == conclusion)
    """),
    md("""
    Not every answer is a task. A stateless agent such as echo answers with a **Message** alone: no
    Task.id to track, no artifacts, nothing to ask for later. In a stream, such a Message is the one
    and only item, and it ends the stream.
    """),
    code("""
    hello = coordinator.send("echo", "is anybody there?")
    print("result holds:", list(hello.result))
    print("role:        ", hello.message["role"])
    print("text:        ", hello.text)
    """),
    md("""
    ## Step 7. Binary artifacts: raw bytes instead of base64

    JSON is the baseline: bytes travel as base64 in a `raw` part, a third bigger than the bytes. The
    profile has an optional **native binary artifact mode**: the requester asks for it with the user
    property `a2a-artifact-mode: binary`, and the responder may then publish each chunk as the raw
    bytes themselves, the artifact's identity moving into user properties:

    | user property | value |
    |---|---|
    | `a2a-event-type` | `task-artifact-update` |
    | `a2a-task-id`, `a2a-context-id` | the task's ids |
    | `a2a-artifact-id` | the artifact |
    | `a2a-chunk-seqno` | 0, 1, 2, ... |
    | `a2a-last-chunk` | `true` on the last chunk |

    plus *Payload Format Indicator* 0 (bytes) and the media type as *Content Type*.

    A small agent shows it: it exports the affected orders of the report as CSV, 96 bytes per chunk.
    Its handler calls `ctx.chunk(...)` for each piece; the kit sends raw bytes to requesters that
    asked for binary and base64 JSON to the others.
    """),
    code("""
    report_data = analysis.analyse(ticket_data.load(), "TCK-4821", REPRO_TEXT)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(report_data["affectedOrders"][0]), lineterminator="\\n")
    writer.writeheader()
    writer.writerows(report_data["affectedOrders"])
    CSV = out.getvalue().encode()
    CHUNK = 96

    def export_orders(ctx):
        ctx.working("exporting the affected orders as CSV")
        for start in range(0, len(CSV), CHUNK):
            ctx.chunk("tck-4821-orders.csv", CSV[start:start + CHUNK], content_type="text/csv",
                      last=start + CHUNK >= len(CSV))
        ctx.complete(f"exported {len(report_data['affectedOrders'])} orders")

    exporter = Responder("order-export", export_orders)
    print(f"the CSV: {len(CSV)} bytes, so {-(-len(CSV) // CHUNK)} chunks")
    """),
    code("""
    binary = coordinator.stream("order-export", "Export the affected orders of TCK-4821", artifact_mode="binary")
    for event in binary:
        print(event, event.data if event.kind == "binaryChunk" else "")
    """),
    md("""
    Each `binaryChunk` is an MQTT message whose payload is the bytes themselves. Its properties:
    """),
    code("""
    def chunk_row(ev):
        m = ev.mqtt
        return {"payload bytes": len(m.payload), "Payload Format": m.payload_format, "Content Type": m.content_type,
                **{k: m.user_property(k) for k in (properties.EVENT_TYPE, properties.ARTIFACT_ID,
                                                   properties.CHUNK_SEQNO, properties.LAST_CHUNK)}}

    pd.DataFrame([chunk_row(ev) for ev in binary.events if ev.kind == "binaryChunk"])
    """),
    md("""
    Reassembly goes by `a2a-chunk-seqno`, not by arrival order: chunks that arrive out of order or
    twice are put in place or dropped, and the artifact is complete once the last chunk and every
    chunk before it are in. The bytes come out exactly as they went in:
    """),
    code("""
    received = binary.view.binary["tck-4821-orders.csv"]
    print("complete:", received.complete, "| missing:", received.missing)
    print("byte-exact:", received.data() == CSV)
    print()
    print(received.data().decode())
    """),
    md("""
    The same export without `artifact_mode`: JSON mode, base64 in `raw` parts. Same bytes at the end,
    more bytes on the wire:
    """),
    code("""
    as_json = coordinator.stream("order-export", "Export the affected orders of TCK-4821 (JSON)")
    as_json.wait()
    csv_artifact = as_json.view.artifacts.get("tck-4821-orders.csv")
    decoded = b"".join(base64.b64decode(p["raw"]) for p in csv_artifact["parts"])
    print("first part:", {k: (v[:24] + "…" if k == "raw" else v) for k, v in csv_artifact["parts"][0].items()})
    print("byte-exact:", decoded == CSV)

    def wire_bytes(s, kind):
        return sum(len(e.mqtt.payload) for e in s.events if e.kind == kind)

    print(f"artifact bytes on the wire: binary {wire_bytes(binary, 'binaryChunk')}, "
          f"JSON {wire_bytes(as_json, 'artifactUpdate')}")
    """),
    md("""
    ## Step 8. Clean up
    """),
    code("""
    desk.stop()
    echo.stop()
    exporter.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    """),
    md("""
    ## Summary
    - `SendStreamingMessage` over MQTT: every event is its own PUBLISH on the reply topic, with the
      request's Correlation Data; the kit numbers them (`a2a-stream-seq`) to drop duplicates.
    - A stream ends at a terminal state, at `input-required` / `auth-required`, or with a Message
      result; `lastChunk` only seals an artifact.
    - Artifacts are aggregated by `artifactId` (`append` extends, no `append` creates or replaces,
      `lastChunk` seals), whatever the number of chunks.
    - The Artifact is the structured report (data parts, text part); the Message in the final status
      is the conclusion for the user; `GetTask` returns both.
    - Binary mode (`a2a-artifact-mode: binary`) sends raw bytes with `a2a-chunk-seqno` and
      `a2a-last-chunk`; reassembly by sequence number is byte-exact.

    ## What's next
    [04 · Input required](04-input-required.ipynb): the same stream without the reproduction steps,
    the analyst's pause, and the coordinator's answer on the same task.
    """),
]


# ================================================================================================
# 04 · Input required
# ================================================================================================
INPUT_REQUIRED = [
    md("""
    # 04 · Input required: the analyst asks, the coordinator answers

    The walkthrough's scenario pauses once: to confirm the root cause of TCK-4821 the analyst needs
    the **reproduction steps**, and the ticket does not have them. The task moves to
    `INPUT_REQUIRED`. This lesson follows that pause on the wire: the stream that ends without the
    task ending, the answer sent on the same task, and then a second task in the same conversation.

    ## What you will learn
    - `INPUT_REQUIRED` is **stream-final but not terminal**: the stream for that Correlation Data ends,
      the task waits;
    - what the requester drops (the in-flight Correlation Data) and what it keeps (Task.id, contextId,
      route);
    - continuing the task: a **new messageId**, the **same Task.id and contextId**, **fresh Correlation
      Data**, shown side by side as they crossed the broker;
    - the task's history after the pause;
    - a new turn in the same conversation: **new Task.id, same contextId**; `ListTasks` by context;
    - what an agent answers when you write to a finished task, or mix up contexts.

    ## Time needed
    About 15 minutes. The notebook runs in a few seconds.

    ## Prerequisites
    - [02 · Send and track](02-send-and-track.ipynb) (identifiers, task states) and
      [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) (stream events, the report).
    """),
    md("""
    ## Step 1. The agents, and a tap on the request topics

    The desk works without handover again (`handover="none"`). Next to the coordinator we start a
    **tap**: a plain MQTT client subscribed to every request topic of `acme/support`, so we can look
    at what the coordinator really published. It is an ordinary subscriber; the agents do not know it
    is there (a filter starting with `$a2a/` is needed: `#` alone would not match `$` topics).
    """),
    code("""
    import json
    import time

    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Requester
    from a2a_nb.mqtt import Session
    from a2a_nb.protocol import MqttMessage, encode_json, errors, jsonrpc, messages, states, topics
    from a2a_nb.protocol.errors import A2AError
    from a2a_nb.story.cast import TicketDesk
    from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

    desk = TicketDesk(handover="none", seed=4821)
    coordinator = Requester("coordinator", seed=4821)

    tap = Session("acme", "support", "lesson-04-tap")
    tap.subscribe("$a2a/v1/request/acme/support/#")   # no handler: messages wait in tap.inbox

    def tapped():
        \"\"\"The requests the tap saw since the last call, one dict each.\"\"\"
        rows = []
        while (m := tap.receive(timeout=0.2)) is not None:
            request = json.loads(m.payload)
            params = request["params"]
            message = params.get("message", {})
            rows.append({"to": topics.parse_topic(m.topic).agent, "method": request["method"],
                         "messageId": message.get("messageId", ""),
                         "Task.id": message.get("taskId") or params.get("id"),
                         "contextId": message.get("contextId", ""),
                         "Correlation Data": m.correlation_data.hex()[:16] + "…"})
        return rows

    print(tap.client_id, "listens on $a2a/v1/request/acme/support/#")
    """),
    md("""
    ## Step 2. The ticket without reproduction steps

    The first message names the ticket and nothing else. The coordinator streams it to the desk:
    """),
    code("""
    first = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m1")
    stream = coordinator.stream("ticket-desk", message=first)
    for event in stream:
        print(event)
    print()
    print("the analyst asks:", stream.view.status_text)
    """),
    md("""
    The stream is over, but the task is not:
    """),
    code("""
    state = stream.state
    print("task state:       ", states.short_name(state))
    print("stream ended:     ", stream.done, "(states.ends_stream:", states.ends_stream(state), ")")
    print("task is terminal: ", states.is_terminal(state))
    print("task is waiting:  ", states.is_interrupted(state))
    """),
    md("""
    ## Step 3. What the coordinator drops and what it keeps

    The profile is precise (Streaming Reply Mapping 7): at `input-required` the requester **cleans up
    the in-flight state for that Correlation Data**. The next message on this task will be a new
    request with new Correlation Data; anything still arriving with the old one is a protocol error
    and is ignored. Let us check it: the tap publishes a fake late reply with the old Correlation Data
    to the coordinator's reply topic.
    """),
    code("""
    old_correlation = stream.events[0].mqtt.correlation_data
    late = jsonrpc.result_response("late", messages.stream_status(
        messages.status_update(stream.task_id, CONTEXT_ID, messages.task_status(states.WORKING))))

    before = coordinator.stats.ignored_unknown_correlation
    tap.publish(MqttMessage(coordinator.reply_topic, encode_json(late), correlation_data=old_correlation))
    for _ in range(100):                      # wait (at most 1 s) for the coordinator to see it
        if coordinator.stats.ignored_unknown_correlation > before:
            break
        time.sleep(0.01)
    print("late item ignored:", coordinator.stats.ignored_unknown_correlation - before == 1)
    """),
    md("""
    What it keeps is everything it needs to continue: the task's identity and where to send it.
    """),
    code("""
    print("Task.id:   ", stream.task_id)
    print("contextId: ", stream.view.context_id)
    print("route:     ", coordinator.routing.target(stream.task_id))
    """),
    md("""
    ## Step 4. The answer: same task, new message, new correlation

    The coordinator asks the user and sends the answer with `continue_task`. It makes a new message
    (new `messageId`: this is new input, not a resend) for the same `Task.id` and `contextId`, and
    publishes it as a new request (new Correlation Data) to whoever answers for the task now.
    """),
    code("""
    answer = coordinator.continue_task(stream, REPRO_TEXT, stream=True, message_id="coord-tck4821-m2")
    for event in answer:
        print(event)
    """),
    md("""
    Both requests, as the tap saw them on the broker:
    """),
    code("""
    m1, m2 = tapped()
    side = pd.DataFrame({"first message (m1)": m1, "the answer (m2)": m2})
    side["same?"] = [m1[key] == m2[key] for key in side.index]
    side
    """),
    md("""
    Four identifiers, four lifetimes: the **Correlation Data** is one request/reply exchange, the
    **messageId** one message, the **Task.id** the task's whole life, the **contextId** the
    conversation (many tasks). Exactly two changed: the messageId (new input) and the Correlation Data
    (a new exchange). That is the rule for continuing an interrupted task (Multi-Turn Conversation
    Patterns, pattern 3).

    ## Step 5. The task completes

    The second stream went from `working` to `completed`, with the report in between:
    """),
    code("""
    print("state:      ", states.short_name(answer.state))
    print("artifacts:  ", [a["artifactId"] for a in answer.view.artifacts.as_list()])
    print("conclusion: ", answer.view.status_text[:120] + "…")
    """),
    md("""
    The task's history keeps the whole exchange, in order: the coordinator's two messages and every
    message the agent attached to a status (its progress notes, its question and its conclusion).
    """),
    code("""
    task = coordinator.get_task(stream.task_id)
    pd.DataFrame([
        {"role": m["role"], "messageId": m["messageId"], "text": messages.text_of(m)[:80]}
        for m in task["history"]
    ])
    """),
    md("""
    ## Step 6. A new turn in the same conversation

    A week later the user asks about the same ticket again. A finished task never changes, so this
    is a **new task** (new Task.id) in the **same context** (`ctx-tck4821`): the agent may use the
    context's history, and everything about the ticket stays together.
    """),
    code("""
    recheck = coordinator.stream(
        "ticket-desk",
        "Re-check TCK-4821 after the cache fix was deployed\\n" + REPRO_TEXT,
        context_id=CONTEXT_ID, message_id="coord-tck4821-m3")
    recheck.wait()

    turns = pd.DataFrame([
        {"turn": "the ticket", "Task.id": stream.task_id, "contextId": stream.view.context_id,
         "state": states.short_name(coordinator.get_task(stream.task_id)["status"]["state"])},
        {"turn": "the re-check", "Task.id": recheck.task_id, "contextId": recheck.view.context_id,
         "state": states.short_name(recheck.state)},
    ])
    print("new Task.id:     ", recheck.task_id != stream.task_id)
    print("same contextId:  ", recheck.view.context_id == stream.view.context_id)
    turns
    """),
    md("""
    The context groups them: `ListTasks` with the contextId returns both tasks from the agent.
    """),
    code("""
    listed = coordinator.list_tasks("ticket-desk", context_id=CONTEXT_ID)
    pd.DataFrame([
        {"Task.id": t["id"], "contextId": t["contextId"], "state": states.short_name(t["status"]["state"])}
        for t in listed["tasks"]
    ])
    """),
    md("""
    ## Step 7. What the agent refuses

    Two mistakes the agent turns into JSON-RPC errors on the reply path. Writing to a **finished**
    task (a terminal task cannot restart: start a new one in the same context instead):
    """),
    code("""
    try:
        coordinator.continue_task(stream, "one more thing about TCK-4821", message_id="coord-tck4821-m4")
    except A2AError as err:
        print(f"error {err.code} ({errors.classify(err).name}): {err.message}")
    """),
    md("""
    And a message that names a task with a **different contextId** than the one the task was created
    in: error `-32602` (invalid params), as the profile demands (Context Identifier Semantics 6).
    """),
    code("""
    mixed_up = coordinator.new_message("about TCK-4821", task_id=recheck.task_id, context_id="ctx-tck9999",
                                       message_id="coord-tck4821-m5")
    try:
        coordinator.send(None, message=mixed_up)
    except A2AError as err:
        print(f"error {err.code} ({errors.classify(err).name}): {err.message}")
    """),
    md("""
    ## Step 8. Clean up
    """),
    code("""
    tap.close()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    """),
    md("""
    ## Summary
    - `INPUT_REQUIRED` (and `AUTH_REQUIRED`) ends the stream for its Correlation Data, but the task
      waits; the requester forgets the correlation, keeps Task.id, contextId and route.
    - Continuing a task: `continue_task` sends a **new messageId** with the **same Task.id and
      contextId**, as a new request with **fresh Correlation Data**.
    - The task's history records both user messages and the agent's notes, question and conclusion.
    - A new turn in a conversation is a **new task in the same context**; `ListTasks` finds a
      context's tasks.
    - A terminal task refuses new messages (`-32004` UnsupportedOperation); a contextId that does not
      match the task's is `-32602`.

    ## What's next
    [05 · Handover](05-handover.ipynb): the desk hands the ticket to an analyst instance of its own,
    and the coordinator's routing table follows it (user story 07).
    """),
]


# ================================================================================================
# 05 · Handover
# ================================================================================================
HANDOVER = [
    md("""
    # 05 · Handover: the desk delegates, the routing table follows

    The ticket desk owns the only Agent Card, but it does not analyse tickets itself: for each ticket
    it spawns an **analyst instance** with its own MQTT client ID and no card, and hands the task to
    it. The analyst's replies say so with the user property `a2a-responder-agent-id`, and from then
    on the coordinator sends everything about that task **directly to the analyst**. This is the
    profile's *Optional Task Handover*, told as **user story 07**; this lesson walks through it step
    by step and then through its three failure cases.

    ## What you will learn
    - the six steps of user story 07 on a real broker: the reply that carries
      `a2a-responder-agent-id`, the routing table before and after, follow-ups on the analyst's direct
      request topic with new Correlation Data and the same Task.id;
    - failure case 1: no `a2a-responder-agent-id` → the task stays with the card agent;
    - failure case 2: two handovers in one stream → the latest one wins;
    - failure case 3: the analyst is unreachable → retries against its direct topic, then fallback to
      the card agent, with the reason recorded;
    - a live view of the routing table (`routing_table_view`).

    ## Time needed
    About 20 minutes. The notebook runs in about 5 seconds (case 3 waits for real timeouts).

    ## Prerequisites
    - [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) and
      [04 · Input required](04-input-required.ipynb): stream events, continuing a task.
    """),
    md("""
    ## Step 1. The agents, a tap and the routing table view

    The desk with `handover="first-reply"`: it hands each ticket to a new analyst as soon as it has
    accepted it. The coordinator gets a short retry profile (wait 0.5 s for a first reply, 3 attempts, backoff
    0.05 / 0.1 / 0.2 s) so that failure case 3 takes seconds instead of the profile's default 45.
    The tap from lesson 04 shows every request the coordinator publishes.
    """),
    code("""
    import json
    import time

    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Requester
    from a2a_nb.mqtt import Session
    from a2a_nb.notebook.routing_view import routing_table_view
    from a2a_nb.protocol import MqttMessage, properties, states, topics
    from a2a_nb.protocol.retry import RetryProfile
    from a2a_nb.story.cast import TicketDesk
    from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

    pd.set_option("display.max_colwidth", 90)

    desk = TicketDesk(handover="first-reply", seed=4821)
    QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=3.0, max_attempts=3,
                         backoff_s=(0.05, 0.1, 0.2))
    coordinator = Requester("coordinator", seed=4821, retry=QUICK)

    tap = Session("acme", "support", "lesson-05-tap")
    tap.subscribe("$a2a/v1/request/acme/support/#")

    def tapped():
        \"\"\"The requests the tap saw since the last call, one dict each.\"\"\"
        rows = []
        while (m := tap.receive(timeout=0.2)) is not None:
            request = json.loads(m.payload)
            params = request["params"]
            message = params.get("message", {})
            rows.append({"topic": m.topic, "method": request["method"], "messageId": message.get("messageId", ""),
                         "Task.id": (message.get("taskId") or params.get("id"))[:8] + "…",
                         "Correlation Data": m.correlation_data.hex()[:16] + "…"})
        return pd.DataFrame(rows)

    def route_rows():
        return pd.DataFrame(coordinator.routing.rows()).drop(columns="updated_at")

    def reroutes(task_id):
        rows = [r for r in coordinator.routing.history_rows() if r["task_id"] == task_id]
        return pd.DataFrame(rows, columns=["from", "to", "cause", "detail"])

    print(coordinator)
    """),
    md("""
    A recorder hears every A2A message of this lesson from now on (it only subscribes); step 8 draws
    the four tasks' routes from what it heard.
    """),
    code("""
    %matplotlib inline
    from IPython.display import display

    from a2a_nb.traffic import Recorder
    from a2a_nb.traffic.charts import reroute_chart

    recorder = Recorder(org_filter="$a2a/v1/+/acme/support/#").start()
    """),
    md("""
    The routing table as a widget: one row per task with its card agent, the agent answering for it
    now, and every reroute. It shows what the table holds when `refresh()` runs (or the *Refresh*
    button is clicked; tick *auto refresh* to follow changes by itself). It is empty for now; it will
    be displayed again below.
    """),
    code("""
    view = routing_table_view(coordinator)
    view
    """, IGNORE),
    md("""
    ## Step 2. Story steps 1-2: the request goes to the card agent

    1. Agent A (the coordinator) is subscribed to its reply topic (it did so when it was created).
    2. It publishes the request to agent B's request topic, the one in B's card, with Response Topic
       and Correlation Data, and a Task.id it made itself.
    """),
    code("""
    print("1. reply topic:  ", coordinator.reply_topic)
    first = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m1")
    stream = coordinator.stream("ticket-desk", message=first)
    task_id = stream.task_id
    request = tapped().iloc[0]
    print("2. published to: ", request["topic"])
    print("   Task.id:      ", first["taskId"])
    print("   Correlation:  ", request["Correlation Data"])
    """),
    md("""
    The first reply is already in (that is when `stream(...)` returns), but the coordinator has not
    read it yet. Its routing table holds what it knew when it sent: the task belongs to the card agent.
    """),
    code("""
    route_rows()
    """),
    md("""
    ## Step 3. Story steps 3-4: the desk delegates, the replies say so

    3. The desk accepts the Task.id (its first stream item is the task snapshot, `submitted`) and
       hands the task to an analyst it spawns.
    4. From then on the analyst publishes on the coordinator's reply topic, echoing the Correlation
       Data and the Task.id, and its reply carries the user property `a2a-responder-agent-id`.

    We read the stream item by item and look at the route after each one:
    """),
    code("""
    for event in stream:
        state = states.short_name(event.state) if event.state else ""
        print(f"{event.kind:13} {state:15} a2a-responder-agent-id: {event.responder or '-':15} "
              f"route -> {coordinator.routing.target(task_id).label}")
    print()
    print("the analyst asks:", stream.view.status_text)
    """),
    md("""
    The item that moved the route, as an MQTT packet:
    """),
    code("""
    handover = next(e for e in stream.events if e.reroute is not None)
    packet = handover.mqtt
    print("published on:     ", packet.topic)
    print("Correlation Data: ", packet.correlation_data.hex()[:16] + "…", "(the request's)")
    echoed = handover.data.get("taskId") or handover.data.get("id")  # an event's taskId, a Task's id
    print("item:             ", handover.kind)
    print("Task.id echoed:   ", echoed == task_id)
    print("user properties:  ", packet.user_properties)
    """),
    md("""
    The routing table after: the task keeps its card agent (the fallback) and is now routed to the
    analyst; the reroute is recorded with its cause.
    """),
    code("""
    route_rows()
    """),
    code("""
    reroutes(task_id)
    """),
    md("""
    ## Step 4. Story steps 5-6: follow-ups go straight to the analyst

    5. The coordinator persists Task.id → responder: that is its routing table (with
       `Requester(routes_path=...)` it is also written to SQLite, so a restarted coordinator keeps it).
    6. Every follow-up for the task goes to the analyst's **direct request topic**: the answer to the
       question, and a `GetTask` afterwards. Each is a new request with **new Correlation Data**;
       the **Task.id never changes**.
    """),
    code("""
    answer = coordinator.continue_task(stream, REPRO_TEXT, stream=True, message_id="coord-tck4821-m2")
    answer.wait()
    final = coordinator.get_task(task_id)
    print("task state:", states.short_name(final["status"]["state"]))
    follow_ups = tapped()
    follow_ups
    """),
    code("""
    print("all to the analyst's topic:  ", set(follow_ups["topic"]) == {topics.request_topic("acme", "support", "analyst-1")})
    print("one Task.id for all:         ", follow_ups["Task.id"].nunique() == 1 and request["Task.id"] == follow_ups["Task.id"][0])
    print("new Correlation Data on each:", follow_ups["Correlation Data"].nunique() == len(follow_ups))
    """),
    md("""
    The widget shows the table when it is refreshed. (The stored notebook shows the snapshot taken
    when this cell ran; run it yourself and click *Refresh* after any later cell.)
    """),
    code("""
    view.refresh()
    view
    """, IGNORE),
    md("""
    ## Step 5. Failure case 1: no `a2a-responder-agent-id`

    A desk that does the work itself (`handover="none"`) never sets the property. The coordinator must
    then keep routing to the card agent: a reply without the property is **not** a handover. (Each
    failure case starts a fresh desk with its own seed; its analysts are again `analyst-1`, `analyst-2`, ….)
    """),
    code("""
    desk.stop()
    desk = TicketDesk(handover="none", seed=4822)

    plain = coordinator.stream("ticket-desk", TICKET_TEXT + "\\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                               message_id="coord-tck4821-m3")
    plain.wait()
    coordinator.get_task(plain.task_id)
    print("a2a-responder-agent-id on the items:", {e.responder for e in plain.events})
    print("routed to:                          ", coordinator.routing.target(plain.task_id))
    print("reroutes:                           ", len(reroutes(plain.task_id)))
    tapped()
    """),
    md("""
    ## Step 6. Failure case 2: two handovers in one stream

    This desk starts on the ticket itself, hands it to a first analyst, and that analyst passes it to
    a second one halfway through the report (`handover="double"`; the reproduction steps are in the
    first message, so it is one stream). The property appears twice with two values: the coordinator
    must honour the **most recent** one.
    """),
    code("""
    desk.stop()
    desk = TicketDesk(handover="double", seed=4823)

    twice = coordinator.stream("ticket-desk", TICKET_TEXT + "\\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                               message_id="coord-tck4821-m4")
    twice.wait()
    pd.DataFrame([{"event": e.kind, "state": states.short_name(e.state) if e.state else "",
                   "a2a-responder-agent-id": e.responder or "",
                   "reroute": f"{e.reroute.from_.label} → {e.reroute.to.label}" if e.reroute else ""}
                  for e in twice.events])
    """),
    code("""
    reroutes(twice.task_id)
    """),
    md("""
    The latest analyst is where follow-ups go now; the task's identity never changed:
    """),
    code("""
    coordinator.get_task(twice.task_id)
    print("routed to:", coordinator.routing.target(twice.task_id))
    tapped()
    """),
    md("""
    ## Step 7. Failure case 3: the analyst is unreachable

    This time the analyst asks for the reproduction steps and then disappears (`handover="dies"`: its
    MQTT connection ends 0.2 s after the question). The user story's rule: apply the retry profile
    against the **new agent's direct topic**; when it is exhausted, **fall back to the original card
    agent**. The desk shares its task runtime with its analysts, so it can take the task back.

    The tap steps aside for this case: as a subscriber to every request topic it would make the
    broker answer each publish with PUBACK 0, hiding the cheapest hint that nobody listens (reason
    code 16, *No matching subscribers*).
    """),
    code("""
    tap.unsubscribe("$a2a/v1/request/acme/support/#")
    desk.stop()
    desk = TicketDesk(handover="dies", seed=4824)

    doomed = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m5")
    doomed.wait()
    analyst = desk.instances[-1]
    print("the question came from:", {e.responder for e in doomed.events} - {None})
    print("state:                 ", states.short_name(doomed.state))

    # The analyst's connection ends 0.2 s after its question. We wait for the broker's word that it
    # is gone: a QoS 1 publish (empty payload) on its request topic gets PUBACK 16 once nobody listens.
    gone = topics.request_topic("acme", "support", analyst.agent)
    for _ in range(500):
        if coordinator.session.publish(MqttMessage(gone, b"", qos=1)).no_subscribers:
            break
        time.sleep(0.01)
    print("nobody listens on:     ", gone)
    """),
    md("""
    The coordinator answers the question. It asks the agent to acknowledge at once
    (`return_immediately=True`), so the attempts below are only about reaching an agent:
    """),
    code("""
    ack = coordinator.continue_task(doomed, REPRO_TEXT, message_id="coord-tck4821-m6", return_immediately=True)
    pd.DataFrame([{"attempt": a.number, "topic": a.topic, "Correlation Data": a.correlation[:16] + "…",
                   "PUBACK reason code": a.reason_code, "outcome": a.outcome} for a in ack.attempts])
    """),
    md("""
    Three attempts on the analyst's topic, each with new Correlation Data; the broker's PUBACK said
    *No matching subscribers* (16) every time: nobody listens there any more. The retry profile
    exhausted, the coordinator fell back to the card agent, and the desk answered. The routing table
    recorded why:
    """),
    code("""
    reroutes(doomed.task_id)
    """),
    code("""
    done = coordinator.poll(doomed.task_id, until=states.is_terminal)
    print("task state:", states.short_name(done["status"]["state"]), "| routed to:", coordinator.routing.target(doomed.task_id))
    """),
    md("""
    ## Step 8. The whole routing table

    Four tasks, the four outcomes of user story 07. The widget, refreshed (its times change on every
    run):
    """),
    code("""
    view.refresh()
    view
    """, IGNORE),
    md("""
    The same content as plain tables: one row per task, and every reroute.
    """),
    code("""
    case = {task_id: "story 07", plain.task_id: "no property", twice.task_id: "two handovers",
            doomed.task_id: "unreachable"}
    pd.DataFrame([{"case": case[r["task_id"]], "card agent": r["card"], "current agent": r["current"],
                   "rerouted": r["rerouted"], "reroutes": len(r["reroutes"])} for r in view.rows()])
    """),
    code("""
    pd.DataFrame([{"case": case[r["task_id"]], **{k: m[k] for k in ("cause", "from", "to", "detail")}}
                  for r in view.rows() for m in r["reroutes"]])
    """),
    md("""
    The same four tasks from the wire, as the recorder heard them: one panel per task, one row per
    agent it met, one marker per **hop** in order. A circle is an operation the coordinator sent
    (hollow: no reply came); a star is a reply whose `a2a-responder-agent-id` named a new responder,
    so the first handover of "two handovers" shows although no request went to that analyst. The
    label under each hop is its method and, in bold, why it went there.
    """),
    code("""
    recorder.wait_idle(0.3)
    recorder.stop()
    display(reroute_chart(recorder, names=case, title="Lesson 05: where each task went, hop by hop"))
    """),
    md("""
    The user story's checklist, and where you saw each item:

    | SDK requirement | seen in |
    |---|---|
    | parse `a2a-responder-agent-id` on any reply or stream message | step 3, step 6 (mid-stream, twice) |
    | update the routing table: later operations for the Task.id go to the new agent | steps 3-4 |
    | honour the most recent `a2a-responder-agent-id` | step 6 |
    | Task.id does not change across handover | steps 4, 6 |
    | new Correlation Data for follow-ups to the handover target | step 4, step 7 |
    | failure: responder unreachable → retry profile, then fallback to the card agent | step 7 |
    | failure: property missing → keep routing to the card agent | step 5 |

    ## Step 9. Clean up

    The agents stop; the routing view above stays: *Refresh* still reads the coordinator's table.
    """),
    code("""
    tap.close()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    """),
    md("""
    ## Summary
    - A card agent may hand a task to another instance; the replies then carry
      `a2a-responder-agent-id` with that instance's agent id, on any reply or stream message.
    - The requester's **routing table** maps Task.id → the agent answering now (and keeps the card
      agent); follow-ups go to that agent's direct request topic, with new Correlation Data and the
      same Task.id.
    - No property → no handover. Several → the latest wins.
    - An unreachable handover target gets the full retry profile; then the requester falls back to the
      card agent and records the reason.
    - `routing_table_view(requester)` shows the table per task; `refresh()` (or the button) updates it.

    ## What's next
    [06 · Recovery](06-recovery.ipynb): the walkthrough's recovery checklist, one live demonstration
    per line: timeouts, dropped streams, polling, cancelling, and the unreachable analyst again.
    """),
]


# ================================================================================================
# 06 · Recovery
# ================================================================================================
RECOVERY = [
    md("""
    # 06 · Recovery: the coordinator's checklist, live

    Any step of the handoff can break. The walkthrough ends with a checklist: for each observation,
    one action. This lesson makes each line happen on the real broker and shows the coordinator
    recovering: a reply that never comes, a stream that stops, a coordinator that can only poll, an
    analysis that takes too long, and an analyst that is gone.

    ## What you will learn
    - **timeout**: resend verbatim (same messageId and Task.id, new Correlation Data), and why the
      agent does not run the work twice;
    - **dropped stream**: recover with `GetTask` and `SubscribeToTask`, automatically after a stall and
      by hand after the coordinator lost its connection;
    - **polling only**: `GetTask` with backoff until the task is terminal;
    - **past the time limit**: `CancelTask`, then a new task in the same contextId;
    - **analyst unreachable**: retries, fallback to the card agent with the reason recorded, and what
      is left when the card agent is gone too.

    ## Time needed
    About 25 minutes. The notebook runs in about 10 seconds (it waits for real timeouts).

    ## Prerequisites
    - [04 · Input required](04-input-required.ipynb) (continuing a task) and
      [05 · Handover](05-handover.ipynb) (routing table, fallback).
    """),
    md("""
    ## Step 1. A retry profile for the classroom

    The profile's *Requester Retry and Timeout Profile* fixes the defaults every requester must
    implement: 15 s for a first reply, 30 s of stream silence, 3 attempts, backoff 1 / 2 / 4 s with
    ±20 % jitter. They are right for a real network and far too slow for a lesson, so this coordinator
    uses much shorter times. The rules that use them are unchanged.
    """),
    code("""
    import threading
    import time

    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Requester, Responder
    from a2a_nb.agents.requester import RequestTimeout
    from a2a_nb.mqtt import Session
    from a2a_nb.protocol import MqttMessage, encode_json, errors, jsonrpc, messages, states, topics
    from a2a_nb.protocol.errors import A2AError
    from a2a_nb.protocol.retry import DEFAULT, RetryProfile
    from a2a_nb.story.cast import TicketDesk
    from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

    pd.set_option("display.max_colwidth", 90)
    QUICK = RetryProfile(reply_first_timeout_s=0.5, stream_idle_timeout_s=0.5, max_attempts=3,
                         backoff_s=(0.05, 0.1, 0.2))

    def describe(p):
        return {"first-reply timeout": f"{p.reply_first_timeout_s:g} s", "stream idle timeout": f"{p.stream_idle_timeout_s:g} s",
                "attempts": p.max_attempts, "backoff": " / ".join(f"{b:g}" for b in p.backoff_s) + f" s ±{p.jitter:.0%}",
                "message expiry": f"{p.message_expiry_s()} s", "give up after (worst case)": f"{p.worst_case_s():.2f} s"}

    pd.DataFrame({"profile default": describe(DEFAULT), "this lesson": describe(QUICK)})
    """),
    code("""
    coordinator = Requester("coordinator", seed=4821, retry=QUICK)

    def attempts_table(attempts):
        return pd.DataFrame([{"attempt": a.number, "to": topics.parse_topic(a.topic).agent,
                              "Correlation Data": a.correlation[:16] + "…", "PUBACK": a.reason_code,
                              "outcome": a.outcome} for a in attempts])

    print(coordinator)
    """),
    md("""
    ## Step 2. "SendMessage timed out; delivery unknown" → resend verbatim

    After a timeout the coordinator cannot know what happened: the request may have been lost, or
    processed with its reply lost. The rule covers both: publish **the same request again** (same
    messageId, same Task.id) with **new Correlation Data**, at most `max_attempts` times, and stop at
    the first correlated reply.

    To make the first attempt fail on purpose, here is an agent written with nothing but a raw MQTT
    session: it reads requests on its request topic, **ignores the first one** and answers the second
    with a finished task. It also notes what it received.
    """),
    code("""
    received = []
    flaky = Session("acme", "support", "flaky-analyst")

    def on_request(msg):
        request = jsonrpc.parse_request(msg.payload)
        message = request["params"]["message"]
        received.append({"request": len(received) + 1, "messageId": message["messageId"],
                         "Task.id": message["taskId"][:8] + "…",
                         "Correlation Data": msg.correlation_data.hex()[:16] + "…"})
        if len(received) == 1:
            return                                   # lost: no reply for the first attempt
        task = messages.task(message["taskId"], message["contextId"], messages.task_status(states.COMPLETED))
        answer = jsonrpc.result_response(request["id"], messages.send_message_result(task))
        flaky.publish_then(MqttMessage(msg.response_topic, encode_json(answer), correlation_data=msg.correlation_data),
                           lambda ack: None)

    flaky.subscribe(topics.request_topic("acme", "support", "flaky-analyst"), handler=on_request)
    print(flaky.client_id, "listens on", topics.request_topic("acme", "support", "flaky-analyst"))
    """),
    code("""
    reply = coordinator.send("flaky-analyst", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m1")
    print("state:", states.short_name(reply.state))
    attempts_table(reply.attempts)
    """),
    md("""
    What the agent received: the same message twice, told apart only by the Correlation Data.
    """),
    code("""
    pd.DataFrame(received)
    """),
    md("""
    And when the first request *was* processed? Then the agent recognises the resend by its Task.id
    and messageId and returns the task it already has: the work runs **once**. The ticket desk (no
    handover this time, and quick) shows it: the same message sent twice, one execution.
    """),
    code("""
    flaky.close()
    desk = TicketDesk(handover="none", seed=4821, pace=0.01)

    ticket = coordinator.new_message(TICKET_TEXT + "\\n" + REPRO_TEXT, context_id=CONTEXT_ID,
                                     message_id="coord-tck4821-m2")
    once = coordinator.send("ticket-desk", message=ticket)
    again = coordinator.send("ticket-desk", message=ticket)          # verbatim: same dict, same ids
    print("both completed:        ", once.state == again.state == states.COMPLETED)
    print("same task, same report:", once.task == again.task)
    print("analyses run:          ", desk.desk.stats.executions)
    """),
    md("""
    ## Step 3. "Event stream dropped mid-way" → GetTask / SubscribeToTask

    A dropped stream is not a failed task: the agent keeps working. The coordinator asks where the
    task stands (`GetTask`) and, if it still runs, re-attaches with `SubscribeToTask` on the same
    Task.id. It never republishes the original request (once a stream item arrived, that is
    forbidden: rule 7 of the retry profile).

    The agent for this step collects evidence in three chunks and stops at a **gate** after the first
    one, so we decide when it goes on.
    """),
    code("""
    gate = threading.Event()

    def collect_evidence(ctx):
        ctx.working("collecting evidence for TCK-4821")
        ctx.artifact("evidence", [messages.text_part("orders scanned; ")], name="Evidence")
        gate.wait(10)                                   # ... until the lesson opens the gate
        ctx.artifact("evidence", [messages.text_part("events scanned; ")], append=True)
        ctx.artifact("evidence", [messages.text_part("pattern confirmed")], append=True, last_chunk=True)
        ctx.complete("evidence collected")

    collector = Responder("evidence-collector", collect_evidence)
    print(collector)
    """),
    md("""
    **A stalled stream.** After the first chunk the stream goes quiet. When nothing arrives for
    `stream_idle_timeout` (0.5 s here), the stream recovers by itself: `GetTask` (still `working`),
    then `SubscribeToTask`, whose first item is the task as it is now. We open the gate as soon as
    we see the recovery.
    """),
    code("""
    ignored_before = coordinator.stats.ignored_unknown_correlation
    stalled = coordinator.stream("evidence-collector", "Collect the evidence for TCK-4821", context_id=CONTEXT_ID)
    for event in stalled:
        print(event, "| Correlation Data:", event.mqtt.correlation_data.hex()[:8] + "…" if event.mqtt else "-")
        if event.kind == "recovered":
            gate.set()
    print()
    print("recoveries:", stalled.recoveries, "| evidence:", stalled.view.artifacts.text("evidence"))
    print("items still coming on the old correlation, ignored:",
          coordinator.stats.ignored_unknown_correlation - ignored_before)
    """),
    md("""
    The subscription has its own Correlation Data. The agent never stopped sending on the old one
    (nothing told it the coordinator left), and those items were ignored: after recovery, the old
    correlation is no longer in flight.

    **A lost connection.** Now the coordinator itself goes away mid-stream: its TCP connection is cut
    (`kill_socket`, as if the network dropped). A new coordinator session comes up with a new reply
    topic. It knows the Task.id and the routing table (a real coordinator would keep them on disk:
    `Requester(routes_path=...)`).
    """),
    code("""
    gate.clear()
    dropped = coordinator.stream("evidence-collector", "Collect the evidence for TCK-4821 again", context_id=CONTEXT_ID)
    seen = [next(dropped) for _ in range(3)]
    print("before the drop:", seen)

    lost_task = dropped.task_id
    coordinator.session.kill_socket()                                   # the network drops
    coordinator = Requester("coordinator", seed=4822, retry=QUICK, routing=coordinator.routing)
    print("back with a new reply topic:", coordinator.reply_topic)
    """),
    code("""
    snapshot = coordinator.get_task(lost_task)
    print("GetTask:", states.short_name(snapshot["status"]["state"]), "| evidence so far:",
          repr(messages.text_of(snapshot["artifacts"][0])))

    resumed = coordinator.subscribe(lost_task)
    print(next(resumed), "(the snapshot)")
    gate.set()
    for event in resumed:
        print(event)
    print()
    print("evidence:", resumed.view.artifacts.text("evidence"))
    """),
    md("""
    What the agent published for the lost session went to a reply topic nobody listens to any more;
    the broker said so in each PUBACK (16, *No matching subscribers*):
    """),
    code("""
    for _ in range(100):
        if collector.runtime.unheard_replies >= 3:
            break
        time.sleep(0.01)
    print("replies nobody heard:", collector.runtime.unheard_replies)
    """),
    md("""
    ## Step 4. "Polling only" → GetTask with backoff until terminal

    A coordinator that cannot hold a stream (or a push endpoint) asks: `GetTask`, wait, ask again,
    each wait twice the last (here 0.1, 0.2, 0.4 s ..., at most 1 s). `poll` does it; its `until`
    function sees every state it reads, and this one opens the gate after the third answer.
    """),
    code("""
    gate.clear()
    ack = coordinator.send("evidence-collector", "Collect the evidence once more", context_id=CONTEXT_ID,
                           return_immediately=True)
    print("acknowledged at once:", states.short_name(ack.state))

    polls = []

    def until(state):
        polls.append((time.time(), states.short_name(state)))
        if len(polls) == 3:
            gate.set()
        return states.is_terminal(state)

    final = coordinator.poll(ack.task_id, until=until, interval_s=0.1, max_interval_s=1.0)
    print("states read:", [state for _, state in polls])
    print("final:      ", states.short_name(final["status"]["state"]), "|", messages.text_of(final["artifacts"][0], sep=""))
    """),
    md("""
    The waits between the asks (measured, so they change from run to run):
    """),
    code("""
    print(" ".join(f"{b - a:.2f}s" for (a, _), (b, _) in zip(polls, polls[1:])))
    """, IGNORE),
    md("""
    ## Step 5. "WORKING past the ticket's time limit" → CancelTask, then a new task

    This agent digs through six months of logs unless asked for less. Its handler waits with
    `ctx.wait(...)`, which wakes up (and stops the work) the moment the task is canceled.
    """),
    code("""
    stopped = threading.Event()

    def dig_logs(ctx):
        if "last 24 h" in ctx.text:
            return "no cache errors in the last 24 h since the fix"
        ctx.working("digging through six months of logs")
        try:
            ctx.wait(60)
        finally:
            stopped.set()

    digger = Responder("log-digger", dig_logs)
    slow = coordinator.send("log-digger", "Dig through the logs for TCK-4821", context_id=CONTEXT_ID,
                            return_immediately=True)
    limit = coordinator.poll(slow.task_id, until=states.is_terminal, interval_s=0.1, timeout_s=0.3)
    print("after the 0.3 s time limit:", states.short_name(limit["status"]["state"]))
    """),
    code("""
    canceled = coordinator.cancel_task(slow.task_id)
    print("CancelTask ->", states.short_name(canceled["status"]["state"]))
    print("the agent stopped working:", stopped.wait(2))
    """),
    md("""
    A canceled task is terminal: it cannot restart, and cannot be canceled twice.
    """),
    code("""
    for attempt in (lambda: coordinator.continue_task(slow, "only the last 24 h, please"),
                    lambda: coordinator.cancel_task(slow.task_id)):
        try:
            attempt()
        except A2AError as err:
            print(f"error {err.code} ({errors.classify(err).name}): {err.message}")
    """),
    md("""
    So the coordinator starts a **new task in the same contextId**, with a request that fits the time
    limit:
    """),
    code("""
    narrower = coordinator.send("log-digger", "Dig through the logs for TCK-4821, last 24 h only",
                                context_id=CONTEXT_ID)
    print("new Task.id:   ", narrower.task_id != slow.task_id)
    print("same contextId:", narrower.context_id == slow.context_id == CONTEXT_ID)
    print("state:         ", states.short_name(narrower.state), "|", narrower.text)
    """),
    md("""
    ## Step 6. "Analyst unreachable" → retry, then switch

    The desk of lesson 05's third failure case: its analyst asks for the reproduction steps and then
    disappears (as in lesson 05, we wait until the broker answers a publish on the analyst's topic
    with PUBACK 16). The coordinator retries on the analyst's direct topic, falls back to the card
    agent, and records why.
    """),
    code("""
    desk.stop()
    desk = TicketDesk(handover="dies", seed=4824)

    question = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m3")
    question.wait()
    analyst = desk.instances[-1]
    print("asked by", analyst.agent, "| state:", states.short_name(question.state))

    gone = topics.request_topic("acme", "support", analyst.agent)   # wait until the broker dropped it
    for _ in range(500):
        if coordinator.session.publish(MqttMessage(gone, b"", qos=1)).no_subscribers:
            break
        time.sleep(0.01)

    ack = coordinator.continue_task(question, REPRO_TEXT, message_id="coord-tck4821-m4", return_immediately=True)
    attempts_table(ack.attempts)
    """),
    code("""
    pd.DataFrame([r for r in coordinator.routing.history_rows() if r["task_id"] == question.task_id],
                 columns=["cause", "from", "to", "detail"])
    """),
    code("""
    done = coordinator.poll(question.task_id, until=states.is_terminal)
    print("task:", states.short_name(done["status"]["state"]), "| finished by the card agent:",
          coordinator.routing.target(question.task_id).label)
    """),
    md("""
    And if the card agent is gone too? There is nobody left to fall back to: after the full retry
    profile the coordinator gives up with `RequestTimeout`, and the task *may* still exist somewhere.
    The walkthrough's last resort is to switch to another agent found by discovery (by skill, as in
    lesson 01) and to start over in a **new contextId**, recording why the old one was abandoned.
    """),
    code("""
    desk.stop()
    try:
        coordinator.get_task(question.task_id)
    except RequestTimeout as exc:
        reason = str(exc)
        print("RequestTimeout:", reason)

    restart = coordinator.new_message(
        TICKET_TEXT + "\\n" + REPRO_TEXT, context_id="ctx-tck4821-r2", message_id="coord-tck4821-r2-m1",
        metadata={"previousContextId": CONTEXT_ID, "switchReason": reason})
    print()
    print("the next first message:", {k: restart[k] for k in ("messageId", "contextId", "metadata")})
    """),
    md("""
    ## Step 7. The checklist, with what you saw

    The walkthrough's recovery table, with the kit call for each line and the step of this lesson that
    showed it:
    """),
    code("""
    pd.DataFrame([
        ("SendMessage timed out; delivery unknown", "resend verbatim (same messageId, Task.id)",
         "automatic in send / stream (RetryProfile)", "2"),
        ("event stream dropped mid-way", "GetTask, then SubscribeToTask; ignore the old correlation",
         "automatic after stream_idle_timeout; get_task + subscribe", "3"),
        ("polling only", "GetTask with backoff until terminal", "poll(task_id, until=...)", "4"),
        ("WORKING past the time limit", "CancelTask, new task in the same contextId",
         "cancel_task, then send(..., context_id=...)", "5"),
        ("more authorization needed", "AUTH_REQUIRED, delegate upward", "continue_task (like INPUT_REQUIRED)",
         "lesson 04"),
        ("analyst unreachable", "retry, fall back to the card agent, then switch agents; record the reason",
         "automatic fallback; RequestTimeout when none is left", "6"),
    ], columns=["observation", "action", "in the kit", "step"])
    """),
    md("""
    ## Step 8. Clean up
    """),
    code("""
    collector.stop()
    digger.stop()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    """),
    md("""
    ## Summary
    - A timeout means "delivery unknown": resend the same request (same messageId and Task.id) with
      new Correlation Data; the agent deduplicates by Task.id, so the work runs once.
    - A dropped stream is not a failed task: `GetTask`, then `SubscribeToTask` on the same Task.id;
      never republish the original request; items on an abandoned correlation are ignored.
    - Without a stream, `GetTask` with exponential backoff until the task is terminal.
    - A task past its time limit is canceled (`CancelTask`; the agent's `ctx.wait` stops the work);
      terminal tasks never restart: a new task in the same contextId takes over.
    - An unreachable analyst gets the retry profile, then the card agent takes the task back, with the
      reason in the routing table; with nobody left, `RequestTimeout`, and a new contextId elsewhere.

    ## What's next
    You have followed ticket TCK-4821 from discovery to recovery.
    [07 · Traffic analysis](07-traffic-analysis.ipynb) replays recordings of the whole story and
    analyses what crossed the broker. Or go back to [00 · Start here](00-start-here.ipynb) for the list
    of lessons, and replay any failure here with other timings: every agent in these lessons is a few
    lines of Python.
    """),
]


# ================================================================================================
# 08 · Security
# ================================================================================================
SECURITY = [
    md("""
    # 08 · Security: who may connect, and who may ask

    Until now the story ran on an open broker: any client could connect, read every reply and publish
    any card. Ticket TCK-4821 names a customer and their orders, so in production two locks guard it.
    The **broker** lets in only known agents, over TLS, and lets each one use only its own topics. The
    **ticket desk** processes a request only if it carries an access token (a JWT from the company's
    authorization server) that grants the right scope to call the desk. This lesson builds both locks
    on a Mosquitto of its own and tries to get past each of them.

    ## What you will learn
    - why logging in to the broker and carrying a bearer token on each request are two separate
      checks, and why the profile asks for both;
    - a secured Mosquitto: a TLS listener with a generated CA, one password per agent, and topic rights
      (ACL) derived from each agent's identity;
    - what an intruder holding another agent's valid password can and cannot do;
    - how the desk's Agent Card asks for a token: `securitySchemes` and `securityRequirements` with
      OAuth scopes;
    - the token's trip: issued as a JWT, sent in the user property `a2a-authorization` over TLS,
      checked by the desk (signature, `exp`, `iss`, `aud`, scopes) before any processing, and
      refused with an error that says which check failed;
    - two rules about the token itself: it never travels over plain MQTT, and it never comes back in
      a reply (a recording shows it as `[redacted]`).

    ## Time needed
    About 20 minutes. The notebook runs in a few seconds.

    ## Prerequisites
    - [01 · Discovery](01-discovery.ipynb): Agent Cards, and the security fields of a card.
    - [02 · Send and track](02-send-and-track.ipynb): requests, replies and Correlation Data.
    - Helpful, not required: TLS encrypts a connection and proves the server's identity with a
      certificate signed by a certificate authority (CA) the client trusts; a JWT is a signed JSON
      document (header, claims, signature) that anyone holding the signer's public key can check.
    """),
    md("""
    ## Step 1. Two locks, two questions

    | | broker login | bearer token |
    |---|---|---|
    | question it answers | *may this client connect, and which topics may it use?* | *may this request be processed by this agent?* |
    | who checks | the broker: at CONNECT, at every publish and every delivery | the responder (the desk): on every request, before processing |
    | what proves it | username and password over TLS (or a client certificate) | a JWT signed by an authorization server the desk trusts |
    | what it says | "this connection is the coordinator" | "the coordinator may analyse tickets at the desk, for the next 5 minutes" |
    | who grants it | the broker's administrator (password file, ACL) | the authorization server (OAuth 2.0 / OIDC), out of band |
    | failure looks like | CONNACK or PUBACK 135 *Not authorized*, or nothing delivered | a JSON-RPC error reply: `UNAUTHENTICATED` or `PERMISSION_DENIED` |

    The profile (*OAuth 2.0 and OIDC over MQTT User Properties*, rule 3) says broker authentication
    **must not** be treated as a replacement for the token. The broker knows *who is connected*; it
    cannot know what that agent was allowed to do, for whom, and until when. And a broker on which
    agents ask each other things must let every agent write to every request topic: the login alone
    cannot keep a known-but-unwelcome agent away from the desk. You will see exactly that in step 6.

    The tools of this lesson:
    """),
    code("""
    import json

    import jwt                      # PyJWT, only to look inside a token
    import pandas as pd

    import a2a_nb
    from a2a_nb.agents import Requester, Responder, ResponderOptions
    from a2a_nb.agents.auth import BearerPolicy, LocalIssuer, auth_reason, required_scopes_from_card
    from a2a_nb.agents.discovery import Discovery
    from a2a_nb.mqtt import Session
    from a2a_nb.mqtt.secure import SecureBroker
    from a2a_nb.mqtt.session import SessionError
    from a2a_nb.protocol import IdSource, MqttMessage, cards, encode_json, errors, jsonrpc, properties, states, topics
    from a2a_nb.protocol.errors import A2AError
    from a2a_nb.protocol.retry import RetryProfile
    from a2a_nb.story.cast import desk_card
    from a2a_nb.story.scenarios import TICKET_TEXT
    from a2a_nb.traffic import Recorder

    pd.set_option("display.max_colwidth", 100)
    QUICK = RetryProfile(reply_first_timeout_s=2.0, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.1,))
    print("ready")
    """),
    md("""
    ## Step 2. A secured broker of our own

    `SecureBroker` starts a private Mosquitto (on a free port of `127.0.0.1`) with:

    - a **TLS listener only**: a throw-away certificate authority and a server certificate it signed
      are generated in the broker's folder; clients trust that CA (`ca.crt`), and there is no
      plain-MQTT listener at all;
    - a **password file**: one random password per agent, stored as a salted PBKDF2 hash;
    - `use_username_as_clientid`: the broker replaces whatever Client ID a client sends with its
      username, `{org}/{unit}/{agent}`, so the Client ID the profile asks for is proven by the password;
    - an **ACL** (access control list) that gives each agent rights derived from that identity.

    Our cast gets accounts: the coordinator, the desk, a discovery client, and `echo` (whose password
    will be stolen in step 6). The `recorder` account is an *observer*: it may read all of `$a2a/#`.
    """),
    code("""
    broker = SecureBroker(cast=("coordinator", "discovery", "echo", "ticket-desk"), pools={},
                          observers=("recorder",)).start()
    print("listening with TLS:", broker.endpoint.tls)
    print("files:", ", ".join(sorted(p.name for p in broker.folder.iterdir() if p.suffix != ".log")))
    print("accounts:", ", ".join(broker.users))
    """),
    md("""
    Here is the ACL, as Mosquitto reads it. In a `pattern` line `%u` stands for the username of the
    client being checked, so one line gives every agent the same right *on its own topics*; a `user`
    block lists the rights of one account on anybody's topics.
    """),
    code("""
    print(broker.files["acl"].read_text())
    """),
    md("""
    Read it as a table of who may do what:

    - **read** only your *own* request topic (`$a2a/v1/request/%u`) and your *own* reply topics
      (`$a2a/v1/reply/%u/#`): nobody else gets your requests, replies, or the tokens in them;
    - **write** only your *own* card (`$a2a/v1/discovery/%u`); read everybody's cards;
    - **write** any request topic and any reply topic: every agent must be able to ask every agent,
      and a responder must be able to answer any Response Topic it is given;
    - the observer (`recorder`) may read everything, and publish nothing beyond what every agent may.

    The password file holds hashes only: the passwords themselves stay with the `SecureBroker` object
    (`broker.credentials(agent)` hands an agent its endpoint: TLS, CA file, username, password).
    """),
    code("""
    stored = broker.files["passwd"].read_text()
    coordinator_login = broker.credentials("coordinator")
    print("a line of the password file:", stored.splitlines()[0].split(":")[0], ": $7$ (PBKDF2-SHA512) ...")
    print("the coordinator's password is in it:", coordinator_login.password in stored)
    print("the coordinator connects as:", coordinator_login.username, "| TLS:", coordinator_login.tls)
    """),
    md("""
    The front door. A client without a password, and one with a wrong password, are refused with
    CONNACK reason code 135 *Not authorized*:
    """),
    code("""
    for who, endpoint in [("no password", broker.endpoint),
                          ("a wrong password", coordinator_login.with_credentials(coordinator_login.username, "guess"))]:
        try:
            Session("acme", "support", "visitor", broker=endpoint)
        except SessionError as exc:
            print(f"{who:17} -> refused:", str(exc).split(": ")[-1])
    """),
    md("""
    Before anything else happens, the recorder (with the observer account) starts listening to all of
    `$a2a/#`; step 9 looks at what it saw.
    """),
    code("""
    recorder = Recorder(broker.credentials("recorder"), agent="recorder").start()
    print(recorder.filter, "recording:", recorder.running)
    """),
    md("""
    ## Step 3. The desk's card asks for a token

    The desk's card is lesson 01's card plus two fields. `securitySchemes` declares *how* to get a
    token: here OAuth 2.0 with the client-credentials flow at ACME's token endpoint, and the scopes
    that endpoint can grant. `securityRequirements` says *what the desk demands*: a token from that
    scheme holding the scope `tickets.analyze`.
    """),
    code("""
    plain_card = desk_card()
    card = cards.agent_card(
        name=plain_card["name"], description=plain_card["description"], version="1.0.0",
        org="acme", unit="support", agent="ticket-desk", skills=plain_card["skills"], streaming=True,
        provider=plain_card["provider"],
        security_schemes={"acme-oauth": cards.oauth2_scheme(
            "https://auth.acme.example/oauth2/token",
            {"tickets.analyze": "Analyse support tickets", "tickets.read": "Read support tickets"},
            description="ACME identity provider (client credentials)")},
        security_requirements=[cards.requirement("acme-oauth", ["tickets.analyze"])],
    )
    print(json.dumps({k: card[k] for k in ("securitySchemes", "securityRequirements")}, indent=2))
    """),
    md("""
    The desk turns its own card into its token policy: `BearerPolicy.from_card` takes the required
    scopes from `securityRequirements`. It adds what the card does not say: which issuer the desk
    trusts (`iss`), which audience a token must name (`aud`: the desk itself), and the issuer's public
    key to check signatures with. The authorization server is `LocalIssuer`, a stand-in that signs
    ES256 JWTs with a key it generates (in real life: your identity provider, whose keys the desk
    would fetch from its JWKS endpoint).
    """),
    code("""
    issuer = LocalIssuer(issuer="https://auth.acme.example", kid="acme-signing-1")
    DESK = "acme/support/ticket-desk"
    policy = BearerPolicy.from_card(card, issuer=issuer.issuer, audience=DESK, key=issuer.public_key)

    def analyse(ctx):
        return "TCK-4821: the order-status cache is not invalidated after checkout"

    desk = Responder("ticket-desk", analyse, card=card, broker=broker.credentials("ticket-desk"), auth=policy,
                     options=ResponderOptions(ids=IdSource(seed=4821)))
    print(desk)
    print("trusts issuer:", policy.issuer, "| audience:", policy.audience,
          "| scope sets:", [sorted(s) for s in policy.scope_sets])
    """),
    md("""
    The coordinator finds the card as in lesson 01, and reads from it which scopes to ask for:
    """),
    code("""
    disco = Discovery(agent="discovery", broker=broker.credentials("discovery"))
    found = disco.wait_for("ticket-desk", status="online").card
    print("found by skill tag:", [e.agent for e in disco.find(tags=["root-cause-analysis"])])
    print("required scopes:   ", [sorted(s) for s in required_scopes_from_card(found)])
    for held in ([], ["acme-oauth"]):
        print(f"usable holding {held!s:14} ->", cards.card_matches(found, tags=["ticket"], schemes=held))
    """),
    md("""
    ## Step 4. A token from the authorization server

    Getting the token is out of band (profile rule 1): the coordinator asks the authorization server,
    over HTTPS, for a token for the audience `acme/support/ticket-desk` with the scope the card named.
    Here `issuer.token(...)` plays that part. The token is a JWT: three base64url parts, header, claims,
    signature. Anyone can *read* the first two (we do, below, without checking anything); only the
    issuer's private key can *make* a signature that the public key verifies.
    """),
    code("""
    token = issuer.token(DESK, ["tickets.analyze", "tickets.read"], subject="acme/support/coordinator",
                         lifetime_s=300)
    claims = jwt.decode(token, options={"verify_signature": False})

    print("parts:  ", token.count(".") + 1)
    print("header: ", jwt.get_unverified_header(token))
    print("claims: ", {k: v for k, v in claims.items() if k not in ("iat", "exp", "jti")})
    print("valid for", claims["exp"] - claims["iat"], "s after iat; jti (a unique token id):", len(claims["jti"]), "hex digits")
    """),
    md("""
    On the wire it is one MQTT v5 user property on each request (rule 2). The value is a secret: in
    this notebook we never print more than its first characters.
    """),
    code("""
    key, value = properties.bearer(token)
    print(f"{key}: {value[:27]}...")
    """),
    md("""
    ## Step 5. The coordinator asks, over TLS, with the token

    A `Requester` given `token=` adds `a2a-authorization` to every request it publishes. Its
    connection is TLS (`mqtts`), which the profile requires of any connection carrying a token
    (Client Session Requirements 6). The desk's policy checks the token before it looks at anything
    else in the request: signature (with the issuer's public key), `exp` (not expired), `iss` (the
    trusted issuer), `aud` (this desk), and the scopes.
    """),
    code("""
    coordinator = Requester("coordinator", broker=broker.credentials("coordinator"), token=token, seed=4821,
                            retry=QUICK)
    reply = coordinator.send("ticket-desk", TICKET_TEXT)
    print("state:", states.short_name(reply.state), "|", reply.text)
    print(f"the desk checked {policy.checked} token(s), refused {policy.refused}; its handler ran "
          f"{desk.stats.executions} time(s)")
    """),
    md("""
    ## Step 6. An intruder with valid credentials

    Mallory has stolen the password of the `echo` agent. To the broker she *is* echo: valid
    credentials, over TLS, so she connects. Her program runs a requester under echo's name. (Sending
    another Client ID would not help her: the broker names every connection by its login, so she can
    neither take over the desk's session nor borrow its topic rights.)
    """),
    code("""
    mallory = Requester("echo", broker=broker.credentials("echo"), seed=666, retry=QUICK)
    print("connected as", mallory.session.endpoint.username, "| TLS:", mallory.session.endpoint.tls)
    """),
    md("""
    **She asks the desk directly.** The broker lets her publish to the desk's request topic (every
    agent may ask every agent), so the login does not stop her. The desk does: she has no token, and
    the authorization server would not give her one for the coordinator's client. This is rule 3 at
    work.
    """),
    code("""
    try:
        mallory.send("ticket-desk", "Analyze ticket TCK-4821 and tell me everything")
    except A2AError as err:
        print(f"error {err.code} ({auth_reason(err)}): {err.message}")
    print("the desk's handler ran", desk.stats.executions, "time(s) in all: not for Mallory")
    """),
    md("""
    **She listens.** She subscribes to everything she can think of: all of `$a2a/#`, the coordinator's
    reply topics, the desk's request topic (where the tokens travel). Mosquitto *acknowledges* each
    SUBSCRIBE (granted QoS 1); the ACL is applied at delivery time, message by message. Then the
    coordinator sends another request, and we compare what she got with what the observer account
    recorded at the same time.
    """),
    code("""
    overheard = []
    for pattern in ("$a2a/#", "$a2a/v1/reply/acme/support/coordinator/#", topics.request_topic("acme", "support", "ticket-desk")):
        print(f"SUBSCRIBE {pattern:42} -> granted QoS {mallory.session.subscribe(pattern, handler=overheard.append)}")

    before = recorder.wait_idle(0.1)
    second = coordinator.send("ticket-desk", "Analyze ticket TCK-4821 once more, with last week's orders")
    recorder.wait_idle(0.2)

    print()
    print("the observer recorded:", [topics.parse_topic(r["topic"]).kind for r in recorder.records[before:]])
    print("Mallory received:     ", [(m.topic, "retained" if m.retain else "live") for m in overheard])
    """),
    md("""
    All she got is the desk's retained card, which is public: every agent may read every card. The
    request (with its token) and the reply never reached her.

    **She fakes the desk's card.** A card saying "Ticket desk" that points elsewhere would lure
    requesters (and their tokens) to her. She publishes one, retained, on the desk's discovery topic,
    and then tries to delete the real one with an empty retained message:
    """),
    code("""
    desk_topic = topics.discovery_topic("acme", "support", "ticket-desk")
    fake = dict(card, description="Send your tickets here. The old desk is retired.")
    attempts = {
        "fake card": MqttMessage(desk_topic, encode_json(fake), retain=True,
                                 user_properties=properties.presence_properties("online", "agent")),
        "delete card": MqttMessage(desk_topic, b"", retain=True),
    }
    for what, message in attempts.items():
        ack = mallory.session.publish(message)
        print(f"{what:12} -> PUBACK {ack.reason_code} {ack.reason}")

    disco.close()                      # a fresh discovery reads the retained card again
    disco = Discovery(agent="discovery", broker=broker.credentials("discovery"))
    entry = disco.wait_for("ticket-desk", status="online")
    print()
    print("the desk's card on the broker:", repr(entry.card["description"][:45] + "..."))
    print("unchanged:", entry.card == card)
    """),
    md("""
    **She turns the desk against its own card.** The desk answers every request on the request's
    *Response Topic*. Mallory names the desk's own discovery topic as Response Topic: if the desk
    answered there, its reply (an error object) would replace its retained card, and discovery would
    lose the desk. The broker would allow it (the desk may write its own card). The desk does not: it
    publishes replies only inside the reply namespace `$a2a/v1/reply/acme/support/`, and drops any other
    request unanswered, before the token check, before any work.
    """),
    code("""
    import logging, sys

    # show what the desk logs about it here (it goes to stderr otherwise)
    desk_log = logging.getLogger("a2a_nb.agents.responder")
    desk_log.addHandler(logging.StreamHandler(sys.stdout))
    desk_log.propagate = False

    dropped_before = desk.stats.dropped
    mallory.session.publish(MqttMessage(topics.request_topic("acme", "support", "ticket-desk"),
                                        encode_json(jsonrpc.request(jsonrpc.GET_TASK, {"id": reply.task_id}, "m-1")),
                                        response_topic=desk_topic, correlation_data=b"reflect"))
    disco.close()
    disco = Discovery(agent="discovery", broker=broker.credentials("discovery"))
    entry = disco.wait_for("ticket-desk", status="online")
    print("requests the desk dropped:", desk.stats.dropped - dropped_before)
    print("its card is still the card:", entry.card == card)
    """),
    md("""
    What a stolen password *does* give her: echo's own rights. She can publish a card for echo, read
    echo's requests and replies, and publish to any reply topic. The requester side is protected
    there by Correlation Data (a reply it did not ask for is ignored and counted), and fully only by
    the profile's optional end-to-end encryption (the *untrusted-broker security profile*). The remedy
    for a stolen password is a new one: change it in the password file and make Mosquitto reload it
    (SIGHUP), as `SecureBroker` does whenever it adds an account.

    ## Step 7. When the token is wrong

    Each row below is a coordinator holding a different token; each sends the ticket once. The desk
    answers every bad token with a JSON-RPC error, code -32600 (*Invalid Request*: A2A v1.0 defines no
    JSON-RPC code for authentication, and the MQTT binding says to follow core JSON-RPC), whose `data`
    names the reason (`UNAUTHENTICATED`: no acceptable token; `PERMISSION_DENIED`: a good token
    without the needed scope), the HTTP status an HTTP binding would use, and the required scopes.
    The message says which check failed, and nothing more: never the token or its claims. (Creating
    a coordinator again replaces the previous client with the same Client ID.)
    """),
    code("""
    def tampered(good):
        # give a read-only token the missing scope by editing its claims; the signature no longer matches
        head, body, signature = good.split(".")
        edited = jwt.decode(good, options={"verify_signature": False}) | {"scope": "tickets.read tickets.analyze"}
        return ".".join([head, jwt.utils.base64url_encode(json.dumps(edited).encode()).decode(), signature])

    impostor = LocalIssuer(issuer=issuer.issuer, kid=issuer.kid)   # same name and key id, another key
    read_only = issuer.token(DESK, ["tickets.read"])
    cases = {
        "a valid token": issuer.token(DESK, ["tickets.analyze"]),
        "no token": None,
        "expired": issuer.token(DESK, ["tickets.analyze"], lifetime_s=-60),
        "wrong issuer": issuer.token(DESK, ["tickets.analyze"], issuer="https://login.evil.example"),
        "wrong audience": issuer.token("acme/support/echo", ["tickets.analyze"]),
        "missing scope": read_only,
        "bad signature": impostor.token(DESK, ["tickets.analyze"]),
        "edited claims": tampered(read_only),
    }

    rows, raw_replies, errors_seen = [], [], {}
    for n, (case, case_token) in enumerate(cases.items()):
        asker = Requester("coordinator", broker=broker.credentials("coordinator"), token=case_token,
                          seed=4830 + n, retry=QUICK)
        try:
            ok = asker.send("ticket-desk", TICKET_TEXT)
            raw_replies.append(ok.mqtt)
            rows.append((case, "", "", "", f"accepted: {states.short_name(ok.state)}"))
        except A2AError as err:
            raw_replies.append(err.reply.mqtt)
            errors_seen[case] = err
            info = err.data[0]
            rows.append((case, err.code, info["reason"], info["metadata"]["httpStatus"],
                         err.message.split(": ", 2)[-1]))
    outcomes = pd.DataFrame(rows, columns=["token", "code", "reason", "HTTP", "why"])
    outcomes
    """),
    md("""
    One of these errors as it came back, in full: `data` is a list with one `google.rpc.ErrorInfo`,
    the shape A2A v1.0 uses for error details. Auth errors are not retry-eligible: sending the same token again
    cannot help. The coordinator must get a new token first (rule 7: refresh an expired token before
    retrying).
    """),
    code("""
    print(json.dumps(errors_seen["missing scope"].to_dict(), indent=2))
    print("retry-eligible:", errors.classify(errors_seen["expired"]).retry_eligible)
    """),
    md("""
    Every refusal happened before any processing (rule 4): the desk's handler ran only for the valid
    tokens, and no task was created for the others.
    """),
    code("""
    print(f"checked {policy.checked}, refused {policy.refused}, handler runs {desk.stats.executions}, "
          f"tasks in the desk's store {len(desk.runtime.store)}")
    """),
    md("""
    ## Step 8. Never over plain MQTT

    A token sent over a connection without TLS can be read by anyone on the network path, and then
    replayed until it expires (rule 5). The kit's requester refuses to be created with a token on a
    plain `mqtt://` broker, such as the open broker of the other lessons:
    """),
    code("""
    try:
        Requester("coordinator-plain", token=token)      # the default broker: plain MQTT
    except ValueError as exc:
        print("refused:", exc)
    """),
    md("""
    The responder checks too: a desk whose own connection is not TLS refuses every token, valid or
    not, and tells the caller to treat it as exposed. To see that, we have to switch the requester's
    check off (`allow_token_without_tls=True` exists for this demonstration only), with a throw-away
    token for a throw-away desk.
    """),
    code("""
    plain_desk = Responder("ticket-desk-plain", lambda ctx: "should never run",
                           auth=issuer.policy("acme/support/ticket-desk-plain", ["tickets.analyze"]))
    throwaway = issuer.token("acme/support/ticket-desk-plain", ["tickets.analyze"], lifetime_s=30)
    careless = Requester("coordinator-plain", token=throwaway, allow_token_without_tls=True, seed=4840, retry=QUICK)
    try:
        careless.send("ticket-desk-plain", TICKET_TEXT)
    except A2AError as err:
        print(f"error {err.code} ({auth_reason(err)}): {err.message}")
    print("handler runs:", plain_desk.stats.executions)
    """),
    md("""
    ## Step 9. The token never comes back

    Rule 6: no reply, event or property may echo a token. First the raw MQTT replies the coordinators
    received in step 7 (payload and every property, as they crossed the broker):
    """),
    code("""
    all_tokens = [token, *(t for t in cases.values() if t)]

    def leaks(message):
        text = message.payload.decode("utf-8", "replace") + repr(message.user_properties)
        return any(t in text for t in all_tokens)

    print("raw replies checked:                ", len(raw_replies))
    print("containing a token:                 ", sum(leaks(m) for m in raw_replies))
    print("with an a2a-authorization property: ",
          sum(any(k.lower() == properties.AUTHORIZATION for k, _ in m.user_properties) for m in raw_replies))
    """),
    md("""
    Then what the recorder saw on the whole broker. A recording keeps every user property, but the
    value of `a2a-authorization` is replaced by `[redacted]` *before* it is stored: the key stays, so
    you can still see which requests carried a token (and spot a reply that would echo one). The first
    four requests and replies: the coordinator's in step 5, then Mallory's (`echo`, no token, refused).
    """),
    code("""
    recorder.wait_idle(0.2)
    traffic = recorder.frame()
    exchanges = traffic[traffic["kind"].isin(["request", "reply"])].reset_index(drop=True)
    exchanges[["kind", "agent", "method", "error_code", "user_properties"]].head(4)
    """),
    md("""
    All of them, counted by the user properties they carried:
    """),
    code("""
    (exchanges.assign(user_properties=exchanges["user_properties"].astype(str))
     .groupby(["kind", "user_properties"]).size().rename("messages").reset_index())
    """),
    code("""
    records = json.dumps(recorder.records)
    print("recorded messages:", len(recorder), "| containing a token:", sum(t in records for t in all_tokens))
    print("requests with a redacted token:",
          sum(["a2a-authorization", "[redacted]"] in r["user_properties"] for r in recorder.records))
    print(properties.redact([properties.bearer(token), ("a2a-task-id", "t-1")]))
    """),
    md("""
    ## Step 10. Clean up

    Stop the agents, the recorder and the discovery, close every MQTT session, and stop the secured
    broker. Its folder holds the CA's private key and every agent's password (`credentials.json`):
    `stop()` deletes it with the broker.
    """),
    code("""
    recorder.stop()
    disco.close()
    desk.stop()
    plain_desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
    broker.stop()
    print("secured broker running:", broker.running, "| its folder exists:", broker.folder.exists())
    """),
    md("""
    ## Summary
    - The **broker login** (TLS, a password per agent, `use_username_as_clientid`) proves *who is
      connected*; the **ACL** derived from that identity keeps each agent to its own request and reply
      topics and its own card.
    - An intruder with another agent's valid password gets that agent's rights and no more: she could
      not read the coordinator's requests or replies, and her fake and empty cards were refused with
      PUBACK 135.
    - The login is **not** permission to be served: the desk demands a bearer token on every request,
      as its card's `securitySchemes` and `securityRequirements` (scope `tickets.analyze`) say.
    - The token travels as `a2a-authorization: Bearer <jwt>` over TLS only; the desk checks signature,
      `exp`, `iss`, `aud` and scopes before processing, and refuses with -32600 and a reason
      (`UNAUTHENTICATED` 401 or `PERMISSION_DENIED` 403) that names the failed check.
    - The kit refuses a token on plain MQTT at both ends; tokens never appear in replies, and
      recordings show `a2a-authorization` as `[redacted]`.

    ## What's next
    Run the whole story across shells on a secured broker. In a terminal, `python -m a2a_nb broker
    --secure` prints the commands for the other shells:

    ```bash
    export A2A_BROKER_URL='mqtts://127.0.0.1:PORT?ca=/tmp/a2a-nb-secure-broker-…/ca.crt&inflight=0'
    export A2A_BROKER_CREDENTIALS=/tmp/a2a-nb-secure-broker-…/credentials.json
    python -m a2a_nb serve ticket-desk                                                  # second shell
    python -m a2a_nb send ticket-desk "TCK-4821: order status not updating after checkout" --stream  # third
    ```

    Each process logs in as itself from `credentials.json`: the desk as `acme/support/ticket-desk`, the
    analyst it hands the ticket to as `acme/support/analyst-1`, `send` as `acme/support/cli`. Nobody
    borrows a login, so nobody is disconnected by a session takeover. With the coordinator's URL from
    the banner (its password from the file), `send` acts as the coordinator. The
    profile's optional *untrusted-broker security profile* goes one step further and encrypts payloads
    end to end, for brokers you do not trust at all. Back to [00 · Start here](00-start-here.ipynb) for
    the list of lessons, or to [07 · Traffic analysis](07-traffic-analysis.ipynb) to lint a recording
    of your own.
    """),
]


sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_07_cells import NAME as TRAFFIC_ANALYSIS_NAME, cells as traffic_analysis_cells  # noqa: E402

LESSONS: dict[str, list[dict]] = {
    "00-start-here": START_HERE,
    "01-discovery": DISCOVERY,
    "02-send-and-track": SEND_AND_TRACK,
    "03-streaming-and-artifacts": STREAMING,
    "04-input-required": INPUT_REQUIRED,
    "05-handover": HANDOVER,
    "06-recovery": RECOVERY,
    TRAFFIC_ANALYSIS_NAME: traffic_analysis_cells(md, code, IGNORE),
    "08-security": SECURITY,
}


# ================================================================================================
# building and executing
# ================================================================================================
def make_notebook(name: str, cells: list[dict]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    for i, spec in enumerate(cells):
        cell_id = f"{name[:2]}-{i:02d}"
        if spec["cell_type"] == "markdown":
            cell = nbformat.v4.new_markdown_cell(spec["source"], id=cell_id)
        else:
            cell = nbformat.v4.new_code_cell(spec["source"], id=cell_id)
            if spec["tags"]:
                cell.metadata["tags"] = list(spec["tags"])
        nb.cells.append(cell)
    return nb


def execute(nb: nbformat.NotebookNode) -> None:
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name=KERNELSPEC["name"], allow_errors=False,
                            record_timing=False, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)  # nbclient writes the spec it ran; keep ours


def stable_widget_ids(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Replace the random widget model ids (outputs and saved widget state) by ids derived from the
    lesson name and creation order, so rebuilding a lesson does not change its file for nothing."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    text = nbformat.writes(nb)
    for n, old in enumerate(list(state)):
        new = hashlib.md5(f"{name}:{n}".encode()).hexdigest()
        text = text.replace(old, new)
    return nbformat.reads(text, as_version=4)


def start_build_broker():
    """The build's own Mosquitto, on a fixed port when free (stable stored outputs), else any port."""
    from a2a_nb.mqtt.broker import BrokerError, EmbeddedBroker

    try:
        return EmbeddedBroker(port=BUILD_PORT).start()
    except BrokerError:
        return EmbeddedBroker().start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="build only lessons whose name starts with one of these")
    parser.add_argument("--no-execute", action="store_true", help="write the notebooks without outputs")
    args = parser.parse_args(argv)
    chosen = {n: c for n, c in LESSONS.items() if not args.only or any(n.startswith(o) for o in args.only)}
    if not chosen:
        parser.error(f"no lesson matches {args.only}; lessons: {', '.join(LESSONS)}")

    broker = None
    if not args.no_execute:
        from a2a_nb.mqtt.broker import ENV_URL

        broker = start_build_broker()
        os.environ[ENV_URL] = broker.url  # the kernels inherit it, as they do under tests/conftest.py
        os.environ.setdefault("A2A_NB_TEST_RUN", "1")
        os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        for name, cells in chosen.items():
            nb = make_notebook(name, cells)
            started = time.perf_counter()
            if broker is not None:
                execute(nb)
                nb = stable_widget_ids(nb, name)
            elapsed = time.perf_counter() - started
            path = NOTEBOOKS / f"{name}.ipynb"
            nbformat.validate(nb)
            nbformat.write(nb, path)
            note = f"executed in {elapsed:.1f} s" if broker is not None else "not executed"
            print(f"{path.relative_to(ROOT)}: {len(nb.cells)} cells, {note}")
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
