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
         "job": "publishes the card; takes each ticket and hands it to an analyst it spawns"},
        {"agent": "analyst-0bbfd2", "role": "responder spawned by the desk", "card": "no",
         "job": "finds the root cause; its replies name it, so follow-ups go straight to it"},
        {"agent": "echo", "role": "responder (a test agent)", "card": "yes, retained",
         "job": "answers every message with the same text"},
    ])
    cast["MQTT client ID"] = [ids.client_id("acme", "support", agent) for agent in cast["agent"]]
    cast
    """),
    md("""
    The analyst's name is drawn when the desk spawns it (`analyst-` plus six hex characters); the
    lessons seed their random ids, so it is `analyst-0bbfd2` every time you run them.

    ## Step 3. The topic model

    The profile puts everything under `$a2a/v1/`, then a **kind**, then `{org}/{unit}` and the agent.
    `a2a_nb.protocol.topics` builds each name and checks every identifier, so a stray `/` can never
    add a level. These are pure functions: nothing is sent.
    """),
    code("""
    from a2a_nb.protocol import IdSource, topics

    ORG, UNIT = "acme", "support"
    reply_suffix = IdSource(seed=4821).reply_suffix()   # a requester draws one per reply topic

    topic_model = pd.DataFrame([
        ("discovery", topics.discovery_topic(ORG, UNIT, "ticket-desk"),
         "ticket-desk (its card, retained)", "whoever looks for agents"),
        ("discovery filter", topics.discovery_filter(ORG, UNIT), "",
         "the coordinator: every card of the unit"),
        ("request", topics.request_topic(ORG, UNIT, "ticket-desk"), "coordinator", "ticket-desk"),
        ("request after a handover", topics.request_topic(ORG, UNIT, "analyst-0bbfd2"), "coordinator",
         "analyst-0bbfd2"),
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

    A graceful `stop()` leaves each card on the broker marked `offline` (source `agent`).
    """),
    code("""
    browser.close()
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
    subscribes to its own **reply topic** (a random suffix, drawn from the seeded ids), before it
    ever sends anything: replies can only arrive where somebody listens.
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
    The reply came from `analyst-0bbfd2`, not from the desk: it carries the user property
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

    ## Step 9. Try it yourself: a send form

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
    ## Step 10. Clean up
    """),
    code("""
    desk.stop()
    echo.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")
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

    ## What's next
    Streaming is next in the story: the same ticket with `SendStreamingMessage`, where every status
    change and every report chunk arrives as its own event (the send form above already shows it;
    tick *stream*). Go back to [00 · Start here](00-start-here.ipynb) for the list of lessons.
    """),
]


LESSONS: dict[str, list[dict]] = {
    "00-start-here": START_HERE,
    "01-discovery": DISCOVERY,
    "02-send-and-track": SEND_AND_TRACK,
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
