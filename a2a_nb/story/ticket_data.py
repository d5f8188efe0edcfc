"""The story's small ticket dataset (``a2a_nb/data/*.csv``, shipped in the package: :mod:`a2a_nb.data`):
one ticket, orders, order-status events.

Generated once, deterministically (``python -m a2a_nb.story.ticket_data``, in a checkout), and committed,
so the analyst's answer is computed from data a learner can open, not written into the code.
"""
from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

from ..data import data_file

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
"""Where ``write`` puts the files by default: the package's data folder (in a checkout, ``a2a_nb/data``)."""
TICKET_ID = "TCK-4821"

STATUSES = ["CREATED", "PAYMENT_CONFIRMED", "PROCESSING", "SHIPPED"]


@dataclass(frozen=True)
class Dataset:
    tickets: list[dict]
    orders: list[dict]
    events: list[dict]

    def ticket(self, ticket_id: str) -> dict:
        for t in self.tickets:
            if t["ticket_id"] == ticket_id:
                return t
        raise KeyError(f"no ticket {ticket_id} in the dataset (known: {[t['ticket_id'] for t in self.tickets]})")


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(seed: int = 4821) -> Dataset:
    """40 orders over two days; some were read twice within 30 s of checkout, and for those the
    status-cache invalidation never happened, so their page still shows an old status."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
    orders, events = [], []
    lagging = 0
    for n in range(40):
        oid = f"ORD-{70100 + n}"
        customer = "CUS-1187" if n % 8 == 3 else f"CUS-{1000 + rng.randrange(300)}"
        placed = start + timedelta(minutes=rng.randrange(0, 2 * 24 * 60))
        double_read = n % 8 == 3 or rng.random() < 0.15
        reached = rng.choice(STATUSES[1:])
        t = placed
        evs = [("ORDER_CREATED", "CREATED", "checkout")]
        for status in STATUSES[1:STATUSES.index(reached) + 1]:
            evs.append(("STATUS_CHANGED", status, "order-service"))
        for kind, status, source in evs:
            events.append({"order_id": oid, "at": _iso(t), "event": kind, "status": status, "source": source})
            if kind == "STATUS_CHANGED" and status == "PAYMENT_CONFIRMED" and double_read:
                for k in range(2):
                    t += timedelta(seconds=rng.randrange(3, 12))
                    events.append({"order_id": oid, "at": _iso(t), "event": "PAGE_VIEW", "status": "", "source": "web"})
            t += timedelta(seconds=rng.randrange(20, 90))
            if kind == "STATUS_CHANGED" and not (double_read and status != "PAYMENT_CONFIRMED"):
                events.append({"order_id": oid, "at": _iso(t), "event": "CACHE_INVALIDATED", "status": status,
                               "source": "status-cache"})
            t += timedelta(seconds=rng.randrange(5, 30))
        shown = "PAYMENT_CONFIRMED" if double_read and reached != "PAYMENT_CONFIRMED" else reached
        if lagging < 2 and not double_read and reached == "SHIPPED":  # unrelated: a carrier scan in flight
            shown, lagging = "PROCESSING", lagging + 1
        orders.append({"order_id": oid, "customer_id": customer, "placed_at": _iso(placed),
                       "status_shown": shown, "amount_eur": f"{rng.randrange(1500, 25000) / 100:.2f}"})
    tickets = [{
        "ticket_id": TICKET_ID, "customer_id": "CUS-1187", "opened_at": "2026-12-01T09:12:00Z",
        "subject": "Order status not updating after checkout",
        "description": "Customer reports the order page keeps showing 'payment confirmed' for days "
                       "although the parcel was already shipped.",
        "reproduction_steps": "",
    }]
    return Dataset(tickets, orders, events)


def write(ds: Dataset, folder: Path = DATA_DIR) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("tickets", ds.tickets), ("orders", ds.orders), ("order_events", ds.events)):
        with open(folder / f"{name}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def load(folder: Optional[Path] = None) -> Dataset:
    """The dataset from ``folder``, by default the copy shipped in the package (:func:`a2a_nb.data.data_file`)."""
    def read(name: str) -> list[dict]:
        path = data_file(f"{name}.csv") if folder is None else Path(folder) / f"{name}.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run `python -m a2a_nb.story.ticket_data` to create it")
        with open(path, newline="") as f:
            return list(csv.DictReader(f))

    return Dataset(read("tickets"), read("orders"), read("order_events"))


if __name__ == "__main__":
    write(generate())
    print(f"wrote {DATA_DIR}/tickets.csv, orders.csv, order_events.csv")
