"""ListTasks paging on a live agent: a pageToken the agent never issued is -32602, whatever it looks
like (before, ``"-2"`` was read as a slice: an empty page whose nextPageToken was ``"0"``)."""
from __future__ import annotations

import uuid

import pytest

from a2a_nb.agents import Requester, Responder
from a2a_nb.protocol import errors
from a2a_nb.protocol.errors import A2AError
from tests.integration._roles_support import FAST
from tests.helpers import uid


def echo(ctx):
    return f"echo: {ctx.text}"


@pytest.fixture
def agent_with_tasks(broker_url):
    agent = uid("desk")
    responder = Responder(agent, echo, broker=broker_url)
    req = Requester(uid("coord"), broker=broker_url, retry=FAST)
    ctx = str(uuid.uuid4())
    for i in range(3):
        req.send(agent, f"t{i}", context_id=ctx)
    yield agent, req, ctx
    req.close()
    responder.stop()


@pytest.mark.parametrize("token", ["-2", "abc", "+1", "01", "9" * 50])
def test_a_page_token_the_agent_never_issued_is_invalid_params(agent_with_tasks, token):
    agent, req, ctx = agent_with_tasks
    with pytest.raises(A2AError) as caught:
        req.list_tasks(agent, context_id=ctx, page_size=2, page_token=token)
    assert caught.value.code == errors.INVALID_PARAMS and "pageToken" in caught.value.message


def test_a_page_size_above_one_hundred_is_invalid_params_and_one_hundred_is_a_page(agent_with_tasks):
    agent, req, ctx = agent_with_tasks
    with pytest.raises(A2AError, match="pageSize"):
        req.list_tasks(agent, context_id=ctx, page_size=101)
    page = req.list_tasks(agent, context_id=ctx, page_size=100)
    assert (len(page["tasks"]), page["nextPageToken"], page["pageSize"], page["totalSize"]) == (3, "", 100, 3)
