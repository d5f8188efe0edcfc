"""The two install sets: ``requirements.txt`` (what the lessons need: ``make lab``, Binder) and
``requirements-test.txt`` (that, plus the test tools: ``make test``), and ``scripts/setup.sh``'s plan
for each (``--plan``: the apt packages and the requirements file a set installs).

A learner's install holds no test tool; the tests run on every pin a learner gets; each file pins
exact versions, no package twice; the lessons' pins agree with pyproject.toml's extras.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "requirements.txt"
TEST = ROOT / "requirements-test.txt"
TEST_TOOLS = {"pytest", "pytest-timeout", "pytest-xdist", "nbval", "hypothesis", "mypy", "ruff", "playwright"}
"""What only the tests use: none of it belongs in a learner's install."""
TEST_APT = {"chromium", "gcc", "mosquitto-dev", "libmosquitto-dev"}
"""Debian packages only the tests use: the browser tests' chromium, the status plugin's compiler and headers."""
WITH_JUPYTERLAB = {"jupytext", "nbformat", "nbclient", "typing-extensions"}
"""Lesson pins no extra of pyproject.toml names: jupytext pairs each lesson with its text file in
JupyterLab; the others come with JupyterLab anyway and are pinned to fix their versions."""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def pins(path: Path) -> dict[str, str]:
    """``{package: version}`` of a requirements file, ``-r`` includes followed (relative to the file)."""
    found: dict[str, str] = {}
    for line in lines(path):
        if line.startswith("-r "):
            for name, version in pins(path.parent / line[3:].strip()).items():
                assert name not in found, f"{path.name}: {name} pinned twice"
                found[name] = version
            continue
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+-]*", line), f"{path.name}: {line!r} is not an exact pin"
        name, version = line.split("==")
        assert norm(name) not in found, f"{path.name}: {name} pinned twice"
        found[norm(name)] = version
    return found


def test_the_lab_set_holds_no_test_tool():
    lab = pins(LAB)
    assert not TEST_TOOLS & set(lab), f"requirements.txt (make lab, Binder) pins test tools: {TEST_TOOLS & set(lab)}"
    assert {"jupyterlab", "ipykernel", "ipywidgets", "paho-mqtt", "pandas", "matplotlib"} <= set(lab)


def test_the_test_set_is_the_lab_set_plus_the_test_tools():
    assert lines(TEST)[0] == "-r requirements.txt", "requirements-test.txt must start from the lessons' pins"
    lab, test = pins(LAB), pins(TEST)
    assert {name: test.get(name) for name in lab} == lab, "the tests must run on the versions a learner gets"
    assert set(test) - set(lab) == TEST_TOOLS


def test_the_lessons_pins_agree_with_pyproject_extras():
    """Every lesson pin is a dependency of the kit or one of its extras (or comes with JupyterLab), and
    no extra declares a test tool."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    from packaging.requirements import Requirement

    declared = {norm(Requirement(r).name) for r in project["dependencies"]}
    for extra in project.get("optional-dependencies", {}).values():
        declared |= {norm(Requirement(r).name) for r in extra}
    lab = set(pins(LAB))
    assert lab - declared <= WITH_JUPYTERLAB, f"pinned for the lessons but in no extra: {lab - declared - WITH_JUPYTERLAB}"
    assert not declared & TEST_TOOLS, f"pyproject.toml's extras declare test tools: {declared & TEST_TOOLS}"


def plan(**env: str) -> dict[str, str]:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--plan"], capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin", "VENV": ".venv", **env})
    assert out.returncode == 0, out.stderr
    return dict(line.split(": ", 1) for line in out.stdout.splitlines())


def test_make_lab_installs_the_lab_set_and_no_test_tool():
    lab = plan(A2A_SET="lab")
    assert lab["set"] == "lab" and lab["requirements"] == "requirements.txt"
    assert lab["apt-get, when missing"].split() == ["mosquitto"]
    assert plan() == lab  # the default set: scripts/setup.sh alone sets up for the lessons


def test_make_test_installs_everything():
    test = plan(A2A_SET="test")
    assert test["set"] == "test" and test["requirements"] == "requirements-test.txt"
    assert set(test["apt-get, when missing"].split()) == {"mosquitto"} | TEST_APT
    oldest = plan(A2A_SET="test", PAHO="oldest", VENV=".venv-paho-oldest")
    assert oldest["requirements"].startswith(".venv-paho-oldest/requirements-paho-")
    assert "chromium" not in oldest["apt-get, when missing"]


def test_the_makefile_sets_up_each_target_with_its_set():
    makefile = (ROOT / "Makefile").read_text()
    prerequisites = dict(re.findall(r"^([a-z-]+):[ \t]*([^\n=]*)$", makefile, flags=re.M))
    assert "A2A_SET=lab bash scripts/setup.sh" in makefile and "A2A_SET=test bash scripts/setup.sh" in makefile
    assert prerequisites["lab"].split() == ["lab-setup"]
    for target in ("test", "test-browser", "test-fast"):
        assert prerequisites[target].split() == ["test-setup"], target
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_an_unknown_set_is_refused():
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--plan"], capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin", "A2A_SET": "everything"})
    assert out.returncode == 2 and "A2A_SET must be lab or test" in out.stderr
