"""A reminder's stop link still stops reminders after its rider's record was merged into
another (or the lead converted): the survivor's reminders stop too, not only the
record the link names."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.notifications import compose
from ridercrm.notifications import service as notifications
from ridercrm.notifications.models import PENDING, SKIPPED
from tests.notifications.helpers import book, messages

DAYS = dt.timedelta(days=1)


def test_a_stop_link_of_a_merged_record_stops_the_survivors_reminders(
    settings: Settings,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
    make_client: Callable[..., TestClient],
) -> None:
    old_id, old_course = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:
        token = compose.stop_token(compose.link_secret(session, settings), old_id)
    live_id, live_course = book(sessions, starts_in=6 * DAYS, person={"mobile_phone": None})
    merged = client.post(
        "/admin/people/merge",
        json={"people": [live_id, old_id], "survivor": live_id, "force": True},
        headers=admin_headers,
    )
    assert merged.status_code == 200, merged.text
    assert {m.status for m in messages(sessions, asset_id=live_course, kind="reminder")} == {
        PENDING
    }
    rider = make_client()
    assert "Stop course reminders?" in rider.get(f"/console/stop-reminders/{token}").text
    done = rider.post(f"/console/stop-reminders/{token}")
    assert done.status_code == 200
    for course in (old_course, live_course):
        assert {m.status for m in messages(sessions, asset_id=course, kind="reminder")} == {SKIPPED}
    with session_scope(sessions) as session:
        assert notifications.reminders_stopped(session, live_id) is not None
    assert "Reminders stopped" in rider.get(f"/console/stop-reminders/{token}").text
