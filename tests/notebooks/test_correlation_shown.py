"""One form of Correlation Data in every lesson: the characters the kit sends.

The kit's Correlation Data is 32 characters of text, the hex digits of 16 random bytes
(``IdSource.correlation``); every view shows those characters (``ids.readable_correlation``), in
full or their first 16 and ``…``. Shown as ``bytes.hex()`` instead, the same value turns into 64
hex digits made only of the pairs ``30``-``39`` and ``61``-``66`` (the hex of the characters
``0``-``9``, ``a``-``f``): a random value has such a run of 16 with a chance of (16/256)^8. Only a
recording file stores Correlation Data that way (its ``"correlation"`` field, lesson 07 says so).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
HEX_RUN = re.compile(r"[0-9a-f]{16,}")
HEX_OF_HEX_TEXT = re.compile(r"(?:3[0-9]|6[1-6]){8,}")
RECORD_FIELD = '"correlation": "'  # the recording file's own form (FORMAT.md), shown raw in lesson 07


def shown_lines(nb) -> list[tuple[str, str]]:
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") + "".join(out.get("data", {}).get(k, "") for k in ("text/plain", "text/html"))
            lines += [(cell.get("id", "?"), line) for line in text.splitlines()]
    return lines


@pytest.mark.parametrize("path", PATHS, ids=[p.stem[:2] for p in PATHS])
def test_correlation_data_is_shown_as_the_characters_sent(path):
    for cell_id, line in shown_lines(nbformat.read(path, as_version=4)):
        if RECORD_FIELD in line:
            continue
        for run in HEX_RUN.findall(line):
            assert not HEX_OF_HEX_TEXT.fullmatch(run[: len(run) // 2 * 2]), \
                f"{path.name} cell {cell_id}: Correlation Data shown as the hex of its text: {line.strip()[:160]}"


def test_the_detector_finds_the_hex_of_the_kit_s_correlation_data():
    from a2a_nb.protocol.ids import IdSource, readable_correlation

    sent = IdSource().correlation()
    assert HEX_OF_HEX_TEXT.fullmatch(sent.hex()[:16]) and HEX_OF_HEX_TEXT.fullmatch(sent.hex())
    assert not HEX_OF_HEX_TEXT.fullmatch(readable_correlation(sent)[:16])  # 16 hex digits of random bytes
