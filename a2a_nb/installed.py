"""Where this copy of the kit was installed from, so a hint can name a command that works: the kit is
not on a public package index, so ``pip install 'a2a_nb[notebook]'`` alone finds nothing to install
from unless the kit is already installed from somewhere pip can see again.

:func:`install_extra_command` answers, in this order: the checkout the running code comes from
(``pip install -e 'CHECKOUT[notebook]'``), else the source pip recorded at install time (PEP 610
``direct_url.json``: a folder, a wheel file or a git URL), else the package name alone.
The answer is read from this machine's files only (the package's folder and its installed metadata).
"""
from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlparse

DIST = "a2a_nb"
HOME = "https://github.com/a2a-nb/a2a_nb"
"""The repository pyproject.toml's project URLs name (a fork: its own URL)."""


def checkout() -> Optional[Path]:
    """The source checkout the running package comes from (its parent folder holds the project's
    pyproject.toml), else None (an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8", errors="replace")[:20_000]
    except OSError:
        return None
    return root if f'name = "{DIST}"' in text else None


def _recorded_source() -> Optional[str]:
    """The requirement pip can install this kit again from, as recorded in ``direct_url.json``."""
    try:
        raw = metadata.distribution(DIST).read_text("direct_url.json")
        info = json.loads(raw[:20_000]) if raw else None
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    url = info["url"]
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        return f"{vcs['vcs']}+{url}"
    parsed = urlparse(url)
    return unquote(parsed.path) if parsed.scheme == "file" else url


def install_extra_command(extra: str) -> str:
    """The shell command that adds ``extra``'s libraries to the Python running this code."""
    pip = f"{shlex.quote(sys.executable)} -m pip install"
    root = checkout()
    if root is not None:
        return f"{pip} -e {shlex.quote(f'{root}[{extra}]')}"
    source = _recorded_source()
    if source is None:
        return f"{pip} {shlex.quote(f'{DIST}[{extra}]')}"
    if "://" in source and not source.startswith("file:"):  # a git or web URL: PEP 508's name @ URL
        return f"{pip} {shlex.quote(f'{DIST}[{extra}] @ {source}')}"
    return f"{pip} {shlex.quote(f'{source}[{extra}]')}"
