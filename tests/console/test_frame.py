"""The console's frame: sign-in, sessions, CSRF, lock-out, roles, cookies."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from tests.console.conftest import PASSWORD, csrf, login_token, sign_in


def test_no_session_is_sent_to_sign_in_and_back(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    answer = client.get("/console/people?q=ann", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/login?next=%2Fconsole%2Fpeople%3Fq%3Dann"


def test_sign_in_sets_a_session_cookie_and_goes_where_asked(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    client = make_client()
    client.follow_redirects = False
    name = make_staff("viewer")
    answer = client.post(
        "/console/login",
        data={
            "csrf": login_token(client),
            "username": name,
            "password": PASSWORD,
            "next": "/console/audit",
        },
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/audit"
    cookie = next(
        value
        for value in answer.headers.get_list("set-cookie")
        if value.startswith("ridercrm_console=")
    )
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Path=/console/" in cookie
    assert "Secure" not in cookie  # plain http in the test; https or ..._SECURE_COOKIES=always


def test_cookies_are_secure_when_asked(make_client: Callable[..., TestClient], make_staff) -> None:  # type: ignore[no-untyped-def]
    client = make_client(console_secure_cookies="always")
    client.follow_redirects = False
    answer = sign_in(client, make_staff("viewer"))
    assert all("Secure" in value for value in answer.headers.get_list("set-cookie"))


def test_sign_in_elsewhere_is_never_a_redirect_target(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    for target in ("https://evil.example/", "//evil.example/console/", "/console/\\evil"):
        client = make_client()
        client.follow_redirects = False
        answer = client.post(
            "/console/login",
            data={
                "csrf": login_token(client),
                "username": make_staff("viewer"),
                "password": PASSWORD,
                "next": target,
            },
        )
        assert answer.headers["location"] == "/console/people"


def test_a_wrong_password_is_refused_and_the_account_locks(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    client = make_client(console_lockout_attempts=3)
    client.follow_redirects = False
    name = make_staff("staff")
    for _ in range(2):
        answer = sign_in(client, name, "wrong password!")
        assert answer.status_code == 401
        assert "Wrong user name or password." in answer.text
    answer = sign_in(client, name, "wrong password!")
    assert answer.status_code == 401
    assert "locked until" in answer.text
    # The right password does not open a locked account.
    answer = sign_in(client, name)
    assert answer.status_code == 401
    assert "locked until" in answer.text


def test_an_unknown_name_reads_like_a_wrong_password(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    answer = sign_in(client, "nobody")
    assert answer.status_code == 401
    assert "Wrong user name or password." in answer.text


def test_sign_in_without_its_token_is_refused(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    client = make_client()
    client.follow_redirects = False
    login_token(client)
    answer = client.post(
        "/console/login",
        data={"csrf": "forged", "username": make_staff("admin"), "password": PASSWORD},
    )
    assert answer.status_code == 403
    assert "CSRF" in answer.text


def test_a_form_without_its_csrf_token_is_refused(console_as: Callable[..., TestClient]) -> None:
    client = console_as("viewer")
    for data in ({}, {"csrf": "forged"}):
        answer = client.post("/console/logout", data=data)
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    # Still signed in: nothing was changed.
    assert client.get("/console/people").status_code == 200


def test_sign_out_ends_the_session(console_as: Callable[..., TestClient]) -> None:
    client = console_as("viewer")
    token = client.cookies.get("ridercrm_console")
    answer = client.post("/console/logout", data={"csrf": csrf(client)})
    assert answer.status_code == 303
    # The old cookie no longer works, even if a copy was kept.
    client.cookies.set("ridercrm_console", token or "", path="/console/")
    assert client.get("/console/people").status_code == 303


def test_sign_out_everywhere_ends_every_session(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    name = make_staff("staff")
    first, second = make_client(), make_client()
    for client in (first, second):
        client.follow_redirects = False
        assert sign_in(client, name).status_code == 303
    assert first.post("/console/logout-everywhere", data={"csrf": csrf(first)}).status_code == 303
    assert second.get("/console/people").status_code == 303


def test_a_page_for_a_higher_role_is_403(console_as: Callable[..., TestClient]) -> None:
    client = console_as("staff")
    answer = client.get("/console/admin/keys")
    assert answer.status_code == 403
    assert "needs the admin role" in answer.text


def test_the_console_follows_the_base_path(console_as: Callable[..., TestClient]) -> None:
    client = console_as("viewer", base_path="/services/apexrest")
    assert client.get("/services/apexrest/console/people").status_code == 200
    assert client.get("/console/people").status_code == 404


def test_every_asset_is_served_by_the_service(console_as: Callable[..., TestClient]) -> None:
    client = console_as("viewer")
    page = client.get("/console/people").text
    assert "http://" not in page
    assert "https://" not in page
    assert client.get("/console/static/htmx-2.0.11.min.js").status_code == 200
    assert client.get("/console/static/console.css").status_code == 200
    assert client.get("/console/static/../../app.py").status_code == 404


def test_console_pages_are_not_in_the_api_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if "console" in path]


def test_sign_in_attempts_from_one_address_are_bounded(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(refused_rate_limit="3/minute")
    for _ in range(3):
        assert sign_in(client, "nobody").status_code == 401
    refused = sign_in(client, "nobody")
    assert refused.status_code == 429
    assert "Too many sign-in attempts" in refused.text
