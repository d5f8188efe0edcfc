"""The ticket analyst's real work: find why TCK-4821's order status does not update (pure).

Evidence read from ``data/``: an order is *stale* when the status its page shows is older than the
last ``STATUS_CHANGED`` event. The suspected pattern (the customer's reproduction steps): two page
reads within 30 s of the payment confirmation, after which no ``CACHE_INVALIDATED`` event follows a
later status change. Confidence compares how often stale pages follow that pattern with how often
they happen without it.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from .ticket_data import Dataset


def _t(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def _double_read(events: list[dict]) -> bool:
    confirmed = [e for e in events if e["event"] == "STATUS_CHANGED" and e["status"] == "PAYMENT_CONFIRMED"]
    if not confirmed:
        return False
    t0 = _t(confirmed[0]["at"])
    reads = [e for e in events if e["event"] == "PAGE_VIEW" and 0 <= (_t(e["at"]) - t0).total_seconds() <= 30]
    return len(reads) >= 2


def analyse(ds: Dataset, ticket_id: str, reproduction_steps: str = "") -> dict:
    ticket = ds.ticket(ticket_id)
    by_order: dict[str, list[dict]] = defaultdict(list)
    for e in ds.events:
        by_order[e["order_id"]].append(e)
    stale, exposed, exposed_stale, unexposed, unexposed_stale = [], 0, 0, 0, 0
    for o in ds.orders:
        evs = sorted(by_order[o["order_id"]], key=lambda e: e["at"])
        changes = [e for e in evs if e["event"] == "STATUS_CHANGED"]
        actual = changes[-1]["status"] if changes else "CREATED"
        moved_on = actual not in ("CREATED", "PAYMENT_CONFIRMED")
        is_stale = o["status_shown"] != actual
        if moved_on:
            if _double_read(evs):
                exposed += 1
                exposed_stale += is_stale
            else:
                unexposed += 1
                unexposed_stale += is_stale
        if is_stale:
            last_inval = max((e["at"] for e in evs if e["event"] == "CACHE_INVALIDATED"), default=None)
            stale.append({"orderId": o["order_id"], "customerId": o["customer_id"], "statusShown": o["status_shown"],
                          "actualStatus": actual, "stuckSince": last_inval or o["placed_at"],
                          "doubleRead": _double_read(evs)})
    rate_exposed = exposed_stale / exposed if exposed else 0.0
    rate_unexposed = unexposed_stale / unexposed if unexposed else 0.0
    affected = [s for s in stale if s["doubleRead"]]
    confidence = rate_exposed * (1 - rate_unexposed)
    steps = reproduction_steps.lower()
    if not ("twice" in steps or "two" in steps or "refresh" in steps):
        confidence *= 0.6  # the reported steps do not confirm the pattern
    customer_orders = [s["orderId"] for s in affected if s["customerId"] == ticket["customer_id"]]
    return {
        "ticket": ticket_id,
        "rootCause": ("The order-status cache is not invalidated after a status change when the order page "
                      "was read twice within 30 s of payment confirmation: the second read re-caches "
                      "PAYMENT_CONFIRMED and later status events never reach the page."),
        "confidence": round(min(confidence, 0.99), 2),
        "affectedOrders": [{k: v for k, v in s.items() if k != "doubleRead"} for s in affected],
        "customerOrders": customer_orders,
        "evidence": {"ordersScanned": len(ds.orders), "eventsScanned": len(ds.events), "staleOrders": len(stale),
                     "explainedByPattern": len(affected), "unexplained": [s["orderId"] for s in stale if not s["doubleRead"]],
                     "staleRateWithDoubleRead": round(rate_exposed, 2),
                     "staleRateWithout": round(rate_unexposed, 2)},
        "recommendedActions": [
            "Invalidate the order-status cache on every STATUS_CHANGED event, not only on the first read",
            f"Re-publish the current status of the {len(affected)} affected orders to refresh their pages",
            "Add a monitor: page status older than the last status event for more than 5 minutes",
            f"Reply to {ticket['customer_id']}: order {customer_orders[0] if customer_orders else '?'} has shipped",
        ],
    }


def summary_text(report: dict) -> str:
    return (f"Root cause ({report['confidence']:.0%} confidence): {report['rootCause']} "
            f"{len(report['affectedOrders'])} of {report['evidence']['ordersScanned']} orders are affected, "
            f"including {', '.join(report['customerOrders']) or 'none'} of the reporting customer.")


def orders_csv(report: dict) -> bytes:
    """The report's affected orders as CSV (a header line, then one line per order): the raw artifact an
    analyst adds for a requester that takes native binary chunks (lesson 03 exports the same file)."""
    import csv
    import io

    rows = report["affectedOrders"]
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue().encode()
