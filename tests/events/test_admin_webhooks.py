"""Webhook endpoints through the admin API and the CLI, and the addresses refused (SSRF)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver, receiving
from typer.testing import CliRunner

from ridercrm import netsafety
from ridercrm.cli import app
from ridercrm.db import session_scope
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import WebhookEndpoint
from tests.events.conftest import register

runner = CliRunner()


def test_register_answers_id_and_secret_once_and_lists_without_secrets(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver
) -> None:
    response = client.post(
        "/admin/webhooks",
        json={"url": receiver.url, "event_types": ["person.created"], "description": "site"},
        headers=admin_headers,
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert set(created) == {"id", "secret"}
    assert created["secret"].startswith("whsec_")
    listed = client.get("/admin/webhooks", headers=admin_headers)
    assert listed.status_code == 200
    (entry,) = listed.json()["webhooks"]
    assert entry["id"] == created["id"]
    assert entry["url"] == receiver.url
    assert entry["event_types"] == ["person.created"]
    assert entry["description"] == "site"
    assert entry["enabled"] is True
    assert created["secret"] not in listed.text
    assert (
        created["secret"]
        not in client.get(f"/admin/webhooks/{created['id']}", headers=admin_headers).text
    )
    # Not in the audit trail either (it is shown once, to the caller).
    record = client.get(f"/admin/audit/{response.headers['x-audit-id']}", headers=admin_headers)
    assert record.status_code == 200
    assert record.json()["response_status"] == 201
    assert created["secret"] not in record.text


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"event_types": ["person.created"]}, "url"),
        ({"url": "http://127.0.0.1/x", "event_types": []}, "event_types"),
        (
            {"url": "http://127.0.0.1/x", "event_types": ["person.deleted"]},
            "unknown person.deleted",
        ),
        ({"url": "http://127.0.0.1/x", "event_types": ["person.created"], "secret": "x"}, "secret"),
        ({"url": "ftp://127.0.0.1/x", "event_types": ["person.created"]}, "http"),
        ({"url": "http://127.0.0.1/x#f", "event_types": ["person.created"]}, "fragment"),
        ({"url": "http://u:p@127.0.0.1/x", "event_types": ["person.created"]}, "password"),
        # urlsplit drops tabs and line breaks: the URL sent to would not be the one shown.
        (
            {"url": "http://127.0.0.1/x\r\nX-Injected: 1", "event_types": ["person.created"]},
            "control characters",
        ),
        ({"url": "http://127.0.0.1/a b", "event_types": ["person.created"]}, "spaces"),
        # PostgreSQL refuses NUL in text: it was a 500 there.
        (
            {"url": "http://127.0.0.1/x", "event_types": ["person.created"], "description": "\x00"},
            "NUL",
        ),
        # Escape sequences would reach the terminal of whoever runs `ridercrm webhooks list`.
        (
            {
                "url": "http://127.0.0.1/x",
                "event_types": ["person.created"],
                "description": "\x1b]0;title\x07\x1b[2J",
            },
            "control characters",
        ),
    ],
)
def test_bad_registrations_are_refused_and_store_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    body: dict,
    reason: str,
) -> None:
    response = client.post("/admin/webhooks", json=body, headers=admin_headers)
    assert response.status_code == 400, response.text
    assert reason in response.json()["detail"]
    assert _endpoint_count(sessions) == 0


def _endpoint_count(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalar(select(func.count()).select_from(WebhookEndpoint)) or 0)


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:8000/hook", "loopback"),
        ("http://localhost/hook", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://192.168.0.10/hook", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://100.100.100.200/", "metadata"),
        ("http://[::ffff:10.0.0.1]/", "private"),
        ("http://0.0.0.0/", "a multicast or unspecified address"),
        # Other spellings of the same addresses, as the resolver reads them.
        ("http://0/", "a multicast or unspecified address"),
        ("http://[::]/", "a multicast or unspecified address"),
        ("http://100.64.0.1/", "a non-public address"),  # shared (carrier-grade NAT)
        ("http://2130706433/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/", "loopback"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://[fec0::1]/", "private (site-local)"),  # deprecated site-local range
        # 6to4 addresses carry an IPv4 address: 169.254.169.254 and 127.0.0.1.
        ("http://[2002:a9fe:a9fe::1]/", "link-local"),
        ("http://[2002:7f00:1::1]/", "loopback"),
    ],
)
def test_internal_addresses_are_refused_unless_allowed(
    make_client: Callable[..., TestClient],
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    url: str,
    kind: str,
) -> None:
    strict = make_client(webhook_allowed_hosts="")
    body = {"url": url, "event_types": ["person.created"]}
    refused = strict.post("/admin/webhooks", json=body, headers=admin_headers)
    assert refused.status_code == 400, refused.text
    assert kind in refused.json()["detail"]
    assert "RIDERCRM_WEBHOOK_ALLOWED_HOSTS" in refused.json()["detail"]
    assert _endpoint_count(sessions) == 0
    allowing = make_client(webhook_allowed_hosts="localhost,127.0.0.0/8,::/0,10.0.0.0/8,0.0.0.0/0")
    assert allowing.post("/admin/webhooks", json=body, headers=admin_headers).status_code == 201


def test_the_allowance_given_at_registration_is_honoured_by_every_deliverer(
    db_url: str,
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
) -> None:
    """`RIDERCRM_WEBHOOK_ALLOWED_HOSTS=127.0.0.1 ridercrm webhooks add ...` is enough: the
    server's deliverer, started without the setting, sends there (the README's example)."""
    result = runner.invoke(
        app,
        ["webhooks", "add", receiver.url, "--event", "person.created"],
        env={"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"},
    )
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip().splitlines()[-1]
    (listed,) = client.get("/admin/webhooks", headers=admin_headers).json()["webhooks"]
    assert listed["allowed_hosts"] == ["127.0.0.1/32"]
    shown = runner.invoke(app, ["webhooks", "list"], env={"RIDERCRM_DATABASE_URL": db_url})
    assert "allowed 127.0.0.1/32" in shown.stdout
    create_person(client, admin_headers)
    make_deliverer(webhook_allowed_hosts="").run_until_idle()
    (got,) = receiver.delivered()
    assert got.verifies_with(secret)


def test_the_address_is_checked_again_when_delivering(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What was allowed is the address range the URL needed, not the endpoint: a name that
    resolves elsewhere later (DNS rebinding) is refused before anything is sent."""
    port = receiver.url.rsplit(":", 1)[1].split("/", 1)[0]
    resolves_to = ["127.0.0.1"]
    real = socket.getaddrinfo

    def lookup(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "hooks.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (resolves_to[0], int(port)))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(netsafety.socket, "getaddrinfo", lookup)
    url = f"http://hooks.example:{port}/hook"
    endpoint, _ = register(client, admin_headers, url, "person.created")
    resolves_to[0] = "10.0.0.7"
    create_person(client, admin_headers)
    make_deliverer(webhook_allowed_hosts="").run_once()
    assert receiver.requests == []
    (entry,) = client.get(f"/admin/webhooks/{endpoint}/deliveries", headers=admin_headers).json()[
        "deliveries"
    ]
    assert entry["status"] == "pending"
    assert "10.0.0.7, a private address" in entry["error"]
    # Back where it was allowed, it is delivered.
    resolves_to[0] = "127.0.0.1"
    client.post(f"/admin/webhooks/{endpoint}/disable", headers=admin_headers)
    client.post(f"/admin/webhooks/{endpoint}/enable", headers=admin_headers)  # due at once
    make_deliverer(webhook_allowed_hosts="").run_once()
    assert len(receiver.delivered()) == 1


def test_redirects_are_not_followed(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    with receiving() as elsewhere:
        receiver.answer((307, {"Location": elsewhere.url}))
        endpoint, _ = register(client, admin_headers, receiver.url, "person.created")
        create_person(client, admin_headers)
        deliverer.run_once()
        assert elsewhere.requests == []
    (entry,) = client.get(f"/admin/webhooks/{endpoint}/deliveries", headers=admin_headers).json()[
        "deliveries"
    ]
    assert (entry["status"], entry["response_code"]) == ("pending", 307)


def test_the_delivery_log_holds_no_personal_field(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    endpoint, _ = register(client, admin_headers, receiver.url, "person.created")
    create_person(client, admin_headers, email="private.person@example.com")
    deliverer.run_until_idle()
    assert "private.person@example.com" in receiver.delivered()[0].body.decode()
    log = client.get(f"/admin/webhooks/{endpoint}/deliveries", headers=admin_headers)
    assert log.status_code == 200
    assert "private.person" not in log.text
    assert "Nguyen" not in log.text


def _cli(db_url: str, *args: str) -> tuple[int, str]:
    result = runner.invoke(
        app,
        list(args),
        env={"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"},
    )
    return result.exit_code, result.output


def test_cli_adds_lists_rotates_disables_enables_and_replays(
    db_url: str,
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    code, out = _cli(
        db_url,
        "webhooks",
        "add",
        receiver.url,
        "--event",
        "person.created",
        "--event",
        "person.updated",
    )
    assert code == 0, out
    secret = out.strip().splitlines()[-1]
    assert secret.startswith("whsec_")
    (entry,) = client.get("/admin/webhooks", headers=admin_headers).json()["webhooks"]
    endpoint = entry["id"]
    assert entry["event_types"] == ["person.created", "person.updated"]
    code, out = _cli(db_url, "webhooks", "list")
    assert code == 0
    assert endpoint in out
    assert secret not in out

    create_person(client, admin_headers)
    deliverer.run_until_idle()
    (got,) = receiver.delivered()
    assert got.verifies_with(secret)

    code, out = _cli(db_url, "webhooks", "deliveries", endpoint)
    assert code == 0
    assert "delivered" in out
    assert got.webhook_id in out
    code, out = _cli(db_url, "webhooks", "replay", endpoint, "--event", got.webhook_id)
    assert code == 0, out
    deliverer.run_until_idle()
    assert [r.webhook_id for r in receiver.delivered()] == [got.webhook_id] * 2
    # Since a time written as the admin API takes it (Z or an offset), or in UTC.
    for since in ("2000-01-01T00:00:00Z", "2000-01-01T11:00:00+11:00", "2000-01-01"):
        code, out = _cli(db_url, "webhooks", "replay", endpoint, "--since", since)
        assert code == 0, out
        assert "replaying 1 event(s)" in out
    code, out = _cli(db_url, "webhooks", "replay", endpoint, "--since", "2999-01-01T00:00:00Z")
    assert (code, "replaying 0 event(s)" in out) == (0, True), out
    deliverer.run_until_idle()
    assert [r.webhook_id for r in receiver.delivered()] == [got.webhook_id] * 5

    code, out = _cli(db_url, "webhooks", "rotate", endpoint)
    assert code == 0, out
    new_secret = out.strip().splitlines()[-1]
    assert new_secret.startswith("whsec_")
    assert new_secret != secret

    assert _cli(db_url, "webhooks", "disable", endpoint)[0] == 0
    create_person(client, admin_headers, first_name="Bo")
    deliverer.run_until_idle()
    assert len(receiver.delivered()) == 5
    assert _cli(db_url, "webhooks", "enable", endpoint)[0] == 0
    create_person(client, admin_headers, first_name="Cy")
    deliverer.run_until_idle()
    last = receiver.delivered()[-1]
    assert last.payload["data"]["person"]["first_name"] == "Cy"
    assert last.verifies_with(new_secret)
    assert last.verifies_with(secret)


def test_cli_refuses_internal_addresses_and_unknown_endpoints(db_url: str) -> None:
    result = runner.invoke(
        app,
        ["webhooks", "add", "http://10.0.0.5/x", "--event", "person.created"],
        env={"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": ""},
    )
    assert result.exit_code == 2
    assert "private" in result.output
    code, out = _cli(db_url, "webhooks", "disable", "ep_nope")
    assert code == 2
    assert "no webhook endpoint ep_nope" in out
    # A description reaches terminals (`webhooks list`) and pages: no escapes, no marks.
    for description in ("x\x1b[2Jy", "a\nb", "ab\u202ecd"):
        code, out = _cli(
            db_url, "webhooks", "add", "https://hooks.example.com/x", "--event",
            "person.created", "--description", description,
        )  # fmt: skip
        assert code == 2, out
        assert "description: must not contain control characters" in out
    code, out = _cli(db_url, "webhooks", "list")
    assert "hooks.example.com" not in out


def test_a_replay_time_before_the_calendar_or_a_nul_in_an_id_is_refused_not_a_500(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver
) -> None:
    endpoint, _secret = register(client, admin_headers, receiver.url, "person.created")
    replay = client.post(
        f"/admin/webhooks/{endpoint}/replay",
        json={"since": "0001-01-01T00:00:00+10:00"},  # before the first representable UTC time
        headers=admin_headers,
    )
    assert replay.status_code == 400, replay.text
    assert "since" in replay.json()["detail"]
    # A number is not read as Unix time: "-1" would replay everything since 1970.
    for number in ("-1", "0", 1700000000, "1.5"):
        counted = client.post(
            f"/admin/webhooks/{endpoint}/replay", json={"since": number}, headers=admin_headers
        )
        assert counted.status_code == 400, (number, counted.text)
        assert "since: must be an ISO 8601 time" in counted.json()["detail"]
    nul = client.get("/admin/webhooks/ep%00x", headers=admin_headers)
    assert nul.status_code == 404, nul.text  # no endpoint has such an id
    replay_nul = client.post(
        f"/admin/webhooks/{endpoint}/replay", json={"event_id": "msg_\u0000"}, headers=admin_headers
    )
    assert replay_nul.status_code == 400, replay_nul.text


def test_an_allowance_may_name_one_port_of_a_host(
    make_client: Callable[..., TestClient],
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
    client: TestClient,
) -> None:
    """`RIDERCRM_WEBHOOK_ALLOWED_HOSTS=127.0.0.1:9000` lets webhooks reach the receiver on
    that port, not the host's other services (a database, a cache, an admin port)."""
    port = int(receiver.url.split(":")[2].split("/")[0])
    other = port + 1 if port < 65535 else port - 1
    allowing = make_client(webhook_allowed_hosts=f"127.0.0.1:{port},[::1]:{port}")
    for url in (f"http://127.0.0.1:{other}/hooks", f"http://[::1]:{other}/hooks"):
        body = {"url": url, "event_types": ["person.created"]}
        refused = allowing.post("/admin/webhooks", json=body, headers=admin_headers)
        assert refused.status_code == 400, refused.text
        assert "loopback" in refused.json()["detail"]
    assert _endpoint_count(sessions) == 0
    body = {"url": receiver.url, "event_types": ["person.created"]}
    made = allowing.post("/admin/webhooks", json=body, headers=admin_headers)
    assert made.status_code == 201, made.text
    (listed,) = client.get("/admin/webhooks", headers=admin_headers).json()["webhooks"]
    assert listed["allowed_hosts"] == [f"127.0.0.1/32:{port}"]
    create_person(client, admin_headers)
    make_deliverer(webhook_allowed_hosts="").run_until_idle()
    (got,) = receiver.delivered()
    assert got.verifies_with(made.json()["secret"])


def test_a_page_before_an_id_past_what_the_store_holds_is_refused_not_a_500(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Delivery ids are 32-bit integers in the store: a ``before`` past 2**31-1 is a 400
    naming the range (on PostgreSQL it was a 500: the value did not fit the column)."""
    endpoint, _ = register(client, admin_headers, "http://127.0.0.1:9/hook", "person.created")
    path = f"/admin/webhooks/{endpoint}/deliveries"
    assert client.get(path, params={"before": 2**31 - 1}, headers=admin_headers).status_code == 200
    response = client.get(path, params={"before": 2**31}, headers=admin_headers)
    assert response.status_code == 400, response.text
    assert "before" in response.text
