"""Every builder's output is a valid A2A v1.0 payload for the official a2a-sdk types (strict)."""
import pytest

from a2a_nb.protocol import cards as C
from a2a_nb.protocol.card_schema import card_problems
from a2a_nb.protocol import jsonrpc as J
from a2a_nb.protocol import messages as M
from a2a_nb.protocol import states as S
from a2a_nb.protocol.ids import IdSource
from tests.sdk_check import KINDS, SdkValidationError, assert_valid, parse

ids = IdSource(seed=4821)
TASK_ID, CONTEXT_ID = ids.task_id(), ids.context_id()


def user_msg(parts="Why is TCK-4821 not updating after checkout?"):
    return M.user_message(parts, message_id=ids.message_id("TCK-4821"), task_id=TASK_ID,
                          context_id=CONTEXT_ID)


def full_artifact():
    return M.artifact("rca-1", ["Root cause: stale cache", M.data_part({"confidence": 0.9})],
                      name="RCA", description="Root-cause analysis", metadata={"ticket": "TCK-4821"},
                      extensions=["urn:x"])


def full_task():
    return M.task(TASK_ID, CONTEXT_ID,
                  M.task_status(S.COMPLETED, M.agent_message("done", message_id="m-done")),
                  artifacts=[full_artifact()], history=[user_msg()], metadata={"k": "v"})


PARTS = {
    "text": M.text_part("hello", "text/plain", {"lang": "en"}),
    "data": M.data_part({"ticket": "TCK-4821", "lines": [1, 2]}, "application/json"),
    "data_scalar": M.data_part(42),
    "raw": M.raw_part(b"\x89PNG\r\n\x1a\n\x00", "image/png", "logo.png"),
    "url": M.url_part("https://acme.example/logs/4821.txt", "text/plain", "4821.txt"),
}


@pytest.mark.parametrize("name", sorted(PARTS))
def test_each_part_kind(name):
    assert_valid("Part", PARTS[name])
    assert_valid("Message", M.agent_message([PARTS[name]], message_id="m"))


def test_message_full_and_minimal():
    assert_valid("Message", M.message("x", message_id="m"))
    assert_valid("Message", M.message(list(PARTS.values()), role="ROLE_AGENT", message_id="m",
                                      task_id=TASK_ID, context_id=CONTEXT_ID,
                                      reference_task_ids=[ids.task_id()], metadata={"a": 1},
                                      extensions=["urn:ext"]))


@pytest.mark.parametrize("state", sorted(S.ALL_STATES))
def test_status_and_task_in_every_state(state):
    st = M.task_status(state)
    assert_valid("TaskStatus", st)
    assert_valid("Task", M.task(TASK_ID, CONTEXT_ID, st))
    assert_valid("TaskStatusUpdateEvent", M.status_update(TASK_ID, CONTEXT_ID, st, {"seq": 1}))


def test_task_artifact_and_events():
    assert_valid("Artifact", full_artifact())
    assert_valid("Artifact", M.artifact("a", "x"))
    assert_valid("Task", full_task())
    for append in (False, True):
        for last in (False, True):
            assert_valid("TaskArtifactUpdateEvent",
                         M.artifact_update(TASK_ID, CONTEXT_ID, full_artifact(), append, last, {"n": 1}))


def test_stream_responses():
    items = [
        M.stream_task(full_task()),
        M.stream_message(M.agent_message("hi", message_id="m", task_id=TASK_ID, context_id=CONTEXT_ID)),
        M.stream_status(M.status_update(TASK_ID, CONTEXT_ID, "working")),
        M.stream_artifact(M.artifact_update(TASK_ID, CONTEXT_ID, full_artifact(), last_chunk=True)),
    ]
    for item in items:
        assert_valid("StreamResponse", item)
        assert M.stream_kind(item) in ("task", "message", "statusUpdate", "artifactUpdate")


def test_send_message_response_both_forms():
    assert_valid("SendMessageResponse", M.send_message_result(full_task()))
    assert_valid("SendMessageResponse", M.send_message_result(M.agent_message("hi", message_id="m")))


def test_request_params():
    cfg = M.send_message_configuration(["text/plain", "application/json"], 10, True)
    assert_valid("SendMessageConfiguration", cfg)
    assert_valid("SendMessageRequest", M.send_message_params(user_msg()))
    assert_valid("SendMessageRequest", M.send_message_params(user_msg(), cfg, {"trace": "x"}))
    assert_valid("GetTaskRequest", M.get_task_params(TASK_ID))
    assert_valid("GetTaskRequest", M.get_task_params(TASK_ID, 3))
    assert_valid("CancelTaskRequest", M.cancel_task_params(TASK_ID, {"reason": "user"}))
    assert_valid("SubscribeToTaskRequest", M.subscribe_task_params(TASK_ID))
    assert_valid("ListTasksRequest", M.list_tasks_params())
    assert_valid("ListTasksRequest", M.list_tasks_params(CONTEXT_ID, "working", 20, "p2", 1, True))


def test_params_match_method_types():
    for method, params in [(J.SEND_MESSAGE, M.send_message_params(user_msg())),
                           (J.SEND_STREAMING_MESSAGE, M.send_message_params(user_msg())),
                           (J.GET_TASK, M.get_task_params(TASK_ID)),
                           (J.CANCEL_TASK, M.cancel_task_params(TASK_ID)),
                           (J.LIST_TASKS, M.list_tasks_params(status="completed")),
                           (J.SUBSCRIBE_TO_TASK, M.subscribe_task_params(TASK_ID))]:
        assert_valid(J.PARAMS_TYPE[method], J.request(method, params, 1)["params"])


def test_list_tasks_result():
    assert_valid("ListTasksResponse",
                 M.list_tasks_result([full_task()], next_page_token="p2", page_size=1, total_size=3))
    # The SDK flags proto3 zero values of REQUIRED fields: the last page ("") needs the escape hatch.
    last = M.list_tasks_result([full_task()], page_size=1, total_size=1)
    with pytest.raises(SdkValidationError, match="next_page_token"):
        assert_valid("ListTasksResponse", last)
    assert_valid("ListTasksResponse", last, ignore_required=("next_page_token",))
    empty = M.list_tasks_result([], page_size=50, total_size=0)
    assert_valid("ListTasksResponse", empty,
                 ignore_required=("tasks", "next_page_token", "total_size"))


def test_agent_cards():
    skills = [C.skill("ticket-rca", "Ticket RCA", "Root-cause analysis", ["tickets", "rca"],
                      examples=["Analyse TCK-4821"], input_modes=["text/plain"],
                      output_modes=["text/plain", "application/json"])]
    minimal = C.agent_card("Ticket desk", "Analyses tickets", "1.0.0", "acme", "support",
                           "ticket-desk", skills)
    assert_valid("AgentCard", minimal)
    secured = C.agent_card(
        "Ticket desk", "Analyses tickets", "1.0.0", "acme", "support", "ticket-desk", skills,
        provider=C.provider("ACME", "https://acme.example"),
        security_schemes={
            "bearer": C.bearer_scheme("JWT from the ACME IdP"),
            "oauth": C.oauth2_scheme("https://idp.acme.example/token", {"tickets.read": "Read tickets"},
                                     description="client credentials"),
            "oauth_code": C.oauth2_scheme("https://idp/token", {"openid": "id"},
                                          flow="authorization_code",
                                          authorization_url="https://idp/auth",
                                          refresh_url="https://idp/refresh"),
            "oidc": C.openid_connect_scheme("https://idp/.well-known/openid-configuration"),
        },
        security_requirements=[C.requirement("oauth", ["tickets.read"]), C.requirement("bearer")],
        documentation_url="https://acme.example/docs", broker_url="mqtt://localhost:1883",
        icon_url="https://acme.example/icon.png",
    )
    assert_valid("AgentCard", secured)
    for name, scheme in secured["securitySchemes"].items():
        assert_valid("SecurityScheme", scheme)
    for r in secured["securityRequirements"]:
        assert_valid("SecurityRequirement", r)
    assert card_problems(secured) == []


def test_checker_knows_the_kinds_other_suites_use():
    for kind in ("Message", "Task", "AgentCard", "StreamResponse", "SendMessageRequest",
                 "GetTaskRequest", "CancelTaskRequest", "ListTasksRequest",
                 "SubscribeToTaskRequest", "ListTasksResponse", "TaskStatusUpdateEvent",
                 "TaskArtifactUpdateEvent", "SendMessageResponse"):
        assert kind in KINDS
    with pytest.raises(KeyError, match="unknown kind"):
        assert_valid("Nope", {})


# --- the checker really is strict ----------------------------------------------------------------

@pytest.mark.parametrize(
    "kind, payload, match",
    [
        ("Message", dict(M.message("x", message_id="m"), kind="message"), "kind"),  # v0.3 leftover
        ("Message", dict(M.message("x", message_id="m"), role="user"), "role"),  # bad enum
        ("Message", {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text", "text": "x"}]}, "kind"),
        ("Message", {"messageId": "m", "role": "ROLE_USER", "parts": []}, "parts"),  # required list
        ("Message", {"role": "ROLE_USER", "parts": [{"text": "x"}]}, "message_id"),  # required
        ("Part", {"text": "x", "data": {}}, "oneof|content"),  # two members of a oneof
        ("Part", {"raw": "not base64!!"}, "base64"),  # the trap: would parse as empty bytes
        ("Task", dict(full_task(), status={"state": "TASK_STATE_DONE"}), "TASK_STATE_DONE"),
        ("Task", dict(full_task(), status={"state": "working"}), "working"),
        ("Task", {"id": "t", "contextId": "c"}, "status"),
        ("TaskStatusUpdateEvent", dict(M.status_update("t", "c", "working"), final=True), "final"),
        ("TaskStatusUpdateEvent", {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}, "context_id"),
        ("TaskStatus", {"state": "TASK_STATE_WORKING", "timestamp": "yesterday"}, "timestamp|Timestamp|yesterday"),
        ("StreamResponse", {"task": full_task(), "message": M.message("x", message_id="m")}, "oneof|payload"),
        ("SendMessageRequest", {"message": M.message("x", message_id="m"),
                                "configuration": {"blocking": True}}, "blocking"),  # v0.3 field
        ("AgentCard", dict(C.agent_card("n", "d", "1", "a", "b", "c", [C.skill("s", "S", "d", ["t"])]),
                           security=[]), "security"),
        ("AgentCard", {"name": "n"}, "required"),
        ("AgentSkill", {"id": "s", "name": "S", "description": "d", "tags": []}, "tags"),
    ],
)
def test_checker_rejects_broken_payloads(kind, payload, match):
    with pytest.raises(SdkValidationError, match=match):
        assert_valid(kind, payload)


def test_parse_returns_the_proto_message():
    msg = parse("Task", full_task())
    assert msg.id == TASK_ID
    from a2a.types import TaskState

    assert TaskState.Name(msg.status.state) == S.COMPLETED
    assert len(msg.artifacts) == 1 and msg.history[0].parts[0].text.startswith("Why")
