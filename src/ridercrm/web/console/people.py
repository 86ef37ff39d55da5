"""Console pages: find a person, and a person's page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ridercrm.staff import finder
from ridercrm.web.console import frame
from ridercrm.web.console.frame import AsViewer

router = APIRouter()


@router.get("/people", name="people")
async def find(request: Request, staff: AsViewer) -> Response:
    """Find a person by name, e-mail, phone, licence or date of birth."""
    text = request.query_params.get("q", "").replace("\x00", "")[:200]
    people = await frame.read(request, lambda session: finder.find_people(session, text=text))
    return frame.render(
        request, staff, "people.html", {"q": text, "people": people, "searched": bool(text.strip())}
    )
