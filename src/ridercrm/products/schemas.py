"""Products in and out."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ridercrm import fields
from ridercrm.products import values


class ProductCreate(BaseModel):
    """A new product (admin API). Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    name: fields.RequiredLongText
    code: fields.RequiredShortText = Field(description="Unique among products (409 if taken).")
    price: fields.RequiredPrice
    active: fields.Flag = True
    trainees_per_instructor: values.TraineesPerInstructor = None


PRODUCT_EXAMPLE: dict[str, Any] = {"name": "Learner course", "code": "L1", "price": "249.00"}


# Named apart from the stored row (products.models.Product); the OpenAPI document has
# always called its schema Product, hence the title.
class ProductRead(BaseModel):
    """A product, as ``GET /crm/products`` lists it."""

    model_config = ConfigDict(from_attributes=True, title="Product")

    id: str = Field(description="18 characters, prefix 01t.")
    name: str
    code: str
    price: fields.DecimalText = Field(description='A decimal as text, such as "249.00".')
    active: bool
