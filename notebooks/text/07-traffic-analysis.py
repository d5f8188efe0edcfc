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
# # 07 · Traffic analysis: replay what crossed the broker
#
# Every lesson so far ran live agents. This one needs no broker at all: it replays
# **recordings** of the story. While the coordinator worked on ticket TCK-4821, a `Recorder`
# subscribed to `$a2a/#` wrote every MQTT message that crossed the broker, with all its v5
# properties, as one JSON line. `full.jsonl` holds the six scenarios of the story one after the
# other: **happy** (the desk hands the ticket to an analyst at once), **handover** (an analyst
# takes over mid-stream), **no-handover**, **multi-handover** (two handovers in one stream),
# **handover-unreachable** (the analyst dies: retries, then fallback to the desk) and **pool**
# (three analysts behind one pool topic).
#
# pandas, the charts, the conformance checks and the step-through player all read the same
# records, so what you see here is exactly what crossed the broker.
#
# ## What you will learn
# - what a recording holds, and how `load_traffic` turns it into a DataFrame with the A2A
#   fields pulled out (method, Task.id, state, who sent what to whom, latency);
# - following every task through its states with `state_transitions`;
# - finding every reroute (handover, pool assignment, fallback) with `routing_view` and
#   `handovers`;
# - latency by method with `latency_view`;
# - four charts and a Mermaid sequence diagram of one conversation;
# - checking traffic against the profile with `check_traffic`, and what a broken recording
#   looks like;
# - stepping through a conversation message by message with the player.
#
# ## Time needed
# About 25 minutes. The notebook runs in a few seconds and needs no broker.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb): requests and replies matched by Correlation
#   Data, task states, the `a2a-responder-agent-id` handover.
# - pandas basics: selecting columns, filtering rows, `groupby`.

# %% [markdown]
# ## Step 1. Open a recording
#
# The recordings live in `data/recordings/` (one file per scenario, and `full.jsonl` with all
# of them); `make recordings` makes them again against a fresh Mosquitto. Each line is one
# MQTT PUBLISH as the recorder received it (`a2a_nb/traffic/FORMAT.md` describes every key).
# Here is the first request of the story, the coordinator's `SendStreamingMessage` to the
# ticket desk:

# %%
# %matplotlib inline
import copy
import json
from pathlib import Path

import pandas as pd
from IPython.display import display

import a2a_nb
from a2a_nb.story.scenarios import SCENARIOS
from a2a_nb.traffic import (check_traffic, handovers, latency_chart, latency_view, load_traffic,
                            mermaid_sequence, read_records, reroute_chart, routing_view, sequence_chart,
                            show_mermaid, state_timeline, state_transitions)
from a2a_nb.traffic.frame import SUMMARY_COLUMNS, short_state
from a2a_nb.traffic.lint import RULES, format_findings, summary

pd.set_option("display.max_rows", 40)
pd.set_option("display.max_colwidth", 100)

RECORDINGS = Path("../data/recordings")
records = read_records(RECORDINGS / "full.jsonl")
print(f"full.jsonl: {len(records)} messages")
print(json.dumps(records[1], indent=2))

# %% [markdown]
# Everything the binding adds is there: the **topic** (the desk's request topic), **QoS 1**,
# the **Response Topic** (the coordinator's reply topic), the **Correlation Data** (hex),
# the **Message Expiry Interval**; and the JSON-RPC payload is pure A2A. Retained Agent Cards
# are recorded too, with their `a2a-status` user property.
#
# ## Step 2. One row per message
#
# `load_traffic` reads the file into a DataFrame, one row per message, and names what each
# message is: its topic **kind** (discovery, request, pool, reply, event), the A2A **method**,
# the **Task.id**, the **state** or stream **event** a reply carries, who sent it to whom, and
# for a reply the row of its request (joined by Correlation Data) and the **latency** since
# that request. The story has one task per scenario, in the order of `SCENARIOS`, so we can
# name each task after its scenario.

# %%
df = load_traffic(RECORDINGS / "full.jsonl")
TASKS = dict(zip(df["task_id"].dropna().unique(), SCENARIOS))   # Task.id -> scenario
print(f"{len(df)} messages over {df['dt'].max():.1f} s, {len(df.columns)} columns")
print("tasks:", ", ".join(f"{task[:8]}… = {name}" for task, name in TASKS.items()))
df["kind"].value_counts()


# %% [markdown]
# Replies outnumber requests: a streaming request gets one reply per stream item. The ten
# discovery messages are the desk's retained card (online when a scenario starts, offline when
# it ends). The six `event` messages come from the pool scenario: each of its three analysts
# announces its presence, retained, on its own event topic when it joins the pool (`online`)
# and when it stops (`offline`). This Mosquitto does not deliver shared subscriptions on
# `$a2a/...` topics, so the members all read the plain pool topic, follow each other's presence,
# and each claims the requests it wins among the live members.
#
# The summary columns of the happy scenario (its first 17 messages; times and latencies in
# milliseconds, Task.ids cut to 8 characters):

# %%
def summary_table(frame):
    table = frame[list(SUMMARY_COLUMNS)].copy()
    table["dt"] = (table["dt"] * 1000).round(1)
    table["latency_s"] = (table["latency_s"] * 1000).round(1)
    table["task_id"] = table["task_id"].str[:8]
    table["state"] = table["state"].map(short_state)
    return table.rename(columns={"dt": "dt_ms", "latency_s": "latency_ms"})

summary_table(df.iloc[:17])

# %% [markdown]
# Read it top to bottom: the desk's card (retained), the request, the desk's first answer (a
# Task, submitted), then replies from `analyst-0bbfd2` that carry `responder_agent_id`: the
# handover. The next request goes straight to the analyst.
#
# Which stream events did each scenario produce? `event` says what a reply carries: a `task`
# snapshot, a `status` update, an `artifact` chunk.

# %%
replies = df[df["kind"] == "reply"]
pd.crosstab(replies["task_id"].map(TASKS), replies["event"]).reindex(list(SCENARIOS))

# %% [markdown]
# ## Step 3. Every task through its states
#
# `state_transitions` keeps, per task, every *change* of state (a Task snapshot repeating the
# state a status update just announced is not a change). One line per scenario:

# %%
tr = state_transitions(df)
for task, states in tr.groupby("task_id", sort=False)["short"]:
    print(f"{TASKS[task]:21s} {' → '.join(states)}")

# %% [markdown]
# Every task but one pauses at **input-required** (the analyst asks for the reproduction steps)
# and resumes **working** when the coordinator answers on the same task. In *multi-handover*
# the coordinator sends the steps with the ticket, so the task never waits. Each step in
# detail, for the happy scenario (who announced the state, and in which kind of reply):

# %%
happy_task = next(task for task, name in TASKS.items() if name == "happy")
steps = tr[tr["task_id"] == happy_task].copy()
steps["previous"] = steps["previous"].map(short_state)
steps["dt_ms"] = (steps["dt"] * 1000).round(1)
steps[["i", "dt_ms", "previous", "short", "from_agent", "event"]]

# %% [markdown]
# ## Step 4. Every reroute
#
# `routing_view` lists every operation on a task (each request that names a Task.id): where
# it went (`target`), who answered first, and whether it went somewhere new (`reroute`), with
# the cause:
#
# - **handover**: a reply carried `a2a-responder-agent-id`, so follow-ups go to that agent;
# - **pool-assigned**: the first request went to the pool topic; the member that answered
#   owns the task from then on;
# - **fallback**: the new agent went silent, so the coordinator went back to the card agent.

# %%
rv = routing_view(df)
rv.insert(0, "scenario", rv["task_id"].map(TASKS))
rv["dt_ms"] = (rv["dt"] * 1000).round(1)
rv[["scenario", "i", "dt_ms", "method", "target", "responder", "answered", "reroute", "cause"]]

# %% [markdown]
# Only the reroutes:

# %%
rv.loc[rv["reroute"], ["scenario", "i", "method", "target", "cause"]]

# %% [markdown]
# *handover-unreachable* shows the whole retry story: the analyst dies after asking for input,
# the coordinator's answer goes to it three times (`answered` is False: new Correlation Data
# each time, no reply), then falls back to `ticket-desk`, which answers.
#
# `handovers` looks at the other side: the replies whose `a2a-responder-agent-id` differs from
# the agent their request addressed. Here the first reply that named each new responder:

# %%
hv = handovers(df)
hv.insert(0, "scenario", hv["task_id"].map(TASKS))
hv.drop_duplicates(["task_id", "responder"])[["scenario", "i", "addressed", "responder", "cause"]]

# %% [markdown]
# *multi-handover* names two responders in one stream (`analyst-2d42aa`, then
# `analyst-2adcb4`): the latest one wins, which is why `routing_view` shows a single reroute,
# for the `GetTask` that followed the stream. In *handover* the desk streamed a status update
# itself before the analyst took over, mid-stream.
#
# ## Step 5. Latency by method
#
# `latency_view` has one row per request: the time to its first reply (NaN when none came) and
# how many replies came back on its Correlation Data. A streaming request gets many replies;
# its latency is the time to the first one.

# %%
lat = latency_view(df)
lat["latency_ms"] = lat["latency_s"] * 1000
lat.groupby("method").agg(requests=("i", "size"), answered=("replies", lambda r: int((r > 0).sum())),
                          replies=("replies", "sum"), median_ms=("latency_ms", "median"),
                          max_ms=("latency_ms", "max")).round(2)

# %%
print("never answered:")
print(lat.loc[lat["replies"] == 0, ["i", "method", "target"]].to_string(index=False))

# %% [markdown]
# The three unanswered requests are the retries to the analyst that died. Everything else got
# its first reply within a few milliseconds: a responder acknowledges a request at once (a Task
# snapshot), and the analyst's pace (50 ms between steps) shows in the later stream items, not
# in the latency.
#
# ## Step 6. Four charts
#
# Each chart is one call on the DataFrame and returns a matplotlib figure 10 inches wide
# (`display` shows it). First, the **sequence chart** of the happy scenario: one lane per
# agent, one arrow per message in recorded order; a star marks a reply that named a new
# responder.

# %%
happy = load_traffic(RECORDINGS / "happy.jsonl")
display(sequence_chart(happy, title="The happy scenario: who sent what to whom"))

# %% [markdown]
# The **state timeline**: per task (a row, named by its scenario), the states it passed
# through, step by step: the x axis counts the task's messages, so `submitted`, acknowledged a
# millisecond after the request, is as wide as any other state. Hatched segments are
# interrupted states (the task waits for the coordinator): five of the six tasks pause at
# `input-required`. A black-edged square is a terminal state. On each row: where the task was
# first sent (dot, below), every reply naming a new responder (star, with the agent), the
# fallback to the card agent (diamond) and the requests that got no reply (hollow circles).
# `x="time"` draws the same states against seconds.

# %%
display(state_timeline(df, names=TASKS))

# %% [markdown]
# The **reroute chart**: one panel per task, one row per agent it met, one marker per hop in
# order: an operation the coordinator sent (hollow: no reply) or a reply that named a new
# responder (star; the multi-handover task shows both of its handovers). Under each hop: its
# method and, in bold, the cause of the reroute.

# %%
display(reroute_chart(df, names=TASKS))

# %% [markdown]
# The **latency chart**: time to the first reply by method, a box per method and every request
# as a dot.

# %%
display(latency_chart(df))

# %% [markdown]
# ## Step 7. A sequence diagram as text
#
# `mermaid_sequence` writes the same conversation as a Mermaid `sequenceDiagram`: JupyterLab
# 4.1+ and GitHub draw it, and it is plain text you can paste into documentation or compare in
# a test.

# %%
show_mermaid(mermaid_sequence(happy))

# %% [markdown]
# ## Step 8. Check the traffic against the profile
#
# `check_traffic` reads the same DataFrame and reports every MUST and SHOULD of the A2A over
# MQTT profile that the traffic breaks (payloads are also checked against the official A2A
# v1.0 types of `a2a-sdk`). These are its rules:

# %%
pd.DataFrame([{"rule": r.id, "level": r.level, "section": r.section} for r in RULES.values()])

# %%
findings = check_traffic(df)
print(format_findings(findings))
print(summary(findings, len(df), "full.jsonl"))
for name in SCENARIOS:
    path = RECORDINGS / f"{name}.jsonl"
    one = load_traffic(path)
    print(summary(check_traffic(one), len(one), path.name))

# %% [markdown]
# The same checks run from a terminal: `python -m a2a_nb lint data/recordings/full.jsonl`
# (exit status 1 on a MUST violation, handy in CI).
#
# ## Step 9. A broken copy
#
# What does a mistake look like? We copy the happy recording and break three things a careless
# implementation gets wrong:
#
# 1. the analyst's input-required reply loses its **Correlation Data** (the coordinator could
#    not match it to its request);
# 2. the final `GetTask` **reuses the Correlation Data** of the first request (and its reply
#    echoes it), so two requests share one correlation;
# 3. the coordinator's answer goes to the **ticket desk** instead of the analyst that took
#    over (it ignored `a2a-responder-agent-id`).

# %%
happy_records = read_records(RECORDINGS / "happy.jsonl")
broken = copy.deepcopy(happy_records)
first_request = int(happy.loc[happy["kind"] == "request", "i"].iloc[0])
asks_input = int(happy.loc[happy["state"] == "TASK_STATE_INPUT_REQUIRED", "i"].iloc[0])
answer = int(happy.loc[(happy["kind"] == "request") & (happy["i"] > asks_input), "i"].iloc[0])
get_task = int(happy.loc[happy["method"] == "GetTask", "i"].iloc[0])   # the request; its reply follows

broken[asks_input]["correlation"] = None                                     # 1
for row in (get_task, get_task + 1):                                         # 2
    broken[row]["correlation"] = happy_records[first_request]["correlation"]
broken[answer]["topic"] = happy_records[first_request]["topic"]             # 3
print(f"#{asks_input}: Correlation Data removed")
print(f"#{get_task}, #{get_task + 1}: Correlation Data of #{first_request} reused")
print(f"#{answer}: sent to {broken[answer]['topic']}")

# %%
bad = check_traffic(load_traffic(broken))
print(summary(bad, len(broken), "broken copy of happy.jsonl"))
bad[["i", "rule", "level", "section"]]

# %%
print(format_findings(bad))

# %% [markdown]
# Each finding names the row, the rule, the profile section, and what to change. Rows are the
# `i` column of the DataFrame, the same numbers the player below shows.
#
# ## Step 10. Step through a conversation
#
# The player replays a recording one message at a time: press ▶ (Play) or drag the slider. For
# the current message it shows who sent what to whom, what it changed (a handover, a reroute),
# the state of every task after it, its MQTT v5 properties next to its JSON payload, and the
# sequence chart with the message highlighted. (A live widget: the stored notebook shows a
# snapshot; without a running kernel you see a table of the first steps.)

# %% tags=["nbval-ignore-output"]
from a2a_nb.notebook.player import TrafficPlayer, step_text

player = TrafficPlayer(happy)
player

# %% [markdown]
# The player can be driven from code too: set `player.index`, and `player.text()` says what
# it shows in one line (`step_text(df, i)` does the same for any recording).

# %%
player.index = asks_input
print(player.text())
for i in (answer, answer + 1, get_task - 1):
    print(step_text(happy, i))

# %% [markdown]
# ## Step 11. Clean up
#
# Replaying opened no MQTT connection, so there is nothing to close; `stop_all()` says so.

# %%
print(f"closed {a2a_nb.stop_all()} MQTT session(s)")

# %% [markdown]
# ## Summary
# - A recording is one JSON line per MQTT PUBLISH with every v5 property (`Recorder`,
#   `python -m a2a_nb record`); `load_traffic` makes it a DataFrame with the A2A fields pulled
#   out, replies joined to their requests by Correlation Data.
# - `state_transitions` follows every task through its states; `routing_view` and `handovers`
#   show every reroute: handover, pool assignment, fallback after a silent agent.
# - `latency_view` measures each request to its first reply; unanswered requests stand out.
# - Four charts (`sequence_chart`, `state_timeline`, `reroute_chart`, `latency_chart`) and a
#   Mermaid diagram (`mermaid_sequence`) draw the same data.
# - `check_traffic` (and `python -m a2a_nb lint`) checks traffic against the profile's MUST
#   and SHOULD rules: a missing or reused Correlation Data and an ignored handover are MUST
#   violations.
#
# ## What's next
# Record your own traffic: run `python -m a2a_nb record --out my-run.jsonl` in a terminal (or
# `with Recorder(path="my-run.jsonl"):` in a cell) while you work through a lesson, then load
# it here instead of `full.jsonl`, and lint it. `python -m a2a_nb story --scenario full
# --record story.jsonl` replays the whole story live against your broker.
# [08 · Security](08-security.ipynb) locks the broker down (TLS, a password per agent, topic
# ACLs) and makes the desk demand a bearer token on every request. Back to
# [00 · Start here](00-start-here.ipynb) for the list of lessons.
