"""What an open bridge stream knows about items the broker's absence may have cost (``bridge.sse.Waiting``):
only a whole Task makes up for them, so the agent announcing itself again still triggers the recovery
after an item queued during the outage arrived first (seen under load: the stream then waited for the
10 s idle timeout instead)."""
from __future__ import annotations

from a2a_nb.bridge.sse import BrokerWatch, Waiting


def _waiting_through_an_outage() -> tuple[Waiting, list[bool]]:
    connected = [True]
    waiting = Waiting("ticket-desk", BrokerWatch(lambda: connected[0], patience_s=60.0, idle_timeout_s=10.0))
    connected[0] = False
    assert waiting.check() is not None  # a second without an item, the broker away: said in a comment
    connected[0] = True
    return waiting, connected


def test_an_item_after_the_outage_does_not_say_nothing_was_lost():
    waiting, _ = _waiting_through_an_outage()
    assert waiting.may_have_lost
    note = waiting.arrived(whole_task=False)
    assert note is not None and note.startswith("broker back after")
    assert waiting.may_have_lost, "a status update queued by the agent during the outage is no recovery"


def test_a_whole_task_does():
    waiting, _ = _waiting_through_an_outage()
    waiting.arrived(whole_task=False)
    waiting.arrived(whole_task=True)
    assert not waiting.may_have_lost


def test_items_without_an_outage_leave_nothing_to_recover():
    waiting = Waiting("ticket-desk", BrokerWatch(lambda: True, patience_s=60.0, idle_timeout_s=10.0))
    assert waiting.arrived(whole_task=False) is None and not waiting.may_have_lost
