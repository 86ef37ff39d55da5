"""The course-booking item of operation 1, in the interface's field names."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ridercrm import fields

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
    """One item of ``people_product``. Every field is optional here; the rules decide."""

    model_config = ConfigDict(extra="ignore")

    person_id: fields.IdText = None
    product_id: fields.IdText = None
    asset_id: fields.IdText = None
    course_datetime: fields.DateTimeText = None
    course_date_end: fields.DateTimeText = None
    rider_instructor_1: Annotated[str | None, BeforeValidator(fields.text(120))] = None
    rider_instructor_2: Annotated[str | None, BeforeValidator(fields.text(120))] = None
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
    drivers_license: fields.Phone = None
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
