"""Products: the interface's crm/products list and the admin API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from ridercrm.db import Reads
from ridercrm.products import service
from ridercrm.products.models import Product
from ridercrm.products.schemas import (
    PRODUCT_EXAMPLE,
    ProductCreate,
    ProductRead,
)
from ridercrm.web import openapi
from ridercrm.web.operations import Operations
from ridercrm.web.runtime import Reply

router = APIRouter(tags=["products"])
crm = Operations(router, "crm", scope="products")
admin = Operations(router, "admin", scope="admin", tags=["admin"])


def list_products(reads: Reads, _: None) -> list[dict[str, Any]]:
    """List every product with its id, name, code, price and whether it is active."""
    return service.listed_products(reads)


crm.get(
    "/crm/products",
    list_products,
    name="crm.products",
    response=list[ProductRead],
    ok="Every product.",
    summary="List products (scope products)",
    light=True,  # a short list every booking page asks for
)


def create_product(session: Session, data: ProductCreate) -> Reply:
    """Create a product from name, code and price."""
    product = service.create_product(session, data=data)
    return Reply({"id": product.id}, status=201)


admin.post(
    "/admin/products",
    create_product,
    example=PRODUCT_EXAMPLE,
    status_code=201,
    ok="Created.",
    answer=openapi.Created,
    notes={409: "Or another product already has this code."},
    summary="Create a product",
)


def read_product(session: Session, product_id: str) -> Product | None:
    """Return one product."""
    return service.find_product(session, product_id)


admin.get(
    "/admin/products/{product_id}",
    read_product,
    response=ProductRead,
    missing="product",
    ok="The product.",
    summary="Read a product",
)
