"""Names a package offers but imports only when first used.

A package's ``__init__`` imports the names it offers inside ``if TYPE_CHECKING:``, so that a type
checker and an editor see them, and hands the functions :func:`lazy_names` returns to Python as its
module ``__getattr__`` and ``__dir__`` (PEP 562). Those same import lines are the table of
``{name: module}``: it is written once, read here from the package's source (as ``lazy_loader``'s
``attach_stub`` reads a stub file). ``import a2a_nb`` then stays quick and light: paho, pandas,
matplotlib or starlette load only when a name that needs them is used.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any, Callable


def type_checking_imports(source: str) -> dict[str, str]:
    """``{name: module}`` of the relative ``from .module import name`` lines under the module-level
    ``if TYPE_CHECKING:`` of ``source`` (module relative to the package, e.g. ``".agents.requester"``)."""
    exports: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for imp in node.body:
            if isinstance(imp, ast.ImportFrom) and imp.level:
                module = "." * imp.level + (imp.module or "")
                for alias in imp.names:
                    exports[alias.asname or alias.name] = module
    return exports


def lazy_names(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, names)`` for ``package``, whose ``if TYPE_CHECKING:`` imports name
    each lazy name and the module that defines it."""
    namespace = importlib.import_module(package).__dict__
    exports = type_checking_imports(Path(namespace["__file__"]).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value          # the next use is a plain lookup
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__, sorted(exports)
