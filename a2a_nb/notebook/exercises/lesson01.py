"""Lesson 01's exercises: pick agents by skill tag and presence, and read who said a card is offline.

Both checks read the learner's ``Discovery``: what is right is computed from the cards it holds
now (their skills, tags, ``a2a-status`` and ``a2a-status-source``), never from names written here.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from ...agents.discovery import AgentEntry, Discovery
from ...protocol import properties
from . import Feedback, not_yet, right, unanswered

FIND_ONLINE = "Find the agents that can take the ticket now"
CRASH_SOURCE = "Who said the backup desk is offline?"


def _tags(entry: AgentEntry) -> set[str]:
    """Every tag of every skill on the entry's card, when the card is valid (what ``find`` selects by)."""
    return entry.tags


def _entries(answer: Any) -> Optional[list[AgentEntry]]:
    """The entries in an answer: what ``Discovery.find`` returns (a list of entries), or one entry;
    None when it is anything else (names typed by hand included: the exercise asks the discovery)."""
    if isinstance(answer, AgentEntry):
        return [answer]
    if isinstance(answer, (str, bytes, dict)) or not isinstance(answer, Iterable):
        return None
    items = list(answer)
    return items if all(isinstance(item, AgentEntry) for item in items) else None


def online_with_tag(answer: Any, discovery: Discovery, tag: str) -> Feedback:
    """Right when ``answer`` (what ``discovery.find`` returned) holds exactly the agents whose card
    has a skill tagged ``tag`` and says ``online`` (as ``discovery`` holds them now). Names typed by
    hand are not an answer: the exercise is asking the discovery."""
    blank = unanswered(FIND_ONLINE, answer)
    if blank is not None:
        return blank
    found = _entries(answer)
    if found is None:
        typed = isinstance(answer, str) or (isinstance(answer, (list, tuple, set)) and answer
                                            and all(isinstance(a, str) for a in answer))
        return not_yet(FIND_ONLINE, "names typed by hand are a guess: ask the discovery, and pass what "
                                    "disco.find(...) returns" if typed else
                                    f"expected what disco.find(...) returns (a list of entries), got "
                                    f"{type(answer).__name__}")
    names = [e.agent for e in found]
    entries: dict[str, AgentEntry] = {}
    for agent in discovery.agents():
        entry = discovery.get(agent)
        if entry is not None:  # not removed since agents() listed it
            entries[agent] = entry
    unknown = sorted(n for n in set(names) if n not in entries)
    if unknown:
        return not_yet(FIND_ONLINE, f"the discovery holds no card of {', '.join(unknown)}: take the agents from "
                                    "disco.find(...)")
    chosen = {n: entries[n] for n in set(names)}
    untagged = sorted(n for n, e in chosen.items() if tag not in _tags(e))
    if untagged:
        return not_yet(FIND_ONLINE, f"{', '.join(untagged)}: no skill on the card is tagged {tag!r}; "
                                    "find can select by tag (tags=[...])")
    offline = sorted(n for n, e in chosen.items() if not e.online)
    if offline:
        return not_yet(FIND_ONLINE, f"{', '.join(offline)} carries the tag, but its card says "
                                    f"{chosen[offline[0]].status}: the coordinator needs agents that are up now. "
                                    "find has a parameter for that")
    wanted = {n for n, e in entries.items() if e.online and tag in _tags(e)}
    if not wanted:
        return not_yet(FIND_ONLINE, f"no online card has a skill tagged {tag!r} right now: run the lesson's cells "
                                    "from the top (the desk must be running), then try again")
    if len(names) != len(set(names)):
        return not_yet(FIND_ONLINE, "an agent appears twice in your answer: each agent once")
    if set(names) < wanted:
        return not_yet(FIND_ONLINE, f"{len(wanted - set(names))} online agent(s) with a skill tagged {tag!r} "
                                    "missing: did you spell the tag as the cards do?")
    left_out = sorted(n for n, e in entries.items() if not e.online and tag in _tags(e))
    return right(FIND_ONLINE, f"{', '.join(sorted(wanted))}: online, with a skill tagged {tag!r}"
                              + (f"; {', '.join(left_out)} has the tag too, but is offline" if left_out else ""))


def crashed_source(answer: Any, discovery: Discovery, agent: str) -> Feedback:
    """Right when ``answer`` is the ``a2a-status-source`` that the card of ``agent`` (offline after
    a crash) carries in ``discovery``."""
    blank = unanswered(CRASH_SOURCE, answer)
    if blank is not None:
        return blank
    entry = discovery.get(agent)
    if entry is None:
        return not_yet(CRASH_SOURCE, f"the discovery holds no card of {agent}: run the cell that starts and "
                                     "crashes it first")
    if isinstance(answer, AgentEntry):
        return not_yet(CRASH_SOURCE, "that is the whole entry: answer with the one value it holds for "
                                     "a2a-status-source (a string)")
    if not isinstance(answer, str):
        return not_yet(CRASH_SOURCE, f"answer with the value of a2a-status-source, a string; got "
                                     f"{type(answer).__name__}")
    said = answer.strip().lower()
    if entry.online:
        return not_yet(CRASH_SOURCE, f"{agent}'s card says online now: run the cell that crashes it again")
    if said == (entry.status_source or "").lower():
        return right(CRASH_SOURCE, f"{agent} crashed without a goodbye, so its card's a2a-status-source is "
                                   f"{entry.status_source!r}: the broker published the offline card the agent "
                                   "left with it when it connected (its last will)")
    if said in (properties.ONLINE, properties.OFFLINE):
        return not_yet(CRASH_SOURCE, f"{answer!r} is an a2a-status value (what the card says); the question is "
                                     "a2a-status-source: who said it")
    if said == properties.SOURCE_AGENT:
        return not_yet(CRASH_SOURCE, f"{answer!r} is what an agent's own goodbye says (a graceful stop()); "
                                     f"{agent} crashed and said nothing: who published its offline card?")
    if said == properties.SOURCE_BROKER:
        return not_yet(CRASH_SOURCE, f"{answer!r} marks a status the broker manages by itself, which Mosquitto "
                                     "does not do; a crashed agent's offline card is one it left with the broker "
                                     f"in advance. Look at the status source of disco.get({agent!r})")
    return not_yet(CRASH_SOURCE, f"{answer!r} is not what the card says: read the status source of "
                                 f"disco.get({agent!r})")
