"""A lesson's prose is a claim about the output under it (docs/architecture.md, principle 6).

Two halves hold text and output together:

* at run time, ``as_described(said("quote", actual, expected), ...)`` in a lesson cell raises when
  the output is not what the text says (nbval and the build fail there);
* here, every ``said`` quotes words the text above it really says (a changed sentence fails), and
  every number, number word, analyst name and task state that a step's prose states is quoted by
  one of that step's checks (a new claim without a check fails).

The time a lesson states ("Run All takes about 5 seconds") is held within 1.5x of the Run All time
the build measured and stored in the notebook (``scripts/build_notebooks.py``), and, as a learner
sees it, of the time Run All takes in JupyterLab (tests/browser/test_run_all_times_in_lab.py).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from .prose import claims_in, misquoted_checks, sections, stated_run_time, unchecked_claims

ROOT = Path(__file__).resolve().parents[2]
TEXTS = sorted((ROOT / "notebooks" / "text").glob("[0-9][0-9]-*.py"))
IDS = [p.stem for p in TEXTS]
RATIO = 1.5


@pytest.mark.parametrize("path", TEXTS, ids=IDS)
def test_every_check_quotes_the_text_above_it(path):
    problems = misquoted_checks(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", TEXTS, ids=IDS)
def test_every_claim_of_a_step_is_checked(path):
    problems = unchecked_claims(path)
    assert not problems, (f"{path.name}: give each claim a check under its output, e.g. "
                          f"as_described(said('the words of the text', actual, expected)):\n" + "\n".join(problems))


@pytest.mark.parametrize("path", TEXTS, ids=IDS)
def test_stated_run_time_is_the_measured_one(path):
    found = stated_run_time(path)
    assert found, f"{path.name}: 'Time needed' should say 'Run All takes about N seconds' (or 'under N seconds')"
    how, stated = found
    measured = nbformat.read(ROOT / "notebooks" / f"{path.stem}.ipynb", as_version=4).metadata["a2a_nb"]["run_all_s"]
    if how == "under":
        assert measured <= stated, f"{path.name}: says under {stated} s, the build measured {measured} s"
    else:
        assert max(measured / stated, stated / measured) <= RATIO, \
            f"{path.name}: says about {stated} s, the build measured {measured} s (more than {RATIO}x apart)"


# -- the checks catch drift -----------------------------------------------------------------------
LESSON = ROOT / "notebooks" / "text" / "05-handover.py"


def test_a_changed_quoted_sentence_is_caught(tmp_path):
    copy = Path(shutil.copy(LESSON, tmp_path))
    assert misquoted_checks(copy) == []
    lines = copy.read_text().splitlines(keepends=True)
    # a check whose quote stands on one line of the text; that line says it otherwise now
    quote, at = next((c.quote, i) for s in sections(copy) for c in s.checks for i, line in enumerate(lines)
                     if line.startswith("# ") and c.quote in line)
    lines[at] = lines[at].replace(quote, quote.upper() if quote != quote.upper() else quote.lower(), 1)
    copy.write_text("".join(lines))
    assert any(repr(quote) in p for p in misquoted_checks(copy))


def test_a_new_number_in_a_step_is_caught(tmp_path):
    copy = Path(shutil.copy(LESSON, tmp_path))
    assert unchecked_claims(copy) == []
    text = copy.read_text()
    step = text.index("# ## Step 2.")
    copy.write_text(text[:step] + "# ## Step 2. Seventeen\n#\n# The broker sent 17 replies to `analyst-9`.\n"
                    + text[step + len("# ## Step 2."):])
    problems = "\n".join(unchecked_claims(copy))
    assert "“17”" in problems and "“analyst-9”" in problems


def test_claim_tokens():
    line = "Three attempts, PUBACK 16 each (see step 4), then `analyst-2` went `input-required`; QoS 1, v1.0"
    assert claims_in(line) == {"three", "16", "analyst-2", "input-required"}
    assert claims_in("the task is INPUT_REQUIRED after 0.5 s; `seed=4821`") == {"input-required", "0.5"}
    assert claims_in("1. The coordinator subscribes") == set()
