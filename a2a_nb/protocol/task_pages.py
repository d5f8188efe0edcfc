"""ListTasks paging: which tasks a ``pageToken`` and ``pageSize`` name, and the token of the next page.

A2A v1.0 ListTasks (params ``pageSize`` 1-100, default 50, and ``pageToken``; the result's
``nextPageToken`` is ``""`` on the last page); the MQTT binding carries them unchanged (Profile:
Request/Reply Mapping).

Who sends what: any client that may publish on an agent's request topic chooses both values, so
both are untrusted. A token this agent issues is the offset of the page's first task in ASCII
decimal digits (``"0"`` or ``[1-9][0-9]*``, at most 9 digits). Any other string is refused with
-32602 (``"-2"``, ``"abc"``, ``" 3"``, ``"+3"``, ``"03"``, ``"3_0"``, Arabic-Indic digits,
``"9" * 5000``), never read as a slice of the list; a well-formed offset past the end is an empty
last page. A ``pageSize`` above 100 is -32602 too, so one request never costs more than 100 tasks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Generic, Sequence, TypeVar

from . import errors

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
_OFFSET = re.compile(r"0|[1-9][0-9]{0,8}", re.ASCII)

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items and what the ListTasks result says about it."""

    items: list[T]
    next_page_token: str
    page_size: int
    total_size: int


def page_offset(page_token: Any) -> int:
    """The offset a token names: ``None`` or ``""`` is the first page; -32602 for any token this
    agent never issues."""
    if page_token is None or page_token == "":
        return 0
    if not isinstance(page_token, str) or _OFFSET.fullmatch(page_token) is None:
        raise errors.invalid_params("pageToken is not one this agent issued")
    return int(page_token)


def page_size(value: Any) -> int:
    """``pageSize`` within 1..100 (``None``: 50); -32602 otherwise."""
    if value is None:
        return DEFAULT_PAGE_SIZE
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PAGE_SIZE:
        raise errors.invalid_params(f"pageSize must be an integer from 1 to {MAX_PAGE_SIZE}")
    return value


def page(items: Sequence[T], page_token: Any = None, size: Any = None) -> Page[T]:
    """The page of ``items`` that ``page_token`` names, ``size`` items long (A2A v1.0 ListTasks)."""
    start, n = page_offset(page_token), page_size(size)
    end = start + n
    return Page(list(items[start:end]), str(end) if end < len(items) else "", n, len(items))
