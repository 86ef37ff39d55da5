"""Products in and out."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

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
