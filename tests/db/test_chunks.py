"""``db.chunks``: what every long IN list and bulk insert is cut with."""

from __future__ import annotations

from ridercrm.db import chunks


def test_chunks_keep_every_item_once_in_order_and_never_exceed_the_size() -> None:
    for count in (0, 1, 4, 5, 6, 11):
        items = list(range(count))
        cut = list(chunks(items, 5))
        assert [item for chunk in cut for item in chunk] == items
        assert all(1 <= len(chunk) <= 5 for chunk in cut)
        assert len(cut) == -(-count // 5)


def test_a_chunk_is_a_new_list_its_caller_may_pad() -> None:
    items = [1, 2, 3]
    for chunk in chunks(items, 2):
        chunk += [chunk[-1]] * 2  # duplicates.scoring pads its last chunk
    assert items == [1, 2, 3]
