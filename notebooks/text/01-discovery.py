# ---
# jupyter:
#   jupytext:
#     formats: ipynb,text//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Discovery: find the ticket desk by skill, not by name
#
# Before the coordinator can hand over ticket TCK-4821 it must find an agent that can analyse
# tickets. Over MQTT every agent publishes its [Agent Card](glossary.md#Agent-Card) as a
# [retained](glossary.md#Retained-message) message on its discovery topic; a new subscriber gets all
# current cards at once. The coordinator chooses by what the card says (skills and their tags,
# capabilities, security), never by the agent's name.
#
# ## What you will learn
# - what a retained Agent Card looks like on the broker (topic,
#   [user properties](glossary.md#User-property), JSON);
# - the three checks of the walkthrough: skills and tags, capabilities, security schemes;
# - selecting agents by skill tag with `Discovery.find`;
# - checking a card for mistakes with `protocol.card_schema.card_problems`;
# - [presence](glossary.md#Presence): `a2a-status` online/offline, set by the agent or by the
#   broker's [last will](glossary.md#Last-Will);
# - a table of all cards (pandas), and a live browser you can play with.
#
# ## Time needed
# About 15 minutes. Run All takes about 3 seconds.
#
# ## Prerequisites
# - [00 · Start here](00-start-here.ipynb): the broker, the cast and the topic model.
# - Knowing that a *retained* MQTT message stays on the broker and is delivered to every new
#   subscriber of its topic (the one new idea of this lesson is built on it).

# %% [markdown]
# ## Step 1. Start the ticket desk and the echo agent
#
# `TicketDesk` is the story's card agent (with the analysts it spawns later); `Responder` is the
# plain responder role, here with the echo handler. Both publish their card, retained, when they
# start. `seed=` makes every id they draw the same on every run. They keep running until you call
# `clean_up()` (the last step), so the live browser of step 8 has something to show.

# %%
import json

import pandas as pd

import a2a_nb
from a2a_nb import Discovery, Responder, Session, TicketDesk, as_described, said
from a2a_nb.protocol import card_schema, cards, topics
from a2a_nb.story.cast import echo_card, echo_handler

pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math

desk = TicketDesk(handover="first-reply", seed=4821)
echo = Responder("echo", echo_handler, card=echo_card())
print(desk.desk)
print(echo)

# %% [markdown]
# ## Step 2. The retained card on the broker
#
# Any client can read a card: subscribe to the discovery topic and the broker delivers the retained
# message at once. Look at the MQTT side first: the message is flagged *retained*, its content type
# is JSON, and two user properties carry the agent's **presence**.

# %%
looker = Session("acme", "support", "lesson-01-looker")
looker.subscribe(topics.discovery_topic("acme", "support", "ticket-desk"))
card_message = looker.receive(timeout=5)
looker.close()

print("topic:          ", card_message.topic)
print("retained:       ", card_message.retain)
print("content type:   ", card_message.content_type)
print("user properties:", card_message.user_properties)

# %%
as_described(
    said("the message is flagged retained", card_message.retain, True),
    said("its content type is JSON", card_message.content_type, "application/json"),
    said("two user properties carry the agent's presence", [name for name, _ in card_message.user_properties],
         ["a2a-status", "a2a-status-source"]),
)

# %% [markdown]
# The payload is an A2A v1.0 `AgentCard`. Its only interface is MQTT (its `protocolBinding` names the
# A2A over MQTT profile): `supportedInterfaces[0].url` is the desk's request topic, where requests
# must be published.

# %%
desk_card = card_message.json()
print(json.dumps(desk_card, indent=2))

# %%
as_described(
    said("Its only interface is MQTT", [cards.is_mqtt_binding(i["protocolBinding"])
                                        for i in desk_card["supportedInterfaces"]], [True]),
    said("supportedInterfaces[0].url is the desk's request topic", desk_card["supportedInterfaces"][0]["url"],
         desk.desk.request_topic),
)

# %% [markdown]
# ## Step 3. What the coordinator checks in a card
#
# A `Discovery` subscribes to `$a2a/v1/discovery/acme/support/+` and keeps the current card and
# presence of every agent. `wait_for` blocks until an agent's card is there with the status asked for.

# %%
disco = Discovery(agent="lesson-01-discovery")
for agent in ("ticket-desk", "echo"):
    entry = disco.wait_for(agent, status="online")
    print(f"{agent}: {entry.status} (source: {entry.status_source}), card problems: {entry.problems}")

# %% [markdown]
# A wait never runs out in silence: when the time is up, `wait_for` raises `TimeoutError` and says
# what it waited for and what it saw. Here it waits half a second for a billing desk that nobody
# started (the agents it lists depend on what else runs on your broker):

# %% tags=["nbval-ignore-output"]
try:
    disco.wait_for("billing-desk", status="online", timeout=0.5)
except TimeoutError as exc:
    gave_up = exc
    print("TimeoutError:", exc)

# %%
as_described(said("waits half a second for a billing desk", str(gave_up).split(";")[0],
                  "waited 0.5 s for billing-desk to be online"))

# %% [markdown]
# **Skills and tags.** A skill's tags are more reliable than its name: names are for humans, tags are
# what requesters match on.

# %%
skills = pd.DataFrame([
    {"agent": agent, "skill id": s["id"], "name": s["name"], "tags": ", ".join(s["tags"])}
    for agent in ("ticket-desk", "echo") for s in disco.get(agent).card["skills"]
])
skills

# %% [markdown]
# **Capabilities.** A long analysis should not be a blind wait: the coordinator wants `streaming` or
# `pushNotifications`. Both agents stream.

# %%
capabilities = pd.DataFrame({agent: disco.get(agent).card["capabilities"] for agent in ("ticket-desk", "echo")})
as_described(said("Both agents stream", list(capabilities.loc["streaming"]), [True, True]))
capabilities

# %% [markdown]
# **Security schemes.** Neither agent of this lesson asks for credentials:

# %%
for agent in ("ticket-desk", "echo"):
    card = disco.get(agent).card
    print(f"{agent}: securitySchemes {card.get('securitySchemes', 'none')}, "
          f"securityRequirements {card.get('securityRequirements', 'none')}")

# %%
as_described(said("Neither agent of this lesson asks for credentials",
                  [disco.get(agent).card.get("securityRequirements") for agent in ("ticket-desk", "echo")],
                  [None, None]))

# %% [markdown]
# A desk that does would declare a scheme and a requirement naming it. Here is such a card, built
# with the same builders (and not published). Over MQTT a [bearer token](glossary.md#Bearer-token)
# travels in the user property `a2a-authorization`. `cards.card_matches` is the selection rule
# `Discovery.find` uses: with the scheme names you hold, is at least one requirement satisfied?
# Without credentials the secured desk is of no use to you; holding a bearer token, it is.

# %%
secured = cards.agent_card(
    name="Ticket desk (secured)", description="The same desk, for callers with an access token.",
    version="1.0.0", org="acme", unit="support", agent="ticket-desk-secured",
    skills=desk_card["skills"], streaming=True,
    security_schemes={"bearer": cards.bearer_scheme("access token from the ACME identity provider")},
    security_requirements=[cards.requirement("bearer")],
)
print(json.dumps({k: secured[k] for k in ("securitySchemes", "securityRequirements")}, indent=2))
usable = {}
for held in ([], ["bearer"]):
    usable[str(held)] = cards.card_matches(secured, tags=["root-cause-analysis"], schemes=held)
    print(f"credentials held: {held!s:10} -> usable: {usable[str(held)]}")

# %%
as_described(said("Without credentials the secured desk is of no use to you; holding a bearer token, it is",
                  usable, {"[]": False, "['bearer']": True}))


# %% [markdown]
# ## Step 4. Select by skill tag
#
# The walkthrough's checks in one call: a skill with all the tags, the capabilities, and
# (optionally) security requirements the requester can meet; `online_only` skips agents whose
# presence says offline.

# %%
def names(entries):
    return sorted(e.agent for e in entries)

found = {
    "root-cause-analysis + streaming, online": disco.find(tags=["root-cause-analysis"], capabilities=["streaming"],
                                                          online_only=True),
    "tag 'echo'": disco.find(tags=["echo"]),
    "tags 'ticket' AND 'echo' on one skill": disco.find(tags=["ticket", "echo"]),
    "holding only a bearer token, online": disco.find(tags=["ticket"], schemes=["bearer"], online_only=True),
}
for question, entries in found.items():
    print(f"{question + ':':40} {names(entries)}")

# %% [markdown]
# The first question finds only the desk, the second only echo. No skill carries both `ticket` and
# `echo`, so the third finds nobody: the tags must all be on one skill. The last line finds the desk:
# a card without security requirements suits every caller.

# %%
as_described(
    said("The first question finds only the desk", names(found["root-cause-analysis + streaming, online"]),
         ["ticket-desk"]),
    said("the second only echo", names(found["tag 'echo'"]), ["echo"]),
    said("so the third finds nobody", names(found["tags 'ticket' AND 'echo' on one skill"]), []),
    said("The last line finds the desk", names(found["holding only a bearer token, online"]), ["ticket-desk"]),
)

# %% [markdown]
# ## Step 5. Check a card
#
# `card_schema.card_problems` lists what is wrong with a card in words a person can act on
# (`agent_card` refuses to build a card with problems, so a broken card never leaves your cell). Here
# is the echo card with five mistakes, including a field from A2A v0.3 that v1.0 moved:

# %%
broken = json.loads(json.dumps(disco.get("echo").card))   # a deep copy
del broken["version"]
broken["url"] = "mqtt://broker.example:1883"
broken["capabilities"]["streaming"] = "yes"
broken["skills"][0]["tags"] = []
broken["securityRequirements"] = [cards.requirement("oauth", ["tickets.read"])]

problems = card_schema.card_problems(broken)
for problem in problems:
    print("-", problem)
print("the published echo card:", card_schema.card_problems(disco.get("echo").card) or "no problems")

# %%
as_described(
    said("five mistakes", len(problems), 5),
    said("a field from A2A v0.3 that v1.0 moved", ["v0.3 field" in p for p in problems].count(True), 1),
)


# %% [markdown]
# ## Step 6. Presence: online, crashed, back
#
# The card carries `a2a-status` (`online`/`offline`) and `a2a-status-source`:
#
# - `agent`: the agent said so itself (it publishes `online` when it starts and `offline` when it
#   stops gracefully);
# - `lwt`: the **broker** said so. Every card agent connects with a *last will*: an `offline` copy of
#   its card that the broker publishes, retained, if the connection ends without a clean goodbye.
#
# `crash()` disconnects as if the process had died (it asks the broker to send the will), so we can
# watch it without killing anything.

# %%
def presence(agent):
    e = disco.get(agent)
    return f"{e.status} (source: {e.status_source})"

seen = {"running": presence("echo")}

echo.crash()
disco.wait_for("echo", status="offline")
seen["after crash()"] = presence("echo")

echo.start()
disco.wait_for("echo", status="online")
seen["after start()"] = presence("echo")

echo.stop()
disco.wait_for("echo", status="offline")
seen["after stop()"] = presence("echo")

echo.start()
disco.wait_for("echo", status="online")
seen["started again"] = presence("echo")

for moment, state in seen.items():
    print(f"{moment + ':':20} {state}")

# %% [markdown]
# After `crash()` the card says offline, source lwt: the broker sent the will. After `stop()` it says
# offline, source agent: echo said goodbye itself. The discovery kept every change it saw for the
# echo card, in order:

# %%
history = [(status, source) for _, status, source in disco.get("echo").history]
as_described(
    said("After crash() the card says offline, source lwt", seen["after crash()"], "offline (source: lwt)"),
    said("After stop() it says offline, source agent", seen["after stop()"], "offline (source: agent)"),
    said("every change it saw for the echo card, in order", history,
         [("online", "agent"), ("offline", "lwt"), ("online", "agent"), ("offline", "agent"), ("online", "agent")]),
)
history

# %% [markdown]
# Presence is advisory: an `offline` card stays on the broker (retained) so a requester can tell
# "known but down" from "unknown". Only an empty retained message removes a card (`unregister()`).
#
# ## Step 7. All cards as a table
#
# `Discovery.table()` gives one row per card, ready for pandas. On a broker shared with other
# programs (or the test suite) you may see more agents in `acme/support`; this lesson shows its own:
# the desk and echo, both online.

# %%
table = pd.DataFrame(disco.table())
ours = table[table["agent"].isin(["ticket-desk", "echo"])].reset_index(drop=True)
as_described(said("the desk and echo, both online", dict(zip(ours["agent"], ours["status"])),
                  {"echo": "online", "ticket-desk": "online"}))
ours

# %% [markdown]
# ## Step 8. A live discovery browser
#
# The same table as a widget that follows the broker: type a skill tag in the box (every tag you
# type must be on one skill), and the table changes as agents come and go. It is live: it follows
# every card the discovery sees (`Discovery.on_change`), until you call `clean_up()` at the end.
# Right now it shows the desk and echo online. (Other cards on your broker show too; so will the
# crashed backup desk of step 9, offline, once you get there.)

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook import discovery_browser

browser = discovery_browser(disco)
browser

# %%
shown = {e.agent: e.status for e in browser.entries() if e.agent in ("ticket-desk", "echo")}
as_described(said("Right now it shows the desk and echo online", shown, {"echo": "online", "ticket-desk": "online"}))

# %% [markdown]
# Try it: run the next cell and watch the echo row in the browser above turn offline (source lwt)
# and back online. Each state is held for a second so you can see it; the cell prints each step as
# it happens. (After `clean_up()` the discovery is closed: the cell then stops at once and says so.)

# %%
import time

HOLD_S = 1.0   # how long each state stays, so you can watch it in the browser above


def echo_in_browser():
    """The echo row as the browser above draws it now."""
    row = next(e for e in browser.entries() if e.agent == "echo")
    return f"{row.status} (source {row.status_source})"


watched = []
for step, status in ((echo.crash, "offline"), (echo.start, "online")):
    redraws = browser.updates
    print(f"echo.{step.__name__}() ...", flush=True)
    step()
    disco.wait_for("echo", status=status)
    time.sleep(HOLD_S)
    watched.append(echo_in_browser())
    print(f"  the browser above shows echo {watched[-1]}, redrawn: {browser.updates > redraws}", flush=True)

as_described(said("turn offline (source lwt) and back online", watched,
                  ["offline (source lwt)", "online (source agent)"]))

# %% [markdown]
# ## Step 9. Your turn
#
# A second desk with the same skill, the backup desk, has just crashed: its card stays on the broker,
# offline. Run this cell to make it so (the browser above shows it too):

# %%
backup = Responder("backup-desk", lambda ctx: "the backup desk is closed", card=cards.agent_card(
    name="Backup ticket desk", description="Takes tickets when the main desk cannot.",
    version="1.0.0", org="acme", unit="support", agent="backup-desk",
    skills=desk_card["skills"], streaming=True))
backup.crash()
disco.wait_for("backup-desk", status="offline")
print("backup-desk:", presence("backup-desk"))

# %% [markdown]
# **Exercise 1.** The coordinator needs an agent for ticket TCK-4821 now: a skill tagged
# `root-cause-analysis`, and online. Ask the discovery with `disco.find(...)` and pass what it
# returns to the check.

# %%
from a2a_nb.notebook.exercises import lesson01

usable_now = ...   # your answer: disco.find(...) with the right arguments
lesson01.online_with_tag(usable_now, disco, "root-cause-analysis")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
usable_now = disco.find(tags=["root-cause-analysis"], online_only=True)
reference(lesson01.online_with_tag(usable_now, disco, "root-cause-analysis"))

# %% [markdown]
# **Exercise 2.** Which `a2a-status-source` does the backup desk's card carry now? Read it from the
# discovery (not from this page), and think about who published that card.

# %%
source = ...   # your answer: the backup desk's a2a-status-source, as the discovery holds it
lesson01.crashed_source(source, disco, "backup-desk")

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
source = disco.get("backup-desk").status_source
reference(lesson01.crashed_source(source, disco, "backup-desk"))


# %% [markdown]
# ## Step 10. Clean up, when you are done with the browser
#
# The browser needs the agents and the discovery, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done (the browser then stops changing), or shut the
# kernel down (*Kernel ▸ Shut Down Kernel*): a broker that outlives the kernel then marks the agents
# offline by their last will (the kit's own Mosquitto stops with the kernel). A graceful `stop()`
# leaves each card on the broker marked `offline` (source `agent`); the backup desk's card stays
# offline too (source `lwt`), as any card of a crashed agent does.

# %%
def clean_up():
    """Stop the agents, close the discovery and every MQTT session of this notebook."""
    desk.stop()
    echo.stop()
    disco.close()
    print(f"closed {a2a_nb.stop_all()} more MQTT session(s)")


print("the agents keep running for the browser above: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - An agent's Agent Card is a **retained** message on `$a2a/v1/discovery/{org}/{unit}/{agent}`;
#   subscribers get every current card at once.
# - The coordinator selects by **skill tags**, **capabilities** and **security requirements**
#   (`Discovery.find`, `cards.card_matches`), not by name.
# - `card_schema.card_problems` explains what is wrong with a card; `cards.agent_card` refuses to build one.
# - Presence rides on the card: `a2a-status` plus `a2a-status-source` (`agent` or `lwt`); the broker's
#   last will marks a crashed agent offline.
# - `Discovery.wait_for` waits for a card with a status, and says what it saw when it gives up.
#
# ## What's next
# [02 · Send and track](02-send-and-track.ipynb): the coordinator sends ticket TCK-4821 to the desk it
# found and follows the task to the end.
