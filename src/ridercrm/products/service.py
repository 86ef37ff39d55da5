"""Products: create, read, list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.db import Reads
from ridercrm.errors import CONFLICT, DomainError
from ridercrm.ids import RecordKind, canonical_id, new_id
from ridercrm.products.models import Product
from ridercrm.products.schemas import ProductCreate


class DuplicateCode(DomainError, ValueError):
    """Another product already has this code (``code``)."""

    kind = CONFLICT
    listed = False  # the API answers its reason alone

    def __init__(self, code: str) -> None:
        super().__init__(f"code: {code} is already used by another product", field="code")
        self.code = code


def create_product(session: Session, *, data: ProductCreate) -> Product:
    """Store a new product; its code must be unused."""
    assert data.code is not None
    if session.scalar(select(Product.id).where(Product.code == data.code)) is not None:
        raise DuplicateCode(data.code)
    product = Product(id=new_id(RecordKind.PRODUCT), **data.model_dump())
    session.add(product)
    session.flush()
    return product


def find_product(session: Session, raw_id: str) -> Product | None:
    product_id = canonical_id(raw_id, RecordKind.PRODUCT)
    return session.get(Product, product_id) if product_id else None


def list_products(session: Session) -> Sequence[Product]:
    return session.scalars(select(Product).order_by(Product.name, Product.code)).all()


_PRODUCTS = Product.__table__
_LISTED = select(
    _PRODUCTS.c.id, _PRODUCTS.c.name, _PRODUCTS.c.code, _PRODUCTS.c.price, _PRODUCTS.c.active
).order_by(_PRODUCTS.c.name, _PRODUCTS.c.code)


def listed_products(reads: Reads) -> list[dict[str, Any]]:
    """Every product as ``GET /crm/products`` lists it (id, name, code, price, active), in
    :func:`list_products`' order: plain rows, without the ORM's objects (a read that
    every booking website polls), as dicts (pydantic validates a dict several times
    faster than an object's attributes)."""
    return [row._asdict() for row in reads.all(_LISTED)]


def set_active(session: Session, *, raw_id: str, active: bool) -> Product:
    """Activate or deactivate a product (an inactive one is not offered for booking)."""
    product = find_product(session, raw_id)
    if product is None:
        raise ValueError(f"no product with id {raw_id}")
    product.active = active
    session.flush()
    return product
