"""Lesson 08 (security) as stored: no secret in any stored output, and the lesson is reachable.

The lesson prints only the first characters of a bearer token and never a password; these checks
make sure no later edit stores a whole JWT, a Mosquitto password hash or a generated key in a
notebook (stored notebooks end up in git and on Binder).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LESSON = NOTEBOOKS / "08-security.ipynb"
JWT = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}")
PASSWORD_HASH = re.compile(r"\$7\$\d+\$[A-Za-z0-9+/=]{8,}\$")
PEM = re.compile(r"-----BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)-----")


def outputs_text(path: Path) -> str:
    parts = []
    for cell in nbformat.read(path, as_version=4).cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            for value in out.get("data", {}).values():
                parts.append(value if isinstance(value, str) else str(value))
    return "\n".join(parts)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_no_secret_in_stored_outputs(path):
    text = outputs_text(path)
    assert not JWT.search(text), f"{path.name} stores a whole JWT"
    assert not PASSWORD_HASH.search(text), f"{path.name} stores a Mosquitto password hash"
    assert not PEM.search(text), f"{path.name} stores a PEM key or certificate"


def test_lesson_shows_the_checks_it_promises():
    text = outputs_text(LESSON)
    for expected in ("PUBACK 135 Not authorized", "CONNACK 135 Not authorized", "refused by the kit",
                     "PERMISSION_DENIED", "UNAUTHENTICATED",
                     "the token has expired (exp)", "the token is meant for another audience (aud)",
                     "the token's signature does not verify", "a bearer token may only travel over TLS",
                     "[redacted]", "containing a token: 0"):
        assert expected in text, f"08-security.ipynb no longer shows {expected!r}"


@pytest.mark.parametrize("name", ["00-start-here.ipynb", "07-traffic-analysis.ipynb"])
def test_lesson_is_linked(name):
    sources = "\n".join(c.source for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells
                        if c.cell_type == "markdown")
    assert "](08-security.ipynb)" in sources, f"{name} does not link to lesson 08"
