"""bench/matching/traffic.py: deterministic, the shares it promises, damage as described."""

from __future__ import annotations

import datetime as dt
import random

from bench.matching import traffic


def test_a_seed_fixes_the_whole_data_set() -> None:
    first, second = traffic.generate(11, 800, 300), traffic.generate(11, 800, 300)
    assert [p.csv_row() for p in first.people] == [p.csv_row() for p in second.people]
    assert [(q.kind, q.person_data, q.expected) for q in first.queries] == [
        (q.kind, q.person_data, q.expected) for q in second.queries
    ]


def test_negatives_are_not_stored_and_relatives_are() -> None:
    data = traffic.generate(12, 3000, 1000)
    stored = {p.id for p in data.people}
    negatives = [q for q in data.queries if q.expected is None]
    assert len(negatives) == 400  # 40 %
    assert {q.kind for q in negatives} == set(traffic.NEGATIVE)
    assert all(q.relatives <= stored for q in negatives)
    assert any(q.relatives for q in negatives if q.kind == "parent_child")
    assert all(q.expected in stored for q in data.queries if q.expected is not None)
    # a same-named parent or child: the stored relative's given name (unless the booking
    # was damaged too, 15 % of negatives), born a generation apart
    by_id = {p.id: p for p in data.people}
    checked = 0
    for q in negatives:
        if q.kind != "parent_child":
            continue
        named = [
            by_id[i] for i in q.relatives if by_id[i].first_name == q.person_data["first_name"]
        ]
        born = dt.date.fromisoformat(q.person_data["date_of_birth"])
        assert all(abs(p.date_of_birth.year - born.year) >= 14 for p in named)
        checked += bool(named)
    assert checked >= 40


def test_the_damage_is_what_it_says() -> None:
    rng = random.Random(3)
    assert traffic._date(dt.date(1975, 6, 14), "year_swap") == dt.date(1957, 6, 14)
    assert traffic._date(dt.date(1977, 6, 14), "year_swap") is None  # no change
    assert traffic._date(dt.date(1990, 3, 4), "day_month") == dt.date(1990, 4, 3)
    assert traffic.ocr_slip("Emily", random.Random(0)) in ("Ernily", "Emi1y", "EmiIy")
    assert traffic.truncate("Sukhdeep", rng) in ("Suk", "Sukh", "Sukhd")
    typo = traffic.keyboard_typo("Minh", rng)
    assert typo != "Minh"
