"""Injection strings stored in duplicate people, or typed into the duplicates forms, are
shown escaped on every duplicates page, never run as markup or script."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.db import session_scope
from ridercrm.duplicates import scan
from ridercrm.duplicates.models import DuplicateCluster
from ridercrm.matching.score import Thresholds
from ridercrm.people.models import Person
from tests.console.conftest import csrf
from tests.hostile.test_console_forms import assert_escaped
from tests.hostile.test_verbatim import HOSTILE


def test_hostile_strings_on_the_duplicates_pages_are_shown_escaped(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    ann = create_person(client, admin_headers)
    again = create_person(client, admin_headers, email="ann.nguyen@exampel.com")
    scan.scan(sessions, thresholds=Thresholds(), review_threshold=12.0)
    with session_scope(sessions, write=True) as session:
        (cluster,) = session.scalars(select(DuplicateCluster.id)).all()
        # Stored as a client could have typed them (after the scan proposed the pair).
        for person_id, text in ((ann, HOSTILE[1]), (again, HOSTILE[-1])):
            person = session.get(Person, person_id)
            assert person is not None
            person.first_name, person.street, person.city = text[:80], text, text[:80]
    staff = console_as("staff")
    token = csrf(staff)
    for path in ("/console/duplicates", f"/console/duplicates/{cluster}"):
        page = staff.get(path)
        assert page.status_code == 200
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        assert_escaped(page.text)
    for text in HOSTILE:
        for action in ("preview", "merge"):
            for choice in ({"survivor": text}, {f"field.{text}": ann}, {"field.email": text}):
                answer = staff.post(
                    f"/console/duplicates/{cluster}/{action}", data={"csrf": token, **choice}
                )
                assert answer.status_code == 400, (action, choice, answer.text)
                assert_escaped(answer.text)
        page = staff.get("/console/duplicates", params={"status": text, "before": text})
        assert page.status_code == 400
        assert_escaped(page.text)
        assert_escaped(staff.get(f"/console/duplicates/{text}").text)
        assert_escaped(staff.get("/console/duplicates/merges", params={"person": text}).text)
    preview = staff.post(
        f"/console/duplicates/{cluster}/preview",
        data={"csrf": token, "survivor": again, "field.street": ann, "field.first_name": ann},
    )
    assert preview.status_code == 200
    assert_escaped(preview.text)
    confirm = dict(
        re.findall(r'<input type="hidden" name="([\w.]+)" value="([^"]*)">', preview.text)
    )
    merged = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert merged.status_code == 200, merged.text
    assert_escaped(merged.text)
    with session_scope(sessions) as session:
        survivor = session.get(Person, again)
        assert survivor is not None
        assert survivor.street == HOSTILE[1]  # stored exactly as it was, from the chosen member
    for path in (
        "/console/duplicates/merges",
        f"/console/duplicates/merges?person={again}",
        f"/console/people/{again}",
        f"/console/people/{ann}",
        "/console/audit?operation=console.merge_duplicates",
    ):
        assert_escaped(staff.get(path).text)
