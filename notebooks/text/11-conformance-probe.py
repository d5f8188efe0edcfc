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
# # 11 · The conformance probe: does an agent keep the profile's rules?
#
# Lessons 01 to 07 followed the rules of the A2A-over-MQTT profile from the requester's side. This
# appendix turns round and asks an agent: the kit's **conformance probe** sends a live agent good and
# bad requests and reports, rule by rule, which ones it kept. It works on any agent that speaks the
# profile, written with this kit or not. You probe the story's ticket desk, then an agent that carries
# two habits over from HTTP A2A.
#
# ## What you will learn
# - what the probe sends (binary and text [Correlation Data](glossary.md#Correlation-Data), a resend,
#   GetTask and CancelTask, a stream, malformed JSON, a [Response Topic](glossary.md#Response-Topic)
#   outside `$a2a/v1/reply/`) and why some of its checks have to wait for silence;
# - how to read its report: one row per check, with the rule id, MUST or SHOULD, the profile section,
#   the verdict and a remark that says what to change;
# - the command line `python -m a2a_nb probe AGENT`, and its exit status for CI.
#
# ## Time needed
# About 10 minutes. Run All takes about 8 seconds: the probe waits on purpose where the right answer
# is silence, and prints its progress as it goes.
#
# ## Prerequisites
# - [02 · Send and track](02-send-and-track.ipynb): requests, replies and Correlation Data.
# - [07 · Traffic analysis](07-traffic-analysis.ipynb): the rule ids `lint` reports for a recording.

# %% [markdown]
# ## Step 1. The tools
#
# The probe is `run_probe`; the careless agent lives in `a2a_nb.probe.examples`.

# %%
import inspect
import logging

import pandas as pd

import a2a_nb
from a2a_nb import TicketDesk, as_described, run_probe, said
from a2a_nb.probe.examples import careless_agent
from a2a_nb.protocol import IdSource

pd.set_option("display.max_colwidth", 100)
pd.set_option("display.html.use_mathjax", False)  # a topic starts with $: a table shows it as text, not math
print("ready")

# %% [markdown]
# ## Step 2. Probe the story's desk
#
# The probe reads the agent's [retained](glossary.md#Retained-message) card, then sends it requests, good and bad (binary and text Correlation Data, a resend of the same
# message, GetTask and CancelTask, a stream, an answer after input-required, malformed JSON, a Task.id
# that is not a UUIDv4, a Response Topic outside `$a2a/v1/reply/` that would turn the agent's reply
# against its own card), asks
# after each bad one whether the agent still answers, and reports each rule it kept or broke, by rule
# id. It works on any agent that speaks the profile, written with this kit or not.
#
# First the story's ticket desk (and the analysts it hands tickets to), on the open broker of the other
# lessons. Its notes about the requests it drops are switched off here: the probe reports them itself.
#
# A probe takes seconds, so it prints a mark per check as soon as the check is done: `.` pass, `F`
# fail, `-` not applicable (as pytest does). Most checks take milliseconds. Where the right answer is
# silence, the probe has to wait its whole `timeout` before it can say so: no reply to a request
# without Correlation Data, none to a Response Topic outside `$a2a/v1/reply/`. Those waits, one
# second each, are most of this lesson's run time; watch the marks pause there.

# %%
MARKS = {"pass": ".", "fail": "F", "not-applicable": "-", "skipped": "s"}

def mark(row):
    print(MARKS[row.verdict], end="", flush=True)      # one mark per check, as the probe goes

logging.getLogger("a2a_nb.agents.responder").setLevel(logging.ERROR)
story_desk = TicketDesk(seed=4821)                 # the story's desk, on the open broker
print("probing ticket-desk: ", end="", flush=True)
desk_report = run_probe("ticket-desk", progress=mark)
print()
print("Core conformant:", desk_report.core_conformant, "| Extended features seen:", desk_report.features)
print("checks:", len(desk_report.rows), "|", pd.Series([r.verdict for r in desk_report.rows]).value_counts().to_dict())

# %%
verdicts = {r.check: r.verdict for r in desk_report.rows}
as_described(
    said("no reply to a request without Correlation Data", verdicts["no-reply-path"], "pass"),
    said("none to a Response Topic outside $a2a/v1/reply/", verdicts["reflected-response-topic"], "pass"),
    said("its whole timeout", inspect.signature(run_probe).parameters["timeout"].default, 1.0),
)

# %% [markdown]
# The report has one row per check: the rule id (the same name `lint` uses for a recording), MUST or
# SHOULD, the profile section, what was sent, what came back, the verdict and a remark. A few of them:

# %%
report = desk_report.frame()
shown = ["correlation-binary", "idempotent-resend", "multi-turn", "handover-responder-id", "reflected-response-topic"]
report.set_index("check").loc[shown, ["rule", "level", "section", "verdict"]]

# %% tags=["nbval-ignore-output"]
print(desk_report.summary())

# %% [markdown]
# ## Step 3. Probe a careless agent
#
# Now an agent that carries two habits over from HTTP A2A. It makes its **own Task.id** for every task,
# as an HTTP server does (over MQTT the requester makes it, so it can retry without creating a second
# task), and it reads **Correlation Data as text**: when a requester sends arbitrary bytes, as the
# profile allows, it cannot decode them and never answers. `careless_agent()` lives in
# `a2a_nb.probe.examples`; it is otherwise correct (it checks every request with the kit's own rules).

# %%
sloppy = careless_agent()
print("probing careless: ", end="", flush=True)
careless_report = run_probe("careless", progress=mark)
print()
print("Core conformant:", careless_report.core_conformant, "| exit status of `probe`:", careless_report.exit_code())
failed = careless_report.frame().query("verdict == 'fail'").set_index("check")
failed[["rule", "level", "section"]]

# %% [markdown]
# Read the report from the top: the first failure is usually the cause, the later ones its echoes. The
# Task.id it names is its own, so the resend looks like a new task and GetTask of the requester's
# Task.id finds nothing; binary Correlation Data gets no reply at all. The remarks say what to change:

# %%
for check in ("task-id-echo", "correlation-binary"):
    row = failed.loc[check]
    print(f"{check} ({row['rule']}, {row['level']}, {row['section']}):\n  {row['remark']}\n")

# %%
habits = {"its own Task.id": "task-id-echo", "Correlation Data as text": "correlation-binary"}
as_described(
    said("two habits", sum(check in failed.index for check in habits.values()), 2),
    said("the first failure is usually the cause", failed.index[0], habits["its own Task.id"]),
    said("the resend looks like a new task and GetTask of the requester's Task.id finds nothing",
         [c in failed.index for c in ("idempotent-resend", "get-task")], [True, True]),
    said("binary Correlation Data gets no reply at all", "no reply" in failed.loc["correlation-binary", "remark"], True),
)

# %% [markdown]
# ## Step 4. From the command line
#
# On the command line the same probe is `python -m a2a_nb probe careless` (exit status 1 on a MUST
# failure, so a CI job can run it), with `--json` for the report as JSON, `--junit FILE` for CI test
# reports and `--level extended` for the optional parts (pools with `--pool NAME`, native binary
# artifacts). The kit's own requesters send Correlation Data as the hex of 16 random bytes: valid text
# for implementations like this one, and still unguessable.

# %%
as_described(
    said("exit status 1 on a MUST failure", careless_report.exit_code(), 1),
    said("the hex of 16 random bytes", {len(bytes.fromhex(IdSource().correlation().decode())) for _ in range(3)}, {16}),
)

# %% [markdown]
# ## Step 5. Your turn
#
# **Which failures stop a CI job?** `python -m a2a_nb probe careless` exits with status 1 because of
# some of the careless agent's failures, not all of them: only a failed MUST counts, a SHOULD failure
# alone leaves the status at 0. Read `careless_report.frame()` and name the checks that set the exit
# status. Answer with a set of check names, e.g. `{"task-id-echo"}`.

# %%
from a2a_nb.notebook.exercises import lesson11

must_fail = ...   # your answer: a set of check names
lesson11.must_failures(must_fail, careless_report)

# %% jupyter={"source_hidden": true} tags=["solution"]
# Reference answer (expand only after you tried)
from a2a_nb.notebook.exercises import reference
frame = careless_report.frame()
must_fail = set(frame.query("verdict == 'fail' and level == 'MUST'")["check"])
reference(lesson11.must_failures(must_fail, careless_report))


# %% [markdown]
# ## Step 6. Clean up, when you are done
#
# The exercise reads the reports only, but you may want to probe the agents again: *Run All* leaves
# them running, and this cell only defines `clean_up()`. Call it when you are done: it stops the desk
# and the careless agent (an example agent: its card goes with it) and closes every MQTT session.

# %%
def clean_up():
    """Stop the story's desk and the careless agent; close every MQTT session."""
    story_desk.stop()
    sloppy.stop(forget=True)   # an example agent: its card goes with it
    print(f"closed {a2a_nb.stop_all()} MQTT session(s)")


print("the agents keep running: call clean_up() when you are done")

# %% [markdown]
# ## Summary
# - The conformance probe (`python -m a2a_nb probe AGENT`, or `run_probe` in Python) checks a live
#   agent rule by rule, with the rule ids `lint` uses for a recording.
# - Where the right answer is silence, a check waits the probe's whole `timeout`.
# - The story's desk is Core conformant; an agent that makes its own Task.ids and reads Correlation
#   Data as text is not, and the report names each broken rule and what to change.
# - The exit status is 1 on a MUST failure, so a CI job can run the probe.
#
# ## What's next
# Probe an agent of your own: serve it on a broker, then run `python -m a2a_nb probe NAME`
# ([docs/probe.md](../docs/probe.md) lists every check). Back to [00 · Start here](00-start-here.ipynb)
# for the list of lessons.
