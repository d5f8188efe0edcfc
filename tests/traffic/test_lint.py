"""Each lint rule on a hand-made recording that breaks it, and clean traffic that breaks none."""
from __future__ import annotations

import pytest

from a2a_nb.protocol import jsonrpc, messages, states
from a2a_nb.traffic.lint import RULES, check_traffic, exit_code, format_findings, lint_file, main_lint, summary
from a2a_nb.traffic.records import write_records

from ._traffic import C1, C2, CARD, REPLY, T1, T2, Traffic, clean_conversation, uuid4


def rules_of(tr: Traffic) -> dict[str, list[int]]:
    f = check_traffic(tr.records)
    out: dict[str, list[int]] = {}
    for rule, i in zip(f["rule"], f["i"]):
        out.setdefault(rule, []).append(int(i))
    return out


def only(tr: Traffic, rule: str) -> list[int]:
    """The rows flagged by ``rule``; every other rule must stay silent."""
    found = rules_of(tr)
    assert set(found) == {rule}, found
    return found[rule]


def test_clean_hand_made_conversation_has_no_findings():
    f = check_traffic(clean_conversation().records)
    assert f.empty, format_findings(f)
    assert list(f.columns) == ["rule", "level", "section", "i", "explanation"]


def test_every_rule_is_documented():
    for r in RULES.values():
        assert r.level in ("MUST", "SHOULD") and r.section and r.summary


def test_each_rule_is_one_registered_function_a_learner_can_call():
    from a2a_nb.traffic.frame import load_traffic
    from a2a_nb.traffic.lint import _CHECKS, Context, fresh_correlation, messages_of, qos1

    assert [r.id for r, _, _ in _CHECKS] == list(RULES)
    assert len({check for _, _, check in _CHECKS}) == len(RULES)
    tr = Traffic()
    tr.send("ticket-desk", T1, C1, corr="c1", qos=0)
    tr.send("ticket-desk", T1, C1, corr="c1")
    first, retry = messages_of(load_traffic(tr.records))
    ctx = Context(schema=False, answered=set())
    assert [text.split(":")[0] for text in qos1(first, ctx)] == ["request to ticket-desk published with QoS 0"]
    assert list(fresh_correlation(retry, ctx)) == []  # the context has not seen the first request yet
    ctx.remember(first)
    assert [text[:40] for text in fresh_correlation(retry, ctx)] == ["Correlation Data 0xc1 was already used b"]


def test_request_without_response_topic_or_correlation():
    tr = Traffic()
    tr.send("ticket-desk", T1, C1, reply=None)
    tr.send("ticket-desk", T2, C2, corr="")
    assert only(tr, "request-reply-path") == [0, 1]


def test_reply_topic_pattern_is_a_should():
    tr = Traffic()
    tr.send("ticket-desk", T1, C1, reply="$a2a/v1/event/acme/support/coordinator")
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["reply-topic-pattern"] and list(f["level"]) == ["SHOULD"]


def test_reply_with_unknown_or_missing_correlation():
    tr = clean_conversation()
    i = tr.result("ffff", "rpc-x", Traffic.task(T1, C1))
    j = tr.result(None, "rpc-y", Traffic.task(T1, C1))
    assert only(tr, "reply-correlation") == [i, j]


def test_reply_on_another_topic_than_the_response_topic():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    i = tr.result(c, r, Traffic.task(T1, C1), topic="$a2a/v1/reply/acme/support/coordinator/other")
    assert only(tr, "reply-topic") == [i]


def test_jsonrpc_id_must_match():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    i = tr.result(c, "not-the-id", Traffic.task(T1, C1))
    assert only(tr, "jsonrpc-id") == [i]


def test_first_send_needs_a_uuid4_task_id():
    tr = Traffic()
    tr.send("ticket-desk", "task-1", C1)
    msg = messages.user_message("x", message_id="m", context_id=C2)  # no taskId at all
    tr.request("ticket-desk", jsonrpc.SEND_MESSAGE, {"message": msg})
    assert only(tr, "task-id-uuid4") == [0, 1]


def test_reply_must_echo_the_task_id():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    i = tr.result(c, r, Traffic.task(T2, C1))
    assert only(tr, "task-id-stable") == [i]


def test_context_id_property_and_echo():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, props=[("a2a-context-id", C2)])
    j = tr.result(c, r, Traffic.task(T1, C2))
    assert only(tr, "context-id") == [0, j]


def test_correlation_reused_by_two_requests():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1))
    c2, r2 = tr.request("ticket-desk", jsonrpc.GET_TASK, messages.get_task_params(T1), corr=c)
    tr.result(c2, r2, Traffic.bare_task(T1, C1))
    assert only(tr, "fresh-correlation") == [2]


def test_card_not_retained_and_without_status():
    tr = Traffic()
    tr.card(retain=False)
    assert only(tr, "card-retained") == [0]
    tr = Traffic()
    tr.card(status=None)
    tr.card("desk-2", status="sleeping")
    f = check_traffic(tr.records)
    assert set(f["rule"]) == {"card-status"} and set(f["level"]) == {"SHOULD"} and len(f) == 2


def test_card_schema_is_checked_with_the_sdk():
    tr = Traffic()
    tr.card(payload={**CARD, "skills": [{"id": "x", "name": "x", "description": "x"}]})  # tags missing
    tr.card("desk-2", payload={**CARD, "color": "blue"})  # unknown field
    tr.card("desk-3", payload={**CARD, "supportedInterfaces": []})  # required and must not be empty
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["card-schema"] * 3
    assert "tags" in f["explanation"][0] and "color" in f["explanation"][1]
    assert "supported_interfaces" in f["explanation"][2]


def test_requests_replies_and_events_are_not_retained():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, retain=True)
    tr.result(c, r, Traffic.task(T1, C1), retain=True)
    tr.add("$a2a/v1/event/acme/support/ticket-desk", {"hello": 1}, retain=True, qos=0)
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["not-retained"] * 3 and set(f["level"]) == {"SHOULD"}


def test_qos0_requests_and_replies():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, qos=0)
    tr.result(c, r, Traffic.task(T1, C1), qos=0)
    tr.add("$a2a/v1/event/acme/support/ticket-desk", {"hello": 1}, qos=0)  # events may use QoS 0
    c, r = tr.send("ticket-desk", T2, C2, qos=2)
    tr.result(c, r, Traffic.task(T2, C2), qos=2)
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["qos1"] * 4 and list(f["i"]) == [0, 1, 3, 4] and set(f["level"]) == {"SHOULD"}
    assert "PUBREC" in f["explanation"][2]


def test_nothing_after_a_stream_final_state():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, Traffic.status(T1, C1, states.WORKING, "2025-01-02T03:04:05.001Z"))
    tr.result(c, r, Traffic.status(T1, C1, states.INPUT_REQUIRED, "2025-01-02T03:04:05.002Z"))  # stream-final
    i = tr.result(c, r, Traffic.status(T1, C1, states.WORKING, "2025-01-02T03:04:05.003Z"))
    tr.records.append(dict(tr.records[2]))  # a duplicate delivery of the final item is QoS 1 noise
    assert only(tr, "after-stream-final") == [i]


def test_nothing_after_a_unary_reply_or_an_error():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1, states.WORKING))
    i = tr.result(c, r, Traffic.task(T1, C1, states.COMPLETED))
    c, r = tr.send("ticket-desk", T2, C2, stream=True)
    tr.error(c, r, {"code": -32603, "message": "Internal error"})
    j = tr.result(c, r, Traffic.status(T2, C2, states.WORKING))
    assert only(tr, "after-stream-final") == [i, j]


def test_items_of_another_publisher_after_the_final_one_are_a_should():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, Traffic.status(T1, C1, states.INPUT_REQUIRED), props=[("a2a-responder-agent-id", "analyst-1")])
    i = tr.result(c, r, messages.stream_task(messages.task(T1, C1, messages.task_status(states.SUBMITTED))))
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["stream-order"] and list(f["i"]) == [i] and list(f["level"]) == ["SHOULD"]


def _handover(tr: Traffic) -> None:
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, Traffic.status(T1, C1, states.WORKING), props=[("a2a-responder-agent-id", "analyst-1")])
    tr.result(c, r, Traffic.status(T1, C1, states.INPUT_REQUIRED), props=[("a2a-responder-agent-id", "analyst-1")])


def test_follow_up_to_the_old_agent_after_a_handover():
    tr = Traffic()
    _handover(tr)
    c, r = tr.send("ticket-desk", T1, C1, "order 991")  # should have gone to analyst-1
    tr.result(c, r, Traffic.task(T1, C1))
    assert only(tr, "follow-latest-responder") == [3]


def test_follow_up_to_the_new_agent_and_fallback_after_silence_are_fine():
    tr = Traffic()
    _handover(tr)
    c, r = tr.request("analyst-1", jsonrpc.GET_TASK, messages.get_task_params(T1))
    tr.result(c, r, Traffic.bare_task(T1, C1, states.INPUT_REQUIRED))
    tr.send("analyst-1", T1, C1, "order 991")  # no reply: analyst-1 went silent
    tr.send("analyst-1", T1, C1, "order 991")  # retry, still silent
    c, r = tr.send("ticket-desk", T1, C1, "order 991")  # fallback to the card agent: allowed
    tr.result(c, r, Traffic.task(T1, C1))
    assert rules_of(tr) == {}


def test_fallback_is_not_allowed_while_the_new_agent_answers():
    tr = Traffic()
    _handover(tr)
    c, r = tr.request("analyst-1", jsonrpc.GET_TASK, messages.get_task_params(T1))
    tr.result(c, r, Traffic.bare_task(T1, C1, states.INPUT_REQUIRED))
    c, r = tr.request("ticket-desk", jsonrpc.CANCEL_TASK, messages.cancel_task_params(T1))
    tr.result(c, r, Traffic.bare_task(T1, C1, states.CANCELED))
    assert only(tr, "follow-latest-responder") == [5]


def test_pooled_replies_carry_the_responder_id_and_follow_ups_go_direct():
    tr = Traffic()
    c, r = tr.send("pool:analysts", T1, C1)
    i = tr.result(c, r, Traffic.task(T1, C1, states.INPUT_REQUIRED))  # no a2a-responder-agent-id
    assert only(tr, "pooled-responder-id") == [i]
    tr = Traffic()
    c, r = tr.send("pool:analysts", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1, states.INPUT_REQUIRED), props=[("a2a-responder-agent-id", "worker-a")])
    c, r = tr.send("worker-a", T1, C1, "more")
    tr.result(c, r, Traffic.task(T1, C1))
    assert rules_of(tr) == {}
    c, r = tr.request("pool:analysts", jsonrpc.GET_TASK, messages.get_task_params(T1))
    tr.result(c, r, Traffic.bare_task(T1, C1), props=[("a2a-responder-agent-id", "worker-b")])
    assert rules_of(tr) == {"follow-latest-responder": [4]}


@pytest.mark.parametrize("code,marker,level", [(-32004, "request_expired", "MUST"),
                                               (-32003, "responder_unavailable", "MUST"),
                                               (-32005, "transport-protocol-error", "MUST"),
                                               (-32001, "request_expired", "SHOULD")])
def test_binding_errors_carry_the_right_marker(code, marker, level):
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    i = tr.error(c, r, {"code": code, "message": "x", "data": {"a2a_error": marker}})
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["binding-error"] and list(f["i"]) == [i] and list(f["level"]) == [level]


def test_correct_binding_errors_and_core_errors_pass():
    tr = Traffic()
    for code, name in [(-32003, "request_expired"), (-32004, "responder_unavailable"),
                       (-32005, "transport_protocol_error")]:
        c, r = tr.send("ticket-desk", uuid4(code & 0xFFFF), C1)
        tr.error(c, r, {"code": code, "message": name, "data": {"a2a_error": name}})
    c, r = tr.send("ticket-desk", T2, C2)
    tr.error(c, r, {"code": -32004, "message": "Unsupported operation"})  # core meaning, no marker
    assert rules_of(tr) == {}


def test_identifiers_in_topics_and_responder_ids():
    tr = Traffic()
    tr.add("$a2a/v1/request/acme/sup port/desk", {"jsonrpc": "2.0"}, rt=REPLY, corr="aa")
    tr.add("$a2a/v1/discovery/acme/support", CARD, retain=True, props=[("a2a-status", "online")])
    c, r = tr.send("ticket-desk", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1), props=[("a2a-responder-agent-id", "analyst/1")])
    f = check_traffic(tr.records, schema=False)
    assert list(f["rule"]) == ["identifiers"] * 3 and list(f["i"]) == [0, 1, 3]
    assert "unit_id" in f["explanation"][0] and "level" in f["explanation"][1]


def test_no_bearer_token_in_replies():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, props=[("a2a-authorization", "[redacted]")])  # fine on a request
    tr.result(c, r, Traffic.task(T1, C1), props=[("a2a-authorization", "[redacted]")])
    c, r = tr.send("ticket-desk", T2, C2)
    tr.result(c, r, Traffic.agent_message(T2, C2, "your token is Bearer eyJhbGciOi.abc"))
    assert only(tr, "no-bearer-echo") == [1, 3]


def test_an_authorization_property_in_any_letter_case_is_an_echo():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1)
    tr.result(c, r, Traffic.task(T1, C1), props=[("A2A-Authorization", "[redacted]")])
    assert only(tr, "no-bearer-echo") == [1]


def test_a_malformed_status_neither_ends_a_stream_nor_stops_the_lint():
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True)
    tr.result(c, r, {"statusUpdate": {"taskId": T1, "contextId": C1, "status": "TASK_STATE_COMPLETED"}})
    tr.result(c, r, Traffic.status(T1, C1, states.COMPLETED))
    f = check_traffic(tr.records)
    assert set(f["rule"]) == {"a2a-schema"} and list(f["i"]) == [1]  # the final item after it is no late item


def test_binary_chunks_need_the_mode_the_indicator_and_their_properties():
    props = [("a2a-event-type", "task-artifact-update"), ("a2a-task-id", T1), ("a2a-artifact-id", "blob"),
             ("a2a-chunk-seqno", "0"), ("a2a-last-chunk", "true")]
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True, props=[("a2a-artifact-mode", "binary")])
    tr.add(REPLY, raw=b"\x00\x01", corr=c, pfi=0, props=props)
    assert rules_of(tr) == {}
    tr = Traffic()
    c, r = tr.send("ticket-desk", T1, C1, stream=True)  # binary never asked for
    tr.add(REPLY, raw=b"\x00\x01", corr=c, pfi=None, props=props[:2])
    f = check_traffic(tr.records)
    assert list(f["rule"]) == ["binary-chunk"] * 3
    assert "a2a-artifact-mode" in f["explanation"][0] and "a2a-chunk-seqno" in " ".join(f["explanation"])


def test_payloads_are_checked_against_a2a_v1():
    tr = Traffic()
    bad_msg = {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "v0.3 style"}],
               "taskId": T1, "contextId": C1}
    tr.request("ticket-desk", jsonrpc.SEND_MESSAGE, {"message": bad_msg})
    tr.request("ticket-desk", "message/send", {"message": bad_msg})
    c, r = tr.send("ticket-desk", T2, C2, stream=True)
    tr.result(c, r, {"statusUpdate": {"taskId": T2, "contextId": C2, "status": {"state": "working"}}})
    tr.result(c, r, {"statusUpdate": {"taskId": T2, "contextId": C2, "status": {"state": "TASK_STATE_COMPLETED"}},
                     "final": True})
    c, r = tr.request("ticket-desk", jsonrpc.LIST_TASKS, {})
    tr.result(c, r, messages.list_tasks_result([], page_size=50, total_size=0))  # a valid empty page
    c, r = tr.send("ticket-desk", uuid4(0x77), C2)
    tr.add(REPLY, {"jsonrpc": "2.0", "id": r}, corr=c)  # neither result nor error
    found = rules_of(tr)
    assert found == {"a2a-schema": [0, 1, 3, 4, 8]}, found
    f = check_traffic(tr.records)
    text = " ".join(f["explanation"])
    assert "message/send" in text and "PascalCase" in text and "exactly one" in text


def test_schema_checks_can_be_skipped():
    tr = Traffic()
    tr.request("ticket-desk", "message/send", {"message": {"bad": 1}})
    assert check_traffic(tr.records, schema=False).empty


def test_lint_file_main_and_exit_codes(tmp_path, capsys):
    clean = tmp_path / "clean.jsonl"
    write_records(clean_conversation().records, clean)
    f, code = lint_file(str(clean))
    assert f.empty and code == 0
    assert main_lint(str(clean)) == 0
    assert "0 MUST and 0 SHOULD finding(s): OK" in capsys.readouterr().out

    tr = clean_conversation()
    tr.result("ffff", "rpc-x", Traffic.task(T1, C1), qos=0)
    bad = tmp_path / "bad.jsonl"
    write_records(tr.records, bad)
    f, code = lint_file(str(bad))
    assert code == 1 and exit_code(f) == 1
    assert main_lint(str(bad)) == 1
    out = capsys.readouterr().out
    assert "reply-correlation" in out and "FAIL" in out and "1 MUST and 1 SHOULD" in out
    assert summary(f, 3, "x").startswith("x: 3 messages, 1 MUST")

    should_only = tmp_path / "should.jsonl"
    tr = Traffic()
    tr.card(status=None)
    write_records(tr.records, should_only)
    assert lint_file(str(should_only))[1] == 0

    assert main_lint(str(tmp_path / "missing.jsonl")) == 2
    assert "no recording at" in capsys.readouterr().err
