"""`ridercrm match train`: a model trained on the stored people, stored and used."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.matching.model import Model
from ridercrm.matching.models import MatchModel
from ridercrm.people.models import Person
from tests.transfer.helpers import cli


def test_train_stores_a_new_version_that_the_matcher_uses(
    db_url: str,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    load_demo(sessions, people=200)
    ann = create_person(client, admin_headers)
    before = client.post(
        "/crm/people/match",
        json={"person_data": _ann(), "explain": True},
        headers=admin_headers,
    ).json()
    assert before["ID"] == ann
    assert before["match"]["model_version"] == 0  # the shipped default

    with session_scope(sessions) as session:
        people = session.scalar(select(func.count()).select_from(Person))
    result = cli(db_url, "match", "train")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"trained model version 1 on {people} people")
    assert cli(db_url, "match", "train").stdout.startswith("trained model version 2")
    with session_scope(sessions) as session:
        stored = session.scalars(select(MatchModel).order_by(MatchModel.version)).all()
        assert [row.version for row in stored] == [1, 2]
        assert stored[1].people == people
        model = Model.from_json(stored[1].model)
        # u from random pairs: two different people almost never share a birth date
        assert model.levels["date_of_birth"]["exact"][1] < 0.01
        assert model.weights["date_of_birth"]["exact"] > 5

    after = client.post(
        "/crm/people/match",
        json={"person_data": _ann(), "explain": True},
        headers=admin_headers,
    ).json()
    assert after["ID"] == ann
    assert after["match"]["model_version"] == 2


def _ann() -> dict[str, object]:
    return {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
    }
