"""The generator's households of one name (Jr. and Sr.): appended, never changing the rest."""

from __future__ import annotations

import datetime as dt

from bench.matching.generate import SAME_NAME_KINDS, generate


def test_households_of_one_name_leave_the_store_and_queries_before_them_as_they_were() -> None:
    plain = generate(7, 600, 150, namesakes=0)
    data = generate(7, 600, 150, namesakes=20)
    assert [p.csv_row() for p in data.people[:600]] == [p.csv_row() for p in plain.people]
    assert [(q.kind, q.person_data, q.expected) for q in data.queries[:150]] == [
        (q.kind, q.person_data, q.expected) for q in plain.queries
    ]
    assert (data.namesakes, len(data.people), len(data.queries)) == (20, 620, 190)
    assert [q.number for q in data.queries] == list(range(1, 191))


def test_the_unstored_one_shares_all_but_the_birth_date_and_licence() -> None:
    data = generate(7, 600, 150, namesakes=20)
    people = data.by_id()
    added = data.queries[150:]
    assert {q.kind for q in added} == set(SAME_NAME_KINDS)
    for query in added:
        stored = people[query.source or ""]
        sent = query.person_data
        if query.kind == "same_name_stored":
            assert query.expected == stored.id
            continue
        assert (query.expected, query.relatives) == (None, {stored.id})
        assert (sent["first_name"], sent["last_name"], sent["email"], sent["postcode"]) == (
            stored.first_name, stored.last_name, stored.email, stored.postcode,
        )  # fmt: skip
        assert sent.get("mobile_phone") == stored.mobile_phone
        days = abs((dt.date.fromisoformat(sent["date_of_birth"]) - stored.date_of_birth).days)
        assert 18 * 365 <= days <= 45 * 365
        assert (
            sent.get("drivers_license") != stored.drivers_license or "drivers_license" not in sent
        )
