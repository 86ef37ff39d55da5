"""The console's duplicates pages: the queue, a cluster side by side, and merge, "not
duplicates", skip and undo through the console's forms, made by the admin API's services
and audited with the staff user's name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, new_booking

from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.duplicates import review, scan
from ridercrm.duplicates.commands import scan_demo
from ridercrm.duplicates.models import DuplicateCluster, PersonMerge
from ridercrm.matching.score import Thresholds
from ridercrm.people.models import Person
from tests.console.conftest import csrf
from tests.duplicates.test_merge import snapshot


def run_scan(sessions: sessionmaker[Session], **kwargs: Any) -> None:
    scan.scan(sessions, thresholds=Thresholds(), review_threshold=12.0, **kwargs)


def clusters(sessions: sessionmaker[Session]) -> dict[frozenset[str], tuple[int, str]]:
    with session_scope(sessions) as session:
        found = session.scalars(select(DuplicateCluster)).all()
        return {frozenset(c.people): (c.id, c.status) for c in found}


@pytest.fixture
def pair(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> dict[str, Any]:
    """Ann stored twice (her e-mail mistyped the second time), the first with a course;
    her parent at the same address, never proposed; the review queue scanned."""
    ann = create_person(client, admin_headers)
    item = new_booking(ann, create_product(client, admin_headers), booking_number="HB-7")
    booked = client.post(
        "/crm/people/rider_courses", json={"people_product": [item]}, headers=admin_headers
    )
    course = booked.json()["details"][0]["asset_id"]
    again = create_person(client, admin_headers, first_name="ANN", email="ann.nguyen@exampel.com")
    create_person(
        client, admin_headers, first_name="Minh", date_of_birth="1970-02-03",
        drivers_license="L7654321",
    )  # fmt: skip
    run_scan(sessions)
    found = clusters(sessions)
    assert list(found) == [frozenset((ann, again))]  # never the parent
    ((cluster_id, status),) = found.values()
    assert status == "open"
    return {"ann": ann, "again": again, "course": course, "cluster": cluster_id}


def test_a_viewer_reads_the_queue_and_the_cluster_side_by_side(
    console_as: Callable[..., TestClient], pair: dict[str, Any]
) -> None:
    client = console_as("viewer")
    queue = client.get("/console/duplicates")
    assert queue.status_code == 200
    assert f'href="/console/duplicates/{pair["cluster"]}"' in queue.text
    assert f'href="/console/people/{pair["ann"]}"' in queue.text
    assert '<a href="/console/duplicates" aria-current="page">Duplicates</a>' in queue.text

    page = client.get(f"/console/duplicates/{pair['cluster']}")
    assert page.status_code == 200
    text = page.text
    # One column per person, in the cluster's order, each linking to the person's page.
    columns = re.findall(r'<th scope="col"><a href="/console/people/(\w{18})"', text)
    assert sorted(columns) == sorted([pair["ann"], pair["again"]])
    # The differing rows carry a class and a word; the rows that agree carry neither.
    marked = re.findall(r'<tr class="differs">\s*<th scope="row">([^<]+) <strong', text)
    assert marked == ["First name", "E-mail", "Opted in"]  # the booking opted Ann in
    assert re.search(r'<tr>\s*<th scope="row">Date of birth</th>', text)
    # The courses per person, in column order.
    counts = re.search(r'<th scope="row">Courses</th><td>(\d+)</td><td>(\d+)</td>', text)
    assert counts is not None
    assert dict(zip(columns, map(int, counts.groups()), strict=True)) == {
        pair["ann"]: 1,
        pair["again"]: 0,
    }
    # The explanation: each field's level and weight, and the total.
    assert re.search(r"Date of birth</th><td>exact · \+\d+\.\d bits</td>", text)
    assert re.search(r"Total</th><td><strong>\d+\.\d bits</strong>", text)
    # A viewer sees no decision forms.
    assert 'name="survivor"' not in text
    assert "/dismiss" not in text
    assert "Deciding on a cluster needs the staff role." in text


def test_the_queue_is_paged_best_score_first_and_refuses_bad_paging(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for number, (first, last) in enumerate((("Bob", "Stone"), ("Cy", "Ray"))):
        body = {
            "first_name": first,
            "last_name": last,
            "email": f"{first}@example.org",
            "date_of_birth": f"198{number}-01-0{number + 1}",
            "mobile_phone": f"0400 000 00{number}",
            "drivers_license": f"X9{number}",
            "street": f"{number + 1} Hill Rd",
            "postcode": f"400{number}",
            "city": f"Town {number}",
        }
        create_person(client, admin_headers, **body)
        create_person(client, admin_headers, **body)
    run_scan(sessions)
    with session_scope(sessions) as session:
        ordered = [
            c.id
            for c in session.scalars(
                select(DuplicateCluster).order_by(
                    DuplicateCluster.score.desc(), DuplicateCluster.id.desc()
                )
            )
        ]
    assert len(ordered) == 2, clusters(sessions)
    monkeypatch.setattr(review, "PAGE", 1)
    viewer = console_as("viewer")
    first = viewer.get("/console/duplicates").text
    assert re.findall(r'href="/console/duplicates/(\d+)"', first) == [str(ordered[0])]
    following = re.search(r'href="/console/duplicates\?([^"]+)">Next page', first)
    assert following is not None
    second = viewer.get("/console/duplicates?" + following.group(1).replace("&amp;", "&")).text
    assert re.findall(r'href="/console/duplicates/(\d+)"', second) == [str(ordered[1])]
    assert "Next page" not in second
    for params in ({"before": "abc"}, {"before": "999"}, {"status": "<b>"}, {"before": "9" * 30}):
        refused = viewer.get("/console/duplicates", params=params)
        assert refused.status_code == 400, params
        assert 'role="alert"' in refused.text


def hidden_fields(page: str) -> dict[str, str]:
    """The hidden fields of a page's forms: what its confirming form posts."""
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page))


def test_merge_with_a_preview_and_undo_through_the_forms_as_the_api_would(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    engine: Engine,
    pair: dict[str, Any],
) -> None:
    staff = console_as("staff")
    token = csrf(staff)
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    before = snapshot(engine)
    # The staff user keeps the second record, with the first one's e-mail.
    choice = {"csrf": token, "survivor": again, "field.email": ann}
    shown = staff.post(f"/console/duplicates/{cluster}/preview", data=choice)
    assert shown.status_code == 200, shown.text
    assert "Preview of the merge" in shown.text
    assert snapshot(engine) == before  # a preview writes nothing, not even an audit record
    confirm = hidden_fields(shown.text)
    assert confirm["survivor"] == again
    assert confirm["field.email"] == ann
    expected = client.post(
        "/admin/people/merge",
        json={"people": [ann, again], "survivor": again, "fields": {"email": ann}, "dry_run": True},
        headers=admin_headers,
    ).json()
    # The preview is the API's dry run: the chosen value of each field and where it comes from.
    for name, value in expected["fields"].items():
        source = expected["sources"][name]
        assert confirm[f"field.{name}"] == source
        if value is not None:
            assert f"<td>{review.shown(value)}</td>" in shown.text

    merged = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert merged.status_code == 200, merged.text
    merge_id = int(re.search(r"<h1>Merge (\d+)", merged.text).group(1))  # type: ignore[union-attr]
    assert "Undo this merge" in merged.text
    api = client.get(f"/admin/people/{again}", headers=admin_headers).json()
    assert api["merged_from"] == [ann]
    assert {k: api[k] for k in expected["fields"]} == expected["fields"]
    assert client.get(f"/admin/people/{ann}", headers=admin_headers).json()["merged_into"] == again
    with session_scope(sessions) as session:
        record = session.get(PersonMerge, merge_id)
        assert record is not None
        assert record.moved_assets == {pair["course"]: ann}
        audit = session.get(AuditRecord, record.audit_id)
        assert audit is not None
        assert (audit.operation, audit.staff_user) == ("console.merge_duplicates", _staff(staff))
        cluster_row = session.get(DuplicateCluster, cluster)
        assert cluster_row is not None
        assert (cluster_row.status, cluster_row.merge_id) == ("merged", merge_id)

    # Both person pages say so; the survivor's links to its merges.
    assert re.search(rf"Merged into <a href=\"/console/people/{again}\"", _page(staff, ann))
    survivor_page = _page(staff, again)
    assert f'The duplicate <a href="/console/people/{ann}">' in survivor_page
    assert f"/console/duplicates/merges?person={again}" in survivor_page
    listed = staff.get(f"/console/duplicates/merges?person={again}").text
    assert f'href="/console/duplicates/merges/{merge_id}"' in listed
    # A second merge of the decided cluster is refused, with the reason, and audited.
    again_merge = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert again_merge.status_code == 400
    assert f"cluster {cluster} is already merged" in again_merge.text

    undone = staff.post(f"/console/duplicates/merges/{merge_id}/undo", data={"csrf": token})
    assert undone.status_code == 200, undone.text
    assert "undone" in undone.text
    assert "Undo this merge" not in undone.text
    after = snapshot(engine)
    for table in ("people", "assets", "person_keys"):
        assert after[table] == before[table], table
    with session_scope(sessions) as session:
        operations = session.scalars(
            select(AuditRecord.operation).where(AuditRecord.staff_user == _staff(staff))
        ).all()
    assert sorted(operations) == [
        "console.merge_duplicates",
        "console.merge_duplicates",
        "console.sign_in",
        "console.undo_merge",
    ]
    refused = staff.post(f"/console/duplicates/merges/{merge_id}/undo", data={"csrf": token})
    assert refused.status_code == 400
    assert f"merge {merge_id} was already undone" in refused.text


def _staff(client: TestClient) -> str:
    found = re.search(r"Signed in as <strong>([^<]+)</strong>", client.get("/console/people").text)
    assert found is not None
    return found.group(1)


def _page(client: TestClient, person_id: str) -> str:
    answer = client.get(f"/console/people/{person_id}")
    assert answer.status_code == 200
    return answer.text


def test_not_duplicates_is_remembered_and_skip_keeps_it_for_later(
    console_as: Callable[..., TestClient],
    sessions: sessionmaker[Session],
    pair: dict[str, Any],
) -> None:
    staff = console_as("staff")
    token = csrf(staff)
    cluster = pair["cluster"]
    skipped = staff.post(f"/console/duplicates/{cluster}/skip", data={"csrf": token})
    assert skipped.status_code == 200
    assert "Done." in skipped.text
    assert f'href="/console/duplicates/{cluster}"' not in skipped.text  # left the open queue
    listed = staff.get("/console/duplicates", params={"status": "skipped"}).text
    assert f'href="/console/duplicates/{cluster}"' in listed
    dismissed = staff.post(f"/console/duplicates/{cluster}/dismiss", data={"csrf": token})
    assert dismissed.status_code == 200
    run_scan(sessions, full=True)
    assert list(clusters(sessions).values()) == [(cluster, "dismissed")]
    page = staff.get(f"/console/duplicates/{cluster}").text
    assert "Not duplicates</span>" in page
    assert "/preview" not in page


def test_a_viewer_cannot_decide_and_a_forged_form_changes_nothing(
    console_as: Callable[..., TestClient],
    engine: Engine,
    pair: dict[str, Any],
) -> None:
    cluster = pair["cluster"]
    viewer = console_as("viewer")
    staff = console_as("staff")
    before = snapshot(engine)
    for path in ("merge", "dismiss", "skip", "preview"):
        answer = viewer.post(
            f"/console/duplicates/{cluster}/{path}",
            data={"csrf": csrf(viewer), "survivor": pair["ann"]},
        )
        assert answer.status_code == 403
        assert "it needs the staff role" in answer.text
        forged = staff.post(f"/console/duplicates/{cluster}/{path}", data={"csrf": "forged"})
        assert forged.status_code == 403
        assert "CSRF check" in forged.text
    after = snapshot(engine)
    assert {k: v for k, v in after.items() if k not in ("audit_records", "staff_sessions")} == {
        k: v for k, v in before.items() if k not in ("audit_records", "staff_sessions")
    }


def test_bad_addresses_and_choices_get_a_page_never_a_500(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session], pair: dict[str, Any]
) -> None:
    staff = console_as("staff")
    token = csrf(staff)
    cluster = pair["cluster"]
    for path in ("abc", "0", "-1", "9" * 40, "99999"):
        assert staff.get(f"/console/duplicates/{path}").status_code == 404
        assert staff.get(f"/console/duplicates/merges/{path}").status_code == 404
        answer = staff.post(f"/console/duplicates/{path}/merge", data={"csrf": token})
        assert answer.status_code == 404, (path, answer.text)
        undo = staff.post(f"/console/duplicates/merges/{path}/undo", data={"csrf": token})
        assert undo.status_code in (400, 404), (path, undo.text)
    assert staff.get("/console/duplicates/merges", params={"person": "x'; --"}).status_code == 400
    for choice, reason in (
        ({"survivor": "003NOTAMEMBER0000A"}, "is not one of the people merged"),
        ({"field.shoe_size": pair["ann"]}, "shoe_size not a person field"),
        ({"field.email": "nobody"}, "is not one of the people merged"),
    ):
        for action in ("preview", "merge"):
            answer = staff.post(
                f"/console/duplicates/{cluster}/{action}", data={"csrf": token, **choice}
            )
            assert answer.status_code == 400, (choice, action)
            assert reason in answer.text
    with session_scope(sessions) as session:
        merged = select(Person.id).where(Person.merged_into.is_not(None))
        assert session.scalars(merged).all() == []
        failures = session.scalars(
            select(AuditRecord.failure_reason).where(
                AuditRecord.operation == "console.merge_duplicates"
            )
        ).all()
    assert len(failures) == 4
    assert all(failures)


def test_serve_demo_scans_the_demo_so_the_queue_shows_its_duplicates(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session], settings: Settings
) -> None:
    load_demo(sessions, only_if_empty=True)
    found = scan_demo(settings, sessions)
    assert found >= 1  # the demo's riders who enquired again as leads
    page = console_as("viewer").get("/console/duplicates").text
    assert len(re.findall(r">Review cluster \d+</a>", page)) == found
    with session_scope(sessions) as session:
        audited = session.scalars(
            select(AuditRecord.path).where(AuditRecord.operation == "cli.duplicates_scan")
        ).all()
    assert audited == ["ridercrm serve --demo"]


def test_a_cluster_whose_people_now_score_as_different_merges_only_when_forced(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    pair: dict[str, Any],
) -> None:
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    # Since the scan, the second record was corrected: it is another rider altogether.
    changed = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": again, "first_name": "Ben", "last_name": "Kelly",
                               "date_of_birth": "1987-11-03", "drivers_license": "093412876"}]},
        headers=admin_headers,
    )  # fmt: skip
    assert changed.json()["status"] is True, changed.text
    staff = console_as("staff")
    token = csrf(staff)
    page = staff.get(f"/console/duplicates/{cluster}").text
    assert 'name="force" value="yes"' in page or "Preview merge" in page
    refused = staff.post(
        f"/console/duplicates/{cluster}/merge", data={"csrf": token, "survivor": ann}
    )
    assert refused.status_code == 400, refused.text
    assert "as different people" in refused.text
    assert client.get(f"/admin/people/{again}", headers=admin_headers).json()["merged_into"] is None
    forced = staff.post(
        f"/console/duplicates/{cluster}/merge",
        data={"csrf": token, "survivor": ann, "force": "yes"},
    )
    assert forced.status_code == 200, forced.text
    assert client.get(f"/admin/people/{again}", headers=admin_headers).json()["merged_into"] == ann


def test_the_preview_warns_when_the_matcher_now_scores_them_as_different_people(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    engine: Engine,
    pair: dict[str, Any],
) -> None:
    """The preview says plainly what *Merge these records* would refuse (the same check,
    ``merge.different_people``): the pair, and why; confirmed unforced, the merge is still
    refused and changes nothing. A pair still scored as one rider gets no warning."""
    staff = console_as("staff")
    token = csrf(staff)
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    plain = staff.post(f"/console/duplicates/{cluster}/preview", data={"csrf": token})
    assert plain.status_code == 200, plain.text
    assert 'id="preview-different"' not in plain.text
    changed = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": again, "first_name": "Ben", "last_name": "Kelly",
                               "date_of_birth": "1987-11-03", "drivers_license": "093412876"}]},
        headers=admin_headers,
    )  # fmt: skip
    assert changed.json()["status"] is True, changed.text
    shown = staff.post(
        f"/console/duplicates/{cluster}/preview", data={"csrf": token, "survivor": ann}
    )
    assert shown.status_code == 200, shown.text
    warning = shown.text.split('id="preview-different"', 1)[1].split("</div>", 1)[0]
    assert "scores these records as different people" in warning
    assert f"The matcher scores {ann} (Ann Nguyen) and {again} (Ben Kelly) as different" in warning
    assert "will be refused unless you tick" in warning
    before = snapshot(engine)
    refused = staff.post(f"/console/duplicates/{cluster}/merge", data=hidden_fields(shown.text))
    assert refused.status_code == 400, refused.text
    assert f"the matcher scores {ann} (Ann Nguyen) and {again} (Ben Kelly)" in refused.text
    after = snapshot(engine)
    assert {k: v for k, v in after.items() if k != "audit_records"} == {
        k: v for k, v in before.items() if k != "audit_records"
    }


def test_a_merge_confirmed_after_a_record_changed_since_its_preview_is_refused(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    engine: Engine,
    pair: dict[str, Any],
) -> None:
    """*Merge these records* makes the merge previewed: a value written since the
    preview (here the e-mail the merge replaces) would be overwritten unseen, so the
    merge is refused with the reason and nothing changes; previewed again, it is made."""
    staff = console_as("staff")
    token = csrf(staff)
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    shown = staff.post(
        f"/console/duplicates/{cluster}/preview",
        data={"csrf": token, "survivor": ann, "field.email": again},
    )
    assert shown.status_code == 200, shown.text
    confirm = hidden_fields(shown.text)
    changed = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": ann, "email": "ann.new@example.com"}]},
        headers=admin_headers,
    )
    assert changed.json()["status"] is True, changed.text
    before = snapshot(engine)
    stale = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert stale.status_code == 400, stale.text
    assert f"{ann} changed since the preview" in stale.text
    after = snapshot(engine)
    assert {k: v for k, v in after.items() if k != "audit_records"} == {
        k: v for k, v in before.items() if k != "audit_records"
    }
    with session_scope(sessions) as session:
        failure = session.scalars(
            select(AuditRecord.failure_reason).where(
                AuditRecord.operation == "console.merge_duplicates"
            )
        ).one()
    assert failure is not None
    assert "changed since the preview" in failure

    again_shown = staff.post(
        f"/console/duplicates/{cluster}/preview",
        data={"csrf": token, "survivor": ann, "field.email": again},
    )
    assert "ann.new@example.com" in again_shown.text  # the value it replaces, now seen
    confirm = hidden_fields(again_shown.text)
    merged = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert merged.status_code == 200, merged.text
    assert client.get(f"/admin/people/{again}", headers=admin_headers).json()["merged_into"] == ann


def test_a_merge_confirmed_after_a_course_was_booked_since_its_preview_is_refused(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    engine: Engine,
    pair: dict[str, Any],
) -> None:
    """A course booked for a member after the preview would move to the survivor unlisted
    (a booking leaves the person's updated_at as it was, so the seen.* check passes): the
    confirming form carries the courses the preview listed, and a merge that would move
    others is refused with the reason and changes nothing; previewed again, it is made."""
    staff = console_as("staff")
    token = csrf(staff)
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    shown = staff.post(
        f"/console/duplicates/{cluster}/preview", data={"csrf": token, "survivor": again}
    )
    assert shown.status_code == 200, shown.text
    assert pair["course"] in shown.text  # Ann's one course moves
    confirm = hidden_fields(shown.text)
    stored = client.get(f"/admin/people/{ann}", headers=admin_headers).json()
    item = new_booking(ann, create_product(client, admin_headers, name="Advanced", code="ADV-SOM"),
                       booking_number="HB-8", course_datetime="2026-12-13 08:30:00",
                       course_date_end="2026-12-13 16:30:00")  # fmt: skip
    booked = client.post(
        "/crm/people/rider_courses", json={"people_product": [item]}, headers=admin_headers
    )
    assert booked.json()["details"][0]["delivery"] == "true", booked.text
    late = booked.json()["details"][0]["asset_id"]
    after_booking = client.get(f"/admin/people/{ann}", headers=admin_headers).json()
    assert after_booking["updated_at"] == stored["updated_at"]  # what seen.* cannot tell
    before = snapshot(engine)
    stale = staff.post(f"/console/duplicates/{cluster}/merge", data=confirm)
    assert stale.status_code == 400, stale.text
    assert (
        f"the courses that move changed since the preview: course {late} (not listed by the"
        " preview); nothing was changed" in stale.text
    )
    after = snapshot(engine)
    assert {k: v for k, v in after.items() if k != "audit_records"} == {
        k: v for k, v in before.items() if k != "audit_records"
    }

    again_shown = staff.post(
        f"/console/duplicates/{cluster}/preview", data={"csrf": token, "survivor": again}
    )
    assert late in again_shown.text
    merged = staff.post(
        f"/console/duplicates/{cluster}/merge", data=hidden_fields(again_shown.text)
    )
    assert merged.status_code == 200, merged.text
    assert client.get(f"/admin/people/{ann}", headers=admin_headers).json()["merged_into"] == again


def test_a_long_field_name_on_a_merge_form_is_echoed_cut_short(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    pair: dict[str, Any],
) -> None:
    """A forged form naming a field of 10,000 characters is refused (400) by the name's
    first characters, on the preview and on the merge, never repeated in full."""
    staff = console_as("staff")
    token = csrf(staff)
    ann, again, cluster = pair["ann"], pair["again"], pair["cluster"]
    long = "x" * 10_000
    for action in ("preview", "merge"):
        refused = staff.post(
            f"/console/duplicates/{cluster}/{action}",
            data={"csrf": token, "survivor": ann, f"field.{long}": again},
        )
        assert refused.status_code == 400, refused.text
        assert "not a person field" in refused.text
        assert "x" * 100 not in refused.text
    assert client.get(f"/admin/people/{again}", headers=admin_headers).json()["merged_into"] is None


def test_ids_past_what_the_store_holds_name_nothing_on_every_duplicates_address(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    pair: dict[str, Any],
) -> None:
    """A cluster or merge id is an INTEGER column (32 bits on PostgreSQL): a larger
    number names nothing (404, or 400 for a page's `before` and in the admin API),
    never the driver's NumericValueOutOfRange as a 500."""
    staff = console_as("staff")
    token = csrf(staff)
    for number in (str(2**31), str(2**62)):
        for path in (f"/console/duplicates/{number}", f"/console/duplicates/merges/{number}"):
            assert staff.get(path).status_code == 404, path
        for path in ("merge", "preview", "dismiss", "skip"):
            answer = staff.post(f"/console/duplicates/{number}/{path}", data={"csrf": token})
            assert answer.status_code == 404, (path, answer.text)
        undo = staff.post(f"/console/duplicates/merges/{number}/undo", data={"csrf": token})
        assert undo.status_code == 404, undo.text
        paged = staff.get("/console/duplicates", params={"before": number})
        assert paged.status_code == 400, paged.text
        for answer in (
            client.get(f"/admin/duplicates/{number}", headers=admin_headers),
            client.get("/admin/duplicates", params={"before": number}, headers=admin_headers),
            client.post(
                f"/admin/duplicates/{number}/decide", json={"decision": "skip"},
                headers=admin_headers,
            ),
            client.post(f"/admin/people/merge/{number}/undo", headers=admin_headers),
        ):  # fmt: skip
            assert answer.status_code == 400, (answer.request.url, answer.text)
            assert "less than or equal to 2147483647" in answer.text
