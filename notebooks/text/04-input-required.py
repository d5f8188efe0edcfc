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
# # 04 · Input required: the analyst asks, the coordinator answers
#
# The walkthrough's scenario pauses once: to confirm the root cause of TCK-4821 the analyst needs
# the **reproduction steps**, and the ticket does not have them. The task moves to
# `INPUT_REQUIRED`. This lesson follows that pause on the wire: the stream that ends without the
# task ending, the answer sent on the same task, and then a second task in the same conversation.
#
# ## What you will learn
# - `INPUT_REQUIRED` is **stream-final but not terminal**: the stream for that
#   [Correlation Data](glossary.md#Correlation-Data) ends, the task waits;
# - what the requester drops (the in-flight Correlation Data) and what it keeps (Task.id, contextId,
#   route);
# - continuing the task: a **new messageId**, the **same Task.id and contextId**, **fresh Correlation
#   Data**, shown side by side as they crossed the broker;
# - the task's history after the pause;
# - a new turn in the same conversation: **new Task.id, same contextId**; `ListTasks` by context;
# - what an agent answers when you write to a finished task, or mix up contexts, and how to tell
#   A2A's error [-32004](glossary.md#Error-codes) from the profile's error with the same number;
# - continuing a waiting task yourself (the exercises at the end).
#
# ## Time needed
# About 20 minutes. Run All takes about 2 seconds.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb) (identifiers, [task states](glossary.md#Task-states)) and
#   [03 · Streaming and artifacts](03-streaming-and-artifacts.ipynb) (stream events, the report).

# %% [markdown]
# ## Step 1. The agents, and a tap on the request topics
#
# The desk works without [handover](glossary.md#Handover) again (`handover="none"`). Next to the
# coordinator we start a **tap** (`RequestTap`; its code is short, in `a2a_nb/notebook/tap.py`): a plain
# MQTT session subscribed to every request topic of `acme/support`, so we can look at what the
# coordinator really published. It is an ordinary subscriber; the agents do not know it is there (a
# filter starting with `$a2a/` is needed: `#` alone would not match `$` topics).

# %%
import time

import pandas as pd

import a2a_nb
from a2a_nb import A2AError, RequestTap, Requester, TicketDesk
from a2a_nb.protocol import MqttMessage, encode_json, errors, jsonrpc, messages, states
from a2a_nb.story.scenarios import CONTEXT_ID, REPRO_TEXT, TICKET_TEXT

pd.set_option("display.max_colwidth", None)   # show every cell whole, never cut with "..."
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
desk = TicketDesk(handover="none", seed=4821)
coordinator = Requester("coordinator", seed=4821)

tap = RequestTap("acme", "support", "lesson-04-tap")   # tap.take(): the requests seen since the last call
print(tap.client_id, "listens on", tap.filter)

# %% [markdown]
# ## Step 2. The ticket without reproduction steps
#
# The first message names the ticket and nothing else. The coordinator streams it to the desk:

# %%
first = coordinator.new_message(TICKET_TEXT, context_id=CONTEXT_ID, message_id="coord-tck4821-m-1")
stream = coordinator.stream("ticket-desk", message=first)
for event in stream:
    print(event)
print()
print("the analyst asks:", stream.view.status_text)

# %% [markdown]
# The stream is over, but the task is not:

# %%
state = stream.state
print("task state:       ", states.short_name(state))
print("stream ended:     ", stream.done, "(states.ends_stream:", states.ends_stream(state), ")")
print("task is terminal: ", states.is_terminal(state))
print("task is waiting:  ", states.is_interrupted(state))

# %% [markdown]
# ## Step 3. What the coordinator drops and what it keeps
#
# The profile is precise (Streaming Reply Mapping 7): at `input-required` the requester **cleans up
# the in-flight state for that Correlation Data**. The next message on this task will be a new
# request with new Correlation Data; anything still arriving with the old one is a protocol error
# and is ignored. Let us check it: the tap publishes a fake late reply with the old Correlation Data
# to the coordinator's reply topic.

# %%
old_correlation = stream.events[0].mqtt.correlation_data
late = jsonrpc.result_response("late", messages.stream_status(
    messages.status_update(stream.task_id, CONTEXT_ID, messages.task_status(states.WORKING))))

before = coordinator.stats.ignored_unknown_correlation
tap.session.publish(MqttMessage(coordinator.reply_topic, encode_json(late), correlation_data=old_correlation))
for _ in range(100):                      # wait (at most 1 s) for the coordinator to see it
    if coordinator.stats.ignored_unknown_correlation > before:
        break
    time.sleep(0.01)
print("late item ignored:", coordinator.stats.ignored_unknown_correlation - before == 1)

from a2a_nb import as_described, said

as_described(
    said("at input-required the requester cleans up the in-flight state", states.short_name(stream.state),
         "input-required"),
    said("anything still arriving with the old one is a protocol error and is ignored",
         coordinator.stats.ignored_unknown_correlation - before, 1),
)

# %% [markdown]
# What it keeps is everything it needs to continue: the task's identity and where to send it (the
# task's entry in its [routing table](glossary.md#Routing-table)).

# %%
print("Task.id:   ", stream.task_id)
print("contextId: ", stream.view.context_id)
print("route:     ", coordinator.routing.target(stream.task_id))

# %% [markdown]
# ## Step 4. The answer: same task, new message, new correlation
#
# The coordinator asks the user and sends the answer with `continue_task`. It makes a new message
# (new `messageId`: this is new input, not a resend) for the same `Task.id` and `contextId`, and
# publishes it as a new request (new Correlation Data) to whoever answers for the task now.

# %%
answer = coordinator.continue_task(stream, REPRO_TEXT, stream=True, message_id="coord-tck4821-m-2")
for event in answer:
    print(event)

# %% [markdown]
# Both requests, as the tap saw them on the broker:

# %%
m1, m2 = tap.take()
side = pd.DataFrame({"first message (m1)": m1, "the answer (m2)": m2})
side["same?"] = [m1[key] == m2[key] for key in side.index]
side

# %% [markdown]
# Each identifier lives as long as one thing: the **Correlation Data** one request/reply exchange,
# the **messageId** one message, the **Task.id** the task's whole life, the **contextId** the
# conversation (many tasks). Exactly two changed: the messageId (new input) and the Correlation Data
# (a new exchange). That is the rule for continuing an interrupted task (Multi-Turn Conversation
# Patterns, pattern 3).

# %%
as_described(said("Exactly two changed: the messageId (new input) and the Correlation Data",
                  list(side.index[~side["same?"]]), ["messageId", "Correlation Data"]))

# %% [markdown]
# ## Step 5. The task completes
#
# The second stream went from `working` to `completed`, with the report in between:

# %%
print("state:      ", states.short_name(answer.state))
print("artifacts:  ", [a["artifactId"] for a in answer.view.artifacts.as_list()])
print("conclusion: ", answer.view.status_text[:120] + "…")

as_described(said("The second stream went from working to completed",
                  (states.short_name(answer.events[0].state), states.short_name(answer.events[-1].state)),
                  ("working", "completed")))

# %% [markdown]
# The task's history keeps the whole exchange, in order: the coordinator's two messages and every
# message the agent attached to a status (its progress notes, its question and its conclusion).

# %%
task = coordinator.get_task(stream.task_id)
history = pd.DataFrame([
    {"role": m["role"], "messageId": m["messageId"], "text": messages.text_of(m)[:80]}
    for m in task["history"]
])
as_described(said("the coordinator's two messages", list(history[history["role"] == "ROLE_USER"]["messageId"]),
                  ["coord-tck4821-m-1", "coord-tck4821-m-2"]))
history

# %% [markdown]
# ## Step 6. A new turn in the same conversation
#
# A week later the user asks about the same ticket again. A finished task never changes, so this
# is a **new task** (new Task.id) in the **same context** (`ctx-tck4821`): the agent may use the
# context's history, and everything about the ticket stays together.

# %%
recheck = coordinator.stream(
    "ticket-desk",
    "Re-check TCK-4821 after the cache fix was deployed\n" + REPRO_TEXT,
    context_id=CONTEXT_ID, message_id="coord-tck4821-m-3")
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

# %% [markdown]
# The context groups them: `ListTasks` with the contextId returns both tasks from the agent.

# %%
listed = coordinator.list_tasks("ticket-desk", context_id=CONTEXT_ID)
pd.DataFrame([
    {"Task.id": t["id"], "contextId": t["contextId"], "state": states.short_name(t["status"]["state"])}
    for t in listed["tasks"]
])

# %% [markdown]
# ## Step 7. What the agent refuses
#
# The agent turns some mistakes into JSON-RPC errors on the reply path. The first: writing to a
# **finished** task. A terminal task cannot restart (start a new one in the same context instead), so
# the agent answers with error [-32004](glossary.md#Error-codes).
#
# Look twice at that number. Lesson 00 met -32004 as `responder_unavailable`: the profile's transport
# error, "busy, retry later". The profile reuses three of A2A's error numbers for its own errors and
# marks each of those with `a2a_error` in `error.data`; without that marker, -32004 is A2A's own
# *UnsupportedOperation*, and retrying the same message will never help. The cell prints which one
# this is:

# %%
try:
    coordinator.continue_task(stream, "one more thing about TCK-4821", message_id="coord-tck4821-m-4")
except A2AError as err:
    refused = err
kind = errors.classify(refused)
print(f"error {refused.code}: {refused.message}")
print("error.data:                     ", refused.data)
print("a2a_error marker in error.data: ", isinstance(refused.data, dict) and "a2a_error" in refused.data)
print("so it means:                    ", kind.name, "| retry later?", kind.retry_eligible)

# %%
as_described(
    said("the agent answers with error -32004", refused.code, -32004),
    said("without that marker, -32004 is A2A's own UnsupportedOperation",
         (isinstance(refused.data, dict) and "a2a_error" in refused.data, kind.name), (False, "UnsupportedOperation")),
    said("retrying the same message will never help", kind.retry_eligible, False),
    said("The profile reuses three of A2A's error numbers", sorted(errors.BINDING_NAMES), [-32005, -32004, -32003]),
)

# %% [markdown]
# Its `error.data` is A2A's own detail instead: an `ErrorInfo` whose `reason` names the error. The
# second mistake: a message that names a task with a **different contextId** than the one the task
# was created in. That is error `-32602` (invalid params), as the profile demands (Context Identifier
# Semantics 6).

# %%
mixed_up = coordinator.new_message("about TCK-4821", task_id=recheck.task_id, context_id="ctx-tck9999",
                                   message_id="coord-tck4821-m-5")
try:
    coordinator.send(None, message=mixed_up)
except A2AError as err:
    mixed_error = err
print(f"error {mixed_error.code} ({errors.classify(mixed_error).name}): {mixed_error.message}")

as_described(
    said("an ErrorInfo whose reason names the error", refused.data[0]["reason"], "UNSUPPORTED_OPERATION"),
    said("That is error -32602 (invalid params)", (mixed_error.code, errors.classify(mixed_error).name),
         (-32602, "InvalidParams")),
)

# %% [markdown]
# ## Step 8. Your turn
#
# **Exercise 1: continue the task.** The cell below starts one more turn of the ticket (a new task in
# the same context, without the reproduction steps): the analyst asks for them, and the stream
# `question` ends at input-required. Replace the `...` with the message that answers it: built with
# `coordinator.new_message(...)`, with the identifiers step 4 says a continuation needs. The check
# looks at its identifiers, then sends it and reports how the task ends. (Each run of the cell starts
# a fresh task.)

# %%
from a2a_nb.notebook.exercises import lesson04

question = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
question.wait()
continuation = ...   # your answer: coordinator.new_message(REPRO_TEXT, ...) for question's task
lesson04.continues_the_task(continuation, question, coordinator)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
question = coordinator.stream("ticket-desk", TICKET_TEXT, context_id=CONTEXT_ID)
question.wait()
continuation = coordinator.new_message(REPRO_TEXT, task_id=question.task_id, context_id=question.view.context_id,
                                       message_id="coord-tck4821-m-7")
reference(lesson04.continues_the_task(continuation, question, coordinator))

# %% [markdown]
# **Exercise 2: which -32004?** The re-check of step 6 (`recheck`) has finished too. What does the
# agent answer to one more message on it? Give the error's code, and `True` if it is the profile's
# transport error (the `a2a_error` marker is in `error.data`) or `False` if it is A2A's own error.
# The check sends such a message and compares.

# %%
code = ...             # your answer: the error code, an int
profile_error = ...    # your answer: True or False
lesson04.finished_task_error(code, profile_error, recheck, coordinator)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
code = refused.code
profile_error = errors.classify(refused).binding
reference(lesson04.finished_task_error(code, profile_error, recheck, coordinator))


# %% [markdown]
# ## Step 9. Clean up, when you are done
#
# The exercises need the desk and the coordinator, so *Run All* leaves them running: this cell only
# defines `clean_up()`. Call it when you are done.

# %%
def clean_up():
    """Stop the desk and close this notebook's MQTT sessions."""
    tap.close()
    desk.stop()
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running for the exercises: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - `INPUT_REQUIRED` (and `AUTH_REQUIRED`) ends the stream for its Correlation Data, but the task
#   waits; the requester forgets the correlation, keeps Task.id, contextId and route.
# - Continuing a task: `continue_task` sends a **new messageId** with the **same Task.id and
#   contextId**, as a new request with **fresh Correlation Data**.
# - The task's history records both user messages and the agent's notes, question and conclusion.
# - A new turn in a conversation is a **new task in the same context**; `ListTasks` finds a
#   context's tasks.
# - A terminal task refuses new messages with `-32004` *UnsupportedOperation*: A2A's error, no
#   `a2a_error` marker, not worth a retry (the marked `-32004` is the profile's `responder_unavailable`);
#   a contextId that does not match the task's is `-32602`.
#
# ## What's next
# [05 · Handover](05-handover.ipynb): the desk hands the ticket to an analyst instance of its own,
# and the coordinator's routing table follows it (user story 07).
