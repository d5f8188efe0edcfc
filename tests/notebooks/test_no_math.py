"""No ``$`` of a lesson renders as math: A2A topics start with ``$`` (``$a2a/v1/...``,
``$share/{group}/$a2a/...``), and JupyterLab typesets the text between two ``$`` as a formula (in
italics, the ``$`` gone), in the very lessons that teach why ``$`` topics matter.

In markdown, JupyterLab leaves a ``$`` alone inside inline code or a fenced block, or escaped as
``\\$``. In an HTML output, MathJax skips ``<code>`` and ``<pre>`` and any element with the class
``mathjax_ignore`` (pandas adds it when ``display.html.use_mathjax`` is off; the kit's own HTML
wraps itself with ``display.no_math``).
"""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXTS = sorted((ROOT / "notebooks" / "text").glob("[0-9][0-9]-*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
FENCED = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
SKIPPED_HTML = re.compile(r"<(code|pre)\b.*?</\1>", re.S | re.I)


def bare_dollars(markdown: str) -> list[str]:
    """The lines of ``markdown`` with a ``$`` outside code that is not escaped."""
    text = INLINE_CODE.sub("", FENCED.sub("", markdown)).replace("\\$", "")
    return [line for line in text.splitlines() if "$" in line]


def test_the_rule_itself():
    assert bare_dollars("subscribe to `$a2a/#`, not `#`") == []
    assert bare_dollars("costs \\$5 and \\$6") == []
    assert bare_dollars("```\n$share/g/$a2a/x\n```") == []
    assert bare_dollars("the topic $share/g/$a2a/v1/request") == ["the topic $share/g/$a2a/v1/request"]


@pytest.mark.parametrize("path", TEXTS + [ROOT / "notebooks" / "glossary.md"], ids=lambda p: p.stem[:8])
def test_every_dollar_of_the_markdown_is_in_code_or_escaped(path):
    if path.suffix == ".md":
        sources = [path.read_text()]
    else:
        sources = [c.source for c in jupytext.read(path).cells if c.cell_type == "markdown"]
    found = [line for source in sources for line in bare_dollars(source)]
    assert found == [], f"{path.name}: a $ outside code would render as math: {found}"


def outside_skipped(html: str) -> str:
    return SKIPPED_HTML.sub("", html)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_no_html_output_shows_a_dollar_to_mathjax(path):
    for cell in nbformat.read(path, as_version=4).cells:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            seen = outside_skipped(html)
            if "$" in seen:
                before = seen[: seen.index("$")]
                assert "mathjax_ignore" in before, \
                    f"{path.name} cell {cell.get('id')}: a $ that MathJax would read: {html[:200]}"
