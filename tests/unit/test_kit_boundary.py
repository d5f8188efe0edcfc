"""The learner's kit and the operator's tools, apart (docs/architecture.md, "The learner's kit and the
operator's tools"): importing any module the lessons build on loads no operator module, so a change to
the command line, check-broker, bridged brokers, the status plugin or the benchmarks cannot break a
lesson; and the kit itself loads neither the probe nor the HTTP bridge (lessons 08 and 09 import them).
And the layers of docs/architecture.md hold: each imports only from its own and the layers below it."""
from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import a2a_nb

OPERATOR = ("a2a_nb.cli", "a2a_nb.__main__", "a2a_nb.commands", "a2a_nb.mqtt.broker_check", "a2a_nb.mqtt.bridged",
            "a2a_nb.mqtt.status_plugin", "benchmarks")
TOOLS_ON_THE_KIT = ("a2a_nb.probe", "a2a_nb.bridge", "a2a_nb.sdk")
KIT_PACKAGES = ("protocol", "mqtt", "agents", "ubsp", "story", "traffic", "notebook")


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _kit_modules() -> list[str]:
    names = ["a2a_nb", "a2a_nb.error_base", "a2a_nb.lazy_names"]
    for package in KIT_PACKAGES:
        names.append(f"a2a_nb.{package}")
        path = [f"{a2a_nb.__path__[0]}/{package}"]
        names += [m.name for m in pkgutil.walk_packages(path, f"a2a_nb.{package}.")]
    return [n for n in names if not _within(n, OPERATOR)]


def _loaded_after_importing(modules: list[str], watched: tuple[str, ...]) -> list[str]:
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"print(json.dumps(sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in {watched!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_learners_kit_loads_no_operator_tool():
    kit = _kit_modules()
    assert "a2a_nb.agents.responder" in kit and "a2a_nb.notebook.widgets" in kit and len(kit) > 60
    assert _loaded_after_importing(kit, OPERATOR) == []


def test_the_kit_loads_neither_the_probe_nor_the_http_bridge():
    kit = [m for m in _kit_modules() if not m.startswith("a2a_nb.notebook.exercises")]
    assert _loaded_after_importing(kit, TOOLS_ON_THE_KIT) == []


def test_the_front_door_loads_the_probe_and_the_bridge_only_when_asked():
    assert _loaded_after_importing(["a2a_nb"], TOOLS_ON_THE_KIT + OPERATOR) == []


# -- the layers of docs/architecture.md, top to bottom: each imports only from the layers below it ----------
LAYERS = [
    {"cli", "__main__", "commands"},
    {"__init__", "__version__"},
    {"notebook"},
    {"probe", "bridge", "sdk"},
    {"story"},
    {"traffic"},
    {"agents"},
    {"ubsp"},
    {"mqtt"},
    {"protocol"},
    {"error_base", "lazy_names", "data", "installed"},
]


def _layer(part: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if part in names)


def _imports(path: Path, parts: list[str]) -> Iterator[tuple[int, str]]:
    """``(line, first part below a2a_nb)`` of each import of the kit in the module at ``parts``."""
    package = parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
                names = [target + [a.name] for a in node.names] if not node.module else [target]
            elif node.module and node.module.split(".")[0] == "a2a_nb":
                names = [node.module.split(".")]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".") for a in node.names if a.name.split(".")[0] == "a2a_nb"]
        else:
            continue
        for name in names:
            yield node.lineno, (name[1] if len(name) > 1 else "__init__")


def test_each_layer_imports_only_from_its_own_and_the_layers_below_it():
    root = Path(a2a_nb.__path__[0])
    upward = []
    for path in root.rglob("*.py"):
        parts = ["a2a_nb", *path.relative_to(root).with_suffix("").parts]
        own = _layer(parts[1])
        for line, target in _imports(path, parts):
            if _layer(target) < own:
                upward.append(f"{path.relative_to(root)}:{line} imports {target}")
    assert not upward
