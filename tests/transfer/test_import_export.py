"""`ridercrm import` and `ridercrm export` against a real database."""

from __future__ import annotations

import csv
import gc
import os
import stat
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product

from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.duplicates.merge import merge_people
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import service as people_service
from ridercrm.people.models import CONTACT, Person, PersonKey
from ridercrm.people.schemas import PersonCreate
from ridercrm.products.models import Product
from ridercrm.transfer.checks import UnreadableFile
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import BadRow, import_csv
from tests.transfer.helpers import (
    OUR_HEADER,
    SALESFORCE_CONTACT,
    assert_match_keys_in_step,
    cli,
    fifteen,
    people,
    products,
    runner,
    write_csv,
)


def test_import_contacts_with_our_column_names(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    kept = new_id(RecordKind.CONTACT)
    file = write_csv(
        tmp_path / "contacts.csv",
        OUR_HEADER,
        [
            [kept, "Ann", "Nguyen", "1999-04-12", " ann@example.com ", "3064", "0412 345 678",
             "", "L1234567", "cyl", "12 Main St", "Craigieburn", "VIC", "Australia",
             "purchased list", "TRUE"],
            ["", "Bob", "Lee", "", "", "0800", "", "", "", "", "", "Darwin", "NT", "", "", ""],
        ],
    )  # fmt: skip
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "imported 2 contacts, 0 bad rows"
    assert "ignored" not in result.output
    ann = client.get(f"/admin/people/{kept}", headers=admin_headers).json()
    assert ann["kind"] == "contact"
    assert ann["email"] == "ann@example.com"
    assert ann["license_type"] == "CYL"
    assert ann["lead_source"] == "Purchansed List"
    assert ann["opt_in"] is True
    assert ann["date_of_birth"] == "1999-04-12"
    assert ann["home_phone"] is None  # empty cell: absent
    found = client.get("/admin/people", params={"q": "Bob Lee"}, headers=admin_headers).json()
    (bob,) = found["people"]
    assert bob["id"].startswith("003")
    assert len(bob["id"]) == 18
    assert bob["postcode"] == "0800"
    assert bob["opt_in"] is None
    assert_match_keys_in_step(sessions)
    ask = {"first_name": "ann", "last_name": "NGUYEN", "date_of_birth": "1999-04-12",
           "email": "ANN@example.com", "postcode": 3064}  # fmt: skip
    match = client.post("/crm/people/match", json={"person_data": ask}, headers=admin_headers)
    assert (match.json()["receipt"], match.json()["ID"]) == ("Contact found.", kept)


def test_import_contacts_from_a_salesforce_export_keeps_ids(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    short = fifteen(RecordKind.CONTACT)
    header = [name.upper() if name == "Email" else name for name in SALESFORCE_CONTACT]
    file = write_csv(
        tmp_path / "Contact.csv",
        header,
        [[short, "Kate", "O'Brien", "2001-02-03", "kate@example.com", "4350", "0400 111 222",
          "(07) 4632 1234", "7 Ruthven St", "Toowoomba", "QLD", "Australia", "Web", "1",
          "123456789", "CYP", "false", "001000000000001"]],
    )  # fmt: skip
    refused = cli(db_url, "import", "contacts", str(file))
    assert refused.exit_code == 2, refused.output
    assert "--ignore-columns HasOptedOutOfEmail,AccountId" in refused.output
    assert people(sessions) == {}
    result = cli(
        db_url, "import", "contacts", str(file), "--ignore-columns", "HasOptedOutOfEmail,AccountId"
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("ignored columns: HasOptedOutOfEmail, AccountId") == 1
    stored = people(sessions)
    (person_id,) = stored
    assert len(person_id) == 18
    assert person_id[:15] == short
    kate = stored[person_id]
    assert kate["kind"] == "contact"
    assert kate["email"] == "kate@example.com"
    assert kate["postcode"] == "4350"
    assert kate["home_phone"] == "(07) 4632 1234"
    assert kate["street"] == "7 Ruthven St"
    assert kate["drivers_license"] == "123456789"
    assert kate["license_type"] == "CYP"
    assert kate["opt_in"] is False  # from Opt_In__c, not HasOptedOutOfEmail


@pytest.mark.parametrize(
    ("postcode", "street", "city", "state", "country", "phone"),
    [
        ("PostalCode", "Street", "City", "State", "Country", "Phone"),
        ("MailingPostalCode", "MailingStreet", "MailingCity", "MailingState",
         "MailingCountry", "HomePhone"),
    ],
)  # fmt: skip
def test_import_leads_from_a_salesforce_export(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    postcode: str,
    street: str,
    city: str,
    state: str,
    country: str,
    phone: str,
) -> None:
    lead_id = new_id(RecordKind.LEAD)
    header = ["Id", "FirstName", "LastName", "Email", postcode, street, city, state, country,
              phone, "MobilePhone", "LeadSource", "Status", "Company"]  # fmt: skip
    file = write_csv(
        tmp_path / "Lead.csv",
        header,
        [[lead_id, "Raj", "Patel", "raj@example.com", "2075", "1 Mona Vale Rd", "St Ives",
          "NSW", "Australia", "(02) 9440 0000", "0433 000 111", "Phone Inquiry", "Open",
          "Acme"]],
    )  # fmt: skip
    result = cli(
        db_url,
        "import",
        "leads",
        str(file),
        "--ignore-columns",
        "Status",
        "--ignore-columns",
        "company",
    )
    assert result.exit_code == 0, result.output
    assert "ignored columns: Status, Company" in result.output
    assert "imported 1 lead, 0 bad rows" in result.output
    raj = people(sessions)[lead_id]
    assert raj["kind"] == "lead"
    assert (raj["postcode"], raj["street"], raj["city"], raj["state"], raj["country"]) == (
        "2075", "1 Mona Vale Rd", "St Ives", "NSW", "Australia"
    )  # fmt: skip
    assert raj["home_phone"] == "(02) 9440 0000"
    assert raj["mobile_phone"] == "0433 000 111"
    assert raj["lead_source"] == "Phone Inquiry"
    assert_match_keys_in_step(sessions)


def test_import_products_from_a_salesforce_export_and_our_names(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    short = fifteen(RecordKind.PRODUCT)
    salesforce = write_csv(
        tmp_path / "Product2.csv",
        ["Id", "Name", "ProductCode", "UnitPrice", "IsActive", "Family"],
        [[short, "Licence Test (Somerton)", "LT-SOM", "379", "false", "Courses"]],
    )
    result = cli(db_url, "import", "products", str(salesforce), "--ignore-columns", "Family")
    assert result.exit_code == 0, result.output
    assert "ignored columns: Family" in result.output
    ours = write_csv(
        tmp_path / "products.csv",
        ["NAME", "code", "Price"],
        [["Learner Approved Pre-Licence (Kilsyth)", "LAP-KIL", "249.50"]],
    )
    assert cli(db_url, "import", "products", str(ours)).exit_code == 0
    product = client.get(f"/admin/products/{short}", headers=admin_headers).json()
    assert len(product["id"]) == 18
    assert product["id"][:15] == short
    assert product == {
        "id": product["id"],
        "name": "Licence Test (Somerton)",
        "code": "LT-SOM",
        "price": "379.00",
        "active": False,
    }
    (kilsyth,) = (p for p in products(sessions).values() if p["code"] == "LAP-KIL")
    assert kilsyth["price"] == Decimal("249.50")
    assert kilsyth["active"] is True  # absent: active


def test_checkbox_cells_written_1_or_0_mean_true_or_false(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    contacts = write_csv(
        tmp_path / "contacts.csv",
        ["FirstName", "LastName", "Opt_In__c"],
        [
            ["Ann", "Nguyen", "1"],
            ["Bob", "Lee", " 0 "],
            ["Cat", "Ng", "2"],
            ["Dan", "Ho", "TRUE"],
            ["Eve", "Ma", "yes"],
            ["Fay", "Yu", "Off"],
        ],
    )
    result = cli(db_url, "import", "contacts", str(contacts))
    assert result.exit_code == 1, result.output
    assert "line 4: opt_in: must be true or false" in result.output
    opt_in = {p["first_name"]: p["opt_in"] for p in people(sessions).values()}
    assert opt_in == {"Ann": True, "Bob": False, "Dan": True, "Eve": True, "Fay": False}
    goods = write_csv(
        tmp_path / "products.csv",
        ["Name", "ProductCode", "UnitPrice", "IsActive"],
        [["Licence Test", "LT", "379", "0"], ["Pre-Licence", "PL", "249", "1"]],
    )
    assert cli(db_url, "import", "products", str(goods)).exit_code == 0
    active = {p["code"]: p["active"] for p in products(sessions).values()}
    assert active == {"LT": False, "PL": True}


def test_bad_rows_are_reported_by_line_and_good_rows_are_kept(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    lead_id = new_id(RecordKind.LEAD)
    contact_id = new_id(RecordKind.CONTACT)
    mistyped = contact_id[:15] + "999"  # 9 is no checksum character
    rows = [
        ["", "Ann", "Nguyen", "", "", "3064"],  # line 2
        ["", "Bob", "Lee", "", "", "12"],  # line 3: bad postcode
        ["", "Cat", "Ng", "", "", "", "12 Long\nWinding Rd"],  # lines 4-5
        ["", "Dan", "", "", "not-an-email", ""],  # line 6: no last name, bad e-mail
        [lead_id, "Eve", "Ho", "", "", ""],  # line 7: a lead's id in a contacts file
        ["003xyz", "Fay", "Yu", "2999-01-01", "", ""],  # line 8: malformed id, future dob
        ["", "Gus", "Ma", "", "", "", "", "extra"],  # line 9: more cells than the header
        [mistyped, "Ida", "Lu", "", "", ""],  # line 10: the checksum does not fit
        ["", "Hal", "Oh", "", "", ""],  # line 11
    ]
    header = ["id", "first_name", "last_name", "date_of_birth", "email", "postcode", "street"]
    file = write_csv(tmp_path / "mixed.csv", header, rows)
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1, result.output
    lines = result.stdout.strip().splitlines()
    assert lines == [
        'line 3: postcode: must be 4 digits, or 3 (800 is "0800"), as text or a whole number (received text of 2 characters)',
        "line 6: last_name: is required; email: must be an e-mail address such as ann@example.com (received text of 12 characters)",
        f"line 7: id: {lead_id} is not a contact id (it should start 003)",
        "line 8: id: 003xyz is not a contact id (an id has 15 or 18 characters, this one 6); "
        "date_of_birth: must be a date up to today (received a date in the future)",
        "line 9: has 8 cells but the header has 7",
        f"line 10: id: {mistyped} is not a contact id (its last 3 characters are not the"
        " checksum of the first 15 (mistyped?))",
        "imported 3 contacts, 6 bad rows",
    ]
    stored = people(sessions).values()
    assert sorted(p["first_name"] for p in stored) == ["Ann", "Cat", "Hal"]
    assert {p["street"] for p in stored} == {None, "12 Long\nWinding Rd"}


def test_a_value_under_an_empty_header_cell_is_a_bad_row_not_lost(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    """A spreadsheet's unnamed column of notes was dropped with its values; a column left
    empty under an empty header (the trailing commas spreadsheets write) is still fine."""
    header = ["first_name", "", "last_name", ""]
    rows = [["Ann", "", "Nguyen", ""], ["Bob", "call after 5", "Lee", " "], ["Cat", "x", "Ng", "y"]]
    file = write_csv(tmp_path / "notes.csv", header, rows)
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1, result.output
    assert result.stdout.strip().splitlines() == [
        "line 3: column 2 has no header but holds a value; name it in the header",
        "line 4: columns 2, 4 have no header but hold values; name them in the header",
        "imported 1 contact, 2 bad rows",
    ]
    assert [p["first_name"] for p in people(sessions).values()] == ["Ann"]


def test_dry_run_checks_everything_and_writes_nothing(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(
        tmp_path / "c.csv",
        ["FirstName", "LastName", "MailingPostalCode"],
        [["Ann", "Nguyen", "3064"], ["Bob", "Lee", "30"], ["Cat", "Ng", ""]],
    )
    result = cli(db_url, "import", "contacts", str(file), "--dry-run")
    assert result.exit_code == 1
    assert "line 3: postcode: must be 4 digits" in result.output
    assert "would import 2 contacts, 1 bad row" in result.output
    assert people(sessions) == {}
    good = write_csv(tmp_path / "good.csv", ["name", "code", "price"], [["X", "X-1", "1"]])
    result = cli(db_url, "import", "products", str(good), "--dry-run")
    assert result.exit_code == 0
    assert "would import 1 product, 0 bad rows" in result.output
    assert products(sessions) == {}


def test_an_id_repeated_in_the_file_or_already_stored_is_a_bad_row(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    stored = create_person(client, admin_headers, first_name="Zed", last_name="Stored")
    repeated = new_id(RecordKind.CONTACT)
    file = write_csv(
        tmp_path / "dupes.csv",
        ["Id", "FirstName", "LastName"],
        [
            [repeated, "Ann", "One"],  # line 2
            [stored.lower(), "Bob", "Two"],  # line 3: already stored (18 chars, any case)
            [repeated[:15], "Cat", "Three"],  # line 4: the same id as line 2, 15 characters
            ["", "Dan", "Four"],  # line 5
        ],
    )
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1
    # A stored id names that person: the row is recognised (skipped), not a bad row.
    assert f"line 3: is contact {stored}: skipped" in result.output
    assert f"line 4: id: {repeated} repeats line 2" in result.output
    assert "imported 2 contacts, 1 skipped as already stored, 1 bad row" in result.output
    # With --on-match add every row is a new person: a stored id cannot be one.
    again = write_csv(tmp_path / "again.csv", ["Id", "FirstName", "LastName"],
                      [[stored, "Bob", "Two"]])  # fmt: skip
    added = cli(db_url, "import", "contacts", str(again), "--on-match", "add")
    assert f"line 2: id: {stored} already exists" in added.output
    names = {p["id"]: p["first_name"] for p in people(sessions).values()}
    assert names[stored] == "Zed"  # not overwritten
    assert names[repeated] == "Ann"
    assert sorted(names.values()) == ["Ann", "Dan", "Zed"]


def test_a_product_code_repeated_or_already_stored_is_a_bad_row(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    create_product(client, admin_headers, code="LAP-SOM")
    file = write_csv(
        tmp_path / "p.csv",
        ["Name", "ProductCode", "UnitPrice"],
        [["A", "LAP-SOM", "1"], ["B", "LT-SOM", "2"], ["C", "LT-SOM", "3"], ["D", "X", "1.234"]],
    )
    result = cli(db_url, "import", "products", str(file))
    assert result.exit_code == 1
    assert result.stdout.strip().splitlines() == [
        "line 2: code: LAP-SOM is already used by another product",
        "line 4: code: LT-SOM repeats line 3",
        "line 5: price: must be a decimal number of at most 2 places, such as 249.00"
        " (received text of 5 characters)",
        "imported 1 product, 3 bad rows",
    ]
    assert sorted(p["code"] for p in products(sessions).values()) == ["LAP-SOM", "LT-SOM"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read: No such file or directory"),
        (b"", "the file has no header row"),
        (b"\n\n", "the file has no header row"),
        (b"Email,FirstName\nann@example.com,Ann\n", "no last_name column (or LastName)"),
        (b"FirstName,LastName,Email,EMAIL\nA,B,,\n", "columns Email and EMAIL both give email"),
        (b"FirstName,LastName\nAnn,Nguyen\nZo\xe9,Ng\n", "not UTF-8 text (byte 0xe9"),
    ],
)
def test_a_file_that_cannot_be_imported_exits_2_and_imports_nothing(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    content: bytes | None,
    message: str,
) -> None:
    file = tmp_path / "input.csv"
    if content is not None:
        file.write_bytes(content)
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert people(sessions) == {}


def test_a_device_or_a_pipe_is_refused_before_a_byte_is_read(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    """The importer reads its file three times; /dev/zero would be read without end and a
    pipe gives its bytes once. /dev/null and a named pipe no one writes to show it: both
    are refused by what they are, at once (opening the pipe would wait for a writer)."""
    pipe = tmp_path / "rows.csv"
    os.mkfifo(pipe)
    for path in (Path(os.devnull), pipe):
        result = cli(db_url, "import", "contacts", str(path))
        assert result.exit_code == 2, result.output
        assert "not a regular file (a pipe or a device)" in result.output
    assert people(sessions) == {}


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["import", "dry-run"])
def test_a_quote_never_closed_refuses_the_file(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], dry_run: list[str]
) -> None:
    """A quote opened and never closed made the rest of the file one cell: Ann stored
    with every later row in her street, those people lost, exit 0. Now the file is no
    CSV, with the line, and nothing is stored."""
    file = tmp_path / "open-quote.csv"
    file.write_text(
        'first_name,last_name,street\nAnn,Alpha,"1 A St\nBob,Beta,2 B St\nCat,Gamma,3 C St\n'
    )
    result = cli(db_url, "import", "contacts", *dry_run, str(file))
    assert result.exit_code == 2, result.output
    assert "unexpected end of data" in result.output
    assert people(sessions) == {}


def test_an_import_leaves_the_cycle_collector_as_it_found_it(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    """The importer pauses Python's cycle collector for speed; a caller's process gets
    it back on success and on failure alike."""
    good = write_csv(tmp_path / "good.csv", ["first_name", "last_name"], [["Ann", "Ng"]])
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"first_name,last_name\n\xff\xfe,Ng\n")
    assert gc.isenabled()
    assert import_csv(sessions, CONTACTS, good).imported == 1
    assert gc.isenabled()
    with pytest.raises(UnreadableFile):
        import_csv(sessions, CONTACTS, bad)
    assert gc.isenabled()
    gc.disable()
    try:
        import_csv(sessions, CONTACTS, good, force=True)  # the same file again
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_leads_keep_their_converted_contact(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    contact = create_person(client, admin_headers)
    other = create_person(client, admin_headers, first_name="Other")
    lead_as_contact = create_person(client, admin_headers, kind="leads")
    converted = new_id(RecordKind.LEAD)
    file = write_csv(
        tmp_path / "leads.csv",
        ["Id", "FirstName", "LastName", "ConvertedContactId"],
        [
            [converted, "Ann", "Nguyen", contact[:15]],  # line 2
            ["", "Ann", "Again", contact],  # line 3: that contact is line 2's
            ["", "Bob", "Lee", new_id(RecordKind.CONTACT)],  # line 4: no such contact
            ["", "Cat", "Ng", lead_as_contact],  # line 5: a lead is no contact
            ["", "Dan", "Ho", other],  # line 6
        ],
    )
    result = cli(db_url, "import", "leads", str(file))
    assert result.exit_code == 1, result.output
    assert f"line 3: converted_contact_id: {contact} repeats line 2" in result.output
    assert "line 4: converted_contact_id: there is no contact" in result.output
    assert "line 5: converted_contact_id:" in result.output
    assert people(sessions)[converted]["converted_contact_id"] == contact
    again = write_csv(tmp_path / "again.csv", ["FirstName", "LastName", "ConvertedContactId"],
                      [["Eve", "Yu", other]])  # fmt: skip
    result = cli(db_url, "import", "leads", str(again))
    assert f"line 2: converted_contact_id: {other} is already another lead's" in result.output


@pytest.mark.parametrize("on_match", [[], ["--on-match", "update"]], ids=["skip", "update"])
def test_a_leads_export_read_back_into_its_own_store_changes_nothing(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], on_match: list[str]
) -> None:
    """A lead converted into a contact (or merged into one): its row was a bad row
    ("already exists", "already another lead's", exit 1). It is that stored lead,
    skipped, and never written to the contact."""
    load_demo(sessions)
    with session_scope(sessions, write=True) as session:
        lead = session.scalar(select(Person).where(Person.kind == "lead").limit(1))
        contact = session.scalar(
            select(Person).where(Person.kind == CONTACT, Person.first_name == lead.first_name)
        ) or session.scalar(select(Person).where(Person.kind == CONTACT).limit(1))
        lead.converted_contact_id = contact.id  # as a booking converts a lead
    before = people(sessions)
    file = tmp_path / "leads.csv"
    assert cli(db_url, "export", "leads", "-o", str(file)).exit_code == 0
    result = cli(db_url, "import", "leads", *on_match, str(file))
    assert result.exit_code == 0, result.output
    assert "0 bad rows" in result.output
    after = people(sessions)
    changed = {
        i for i in before if {**before[i], "updated_at": None} != {**after[i], "updated_at": None}
    }
    assert not {i for i in changed if before[i]["kind"] == "contact"}
    assert after.keys() == before.keys()


@pytest.mark.parametrize("form", ["ours", "salesforce"])
def test_export_then_import_into_an_empty_database_gives_the_same_records(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], form: str
) -> None:
    load_demo(sessions)
    with session_scope(sessions, write=True) as session:
        lead = session.scalar(select(Person.id).where(Person.kind == "lead").limit(1))
        contact = session.scalar(select(Person.id).where(Person.kind == "contact").limit(1))
        session.execute(
            update(Person).where(Person.id == lead).values(converted_contact_id=contact)
        )
    people_before, products_before = people(sessions), products(sessions)
    files = {}
    for kind in ("products", "contacts", "leads"):
        files[kind] = tmp_path / f"{kind}.csv"
        result = cli(db_url, "export", kind, "--output", str(files[kind]), "--format", form)
        assert result.exit_code == 0, result.output
    with session_scope(sessions, write=True) as session:
        session.execute(delete(AssetStatusChange))
        session.execute(delete(Asset))  # the demo's courses: export and import hold none
        session.execute(delete(PersonKey))  # no cascade: keys go with their people
        session.execute(delete(Person))
        session.execute(delete(Product))
    assert people(sessions) == {}
    for kind in ("products", "contacts", "leads"):  # contacts before the leads that name them
        result = cli(db_url, "import", kind, str(files[kind]))
        assert result.exit_code == 0, result.output
    assert people(sessions) == people_before
    assert products(sessions) == products_before
    assert_match_keys_in_step(sessions)
    assert people_before[lead]["converted_contact_id"] == contact


def test_export_writes_our_columns_to_standard_output(db_url: str, tmp_path: Path) -> None:
    file = write_csv(tmp_path / "c.csv", ["first_name", "last_name", "opt_in"],
                     [["Ann", "Nguyen", "true"]])  # fmt: skip
    assert cli(db_url, "import", "contacts", str(file)).exit_code == 0
    result = cli(db_url, "export", "contacts")
    assert result.exit_code == 0
    header, row = list(csv.reader(result.stdout.splitlines()))
    assert header == [*OUR_HEADER, "merged_into"]
    assert row[0].startswith("003")
    assert row[1:3] == ["Ann", "Nguyen"]
    assert row[-2:] == ["true", ""]
    assert "exported 1 contact" in result.stderr
    salesforce = cli(db_url, "export", "leads", "--format", "salesforce")
    assert salesforce.stdout.splitlines()[0].startswith("Id,FirstName,LastName,Birthdate,")
    assert cli(db_url, "export", "assets").exit_code == 2
    nowhere = cli(db_url, "export", "contacts", "-o", str(tmp_path / "missing" / "c.csv"))
    assert nowhere.exit_code == 2
    assert "No such file or directory" in nowhere.output


def test_export_writes_through_a_link_and_into_a_named_pipe(db_url: str, tmp_path: Path) -> None:
    """A symbolic link's target is written and the link stays; a named pipe gets the CSV
    as a stream and stays a pipe (it was replaced by a regular file, its reader got none)."""
    file = write_csv(tmp_path / "c.csv", ["first_name", "last_name"], [["Ann", "Nguyen"]])
    assert cli(db_url, "import", "contacts", str(file)).exit_code == 0
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    through = cli(db_url, "export", "contacts", "--output", str(link))
    assert through.exit_code == 0, through.output
    assert link.is_symlink()
    assert "Ann" in real.read_text()
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()), daemon=True)
    reader.start()
    streamed = cli(db_url, "export", "contacts", "--output", str(pipe))
    reader.join(timeout=30)
    assert streamed.exit_code == 0, streamed.output
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert received, "the reader got nothing"
    assert "Ann" in received[0]


@pytest.mark.parametrize(
    ("form", "column"), [("ours", "merged_into"), ("salesforce", "MasterRecordId")]
)
def test_export_names_the_survivor_of_a_merged_person(
    db_url: str, sessions: sessionmaker[Session], form: str, column: str
) -> None:
    with session_scope(sessions, write=True) as session:
        first, second = (
            people_service.create_person(
                session, kind=CONTACT, data=PersonCreate(first_name=name, last_name="Nguyen")
            ).id
            for name in ("Ann", "Anne")
        )
        merge_people(session, people_ids=[first, second], survivor_id=first)
    result = cli(db_url, "export", "contacts", "--format", form)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(result.stdout.splitlines()))
    assert {row[column] for row in rows if row[column]} == {first}
    merged = {row["id" if form == "ours" else "Id"]: row[column] for row in rows}
    assert merged == {first: "", second: first}


@pytest.mark.parametrize("workers", [0, 2])
def test_worker_processes_give_the_same_result(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], workers: int
) -> None:
    repeated = new_id(RecordKind.CONTACT)
    rows = [["", f"Person{n}", "Smith", f"{3000 + n}"] for n in range(40)]
    rows[5] = [repeated, "Ann", "Nguyen", "3064"]
    rows[17][3] = "bad"
    rows[33] = [repeated, "Bob", "Lee", "3064"]
    file = write_csv(tmp_path / "many.csv", ["id", "first_name", "last_name", "postcode"], rows)
    bad: list[BadRow] = []
    result = import_csv(sessions, CONTACTS, file, batch_size=7, workers=workers,
                        on_bad_row=bad.append)  # fmt: skip
    assert [str(row) for row in bad] == [
        'line 19: postcode: must be 4 digits, or 3 (800 is "0800"), as text or a whole number (received text of 3 characters)',
        f"line 35: id: {repeated} repeats line 7",
    ]
    assert result.summary() == "imported 38 contacts, 2 bad rows"
    assert len(people(sessions)) == 38
    assert_match_keys_in_step(sessions)


def test_rows_without_a_first_name_are_imported_and_found(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    # Issue 11: a CRM export holds contacts and leads with only a last name.
    header = ["first_name", "last_name", "date_of_birth", "email", "postcode", "drivers_license"]
    rows = [["", "Waller", "1981-12-09", "", "4011", "6988048"]]
    for kind in ("contacts", "leads"):
        result = cli(db_url, "import", kind, str(write_csv(tmp_path / f"{kind}.csv", header, rows)))
        assert result.exit_code == 0, result.output
    stored = people(sessions)
    assert [p["first_name"] for p in stored.values()] == [None, None]
    assert_match_keys_in_step(sessions)
    answer = client.post(
        "/crm/leads/match",
        json={
            "person_data": {
                "first_name": "Kayla", "last_name": "Waller", "date_of_birth": "1981-12-09",
                "email": "kayla@example.com", "postcode": "4011", "lead_source": "Web",
                "drivers_license": "6988048",
            }
        },
        headers=admin_headers,
    ).json()  # fmt: skip
    assert answer["receipt"] == "Lead found."


def test_the_import_matches_rows_with_the_configured_thresholds(
    db_url: str, tmp_path: Path, client: TestClient, admin_headers: dict[str, str]
) -> None:
    """RIDERCRM_MATCH_THRESHOLD decides an import's matches as it decides operation 3's: a
    row with Ann's names, birth date and postcode (about 36 bits) matches her under the
    default threshold of 18 bits, and is a new person under a threshold of 40."""
    from ridercrm.cli import app

    create_person(client, admin_headers)
    file = write_csv(tmp_path / "ann.csv", ["first_name", "last_name", "date_of_birth", "postcode"],
                     [["Ann", "Nguyen", "1999-04-12", "3064"]])  # fmt: skip
    default = cli(db_url, "import", "contacts", str(file), "--dry-run")
    assert default.exit_code == 0, default.output
    assert "1 skipped as already stored" in default.output
    env = {"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_MATCH_THRESHOLD": "40"}
    strict = runner.invoke(app, ["import", "contacts", str(file), "--dry-run"], env=env)
    assert strict.exit_code == 0, strict.output
    assert strict.output.strip().splitlines()[-1] == "would import 1 contact, 0 bad rows"


def test_a_misspelled_column_refuses_the_file_unless_ignored(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(tmp_path / "c.csv", ["frist_name", "last_name", "email"],
                     [["Zoe", "Park", "zoe@example.com"]])  # fmt: skip
    refused = cli(db_url, "import", "contacts", str(file))
    assert refused.exit_code == 2, refused.output
    assert "frist_name (did you mean first_name?)" in refused.output
    assert "nothing imported" in refused.output
    assert people(sessions) == {}
    kept = cli(db_url, "import", "contacts", str(file), "--ignore-columns", "frist_name")
    assert kept.exit_code == 0, kept.output
    assert "ignored columns: frist_name" in kept.output
    (zoe,) = people(sessions).values()
    assert (zoe["first_name"], zoe["last_name"]) == (None, "Park")


def test_a_semicolon_separated_file_is_named_as_such(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = tmp_path / "excel.csv"
    file.write_text("first_name;last_name\nZoe;Park\n")
    refused = cli(db_url, "import", "contacts", str(file))
    assert refused.exit_code == 2
    assert "looks semicolon-separated" in refused.output
    assert "no last_name column" not in refused.output
    assert people(sessions) == {}


def test_dates_written_day_first_are_read_as_australian_exports_write_them(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(tmp_path / "c.csv", ["first_name", "last_name", "date_of_birth"],
                     [["Zoe", "Park", "21/07/2004"], ["Ann", "Lee", "3.2.1999"],
                      ["Bad", "Day", "31/02/2001"]])  # fmt: skip
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1, result.output
    assert "line 4" in result.output
    births = {row["first_name"]: row["date_of_birth"] for row in people(sessions).values()}
    assert {name: str(when) for name, when in births.items()} == {
        "Zoe": "2004-07-21",
        "Ann": "1999-02-03",
    }
