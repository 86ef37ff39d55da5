"""An Idempotency-Key replay answers in the JSON media type the repeat's Accept asks for."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient
from testkit.factories import person_body


def test_a_replay_negotiates_its_media_type_from_the_repeats_accept(
    client: TestClient, make_key: Callable[..., str]
) -> None:
    key = make_key("admin")
    raw = json.dumps(person_body(first_name="Replayed")).encode()

    def post(accept: str) -> tuple[int, str, bytes]:
        headers = {
            "X-API-Key": key,
            "Content-Type": "application/json",
            "Idempotency-Key": "replay-accept-1",
            "Accept": accept,
        }
        response = client.post("/admin/contacts", content=raw, headers=headers)
        return response.status_code, response.headers["content-type"], response.content

    first = post("application/json")
    as_text_json = post("text/json")
    as_json_again = post("application/json")

    assert first[:2] == (201, "application/json")
    assert as_text_json[:2] == (201, "text/json; charset=utf-8")
    assert as_json_again[:2] == (201, "application/json")
    assert first[2] == as_text_json[2] == as_json_again[2], "the stored answer, unchanged"
