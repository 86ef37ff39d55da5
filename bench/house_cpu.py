"""CPU per request in process, for comparing two builds side by side on a loaded machine.

    PYTHONPATH=<a build's src> .venv/bin/python bench/house_cpu.py <label>

A TestClient app on a fresh SQLite file (migrated), 200 contacts and a product; then the
median process CPU time (``time.process_time``, client and server together, since both run
in this process) of 8 timed 200-item bookings (operation 1, new booking numbers), 8 timed
200-item modifies (operation 2), 100 ``GET /crm/products``, 100 match requests (operation
3, a stored contact found) and 100 ``GET /admin/people/{id}``, after one
untimed request of each. CPU time is far less sensitive to other load on the machine
than wall time; run the builds interleaved (docs/architecture.md, bench/README.md "The house").
"""

import itertools
import statistics
import sys
import tempfile
import time

from fastapi.testclient import TestClient

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.keys.service import create_key

d = tempfile.mkdtemp()
settings = Settings(database_url=f"sqlite:///{d}/b.db", log_level="WARNING")
app = create_app(settings)
n = itertools.count()
with TestClient(app) as client:
    ctx = getattr(app.state, "context", None) or app.state.services
    from ridercrm.migrate import upgrade

    upgrade(ctx.engine)
    with session_scope(ctx.sessions, write=True) as s:
        key = create_key(s, name="b", scopes=["admin"])[1]
    h = {"Authorization": f"Bearer {key}"}
    prod = client.post(
        "/admin/products", json={"name": "P", "code": "P1", "price": "249.00"}, headers=h
    ).json()["id"]
    people = []
    for i in range(200):
        r = client.post(
            "/admin/contacts",
            json={
                "first_name": f"A{i}",
                "last_name": f"B{i}",
                "email": f"a{i}@example.com",
                "mobile_phone": f"0412 345 {i:03d}",
            },
            headers=h,
        )
        people.append(r.json()["id"])

    def booking(rep):
        return {
            "people_product": [
                {
                    "person_id": p,
                    "product_id": prod,
                    "asset_id": "",
                    "course_datetime": "2026-12-05 08:30:00",
                    "course_date_end": "2026-12-05 16:30:00",
                    "course_location": "somerton",
                    "booking_number": f"HB-{rep}-{i}",
                    "course_status": "booked",
                    "mobile_phone": "0412 345 678",
                    "booking_source": "Website",
                }
                for i, p in enumerate(people)
            ]
        }

    def modify(rep):
        return {
            "people_data": [
                {"ID": p, "city": f"City{rep}", "postcode": f"{3000 + rep}"} for p in people
            ]
        }

    out = {}
    for name, make, reps in (("bookings", booking, 8), ("modify", modify, 8)):
        cpu = []
        for rep in range(reps + 1):
            body = make(rep)
            t = time.process_time()
            r = client.post(
                "/crm/people/rider_courses" if name == "bookings" else "/crm/modify",
                json=body,
                headers=h,
            )
            c = time.process_time() - t
            assert r.status_code == 200, r.text[:300]
            if rep:
                cpu.append(c * 1000)
        out[name] = statistics.median(cpu)
    cpu = []
    for rep in range(101):
        t = time.process_time()
        r = client.get("/crm/products", headers=h)
        c = time.process_time() - t
        if rep:
            cpu.append(c * 1000)
    out["products GET"] = statistics.median(cpu)
    ann = {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
        "mobile_phone": "0412 999 678",
    }
    ann_id = client.post("/admin/contacts", json=ann, headers=h).json()["id"]
    asked = {"person_data": ann}
    for name, send in (
        ("match", lambda: client.post("/crm/people/match", json=asked, headers=h)),
        ("person GET", lambda: client.get(f"/admin/people/{ann_id}", headers=h)),
    ):
        cpu = []
        for rep in range(101):
            t = time.process_time()
            r = send()
            c = time.process_time() - t
            assert r.status_code == 200, r.text[:300]
            assert name != "match" or r.json()["ID"] == ann_id, r.text[:300]
            if rep:
                cpu.append(c * 1000)
        out[name] = statistics.median(cpu)
print(sys.argv[1], " ".join(f"{k}={v:.1f}" for k, v in out.items()))
