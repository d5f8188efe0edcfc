"""Lesson 03's exercise: the aggregation rule for artifact chunks, written by the learner.

The learner's ``add_chunk(artifacts, update)`` keeps ``artifactId -> list of parts``. The check
runs it over the lesson's real stream, then over chunks of the same report cut another way (two
artifacts interleaved, one of them replaced by a chunk without ``append``), and compares each
result with what the kit's own rule (:class:`~a2a_nb.protocol.artifacts.ArtifactSet`) assembles.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional

from ...agents.requester import Stream
from ...protocol import messages
from ...protocol.artifacts import ArtifactSet
from . import Feedback, not_yet, right, unanswered

AGGREGATION_RULE = "Write the aggregation rule"

Rule = Callable[[dict, dict], Any]


def _with_rule(rule: Rule, updates: list[dict]) -> dict:
    """What the learner's rule assembles from ``updates`` (it may change ``artifacts`` in place or
    return a new dict)."""
    artifacts: dict = {}
    for update in updates:
        result = rule(artifacts, copy.deepcopy(update))
        if isinstance(result, dict):
            artifacts = result
    return artifacts


def _with_kit(updates: list[dict]) -> dict:
    assembled = ArtifactSet()
    for update in updates:
        assembled.apply(copy.deepcopy(update))
    return {a["artifactId"]: a["parts"] for a in assembled.as_list()}


def _recut(task_id: str, context_id: str, artifact_id: str, parts: list) -> list[dict]:
    """The report's parts again, as two artifacts whose chunks interleave; the second artifact is
    sent once, then replaced by a chunk without ``append`` and extended."""
    other = artifact_id + "-again"

    def chunk(aid: str, some: list, append: bool, last: bool = False) -> dict:
        return messages.artifact_update(task_id, context_id, messages.artifact(aid, some), append=append,
                                        last_chunk=last)

    return [chunk(artifact_id, parts[:1], False), chunk(other, parts[2:3], False),
            chunk(artifact_id, parts[1:], True, last=True), chunk(other, parts[3:], True),
            chunk(other, parts[:2], False), chunk(other, parts[2:], True, last=True)]


def _difference(got: dict, want: dict, recut: bool) -> Optional[str]:
    """Why ``got`` is not ``want``, in words that point at the rule's mistake (None: the same)."""
    if not isinstance(got, dict):
        return f"artifacts should be a dict (artifactId → list of parts), your rule left a {type(got).__name__}"
    if not got:
        return ("your rule leaves artifacts empty: replace the ... in add_chunk with code that puts each "
                "chunk's parts under its artifactId")
    if set(got) != set(want):
        return (f"the keys of artifacts should be the artifactIds the chunks name ({len(want)} of them here), "
                f"yours are {sorted(map(str, got))}")
    for aid, parts in want.items():
        mine = got[aid]
        if not isinstance(mine, list):
            return f"artifacts[{aid!r}] should be a list of parts, it is a {type(mine).__name__}"
        if mine == parts:
            continue
        if recut and len(mine) > len(parts):
            return (f"{aid}: {len(mine)} parts where the kit has {len(parts)}: when a chunk without append "
                    "arrives for an artifact you already have, it takes the artifact's place (step 4)")
        if len(mine) < len(parts):
            return (f"{aid}: you kept {len(mine)} of its {len(parts)} parts: a chunk with append: true adds "
                    "to the parts that came before it")
        if len(mine) > len(parts):
            return f"{aid}: {len(mine)} parts where the kit has {len(parts)}: each part belongs in the list once"
        if sorted(map(repr, mine)) == sorted(map(repr, parts)):
            return f"{aid}: the right parts in another order: append adds a chunk's parts at the end"
        return f"{aid}: other parts than the kit assembled: take them from update['artifact']['parts']"
    return None


def aggregation_rule(add_chunk: Any, stream: Stream) -> Feedback:
    """Right when ``add_chunk`` assembles the artifacts of ``stream`` and of the re-cut chunks exactly
    as the kit's rule does."""
    blank = unanswered(AGGREGATION_RULE, add_chunk)
    if blank is not None:
        return blank
    if not callable(add_chunk):
        return not_yet(AGGREGATION_RULE, f"add_chunk should be a function (artifacts, update), got "
                                          f"{type(add_chunk).__name__}")
    updates = [ev.data for ev in stream.events if ev.kind == "artifactUpdate"]
    if not updates:
        return not_yet(AGGREGATION_RULE, "this stream carried no artifactUpdate events: pass the stream of step 2")
    want = _with_kit(updates)
    aid, parts = next(iter(want.items()))
    recut = _recut(stream.task_id, stream.view.context_id or "", aid, parts)
    for cut, chunks in ((False, updates), (True, recut)):
        try:
            got = _with_rule(add_chunk, chunks)
        except Exception as exc:  # the learner's code: say what it raised, on which chunks
            where = "the re-cut chunks" if cut else "the stream's chunks"
            return not_yet(AGGREGATION_RULE, f"your rule raised {type(exc).__name__}: {exc} (on {where})")
        problem = _difference(got, _with_kit(chunks), cut)
        if problem is not None:
            if cut:
                problem = "the stream's report is right, but on the re-cut chunks: " + problem
            return not_yet(AGGREGATION_RULE, problem)
    return right(AGGREGATION_RULE, f"your rule assembles the stream's report ({len(parts)} parts) and the re-cut, "
                                   "interleaved and replaced chunks exactly as the kit does")
