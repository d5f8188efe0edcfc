"""Run ``python -m a2a_nb ...`` in a subprocess where pandas and numpy cannot be imported (each is
None in ``sys.modules``, so ``import pandas`` raises ImportError): the commands that must work on a
core install (``lint``, ``probe``) are tested with it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WRAPPER = ("import sys, runpy; sys.modules['pandas'] = None; sys.modules['numpy'] = None; "
           "sys.argv = ['a2a_nb'] + sys.argv[1:]; runpy.run_module('a2a_nb', run_name='__main__', alter_sys=True)")


def run_without_pandas(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess:
    """``python -m a2a_nb *args`` without pandas and numpy; text output captured."""
    return subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, **kwargs)
