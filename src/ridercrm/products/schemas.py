"""Products in and out."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from ridercrm import fields


class ProductCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: fields.LongText
    code: fields.ShortText
    price: fields.Price
    active: fields.Flag = True

    @field_validator("name", "code", "price")
    @classmethod
    def _required(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("is required")
        return value


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


# --- Documentation of the wire (the OpenAPI document) ------------------------------


class NewProduct(BaseModel):
    """A new product (admin API). Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 255})]
    code: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "minLength": 1,
                "maxLength": 80,
                "description": "Unique among products (409 if taken).",
            }
        ),
    ]
    price: Annotated[
        str | float,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "pattern": r"^[0-9]{1,10}(\.[0-9]{1,2})?$"},
                    {"type": "number", "minimum": 0, "exclusiveMaximum": 10000000000},
                ],
                "description": 'A decimal of at most 2 places, such as "249.00".',
            }
        ),
    ]
    active: Annotated[
        bool | str | None,
        WithJsonSchema(
            {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false", "", None]}], "default": True}
        ),
    ] = True


PRODUCT_EXAMPLE: dict[str, Any] = {"name": "Learner course", "code": "L1", "price": "249.00"}


class Product(BaseModel):
    """A product, as ``GET /crm/products`` lists it."""

    id: str = Field(description="18 characters, prefix 01t.")
    name: str
    code: str
    price: str = Field(description='A decimal as text, such as "249.00".')
    active: bool
