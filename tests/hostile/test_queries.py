"""Hostile search strings on the admin API: answered, never a 5xx, and never "everyone"."""

from __future__ import annotations

from testkit.factories import create_person

from tests.hostile.conftest import World

QUERIES = [
    "a\U0010ffff",  # the last code point: no character sorts after it
    "\U0010ffff\U0010ffff",
    "a\ud7ff",  # the character before the surrogates, which no text can hold
    "ann\ud7ff",
    "' OR '1'='1",
    "%",
    "_",
    "ann%",
    "*",
    "Robert'); DROP TABLE people;--",
    "\\",
]


def test_search_answers_hostile_queries(world: World) -> None:
    for query in QUERIES:
        ledger = world.ledger()
        response = world.client.get("/admin/people", params={"q": query}, headers=world.headers)
        assert response.status_code == 200, (query, response.text)
        assert response.json() == {"people": [], "next_before": None}, query
        ledger.unchanged(response)


def test_search_by_a_prefix_ending_in_the_last_code_points(world: World) -> None:
    edge = create_person(world.client, world.headers, first_name="Zed\U0010ffff", last_name="Q")
    near = create_person(world.client, world.headers, first_name="Zed\ud7ff", last_name="Q")
    after = create_person(world.client, world.headers, first_name="Zed\ue000", last_name="Q")
    for query, expected in (
        ("zed\U0010ffff", {edge}),
        ("zed\ud7ff", {near}),
        ("zed\ue000", {after}),
        ("zed", {edge, near, after}),
    ):
        response = world.client.get("/admin/people", params={"q": query}, headers=world.headers)
        assert response.status_code == 200, response.text
        assert {p["id"] for p in response.json()["people"]} == expected, query
