"""The story the lessons tell: ticket TCK-4821 (an order status that does not update) travels from
a coordinator to a ticket desk and its analysts.

The cast (:mod:`a2a_nb.story.cast`):

* the **coordinator**, a ``Requester``: discovers the desk by skill, sends the ticket, answers its
  question on the same task, follows the stream of the report (:mod:`a2a_nb.story.scenarios`);
* the **ticket desk** (``TicketDesk``), the only agent with a card (``acme/support/ticket-desk``): it
  may hand a ticket to one of its **analysts** ``analyst-1`` .. ``analyst-N`` (no card; bounded slots),
  which share its task runtime (Profile: Optional Task Handover);
* **analyst pools** (``analyst_pool``): members ``analyst-{pool}-1`` .. consuming a pool topic
  (Profile: Optional Shared Subscription Dispatch);
* an **echo** agent, the smallest responder (``echo_card``, ``echo_handler``).

The analysts' real work is :mod:`a2a_nb.story.analysis` (pure) on the small dataset of
:mod:`a2a_nb.story.ticket_data` (``a2a_nb/data/*.csv``, shipped in the package).
"""
