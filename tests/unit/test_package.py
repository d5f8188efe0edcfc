"""The core stays sans-I/O: no paho, sockets or threads in a2a_nb/protocol, and the a2a-sdk only in
``sdk_schema``, loaded on first use (the types are the cards' and payloads' authority); and the
package's dependencies: paho-mqtt alone for the core, the rest in the extras of pyproject.toml."""
import ast
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

import a2a_nb.protocol as protocol

MINE = ("ids", "topics", "properties", "jsonrpc", "errors", "states", "messages", "cards", "retry",
        "packet")
FORBIDDEN = ("paho", "socket", "threading", "asyncio", "subprocess", "a2a")


def test_reexports():
    for name in MINE:
        assert hasattr(protocol, name)
    assert protocol.MqttMessage is protocol.packet.MqttMessage
    assert protocol.A2AError is protocol.errors.A2AError
    assert protocol.IdSource is protocol.ids.IdSource
    assert protocol.RetryProfile is protocol.retry.RetryProfile


def _imports(node: ast.AST, top_level: bool = True) -> list[tuple[str, bool]]:
    """Absolute imports under ``node``: (top-level name, imported at module level?)."""
    if isinstance(node, ast.Import):
        return [(a.name.split(".")[0], top_level) for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        return [((node.module or "").split(".")[0], top_level)]
    inside = top_level and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    return [found for child in ast.iter_child_nodes(node) for found in _imports(child, inside)]


def test_core_modules_import_no_io():
    root = Path(protocol.__file__).parent
    modules = sorted(root.glob("*.py"))
    assert len(modules) > len(MINE)
    for path in modules:
        for name, top_level in _imports(ast.parse(path.read_text())):
            assert name not in FORBIDDEN[:-1], f"{path.name} imports {name}"
            if name == "a2a":
                assert path.name == "sdk_schema.py" and not top_level, f"{path.name} imports the a2a-sdk"


# -- packaging: a core of paho-mqtt alone, the rest in extras (pyproject.toml) ----------------------------
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "a2a_nb"
CORE_PACKAGES = ("a2a_nb.protocol", "a2a_nb.mqtt", "a2a_nb.agents", "a2a_nb.story", "a2a_nb.commands")
"""What works with the core dependency alone: the rules, the MQTT edge, the roles, the story's cast and
the command line (its commands load an extra's modules only when they need them)."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements() -> tuple[list, dict[str, list]]:
    """(core, {extra: requirements}) as ``packaging`` requirements, an extra's ``a2a_nb[...]`` left out."""
    from packaging.requirements import Requirement

    project = _project()
    core = [Requirement(r) for r in project["dependencies"]]
    extras = {extra: [r for r in map(Requirement, reqs) if _norm(r.name) != _norm(project["name"])]
              for extra, reqs in project.get("optional-dependencies", {}).items()}
    return core, extras


def _top_level_imports() -> dict[str, set[str]]:
    """``{top-level module: {a2a_nb files importing it}}`` for every absolute import in the package,
    function-level and ``TYPE_CHECKING`` ones included."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_the_extras_are_the_ones_the_readme_names():
    core, extras = _requirements()
    assert [_norm(r.name) for r in core] == ["paho-mqtt"]
    assert set(extras) == {"notebook", "bridge", "secure", "sdk"}


def test_every_library_the_package_imports_is_declared():
    core, extras = _requirements()
    declared = {_norm(r.name) for r in core} | {_norm(r.name) for reqs in extras.values() for r in reqs}
    providers = packages_distributions()
    undeclared = {}
    for module, files in _top_level_imports().items():
        if module in sys.stdlib_module_names or module == "a2a_nb":
            continue
        assert module not in ("benchmarks", "tests"), f"{sorted(files)} import {module}, which is not installed"
        if not {_norm(d) for d in providers.get(module, [])} & declared:
            undeclared[module] = sorted(files)
    assert not undeclared, f"imported but not in pyproject.toml: {undeclared}"


def test_requirements_txt_pins_every_declared_library_within_its_range():
    core, extras = _requirements()
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_norm(name)] = version.strip()
    for req in [*core, *(r for reqs in extras.values() for r in reqs)]:
        assert _norm(req.name) in pins, f"{req} is declared but requirements.txt does not pin it"
        assert req.specifier.contains(pins[_norm(req.name)], prereleases=True), f"{req}: pinned {pins[_norm(req.name)]}"


# Run in a fresh interpreter: a finder first on sys.meta_path refuses every module the extras provide.
_REFUSE = """
import importlib, pkgutil, runpy, sys
BLOCKED = set(sys.argv.pop(1).split(","))
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (an extra's, refused)", name=name)
sys.meta_path.insert(0, Refuse())
"""
_IMPORT_ALL = _REFUSE + """
import a2a_nb, a2a_nb.cli
for package in sys.argv[1:]:
    for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        importlib.import_module(module.name)
heavy = sorted(BLOCKED & {m.split(".")[0] for m in sys.modules})
print("OK" if not heavy else heavy)
"""
_COMMAND = _REFUSE + """
sys.argv[0] = "a2a_nb"
runpy.run_module("a2a_nb", run_name="__main__")
"""


def _extras_modules() -> set[str]:
    """The top-level modules only an extra's distributions provide (as installed here)."""
    core, extras = _requirements()
    core_dists = {_norm(r.name) for r in core}
    extra_dists = {_norm(r.name) for reqs in extras.values() for r in reqs}
    return {module for module, dists in packages_distributions().items()
            if {_norm(d) for d in dists} & extra_dists and not {_norm(d) for d in dists} & core_dists}


def test_the_core_imports_without_any_extra():
    """``a2a_nb.protocol`` (and the MQTT edge, the roles, the cast, the command line) with paho-mqtt
    alone: pandas, matplotlib, starlette, uvicorn, ipywidgets, cryptography, the a2a-sdk ... refused."""
    blocked = _extras_modules()
    assert {"pandas", "matplotlib", "starlette", "uvicorn", "ipywidgets", "a2a", "cryptography", "jwt"} <= blocked
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL, ",".join(sorted(blocked)), *CORE_PACKAGES],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "OK"


def test_a_command_that_needs_an_extra_says_which_to_install(tmp_path):
    # lint reads a recording without pandas; checking its payloads against the a2a-sdk types needs the extra
    recording = ROOT / "a2a_nb" / "data" / "recordings" / "happy.jsonl"
    out = subprocess.run([sys.executable, "-c", _COMMAND, ",".join(sorted(_extras_modules())), "lint", str(recording)],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: No module named ")
    # the kit is on no public index: the hint installs the extra from the checkout this code runs from
    assert f"{sys.executable} -m pip install -e '{ROOT}[notebook]'" in out.stderr, out.stderr
