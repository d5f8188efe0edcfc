"""The files a user of a well-kept package looks for: LICENSE (Apache-2.0, as the A2A project, and the
metadata says so), CHANGELOG.md (the current version has an entry), the README's way to reach the
venv's commands, and a Binder badge that says how to point it at a fork. ``--version`` on both ways
of starting the command line."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import a2a_nb

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "README.md").read_text()


def test_license_file_and_metadata():
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: the expression alone


def test_changelog_has_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(a2a_nb.__version__)}$", text, re.M), "CHANGELOG.md: no entry for this version"
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "a2a_nb.__version__"}  # one place


def test_py_typed_ships():
    assert (ROOT / "a2a_nb" / "py.typed").exists()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["a2a_nb"]


def test_project_urls_and_classifiers():
    urls = PYPROJECT["project"]["urls"]
    assert urls["Source"].startswith("https://github.com/") and "Changelog" in urls
    assert "Typing :: Typed" in PYPROJECT["project"]["classifiers"]


def test_version_option():
    out = subprocess.run([sys.executable, "-m", "a2a_nb", "--version"], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, f"a2a_nb {a2a_nb.__version__}\n")


def test_readme_says_how_to_reach_the_venvs_commands():
    """The README's ``python -m a2a_nb ...`` lines need the venv's Python (paho is there, not in the
    system's): it says to activate the venv or to call it by path, and names the ``a2a-nb`` script."""
    assert "source .venv/bin/activate" in README
    assert ".venv/bin/python -m a2a_nb" in README and ".venv/bin/a2a-nb" in README
    assert PYPROJECT["project"]["scripts"] == {"a2a-nb": "a2a_nb.cli:main"}


def test_the_binder_badge_says_how_to_point_it_at_a_fork():
    badge = re.search(r"\(https://mybinder\.org/v2/gh/([^/]+/[^/]+)/HEAD\?urlpath=lab/tree/notebooks/00-start-here\.ipynb\)",
                      README)
    assert badge, "the Binder badge opens lesson 00"
    assert f"gh/{badge[1]}/" in README.replace(badge[0], "") and "fork" in README
    assert "gh/YOUR-ACCOUNT/YOUR-REPOSITORY/" in README
    assert badge[1] in PYPROJECT["project"]["urls"]["Source"]  # the badge and the metadata name one repository
