"""A merge of people the matcher scores as different is refused unless forced: the admin
API (merge and a cluster's decision) and the CLI alike; nothing is changed by a refusal."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.demo import load_demo
from ridercrm.demo_courses import ANN, BEN, CHLOE, CHLOE_AGAIN
from tests.duplicates.test_merge import snapshot
from tests.transfer.helpers import cli

MERGE = "/admin/people/merge"


def test_the_api_refuses_to_merge_different_people_unless_forced(
    client: TestClient, admin_headers: dict[str, str], engine: Engine
) -> None:
    ann = create_person(client, admin_headers)
    ben = create_person(
        client, admin_headers, first_name="Ben", last_name="Kelly", date_of_birth="1987-11-03",
        email="ben.kelly@example.com", mobile_phone="0422 808 115", drivers_license="093412876",
        street="4 Banksia Cres", city="Somerton", postcode="3062",
    )  # fmt: skip
    before = snapshot(engine)
    for dry_run in (True, False):
        refused = client.post(
            MERGE, json={"people": [ann, ben], "dry_run": dry_run}, headers=admin_headers
        )
        assert refused.status_code == 409, refused.text
        reason = refused.json()["detail"]
        assert "as different people" in reason
        assert ann in reason
        assert ben in reason
        assert '"force": true' in reason
    assert snapshot(engine) == before  # history aside (the refusals' audit records)
    forced = client.post(MERGE, json={"people": [ann, ben], "force": True}, headers=admin_headers)
    assert forced.status_code == 200, forced.text
    assert forced.json()["survivor"] in (ann, ben)


def test_the_same_rider_stored_twice_merges_without_force(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    ann = create_person(client, admin_headers)
    again = create_person(client, admin_headers, first_name="ANN", email="ann.nguyen@exampel.com")
    merged = client.post(MERGE, json={"people": [ann, again]}, headers=admin_headers)
    assert merged.status_code == 200, merged.text


def test_the_cli_refuses_different_people_and_merges_the_demo_duplicate(
    db_url: str, sessions: sessionmaker[Session], client: TestClient, admin_headers: dict[str, str]
) -> None:
    load_demo(sessions)
    refused = cli(db_url, "duplicates", "merge", ANN, BEN, "--survivor", ANN)
    assert refused.exit_code == 1, refused.output
    assert "as different people" in refused.stderr
    assert "--force" in refused.stderr
    assert client.get(f"/admin/people/{BEN}", headers=admin_headers).json()["merged_into"] is None
    # The README's example: the demo's rider stored twice.
    preview = cli(db_url, "duplicates", "merge", CHLOE, CHLOE_AGAIN, "--survivor", CHLOE,
                  "--field", f"email={CHLOE_AGAIN}", "--dry-run")  # fmt: skip
    assert preview.exit_code == 0, preview.output
    merged = cli(db_url, "duplicates", "merge", CHLOE, CHLOE_AGAIN, "--survivor", CHLOE)
    assert merged.exit_code == 0, merged.output
    again = client.get(f"/admin/people/{CHLOE_AGAIN}", headers=admin_headers).json()
    assert again["merged_into"] == CHLOE
    forced = cli(db_url, "duplicates", "merge", ANN, BEN, "--survivor", ANN, "--force")
    assert forced.exit_code == 0, forced.output
    assert client.get(f"/admin/people/{BEN}", headers=admin_headers).json()["merged_into"] == ANN
