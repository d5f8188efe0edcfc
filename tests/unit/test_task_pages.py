"""ListTasks paging (a2a_nb.protocol.task_pages): a token is one the agent issued or -32602."""
from __future__ import annotations

import pytest

from a2a_nb.protocol import errors, task_pages
from a2a_nb.protocol.errors import A2AError

TASKS = [f"t{i}" for i in range(5)]


def test_pages_walk_the_list_and_the_last_says_so():
    first = task_pages.page(TASKS, None, 2)
    assert (first.items, first.next_page_token, first.page_size, first.total_size) == (["t0", "t1"], "2", 2, 5)
    second = task_pages.page(TASKS, first.next_page_token, 2)
    last = task_pages.page(TASKS, second.next_page_token, 2)
    assert (second.items, second.next_page_token) == (["t2", "t3"], "4")
    assert (last.items, last.next_page_token) == (["t4"], "")


def test_no_token_or_an_empty_one_is_the_first_page_of_fifty():
    many = list(range(120))
    for token in (None, "", "0"):
        p = task_pages.page(many, token)
        assert (p.items, p.next_page_token, p.page_size) == (many[:50], "50", 50)


def test_an_offset_past_the_end_is_an_empty_last_page():
    p = task_pages.page(TASKS, "7", 2)
    assert (p.items, p.next_page_token, p.total_size) == ([], "", 5)


@pytest.mark.parametrize("token", ["-2", "-0", "abc", " 3", "3 ", "+3", "03", "3_0", "3.0", "\u0663", "1" * 10,
                                   "9" * 5000, 3, ["0"]])
def test_a_token_the_agent_never_issued_is_invalid_params(token):
    with pytest.raises(A2AError) as caught:
        task_pages.page(TASKS, token, 2)
    assert caught.value.code == errors.INVALID_PARAMS and "pageToken" in caught.value.message


@pytest.mark.parametrize("size", [0, -1, 101, 10**9, True, "2", 2.0])
def test_a_page_size_outside_1_to_100_is_invalid_params(size):
    with pytest.raises(A2AError) as caught:
        task_pages.page(TASKS, None, size)
    assert caught.value.code == errors.INVALID_PARAMS and "pageSize" in caught.value.message


def test_the_largest_page_is_one_hundred():
    p = task_pages.page(list(range(250)), "100", 100)
    assert (p.items[0], len(p.items), p.next_page_token) == (100, 100, "200")
