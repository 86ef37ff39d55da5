"""After the first scan, each write re-checks only the people it touched (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.duplicates import recheck
from ridercrm.matching.score import Thresholds
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import OnMatch, import_csv
from tests.duplicates.test_scan import REVIEW, household, queue, run_scan


def touched(sessions: sessionmaker[Session]) -> set[str]:
    with session_scope(sessions) as session:
        return recheck.waiting(session)


def run_recheck(sessions: sessionmaker[Session]) -> int:
    return recheck.recheck(sessions, thresholds=Thresholds(), review_threshold=REVIEW)


def clusters(client: TestClient, headers: dict[str, str]) -> list[list[str]]:
    return sorted(sorted(c["people"]) for c in queue(client, headers)["clusters"])


def test_nothing_is_marked_before_the_first_scan(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    household(client, admin_headers)
    assert touched(sessions) == set()


def test_each_write_path_marks_the_people_it_touched_and_the_recheck_finds_them(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    # The scan marks who was written shortly before and while it ran (SCAN_MARGIN).
    assert touched(sessions) == set(people.values())
    run_recheck(sessions)
    found = [sorted([people["ann"], people["again"]])]
    assert clusters(client, admin_headers) == found
    assert touched(sessions) == set()

    # Admin API: a third record of the same rider.
    third = create_person(client, admin_headers, email="ann.n@example.org")
    assert touched(sessions) == {third}
    assert run_recheck(sessions) == 1
    assert touched(sessions) == set()
    assert clusters(client, admin_headers) == [sorted([*found[0], third])]

    # Operation 2: a stranger becomes the twin's double.
    stranger = create_person(
        client, admin_headers, first_name="Zed", last_name="Park", email="", mobile_phone=""
    )
    run_recheck(sessions)
    response = client.post(
        "/crm/modify",
        json={
            "people_data": [
                {
                    "ID": stranger,
                    "first_name": "Bao",
                    "last_name": "Nguyen",
                    "email": "ann.nguyen@example.com",
                    "mobile_phone": "0412 345 678",
                    "drivers_license": "L1234999",
                }
            ]
        },
        headers=admin_headers,
    )
    assert response.json()["details"][0]["status"] is True, response.text
    assert touched(sessions) == {stranger}
    run_recheck(sessions)
    assert sorted([people["twin"], stranger]) in clusters(client, admin_headers)

    # Import: each imported row is marked.
    path = tmp_path / "c.csv"
    path.write_text(
        "first_name,last_name,email,date_of_birth,drivers_license\n"
        "Ann,Nguyen,ann.nguyen@example.com,1999-04-12,L1234567\n",
        encoding="utf-8",
    )
    result = import_csv(sessions, CONTACTS, path, workers=0, on_match=OnMatch.add)
    assert result.imported == 1
    assert len(touched(sessions)) == 1
    run_recheck(sessions)
    assert any(len(c) == 4 for c in clusters(client, admin_headers))


def test_a_dismissed_pair_stays_dismissed_after_a_write(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    cluster = queue(client, admin_headers)["clusters"][0]["id"]
    decided = client.post(
        f"/admin/duplicates/{cluster}/decide", json={"decision": "dismiss"}, headers=admin_headers
    )
    assert decided.status_code == 200, decided.text
    client.post(
        "/crm/modify",
        json={"people_data": [{"ID": people["again"], "city": "Geelong"}]},
        headers=admin_headers,
    )
    assert people["again"] in touched(sessions)
    run_recheck(sessions)
    assert clusters(client, admin_headers) == []


def test_a_cluster_whose_people_did_not_change_keeps_its_id(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    before = queue(client, admin_headers)["clusters"]
    client.post(
        "/crm/modify",
        json={"people_data": [{"ID": people["ann"], "city": "Geelong"}]},
        headers=admin_headers,
    )
    run_recheck(sessions)
    after = queue(client, admin_headers)["clusters"]
    assert [c["id"] for c in after] == [c["id"] for c in before]


def test_a_merge_marks_its_people_and_their_cluster_leaves_the_queue(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    merged = client.post(
        "/admin/people/merge",
        json={"people": [people["ann"], people["again"]]},
        headers=admin_headers,
    )
    assert merged.status_code == 200, merged.text
    assert {people["ann"], people["again"]} <= touched(sessions)
    run_recheck(sessions)
    assert clusters(client, admin_headers) == []


def test_the_background_rechecker_of_serve_finds_a_new_duplicate(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    settings: Settings,
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    run_recheck(sessions)
    stop = recheck.start_rechecker(
        Settings(**{**settings.model_dump(), "duplicates_recheck_seconds": 0.05})
    )
    try:
        third = create_person(client, admin_headers, email="ann.n@example.org")
        deadline = time.monotonic() + 30
        wanted = sorted([people["ann"], people["again"], third])
        got: Any = None
        while time.monotonic() < deadline:
            got = clusters(client, admin_headers)
            if got == [wanted]:
                break
            time.sleep(0.05)
        assert got == [wanted]
        assert touched(sessions) == set()
    finally:
        stop()
