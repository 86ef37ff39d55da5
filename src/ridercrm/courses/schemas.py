"""The course-booking item of operation 1, in the interface's field names."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ridercrm import fields
from ridercrm.events.schemas import Envelope
from ridercrm.events.service import json_value

# A course's own fields that a booking item sets or changes, in the interface's names (the
# assets table's columns): the one list of them. A new course field is a line here and its
# rule in CourseItem below, and its column (models.py and a migration); the events' course
# state (CourseState, course_state) follows from this list.
COURSE_FIELDS = (
    "course_datetime",
    "course_date_end",
    "course_location",
    "rider_instructor_1",
    "rider_instructor_2",
    "dealer_code",
    "course_price",
    "booking_source",
)
# A course's state as events carry it: its booking number, status and result, then its fields.
COURSE_STATE_FIELDS = ("booking_number", "course_status", "course_feedback", *COURSE_FIELDS)

# Fields of the item that are written to the person's record.
PERSON_FIELDS_ON_ITEM = (
    "date_of_birth",
    "license_type",
    "drivers_license",
    "mobile_phone",
    "home_phone",
    "postcode",
    "street",
    "city",
    "state",
    "country",
    "opt_in",
)

# Needed on an item that books a new course: the spec's conditional rule 1 plus the
# mandatory course fields. mobile_phone or home_phone is checked separately.
NEW_BOOKING_FIELDS = (
    "person_id",
    "product_id",
    "date_of_birth",
    "license_type",
    "drivers_license",
    "street",
    "city",
    "state",
    "country",
    "course_datetime",
    "course_location",
    "booking_number",
    "dealer_code",
    "course_price",
    "booking_source",
    "course_status",
)


class CourseItem(BaseModel):
    """One item of ``people_product``: a booking, or a change to a booked course.

    Which course an item means: a non-empty ``asset_id``; else a ``booking_number``
    already stored; else a new ``booking_number`` books a new course (needing
    person_id, product_id, date_of_birth, license_type, drivers_license, mobile_phone
    or home_phone, street, city, state, country, course_datetime, course_location,
    booking_number, dealer_code, course_price, booking_source and course_status); else
    the person's one open course of ``product_id``. Items are independent: each
    succeeds or fails alone, and says why in its ``receipt``. Unknown fields are
    ignored; empty values are absent (they never clear a stored value).
    """

    model_config = ConfigDict(extra="ignore")

    person_id: fields.IdText = None
    product_id: fields.IdText = None
    asset_id: fields.IdText = None
    course_datetime: fields.DateTimeText = None
    course_date_end: fields.DateTimeText = None
    rider_instructor_1: fields.Instructor = None
    rider_instructor_2: fields.Instructor = None
    course_location: fields.CourseLocation = None
    course_feedback: fields.CourseFeedback = None
    booking_number: fields.ShortText = None
    dealer_code: fields.ShortText = None
    course_price: fields.Price = None
    booking_source: fields.BookingSource = None
    course_status: fields.CourseStatus = None
    mobile_phone: fields.Phone = None
    home_phone: fields.Phone = None
    postcode: fields.Postcode = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None
    drivers_license: fields.Licence = None
    license_type: fields.LicenseType = None
    date_of_birth: fields.BirthDate = None
    opt_in: fields.Flag = None

    def person_changes(self) -> dict[str, str | bool | dt.date]:
        """The person fields this item carries (an empty value leaves the record alone)."""
        values = {name: getattr(self, name) for name in PERSON_FIELDS_ON_ITEM}
        return {name: value for name, value in values.items() if value is not None}

    def missing_for_new_booking(self) -> list[str]:
        missing = [name for name in NEW_BOOKING_FIELDS if getattr(self, name) is None]
        if self.mobile_phone is None and self.home_phone is None:
            missing.insert(5, "mobile_phone or home_phone")
        return missing


class RiderCoursesRequest(BaseModel):
    """Operation 1's body: bookings and course status changes."""

    people_product: list[CourseItem]


RIDER_COURSES_EXAMPLE: dict[str, object] = {
    "people_product": [
        {
            "person_id": "00Q5g00000XyZaBEAU",
            "product_id": "01t5g00000PqRsTEAV",
            "asset_id": "",
            "course_datetime": "2026-12-05 08:30:00",
            "course_date_end": "2026-12-05 16:30:00",
            "rider_instructor_1": "Sam Lee",
            "course_location": "somerton",
            "course_feedback": "",
            "booking_number": "HB-102938",
            "dealer_code": "D001",
            "course_price": "249.00",
            "booking_source": "Website",
            "course_status": "booked",
            "mobile_phone": "0412 345 678",
            "postcode": "3064",
            "street": "12 Main St",
            "city": "Craigieburn",
            "state": "VIC",
            "country": "Australia",
            "drivers_license": "L1234567",
            "license_type": "CYL",
            "date_of_birth": "1999-04-12",
            "opt_in": True,
        },
        {"asset_id": "02i5g00000LmNoPEAW", "course_status": "cancelled"},
    ]
}


class CourseResult(BaseModel):
    """One entry of ``details``: how one item went."""

    model_config = ConfigDict(from_attributes=True)

    delivery: fields.TrueFalse = Field(description="Whether the item was applied.")
    receipt: str = Field(description="What was done, or why the item was refused.")
    person_id: str = Field(description="The person id the item gave, echoed as sent.")
    product_id: str = Field(description="The course's product (18 characters).")
    contact_id: str = Field(description="The contact: the person, or the lead's contact.")
    asset_id: str = Field(description="The course (18 characters).")
    course_datetime: str
    course_date_end: str


class RiderCoursesResponse(BaseModel):
    """Operation 1's answer: one entry per item, in order."""

    details: list[CourseResult]
    audit_id: str = Field(description="The request's audit record.")


class StatusChange(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    from_status: str | None = Field(description="null for the booking itself.")
    to_status: str
    changed_at: fields.Timestamp
    audit_id: str = Field(description="The audit record of the request that made the change.")


# How a course field reads back (GET /admin/courses/{id}): text or null, unless named here.
_READ_TYPES: dict[str, Any] = {
    "course_price": (
        fields.OptionalDecimalText,
        Field(description='A decimal as text, such as "249.00".'),
    ),
}

BookedCourse = create_model(
    "BookedCourse",
    __doc__="A booked course (an asset) with its status history, oldest change first.",
    __config__=ConfigDict(from_attributes=True),
    id=(str, ...),
    person_id=(str, ...),
    product_id=(str, ...),
    booking_number=(str | None, ...),
    course_status=(str, ...),
    course_feedback=(str | None, ...),
    **{name: _READ_TYPES.get(name, (str | None, ...)) for name in COURSE_FIELDS},
    created_at=(fields.Timestamp, ...),
    updated_at=(fields.Timestamp, ...),
    status_history=(list[StatusChange], ...),
)


# --- The course events' payloads (webhooks), derived from COURSE_FIELDS ---------------

# Each course field as events carry it: text (a price as "249.00") or null.
_STATE_TYPES: dict[str, Any] = {name: (str | None, ...) for name in COURSE_FIELDS}

CourseState = create_model(
    "CourseState",
    __doc__="A course (asset) as stored: ids and course fields, no personal field.",
    id=(str, ...),
    person_id=(str, Field(description="The contact the course belongs to.")),
    product_id=(str, ...),
    booking_number=(str | None, ...),
    course_status=(str, ...),
    course_feedback=(str | None, ...),
    **_STATE_TYPES,
)


def course_state(asset: Any) -> dict[str, Any]:
    """A course's ids and stored fields (no personal field), as JSON values: CourseState."""
    state = {"id": asset.id, "person_id": asset.person_id, "product_id": asset.product_id}
    state.update({name: json_value(getattr(asset, name)) for name in COURSE_STATE_FIELDS})
    return state


class CourseBookedData(BaseModel):
    course: CourseState


class CourseUpdatedData(BaseModel):
    course: CourseState
    fields: list[str] = Field(description="Names of the course fields that changed.")


class CourseBookedEvent(Envelope):
    """A new course was booked (operation 1)."""

    type: Literal["course.booked"]
    data: CourseBookedData


class CourseUpdatedEvent(Envelope):
    """Fields of a course other than its status changed (operation 1), or its person
    changed by a merge or its undo (fields: ["person_id"])."""

    type: Literal["course.updated"]
    data: CourseUpdatedData


# The course events this feature declares (the web layer documents them with the rest).
COURSE_EVENT_MODELS: dict[str, type[Envelope]] = {
    "course.booked": CourseBookedEvent,
    "course.updated": CourseUpdatedEvent,
}
