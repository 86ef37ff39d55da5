"""Admin API for courses (assets) with their status history."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.http.context import Call
from ridercrm.http.errors import ApiError
from ridercrm.http.runtime import Outcome, operation, run_read
from ridercrm.ids import RecordKind, canonical_id

router = APIRouter(prefix="/admin", tags=["admin"])


def asset_to_json(asset: Asset) -> dict[str, Any]:
    return {
        "id": asset.id,
        "person_id": asset.person_id,
        "product_id": asset.product_id,
        "booking_number": asset.booking_number,
        "course_status": asset.course_status,
        "course_feedback": asset.course_feedback,
        "course_datetime": asset.course_datetime,
        "course_date_end": asset.course_date_end,
        "course_location": asset.course_location,
        "rider_instructor_1": asset.rider_instructor_1,
        "rider_instructor_2": asset.rider_instructor_2,
        "dealer_code": asset.dealer_code,
        "course_price": None if asset.course_price is None else str(asset.course_price),
        "booking_source": asset.booking_source,
        "created_at": asset.created_at.isoformat(),
        "updated_at": asset.updated_at.isoformat(),
        "status_history": [
            {
                "from_status": change.from_status,
                "to_status": change.to_status,
                "changed_at": change.changed_at.isoformat(),
                "audit_id": change.audit_id,
            }
            for change in asset.status_history
        ],
    }


@router.get("/assets/{asset_id}")
async def read_asset(
    request: Request,
    asset_id: str,
    _call: Call = Depends(operation("admin.read_asset", scope="admin")),
) -> Response:
    """Return a booked course with its status history, oldest change first."""

    def handler(session: Session) -> Outcome:
        canonical = canonical_id(asset_id, RecordKind.ASSET)
        asset = session.get(Asset, canonical) if canonical else None
        if asset is None:
            raise ApiError(404, f"no asset with id {asset_id}")
        return Outcome(asset_to_json(asset))

    return await run_read(request, handler)
