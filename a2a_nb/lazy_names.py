"""Names a package offers but imports only when first used.

A package's ``__init__`` lists ``{name: module}`` and hands the two functions this returns to
Python as its module ``__getattr__`` and ``__dir__`` (PEP 562). ``import a2a_nb`` then stays quick
and light: pandas, matplotlib or starlette load only when a name that needs them is used.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_names(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each name to the module
    (relative to ``package``) that defines it."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value          # the next use is a plain lookup
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
