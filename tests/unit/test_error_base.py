"""One error base: every public exception class of the kit derives from ``A2ANbError``, and keeps the
built-in class it had, so ``except A2ANbError`` catches any kit error and ``except TimeoutError`` (etc.)
still works. ``import a2a_nb.protocol`` (the sans-I/O core) loads no paho."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import a2a_nb
from a2a_nb import A2AError, A2ANbError, RequestTimeout, SessionError
from a2a_nb.protocol import errors


def _public_exception_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.walk_packages(a2a_nb.__path__, "a2a_nb."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name
                    and not name.startswith("_")):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_public_exception_class_of_the_kit_derives_from_the_one_base():
    classes = _public_exception_classes()
    assert len(classes) >= 20, sorted(classes)
    assert not [name for name, cls in classes.items() if not issubclass(cls, A2ANbError)]


@pytest.mark.parametrize("dotted, builtin", [
    ("a2a_nb.agents.requester.RequestTimeout", TimeoutError),
    ("a2a_nb.mqtt.session.SessionError", RuntimeError),
    ("a2a_nb.mqtt.broker.BrokerError", RuntimeError),
    ("a2a_nb.protocol.ids.InvalidIdentifier", ValueError),
    ("a2a_nb.agents.store.TaskStoreError", OSError),
    ("a2a_nb.bridge.server.NoCard", LookupError),
    ("a2a_nb.notebook.claims.NotAsDescribed", AssertionError),
    ("a2a_nb.commands.common.UsageError", ValueError),
])
def test_each_kit_error_keeps_the_builtin_class_an_existing_except_names(dotted, builtin):
    module, name = dotted.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, builtin) and issubclass(cls, A2ANbError)


def test_one_except_catches_a_timeout_a_session_error_and_an_a2a_error():
    for err in (RequestTimeout("no reply"), SessionError("no broker"), errors.task_not_found("t-1")):
        with pytest.raises(A2ANbError):
            raise err
    with pytest.raises(TimeoutError):
        raise RequestTimeout("no reply")


def test_reply_is_a_declared_attribute_none_until_a_requester_sets_it():
    err = A2AError(-32001, "Task not found: t-1")
    assert err.reply is None and A2AError.__annotations__["reply"]


@pytest.mark.parametrize("module", ["a2a_nb", "a2a_nb.protocol"])
def test_importing_the_package_or_its_protocol_core_loads_no_paho(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'paho'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_front_doors_table_is_its_type_checking_imports():
    from a2a_nb.lazy_names import type_checking_imports

    source = (a2a_nb.__path__[0] + "/__init__.py")
    table = type_checking_imports(open(source, encoding="utf-8").read())
    assert table["stop_all"] == ".mqtt.session" and table["A2ANbError"] == ".error_base"
    assert sorted(table) == sorted(n for n in a2a_nb.__all__ if n != "__version__")
