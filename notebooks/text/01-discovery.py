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
# tickets. Over MQTT every agent publishes its **Agent Card** as a *retained* message on its
# discovery topic; a new subscriber gets all current cards at once. The coordinator chooses by what
# the card says (skills and their tags, capabilities, security), never by the agent's name.
#
# ## What you will learn
# - what a retained Agent Card looks like on the broker (topic, user properties, JSON);
# - the three checks of the walkthrough: skills and tags, capabilities, security schemes;
# - selecting agents by skill tag with `Discovery.find`;
# - checking a card for mistakes with `protocol.cards.check_card`;
# - presence: `a2a-status` online/offline, set by the agent or by the broker's last will;
# - a live table of all cards (pandas, and a small widget).
#
# ## Time needed
# About 15 minutes. The notebook runs in a few seconds.
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
# start. `seed=` makes every id they draw the same on every run.

# %%
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

# %% [markdown]
# The payload is an A2A v1.0 `AgentCard`. Its only interface is MQTT: `supportedInterfaces[0].url`
# is the desk's request topic, where requests must be published.

# %%
desk_card = card_message.json()
print(json.dumps(desk_card, indent=2))

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
# `pushNotifications`.

# %%
pd.DataFrame({agent: disco.get(agent).card["capabilities"] for agent in ("ticket-desk", "echo")})

# %% [markdown]
# **Security schemes.** Neither agent of this lesson asks for credentials:

# %%
for agent in ("ticket-desk", "echo"):
    card = disco.get(agent).card
    print(f"{agent}: securitySchemes {card.get('securitySchemes', 'none')}, "
          f"securityRequirements {card.get('securityRequirements', 'none')}")

# %% [markdown]
# A desk that does would declare a scheme and a requirement naming it. Here is such a card, built
# with the same builders (and not published). Over MQTT a bearer token travels in the user property
# `a2a-authorization`. `cards.card_matches` is the selection rule `Discovery.find` uses: with the
# scheme names you hold, is at least one requirement satisfied?

# %%
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


# %% [markdown]
# ## Step 4. Select by skill tag
#
# The walkthrough's three checks in one call: a skill with all the tags, the capabilities, and
# (optionally) security requirements the requester can meet; `online_only` skips agents whose
# presence says offline.

# %%
def names(entries):
    return sorted(e.agent for e in entries)

print("root-cause-analysis + streaming, online:",
      names(disco.find(tags=["root-cause-analysis"], capabilities=["streaming"], online_only=True)))
print("tag 'echo':                             ", names(disco.find(tags=["echo"])))
print("tags 'ticket' AND 'echo' on one skill:  ", names(disco.find(tags=["ticket", "echo"])))
print("holding only a bearer token:            ", names(disco.find(tags=["ticket"], schemes=["bearer"])))

# %% [markdown]
# The last line finds the desk: a card without security requirements suits every caller.
#
# ## Step 5. Check a card
#
# `cards.check_card` lists what is wrong with a card in words a person can act on (`agent_card`
# refuses to build a card with problems, so a broken card never leaves your cell). Here is the echo
# card with five mistakes, including a field from A2A v0.3 that v1.0 moved:

# %%
broken = json.loads(json.dumps(disco.get("echo").card))   # a deep copy
del broken["version"]
broken["url"] = "mqtt://broker.example:1883"
broken["capabilities"]["streaming"] = "yes"
broken["skills"][0]["tags"] = []
broken["securityRequirements"] = [cards.requirement("oauth", ["tickets.read"])]

for problem in cards.check_card(broken):
    print("-", problem)
print("the published echo card:", cards.check_card(disco.get("echo").card) or "no problems")


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

# %% [markdown]
# The discovery kept every change it saw for the echo card, in order:

# %%
[(status, source) for _, status, source in disco.get("echo").history]

# %% [markdown]
# Presence is advisory: an `offline` card stays on the broker (retained) so a requester can tell
# "known but down" from "unknown". Only an empty retained message removes a card (`unregister()`).
#
# ## Step 7. All cards as a table
#
# `Discovery.table()` gives one row per card, ready for pandas. On a broker shared with other
# programs (or the test suite) you may see more agents in `acme/support`; this lesson shows its own
# two.

# %%
table = pd.DataFrame(disco.table())
table[table["agent"].isin(["ticket-desk", "echo"])].reset_index(drop=True)

# %% [markdown]
# ## Step 8. A live discovery browser
#
# The same table as a widget that follows the broker: type a skill tag in the box (every tag you
# type must be on one skill), and the table changes as agents come and go. Its output is live, so the
# stored notebook shows a snapshot.

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook import discovery_browser

browser = discovery_browser(disco)
browser

# %% [markdown]
# Try it: run the next cell and watch the echo row turn offline (source `lwt`) and back online.

# %% tags=["nbval-ignore-output"]
echo.crash()
disco.wait_for("echo", status="offline")
echo.start()
_ = disco.wait_for("echo", status="online")

# %% [markdown]
# ## Step 9. Clean up
#
# A graceful `stop()` leaves each card on the broker marked `offline` (source `agent`). The
# browser above stays open: its filter still works on the cards it has seen.

# %%
desk.stop()
echo.stop()
disco.close()
print(f"closed {a2a_nb.stop_all()} MQTT session(s) left open")

# %% [markdown]
# ## Summary
# - An agent's Agent Card is a **retained** message on `$a2a/v1/discovery/{org}/{unit}/{agent}`;
#   subscribers get every current card at once.
# - The coordinator selects by **skill tags**, **capabilities** and **security requirements**
#   (`Discovery.find`, `cards.card_matches`), not by name.
# - `cards.check_card` explains what is wrong with a card; `cards.agent_card` refuses to build one.
# - Presence rides on the card: `a2a-status` plus `a2a-status-source` (`agent` or `lwt`); the broker's
#   last will marks a crashed agent offline.
#
# ## What's next
# [02 · Send and track](02-send-and-track.ipynb): the coordinator sends ticket TCK-4821 to the desk it
# found and follows the task to the end.
