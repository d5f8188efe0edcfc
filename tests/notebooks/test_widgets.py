"""The lessons' widgets without a browser: set traits, click buttons, read the rendered HTML.

In plain pytest ipywidgets has no kernel (a dummy comm), so widget logic runs as it would in a
notebook minus the drawing. Everything talks to the real Mosquitto of ``tests/conftest.py``; each
test uses a unit of its own so cards left by other tests never show up in its tables.
"""
from __future__ import annotations

import uuid

import pytest

from tests.waiting import wait_until

from a2a_nb.agents import Requester, Responder
from a2a_nb.agents.discovery import Discovery
from a2a_nb.notebook import DiscoveryBrowser, SendForm, discovery_browser, send_form
from a2a_nb.notebook.widgets import WIDGET_MIME, has_widget_frontend, parse_tags
from a2a_nb.protocol.retry import RetryProfile
from a2a_nb.story.cast import TicketDesk, echo_card, echo_handler
from a2a_nb.story.scenarios import REPRO_TEXT, TICKET_TEXT

FAST = RetryProfile(reply_first_timeout_s=0.3, stream_idle_timeout_s=2.0, max_attempts=1, backoff_s=(0.01,))


@pytest.fixture
def cast(broker_url, unit):
    """An echo agent and a ticket desk (card agent) in the test's own unit."""
    echo = Responder("echo", echo_handler, unit=unit, card=echo_card(unit=unit), broker=broker_url)
    desk = TicketDesk(unit=unit, broker=broker_url, handover="first-reply", seed=7, pace=0.01)
    yield {"echo": echo, "desk": desk}
    desk.stop()
    echo.stop()


@pytest.fixture
def disco(broker_url, unit, cast):
    d = Discovery(unit=unit, agent=f"disco-{unit}", broker=broker_url)
    assert d.wait_for("echo", status="online").online
    assert d.wait_for("ticket-desk", status="online").online
    yield d
    d.close()


def test_parse_tags():
    assert parse_tags(" ticket, root-cause-analysis  support") == ["ticket", "root-cause-analysis", "support"]
    assert parse_tags("") == []


def test_browser_lists_every_card_with_its_presence(disco):
    browser = discovery_browser(disco)
    html = browser.table.value
    assert "<code>echo</code>" in html and "<code>ticket-desk</code>" in html
    assert html.count(">online</span>") == 2
    assert "2 of 2 agent(s)" in html
    assert "root-cause-analysis" in browser.known.value and "echo" in browser.known.value
    assert [e.agent for e in browser.entries()] == ["echo", "ticket-desk"]


def test_filter_by_skill_tag_rerenders_the_table(disco):
    browser = DiscoveryBrowser(disco)
    before = browser.updates
    browser.filter.value = "root-cause-analysis"
    assert browser.updates == before + 1
    assert "<code>ticket-desk</code>" in browser.table.value
    assert "<code>echo</code>" not in browser.table.value
    assert "<b>root-cause-analysis</b>" in browser.table.value  # the matching tag is highlighted
    assert "1 of 2 agent(s)" in browser.table.value

    browser.filter.value = "ticket, support"  # every tag must be on one skill
    assert [e.agent for e in browser.entries()] == ["ticket-desk"]
    browser.filter.value = "ticket echo"
    assert browser.entries() == []
    assert "no agent matches" in browser.table.value
    browser.filter.value = ""
    assert len(browser.entries()) == 2


def test_table_follows_presence_live(disco, cast):
    browser = DiscoveryBrowser(disco, tags="echo")
    echo = cast["echo"]

    def echo_row_says(text):
        return text in browser.table.value

    echo.crash()  # the broker publishes the last will: offline, source lwt
    assert wait_until(lambda: echo_row_says(">offline</span>") and echo_row_says("(lwt)")), browser.table.value
    echo.start()
    assert wait_until(lambda: echo_row_says(">online</span>") and echo_row_says("(agent)")), browser.table.value
    echo.stop()  # graceful: offline, source agent
    assert wait_until(lambda: echo_row_says(">offline</span>") and not echo_row_says("(lwt)")), browser.table.value


def test_new_agent_appears_and_previous_callback_still_runs(broker_url, unit, disco):
    seen = []
    disco.on_change = lambda agent, entry: seen.append(agent)
    browser = DiscoveryBrowser(disco)
    extra = Responder("echo-2", echo_handler, unit=unit, card=echo_card(unit=unit, agent="echo-2"), broker=broker_url)
    try:
        assert wait_until(lambda: "<code>echo-2</code>" in browser.table.value), browser.table.value
        assert "echo-2" in seen
        browser.close()
        assert disco.on_change is not browser._on_change
        count = browser.updates
        extra.stop()
        assert wait_until(lambda: disco.get("echo-2") is not None and not disco.get("echo-2").online)
        assert browser.updates == count  # closed: no more renders
    finally:
        extra.stop()


def test_browser_without_a_frontend_shows_plain_html(disco):
    assert not has_widget_frontend()
    bundle = DiscoveryBrowser(disco)._repr_mimebundle_()
    assert WIDGET_MIME not in bundle
    assert "<table>" in bundle["text/html"] and "<code>ticket-desk</code>" in bundle["text/html"]
    assert bundle["text/plain"].startswith("<DiscoveryBrowser 2 agent(s) shown")


def test_send_form_sends_to_echo_and_shows_the_message(broker_url, unit, cast):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=1)
    form = send_form(req, ["echo", "ticket-desk"])
    assert form.agent.value == "echo" and form.follow_up.disabled
    form.text.value = "hello widgets"
    form.button.click()
    assert form.wait(10)
    assert form.lines[0] == "→ SendMessage to echo: “hello widgets”"
    assert form.lines[1] == "← echo: message “echo: hello widgets”"
    assert [o["text"] for o in form.view.outputs] == [line + "\n" for line in form.lines]
    assert not form.button.disabled and form.follow_up.disabled and form.errors == 0


def test_send_form_streamed_echo_ends_on_its_message_not_an_unknown_task(broker_url, unit, cast):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=4)
    form = send_form(req, ["echo"])
    form.stream.value = True
    form.text.value = "hello stream"
    form.button.click()
    assert form.wait(10)
    assert form.lines[-1] == "■ stream ended: message reply (the agent made no task), 1 event(s)", form.lines
    assert not any("unknown" in line for line in form.lines)


def test_send_form_streams_to_the_desk_and_continues_the_task(broker_url, unit, cast):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=2)
    form = SendForm(req, ["echo", "ticket-desk"])
    form.agent.value = "ticket-desk"
    form.stream.value = True
    form.text.value = TICKET_TEXT
    form.button.click()
    assert form.wait(15)
    assert any(line.startswith("↪ handover: follow-ups for this task go to analyst-") for line in form.lines), form.lines
    assert form.lines[-1].startswith("■ stream ended: task input-required"), form.lines
    assert not form.follow_up.disabled  # the task waits for input: the form offers to continue it
    task_id = form.last_task["id"]

    form.clear()
    form.follow_up.value = True
    form.text.value = REPRO_TEXT
    form.button.click()
    assert form.wait(15)
    assert form.lines[0].startswith(f"→ continue task {task_id[:8]}… on analyst-"), form.lines
    assert any("artifact tck-4821-report" in line and "(last chunk)" in line for line in form.lines), form.lines
    assert form.lines[-1].startswith("■ stream ended: task completed"), form.lines
    assert form.last_task["id"] == task_id
    assert form.follow_up.disabled and form.follow_up.value is False


def test_send_form_stream_to_echo_ends_on_its_message_not_an_unknown_task(broker_url, unit, cast):
    """Echo answers a stream with one Message and no task: the form says so (it said "task unknown")."""
    req = Requester("form-user", unit=unit, broker=broker_url, seed=8)
    form = SendForm(req, ["echo"], text="hello stream")
    form.stream.value = True
    form.button.click()
    assert form.wait(15)
    assert form.lines == ["→ SendStreamingMessage to echo: “hello stream”", "← echo: message “echo: hello stream”",
                          "■ stream ended: message reply (the agent made no task), 1 event(s)"]
    assert form.follow_up.disabled and form.errors == 0


def test_send_form_blocking_send_to_the_desk_reports_the_handover(broker_url, unit, cast):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=3)
    form = SendForm(req, ["ticket-desk"], text=TICKET_TEXT)
    form.button.click()
    assert form.wait(15)
    assert form.lines[1].startswith("← analyst-") and "task input-required" in form.lines[1], form.lines
    assert form.lines[2].startswith("↪ replies carry a2a-responder-agent-id=analyst-"), form.lines


def test_send_form_without_text_sends_nothing(broker_url, unit):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=4)
    form = SendForm(req, ["echo"])
    form.button.click()
    assert not form.busy
    assert form.lines == ["type a message first"]
    assert req.stats.sent == 0


def test_send_form_shows_errors_instead_of_raising(broker_url, unit):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=5, retry=FAST)
    form = SendForm(req, ["nobody-home"], text="anyone?")
    form.button.click()
    assert form.wait(10)
    assert form.errors == 1
    # no card and nobody listening: the requester says so at once (UnknownAgent, a RequestTimeout)
    assert form.lines[-1].startswith("✗ UnknownAgent: no card for nobody-home"), form.lines
    assert not form.button.disabled


def test_send_form_offline_snapshot(broker_url, unit):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=6)
    form = SendForm(req, ["echo"])
    form.log("→ SendMessage to echo: “<b>”")
    bundle = form._repr_mimebundle_()
    assert WIDGET_MIME not in bundle
    assert "&lt;b&gt;" in bundle["text/html"]


def test_send_form_needs_an_agent(broker_url, unit):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=7)
    with pytest.raises(ValueError, match="at least one agent"):
        SendForm(req, [])


def test_send_form_takes_its_agents_from_a_discovery(broker_url, unit, disco):
    req = Requester("form-user", unit=unit, broker=broker_url, seed=8)
    form = SendForm(req, disco)
    assert list(form.agent.options) == ["echo", "ticket-desk"]
