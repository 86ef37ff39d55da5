"""Console pages: find a person, a person's page and its forms (reminders too)."""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.courses import service as courses_service
from ridercrm.courses.schemas import CourseResult
from ridercrm.notifications import service as notifications_service
from ridercrm.people import modify
from ridercrm.people import service as people_service
from ridercrm.people.models import LEAD, Person
from ridercrm.people.schemas import ModifiedPerson
from ridercrm.staff import finder, person_view
from ridercrm.web.console import frame, messages
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter()


@router.page("/people", role="viewer", name="people")
async def find(visit: Visit) -> Response:
    """Find a person by name, e-mail, phone, licence or date of birth."""
    text = visit.query("q")
    people = await visit.read(lambda session: finder.find_people(session, text=text))
    return visit.render(
        "people.html", {"q": text, "people": people, "searched": bool(text.strip())}
    )


async def _person_page(
    visit: Visit,
    person_id: str,
    *,
    done: Done | None = None,
    errors: list[str] | None = None,
    entered: dict[str, str] | None = None,
) -> Response:
    view = await visit.read(lambda session: person_view.view_person(session, person_id))
    if view is None:
        raise frame.ConsoleRefusal(404, f"There is no contact or lead with id {person_id}.")
    notified = await visit.read(lambda session: messages.person_messages(session, view.person.id))
    values = {name: person_view.form_value(view.person, name) for name in person_view.EDITABLE}
    return visit.render(
        "person.html",
        {
            "view": view,
            "person": view.person,
            "fields": FIELD_LABELS,
            "values": {**values, **(entered or {})},
            "done": done,
            "errors": errors or [],
            **notified,
        },
        status=done.status if done else 200,
    )


FIELD_LABELS = {
    "first_name": "First name",
    "last_name": "Last name",
    "date_of_birth": "Date of birth (YYYY-MM-DD)",
    "email": "E-mail",
    "mobile_phone": "Mobile phone",
    "drivers_license": "Licence number",
    "street": "Street",
    "city": "City",
    "state": "State",
    "postcode": "Postcode",
    "country": "Country",
    "lead_source": "Lead source",
}


@router.page("/people/{person_id}", role="viewer", name="person")
async def person_page(visit: Visit, person_id: str) -> Response:
    """A person's details, kind, conversion, courses with their history, audit and matches."""
    return await _person_page(visit, person_id[:40])


@router.form("/people/{person_id}", role="staff", audit="console.modify_person")
async def modify_person(posted: Posted, person_id: str) -> Response:
    """Change a person's details through operation 2's service (modify)."""
    person_id = person_id[:40]
    form = posted.form
    entered = {name: form[name].strip() for name in person_view.EDITABLE if name in form}

    def work(session: Session) -> Any:
        person = people_service.find_person(session, person_id)
        if person is None:
            raise frame.ConsoleProblem(f"no contact or lead with id {person_id}")
        # Only what was changed is sent, as a client of operation 2 would send it.
        item: dict[str, Any] = {"ID": person.id}
        for name, value in entered.items():
            if value != person_view.form_value(person, name):
                item[name] = value or None
        result = modify.modify_each(session, [item])[0]
        answer = ModifiedPerson.model_validate(result).model_dump(mode="json")
        if not result.status:
            return frame.Refused(answer, "; ".join(result.errors))
        return answer

    done = await posted.change(asked={"ID": person_id, **entered}, work=work)
    errors = [] if done.ok else (done.error or "").split("; ")
    return await _person_page(
        posted, person_id, done=done, errors=errors, entered=None if done.ok else entered
    )


@router.form("/people/{person_id}/convert", role="staff", audit="console.convert_lead")
async def convert(posted: Posted, person_id: str) -> Response:
    """Convert a lead to a contact (the lead then stands for the contact)."""
    person_id = person_id[:40]
    target: dict[str, str] = {}

    def work(session: Session) -> Any:
        lead = people_service.find_person(session, person_id)
        if lead is None or lead.kind != LEAD:
            raise frame.ConsoleProblem(f"{person_id} is not a lead")
        if lead.converted_contact_id:
            raise frame.ConsoleProblem(
                f"this lead was converted to {lead.converted_contact_id} already"
            )
        contact = people_service.convert_lead(session, lead)
        session.flush()
        target["id"] = contact.id
        return {"lead": lead.id, "contact": contact.id}

    done = await posted.change(asked={"ID": person_id}, work=work)
    if done.ok:
        return posted.redirect(f"/people/{target['id']}")
    return await _person_page(posted, person_id, done=done)


@router.form("/people/{person_id}/courses/{asset_id}", role="staff", audit="console.change_course")
async def change_course(posted: Posted, person_id: str, asset_id: str) -> Response:
    """Change one course's status and feedback through operation 1's service."""
    form = posted.form
    person_id, asset_id = person_id[:40], asset_id[:40]
    item = {
        # The page's person names the course's owner too: operation 1 refuses a course of
        # someone else ("person_id: course X belongs to another person"), as for a client.
        "person_id": person_id,
        "asset_id": asset_id,
        "course_status": form.get("course_status", ""),
        "course_feedback": form.get("course_feedback", ""),
    }

    def work(session: Session) -> Any:
        audit_id = frame.change_audit_id()
        result = courses_service.book_courses(session, items=[item], audit_id=audit_id)[0]
        answer = CourseResult.model_validate(result).model_dump(mode="json")
        if not result.delivery:
            return frame.Refused(answer, result.receipt)
        return answer

    done = await posted.change(asked=item, work=work)
    return await _person_page(posted, person_id, done=done)


@router.form(
    "/people/{person_id}/reminders",
    role="staff",
    audit=lambda form: (
        "console.resume_reminders" if form.get("reminders") == "on" else "console.stop_reminders"
    ),
)
async def change_reminders(posted: Posted, person_id: str) -> Response:
    """Stop or resume a person's reminders (confirmations and results always go)."""
    person_id = person_id[:40]
    resume = posted.form.get("reminders") == "on"
    staff = posted.user.name

    def work(session: Session) -> Any:
        person = session.get(Person, person_id)
        if person is None:
            raise frame.ConsoleProblem(f"no contact or lead with id {person_id}")
        if resume:
            changed = notifications_service.resume_reminders(session, person_id=person_id)
        else:
            changed = notifications_service.stop_reminders(
                session, person_id=person_id, stopped_by=f"{staff} (console)"
            )
        return {"person_id": person_id, "reminders": "on" if resume else "off", "changed": changed}

    done = await posted.change(asked={"ID": person_id, "reminders": resume}, work=work)
    return await _person_page(posted, person_id, done=done)
