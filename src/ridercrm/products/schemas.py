"""Products in and out."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ridercrm import fields


class ProductCreate(BaseModel):
    """A new product (admin API). Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    name: fields.RequiredLongText
    code: fields.RequiredShortText = Field(description="Unique among products (409 if taken).")
    price: fields.RequiredPrice
    active: fields.Flag = True


class ProductRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    code: str
    price: Decimal
    active: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "code": self.code,
            "price": str(self.price),
            "active": self.active,
        }


PRODUCT_EXAMPLE: dict[str, Any] = {"name": "Learner course", "code": "L1", "price": "249.00"}


class Product(BaseModel):
    """A product, as ``GET /crm/products`` lists it."""

    id: str = Field(description="18 characters, prefix 01t.")
    name: str
    code: str
    price: str = Field(description='A decimal as text, such as "249.00".')
    active: bool
