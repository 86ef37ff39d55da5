"""Finding duplicates among stored people and the review queue (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.audit.models import AuditRecord
from ridercrm.cli import app
from ridercrm.db import session_scope
from ridercrm.duplicates import scan
from ridercrm.matching.score import Thresholds
from ridercrm.people.models import Person
from tests.transfer.helpers import cli, runner

REVIEW = 12.0


def run_scan(sessions: sessionmaker[Session], **kwargs: Any) -> scan.ScanResult:
    return scan.scan(sessions, thresholds=Thresholds(), review_threshold=REVIEW, **kwargs)


def queue(client: TestClient, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    response = client.get("/admin/duplicates", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def household(client: TestClient, headers: dict[str, str]) -> dict[str, str]:
    """A rider stored twice (a typo in the e-mail), with the parent and twin at one address."""
    ann = create_person(client, headers)
    again = create_person(client, headers, email="ann.nguyen@exampel.com", first_name="ANN")
    parent = create_person(
        client, headers, first_name="Minh", date_of_birth="1970-02-03", drivers_license="L7654321"
    )
    twin = create_person(client, headers, first_name="Bao", drivers_license="L1234999")
    return {"ann": ann, "again": again, "parent": parent, "twin": twin}


def test_scan_proposes_the_duplicate_and_never_a_household_member(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = household(client, admin_headers)
    result = run_scan(sessions)
    assert result.checked == 4
    clusters = queue(client, admin_headers)["clusters"]
    assert [sorted(c["people"]) for c in clusters] == [sorted([people["ann"], people["again"]])]
    detail = client.get(f"/admin/duplicates/{clusters[0]['id']}", headers=admin_headers).json()
    assert {r["id"] for r in detail["records"]} == {people["ann"], people["again"]}
    assert set(detail["differing"]) == {"first_name", "email"}
    explained = detail["pairs"][0]
    assert explained["levels"]["date_of_birth"] == "exact"
    assert explained["levels"]["email"] != "exact"
    assert explained["score"] == pytest.approx(sum(explained["weights"].values()), abs=0.05)


def test_twins_named_from_one_name_and_a_stranger_in_the_suburb_are_not_proposed(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    """Twins under the household's e-mail, phone and address, named Antonio and Antonia or
    John Paul and John Mark, and a James Brown born the day James Smith was, in his
    suburb: none is a duplicate (docs/decisions.md, "Matching: twins named from one name, strangers in one suburb"). A typo in a name still is."""
    no_licence = {"drivers_license": None}
    for first in ("Antonio", "Antonia", "John Paul", "John Mark"):
        create_person(client, admin_headers, first_name=first, **no_licence)
    create_person(client, admin_headers, first_name="James", last_name="Smith", email="james.smith@example.org",
                  mobile_phone="0400 111 222", **no_licence)  # fmt: skip
    create_person(client, admin_headers, first_name="James", last_name="Brown", email="jbrown77@example.net",
                  mobile_phone="0400 333 444", street="3 Elm Close", **no_licence)  # fmt: skip
    run_scan(sessions)
    assert queue(client, admin_headers)["clusters"] == []
    typo = create_person(client, admin_headers, first_name="Antonoi", **no_licence)
    run_scan(sessions)
    clusters = queue(client, admin_headers)["clusters"]
    assert [typo in c["people"] for c in clusters] == [True]


def test_dismissed_clusters_are_never_proposed_again_and_merged_ones_leave_the_queue(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = household(client, admin_headers)
    bob = create_person(client, admin_headers, first_name="Bob", last_name="Stone",
                        email="bob@example.org", drivers_license="X99", date_of_birth="1980-01-01",
                        street="1 Hill Rd", mobile_phone="0400 000 001")  # fmt: skip
    bob2 = create_person(client, admin_headers, first_name="Bob", last_name="Stone",
                         email="bob@example.org", drivers_license="X99", date_of_birth="1980-01-01",
                         street="1 Hill Rd", mobile_phone="0400 000 001")  # fmt: skip
    run_scan(sessions)
    first_page = queue(client, admin_headers, limit=1)
    assert len(first_page["clusters"]) == 1
    second_page = queue(client, admin_headers, limit=1, before=first_page["next_before"])
    assert second_page["next_before"] is None
    pages = first_page["clusters"] + second_page["clusters"]
    assert pages[0]["score"] >= pages[1]["score"]
    by_people = {frozenset(c["people"]): c["id"] for c in pages}
    ann_cluster = by_people[frozenset((people["ann"], people["again"]))]
    bob_cluster = by_people[frozenset((bob, bob2))]

    decided = client.post(
        f"/admin/duplicates/{ann_cluster}/decide",
        json={"decision": "dismiss"},
        headers=admin_headers,
    )
    assert decided.status_code == 200, decided.text
    merged = client.post(
        f"/admin/duplicates/{bob_cluster}/decide", json={"decision": "merge"}, headers=admin_headers
    ).json()
    assert merged["status"] == "merged"
    assert client.get(f"/admin/people/{bob2}", headers=admin_headers).json()["merged_into"] == bob
    again = client.post(
        f"/admin/duplicates/{ann_cluster}/decide", json={"decision": "skip"}, headers=admin_headers
    )
    assert again.status_code == 409

    run_scan(sessions, full=True)
    assert queue(client, admin_headers)["clusters"] == []


def test_a_cluster_whose_people_were_merged_since_cannot_be_dismissed(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    """Merged through the people API after the scan proposed them, before the re-check
    closes their cluster: dismissing it (remembering them as two people, never proposed
    again, even after an undo) is refused and changes nothing; skipping it is harmless."""
    people = household(client, admin_headers)
    run_scan(sessions)
    (cluster,) = queue(client, admin_headers)["clusters"]
    merged = client.post(
        "/admin/people/merge",
        json={"people": [people["ann"], people["again"]]},
        headers=admin_headers,
    )
    assert merged.status_code == 200, merged.text
    refused = client.post(
        f"/admin/duplicates/{cluster['id']}/decide",
        json={"decision": "dismiss"},
        headers=admin_headers,
    )
    assert refused.status_code == 409, refused.text
    assert "merged" in refused.text
    shown = client.get(f"/admin/duplicates/{cluster['id']}", headers=admin_headers).json()
    assert shown["status"] == "open"
    skipped = client.post(
        f"/admin/duplicates/{cluster['id']}/decide",
        json={"decision": "skip"},
        headers=admin_headers,
    )
    assert skipped.status_code == 200, skipped.text


def test_a_later_scan_checks_only_the_people_written_since(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    household(client, admin_headers)
    run_scan(sessions)
    newcomer = create_person(client, admin_headers, first_name="Annie", email="annie@example.com")
    result = run_scan(sessions)
    assert result.checked == 1
    clustered = {p for c in queue(client, admin_headers)["clusters"] for p in c["people"]}
    assert newcomer in clustered


def test_an_interrupted_scan_resumes_after_its_last_batch(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    household(client, admin_headers)

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_scan(sessions, batch_size=2, progress=stop)
    result = run_scan(sessions, batch_size=2)
    assert result.resumed
    assert result.checked == 4
    assert len(queue(client, admin_headers)["clusters"]) == 1


def test_cli_scan_list_and_dismiss_are_audited_and_dry_run_writes_nothing(
    db_url: str, client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    household(client, admin_headers)
    assert '"would_check": 4' in cli(db_url, "duplicates", "scan", "--dry-run").output
    assert queue(client, admin_headers)["clusters"] == []
    scanned = cli(db_url, "duplicates", "scan")
    assert scanned.exit_code == 0, scanned.output
    cluster = queue(client, admin_headers)["clusters"][0]["id"]
    assert str(cluster) in cli(db_url, "duplicates", "list").output
    assert cli(db_url, "duplicates", "dismiss", str(cluster), "--dry-run").exit_code == 0
    assert queue(client, admin_headers)["clusters"] != []
    assert cli(db_url, "duplicates", "dismiss", str(cluster)).exit_code == 0
    assert queue(client, admin_headers)["clusters"] == []
    with session_scope(sessions) as session:
        operations = session.scalars(
            select(AuditRecord.operation).where(AuditRecord.method == "CLI")
        ).all()
    assert sorted(operations) == ["cli.duplicates_dismiss", "cli.duplicates_scan"]


def test_a_scan_with_an_auto_merge_threshold_merges_the_clusters_reaching_it(
    client: TestClient,
    admin_headers: dict[str, str],
    db_url: str,
    sessions: sessionmaker[Session],
) -> None:
    people = household(client, admin_headers)
    result = runner.invoke(
        app,
        ["duplicates", "scan"],
        env={"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_DUPLICATES_AUTO_MERGE_THRESHOLD": "0"},
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["clusters"] == 1
    assert len(summary["auto_merged"]) == 1
    assert queue(client, admin_headers)["clusters"] == []
    pair = (people["ann"], people["again"])
    with session_scope(sessions) as session:
        into = {pid: session.get(Person, pid).merged_into for pid in pair}  # type: ignore[union-attr]
    assert set(into.values()) in ({None, pair[0]}, {None, pair[1]}), into  # one into the other
