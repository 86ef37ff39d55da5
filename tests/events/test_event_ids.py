"""Event ids: Standard Webhooks message ids that sort by when the events were made, so
the outbox's inserts append to its indexes (docs/decisions.md, "Events (webhooks)")."""

from __future__ import annotations

import re
import time

from ridercrm.events.service import new_event_id

ID = re.compile(r"msg_[0-9a-f]{32}")


def test_an_event_id_is_msg_and_a_uuid7_short_enough_for_its_column() -> None:
    made = new_event_id()
    assert ID.fullmatch(made), made
    assert made[4 + 12] == "7"  # the UUID's version digit
    assert len(made) <= 40  # events.id, and the replay field's bound


def test_later_event_ids_sort_after_earlier_ones() -> None:
    made = []
    for _ in range(20):
        made.append(new_event_id())
        time.sleep(0.002)  # a new millisecond: the UUIDv7's time part moves on
    assert made == sorted(made)
    assert len(set(made)) == len(made)
