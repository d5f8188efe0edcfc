"""The data the kit ships inside the package, found wherever it is installed (a checkout, an editable
install, a wheel in ``site-packages``) through :mod:`importlib.resources`:

- ``tickets.csv``, ``orders.csv``, ``order_events.csv``: the story's ticket dataset
  (:mod:`a2a_nb.story.ticket_data` makes and reads them);
- ``recordings/*.jsonl``: the story's scenarios as recorded traffic, which lesson 07 and the player
  replay (``scripts/make_recordings.py`` writes them).

``recording("happy")`` is the path of ``recordings/happy.jsonl``; ``data_file("tickets.csv")`` the
path of one file.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def data_file(name: str) -> Path:
    """The path of the shipped data file ``name`` (e.g. ``"tickets.csv"``, ``"recordings/full.jsonl"``);
    ``FileNotFoundError`` names it when it is not there."""
    if not isinstance(name, str):
        raise TypeError(f"data_file() takes a file name such as 'tickets.csv', not {type(name).__name__}")
    parts = name.split("/")
    if not name or name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"data_file() takes a name inside the package's data folder, not {name!r}")
    resource = files(__name__)
    for part in parts:
        resource = resource / part
    if not isinstance(resource, Path):  # e.g. a zipped install: the kit reads its data from a folder
        raise FileNotFoundError(f"a2a_nb's data is not in a folder ({resource}): install the package unzipped")
    if not resource.is_file():
        raise FileNotFoundError(f"{resource} is missing from the installed a2a_nb package: reinstall it")
    return resource


def recordings_dir() -> Path:
    """The folder of the shipped recordings (``recordings/*.jsonl``)."""
    return data_file("recordings/full.jsonl").parent


def recording(name: str) -> Path:
    """The path of the shipped recording ``name``: ``"happy"`` or ``"happy.jsonl"`` (see ``recordings_dir()``)."""
    if not isinstance(name, str):
        raise TypeError(f"recording() takes a scenario name such as 'happy', not {type(name).__name__}")
    return data_file(f"recordings/{name if name.endswith('.jsonl') else name + '.jsonl'}")


def recording_names() -> list[str]:
    """The shipped recordings' names, e.g. ``['full', 'handover', ...]``."""
    return sorted(p.stem for p in recordings_dir().glob("*.jsonl"))
