"""One Python range, said the same everywhere: pyproject.toml's ``requires-python`` (3.11+: the pinned
set-up needs it), the classifiers, the README's set-up line, Binder's runtime.txt, mypy's target, and
the set-up script, which refuses an older interpreter in one line. ``make test`` runs on the lower bound
(the venv's Python must be inside the range)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _lower_bound() -> tuple[int, int]:
    m = re.fullmatch(r">=(\d+)\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert m, "requires-python is a lower bound, '>=3.N'"
    return int(m[1]), int(m[2])


def test_the_declared_range_is_the_one_everything_says():
    low = _lower_bound()
    assert low >= (3, 11), "the pinned requirements (ipython 9) need Python 3.11"
    versions = [tuple(map(int, c.rsplit(" :: ", 1)[1].split(".")))
                for c in PYPROJECT["project"]["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)]
    assert versions and min(versions) == low, "the classifiers start at requires-python's lower bound"
    readme = (ROOT / "README.md").read_text()
    assert re.findall(r"Python (\d+\.\d+)\+", readme) == [f"{low[0]}.{low[1]}"], "the README's set-up line"
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{low[0]}.{low[1]}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"{low[0]}.{low[1]}"


def test_the_tests_run_inside_the_declared_range():
    assert sys.version_info[:2] >= _lower_bound()


def test_setup_refuses_an_older_python_in_one_line(tmp_path):
    """``make lab`` with Python 3.10 stops at once, saying what it needs (not after pip fails on ipython)."""
    low = _lower_bound()
    old = tmp_path / "python3"
    old.write_text(f"#!/bin/sh\necho {low[0]}.{low[1] - 1}\n")  # an interpreter one minor version too old
    old.chmod(0o755)
    env = dict(os.environ, PYTHON=str(old), VENV=str(tmp_path / "venv"))
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (f"error: a2a_nb needs Python {low[0]}.{low[1]}+, '{old}' is {low[0]}.{low[1] - 1}: set "
                          f"PYTHON to a newer one (e.g. PYTHON=python{low[0]}.{low[1]} make lab; remove an old "
                          f"{tmp_path / 'venv'} first)\n")
    assert not (tmp_path / "venv").exists()
