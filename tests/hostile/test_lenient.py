"""What the interface operations take although it is odd: unknown fields (ignored, as
existing clients may send more than we read) and JSON labelled as a form (clients
mislabel). The admin API refuses unknown fields (an operator's typo is not dropped)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.hostile.conftest import (
    CONTACTS,
    FORM,
    LEADS,
    LEADS_MATCH,
    MODIFY,
    OPERATIONS,
    PEOPLE_MATCH,
    PRODUCTS,
    RIDER_COURSES,
    TARGETS,
    Target,
    World,
)

UNKNOWN: dict[str, Any] = {
    "favourite_colour": "blue",
    "Robert'); DROP TABLE people;--": 1,
    "nested": {"deeper": [{"first_name": "Mallory"}]},
    "ID2": None,
}


def test_operations_ignore_unknown_fields(world: World) -> None:
    ledger = world.ledger()

    item = {**world.valid_item(RIDER_COURSES), **UNKNOWN}
    booked = world.post(
        RIDER_COURSES.path, json.dumps({"people_product": [item], **UNKNOWN}).encode()
    )
    (detail,) = booked.json()["details"]
    assert (detail["delivery"], detail["receipt"]) == ("true", "Course booked."), detail
    added = ledger.changed(booked)
    assert (len(added["assets"]), len(added["asset_status_history"])) == (1, 1)
    asset = world.read(f"/admin/assets/{detail['asset_id']}")
    assert not set(UNKNOWN) & set(asset)
    ledger = world.ledger()

    modified = world.post(
        MODIFY.path,
        json.dumps({"people_data": [{**world.valid_item(MODIFY), **UNKNOWN}], **UNKNOWN}).encode(),
    )
    assert modified.json()["details"] == [{"ID": world.contact, "fields": 1, "status": True}]
    changed = {table: len(rows) for table, rows in ledger.changed(modified).items() if rows}
    # The person alone: no endpoint lists person.updated, so no event is stored for it
    # (docs/decisions.md, "Events (webhooks)").
    assert changed == {"people": 1}

    for target in (PEOPLE_MATCH, LEADS_MATCH):
        plain = world.post_json(target, world.valid_item(target))
        odd = world.post(
            target.path,
            json.dumps(
                {"person_data": {**world.valid_item(target), **UNKNOWN}, **UNKNOWN}
            ).encode(),
        )
        assert odd.status_code == plain.status_code == 200, odd.text
        assert odd.json()["ID"] == plain.json()["ID"] != ""
        ledger.unchanged(plain, odd)


@pytest.mark.parametrize("target", [CONTACTS, LEADS, PRODUCTS], ids=lambda t: t.name)
def test_admin_refuses_unknown_fields(world: World, target: Target) -> None:
    ledger = world.ledger()
    response = world.post_json(target, {**world.valid_item(target), "favourite_colour": "blue"})
    target.check_failure(response, 400, "favourite_colour: is not a known field")
    assert response.json()["errors"] == ["favourite_colour: is not a known field"]
    ledger.unchanged(response)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_json_labelled_as_a_form_is_read_as_json(world: World, target: Target) -> None:
    raw = json.dumps(target.body(world.valid_item(target))).encode()
    response = world.post(target.path, raw, FORM)
    assert response.status_code == (201 if target.key is None else 200), response.text
    if target is RIDER_COURSES:
        assert response.json()["details"][0]["receipt"] == "Course booked."
    elif target is MODIFY:
        assert response.json()["status"] is True
    elif target in OPERATIONS:
        assert response.json()["delivery"] == "true"
