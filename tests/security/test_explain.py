"""Match explanations (issue 10, finding 1): who may see them and what they may say.

A key needs the `explain` scope (admin implies it) for "explain": true; an explanation
describes only the candidate the query matched, nothing when there is no match, never
quotes a stored value, and explained requests are limited per key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from testkit.factories import create_person

PEOPLE = "/crm/people/match"
LEADS = "/crm/leads/match"
NOTHING = {"decision": "no match", "id": None, "candidates": []}


def ask(
    client: TestClient, key: str, person_data: dict[str, Any], path: str = PEOPLE
) -> httpx.Response:
    return client.post(
        path, json={"person_data": person_data, "explain": True}, headers={"X-API-Key": key}
    )


def victim_query(**changes: Any) -> dict[str, Any]:
    """Wrong names and birth date, the victim's e-mail: the attacker's probe."""
    data = {
        "first_name": "Mallory",
        "last_name": "Probe",
        "date_of_birth": "1970-01-01",
        "email": "ann.nguyen@example.com",
        "postcode": "3000",
        "lead_source": "Web",
    }
    data.update(changes)
    return data


@pytest.mark.parametrize("path", [PEOPLE, LEADS])
def test_a_key_without_the_explain_scope_is_refused_in_the_operations_shape(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str], path: str
) -> None:
    create_person(client, admin_headers, kind="leads")
    key = make_key("match")
    response = ask(client, key, victim_query(), path)
    assert response.status_code == 403, response.text
    body = response.json()
    assert body == {
        "delivery": "false",
        "receipt": "API key lacks scope 'explain', which \"explain\": true needs.",
        "ID": "",
        "audit_ID": response.headers["x-audit-id"],
    }
    record = client.get(f"/admin/audit/{body['audit_ID']}", headers=admin_headers).json()
    assert record["response_status"] == 403
    # The same key without "explain" is answered as before.
    plain = client.post(path, json={"person_data": victim_query()}, headers={"X-API-Key": key})
    assert plain.status_code == 200
    assert plain.json()["receipt"] == "Match not found."


def test_no_match_explains_nothing_about_candidates(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    victim = create_person(client, admin_headers)
    key = make_key("match", "explain")
    answers = []
    for date_of_birth in ("1999-04-12", "1999-04-13", "1970-01-01"):
        response = ask(client, key, victim_query(date_of_birth=date_of_birth))
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["receipt"] == "Match not found."
        assert victim not in response.text
        assert body["match"] == NOTHING
        answers.append({k: v for k, v in body.items() if k != "audit_ID"})
    # The right and the wrong birth dates are answered alike: no equality oracle.
    assert answers[0] == answers[1] == answers[2]
    # The audit record (read by admins only) keeps the candidates.
    record = client.get(
        f"/admin/audit/{response.headers['x-audit-id']}", headers=admin_headers
    ).json()
    assert record["outcomes"]["candidates"][0]["id"] == victim


def test_a_match_explains_the_matched_person_only(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    ann = create_person(client, admin_headers)
    # A household member: same e-mail, phone and address, so a candidate for Ann's query.
    tom = create_person(client, admin_headers, first_name="Tom", date_of_birth="2012-03-09")
    key = make_key("match", "explain")
    query = {k: v for k, v in victim_query().items() if k != "lead_source"}
    query.update(first_name="Ann", last_name="Nguyen", date_of_birth="1999-04-12")
    response = ask(client, key, query)
    body = response.json()
    assert body["ID"] == ann
    assert body["match"]["id"] == ann
    assert [c["id"] for c in body["match"]["candidates"]] == [ann]
    assert tom not in response.text
    record = client.get(f"/admin/audit/{body['audit_ID']}", headers=admin_headers).json()
    assert tom in {c["id"] for c in record["outcomes"]["candidates"]}


def test_reasons_never_quote_a_stored_value(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    create_person(client, admin_headers, first_name="Elizabeth")
    key = make_key("match", "explain")
    query = {k: v for k, v in victim_query().items() if k != "lead_source"}
    query.update(first_name="Liz", last_name="Nguyen", date_of_birth="1999-04-12")
    response = ask(client, key, query)
    body = response.json()
    assert body["receipt"] == "Contact found.", response.text
    assert body["match"]["candidates"][0]["reasons"]["given_name"] == "nickname"
    assert "elizabeth" not in response.text.lower()


def test_explained_requests_are_limited_per_key(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    admin_headers: dict[str, str],
) -> None:
    client = make_client(explain_rate_limit="2/minute")
    create_person(client, admin_headers)
    key, other = make_key("match", "explain"), make_key("match", "explain", name="other")
    assert [ask(client, key, victim_query()).status_code for _ in range(2)] == [200, 200]
    refused = ask(client, key, victim_query())
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["delivery"] == "false"
    assert "explained matches" in refused.json()["receipt"]
    # Unexplained requests and other keys go on.
    plain = client.post(PEOPLE, json={"person_data": victim_query()}, headers={"X-API-Key": key})
    assert plain.status_code == 200
    assert ask(client, other, victim_query()).status_code == 200


def test_the_decoder_refuses_before_counting_and_counts_once_per_request() -> None:
    """The match routes' decoder decides the explanation, once per request and before its
    transaction (a transaction a deadlock runs again does not count it twice): a key
    without the scope is refused 403 without counting against the limit, then each
    explained request counts once, the next over the limit is refused 429."""
    from ridercrm.audit.call import Caller
    from ridercrm.config import Settings
    from ridercrm.errors import ApiError
    from ridercrm.ratelimit import KeyRateLimiter, parse_limits
    from ridercrm.web.operations import Requested
    from ridercrm.web.routes.matching import EXPLAIN_LIMITER, people_details

    limiter = KeyRateLimiter(parse_limits("1/minute"), namespace="explain-decoder-test")
    body = {"person_data": victim_query(), "explain": True}

    def requested(*scopes: str) -> Requested:
        caller = Caller(key_id=1, name="site", scopes=frozenset(scopes))
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
        return Requested("a0A000000000000AAA", caller, settings, {EXPLAIN_LIMITER: limiter})

    with pytest.raises(ApiError) as refused:
        people_details(body, requested("match"))
    assert refused.value.status == 403
    ask = people_details(body, requested("match", "explain"))
    assert ask.explain
    with pytest.raises(ApiError) as limited:
        people_details(body, requested("match", "explain"))
    assert limited.value.status == 429
    assert int(limited.value.headers["Retry-After"]) >= 0


def test_the_explain_limit_is_on_by_default() -> None:
    from ridercrm.config import Settings

    assert Settings(_env_file=None).explain_rate_limit not in ("", "off")  # type: ignore[call-arg]
