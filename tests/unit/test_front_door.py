"""The package's front door: ``from a2a_nb import ...`` gives the names a lesson needs, each loaded on
first use, so ``import a2a_nb`` stays light."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import a2a_nb
from a2a_nb.notebook.tap import correlation_text, request_row
from a2a_nb.protocol.packet import MqttMessage


def test_the_names_the_issue_names_import_from_the_package():
    from a2a_nb import A2AError, Recorder, Requester, Responder, load_traffic, stop_all
    from a2a_nb.agents.requester import Requester as requester_class
    from a2a_nb.agents.responder import Responder as responder_class
    from a2a_nb.protocol.errors import A2AError as error_class
    from a2a_nb.traffic.frame import load_traffic as loader
    from a2a_nb.traffic.recorder import Recorder as recorder_class

    assert (Requester, Responder, A2AError, Recorder, load_traffic) == (
        requester_class, responder_class, error_class, recorder_class, loader)
    assert callable(stop_all)


def test_every_listed_name_resolves_and_is_listed_by_dir():
    for name in a2a_nb.__all__:
        assert getattr(a2a_nb, name) is not None, name
    assert set(a2a_nb.__all__) <= set(dir(a2a_nb))


def test_an_unknown_name_is_an_attribute_error_that_names_it():
    with pytest.raises(AttributeError, match="no attribute 'Requestor'"):
        a2a_nb.Requestor  # noqa: B018  (a typo a learner makes)


def test_importing_the_package_loads_no_heavy_library():
    code = ("import sys, a2a_nb; heavy = sorted({'pandas', 'matplotlib', 'starlette', 'uvicorn', 'ipywidgets', "
            "'a2a'} & {m.split('.')[0] for m in sys.modules}); print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_name_loads_its_module_on_first_use_only():
    code = ("import sys, a2a_nb; before = 'a2a_nb.traffic.frame' in sys.modules; a2a_nb.load_traffic; "
            "print(before, 'a2a_nb.traffic.frame' in sys.modules, 'load_traffic' in vars(a2a_nb))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True"]


# -- the tap's rows: a peer's request is untrusted ------------------------------------------------------
def _msg(payload, topic="$a2a/v1/request/acme/support/ticket-desk", correlation=b"corr-1") -> MqttMessage:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return MqttMessage(topic, data, correlation_data=correlation)


def test_a_request_becomes_one_row_with_its_identifiers():
    row = request_row(_msg({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                            "params": {"message": {"messageId": "m-1", "taskId": "t-1", "contextId": "c-1"}}}))
    assert row == {"to": "ticket-desk", "topic": "$a2a/v1/request/acme/support/ticket-desk", "method": "SendMessage",
                   "messageId": "m-1", "Task.id": "t-1", "contextId": "c-1", "Correlation Data": "corr-1"}


def test_a_get_task_names_its_task_from_params_id_and_a_pool_request_its_pool():
    row = request_row(_msg({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "t-9"}},
                           topic="$a2a/v1/request/acme/support/pool/analysts"))
    assert (row["to"], row["Task.id"], row["messageId"]) == ("pool:analysts", "t-9", "")


@pytest.mark.parametrize("payload, why", [
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "no method and params object"),
    (b'{"method": "SendMessage", "params": "x"}', "no method and params object"),
    (b'{"params": {}}', "no method and params object"),
    (b"[" * 100 + b"]" * 100, "nested more than 64 levels"),
])
def test_a_payload_that_is_not_a_request_is_a_row_that_says_so(payload, why):
    row = request_row(_msg(payload))
    assert row["method"].startswith("(not a JSON-RPC request: ") and why in row["method"], row["method"]
    assert row["Task.id"] == ""


def test_texts_from_a_peer_are_escaped_and_cut():
    row = request_row(_msg({"method": "Send\x1b[2J" + "x" * 500, "params": {"message": {"messageId": "\x07"}}},
                           correlation=b"\x00\x01"))
    assert "\x1b" not in row["method"] and "\\x1b" in row["method"] and len(row["method"]) <= 80
    assert row["messageId"] == "\\x07" and row["Correlation Data"] == "0x0001"


def test_correlation_data_is_text_when_it_is_printable_ascii_else_hex():
    assert correlation_text(b"9f1c-abc") == "9f1c-abc"
    assert correlation_text(b"\xff\x00") == "0xff00"  # as every view shows bytes that are not text
    assert correlation_text(None) == "" and correlation_text(b"") == ""
