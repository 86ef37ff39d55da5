"""Products: the interface's crm/products list and the admin API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from ridercrm.errors import ApiError
from ridercrm.products import service
from ridercrm.products.models import Product
from ridercrm.products.schemas import (
    PRODUCT_EXAMPLE,
    ProductCreate,
    ProductRead,
)
from ridercrm.web import openapi
from ridercrm.web.operations import Requested, get, post
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import parse_model

router = APIRouter(tags=["products"])


def list_products(session: Session, _: None) -> Sequence[Any]:
    """List every product with its id, name, code, price and whether it is active."""
    return service.listed_products(session)


get(
    router,
    "/crm/products",
    list_products,
    name="crm.products",
    scope="products",
    response=list[ProductRead],
    ok="Every product.",
    summary="List products (scope products)",
)


def create_product(session: Session, data: ProductCreate) -> Reply:
    """Create a product from name, code and price."""
    product = service.create_product(session, data=data)
    return Reply({"id": product.id}, status=201)


def product_of(body: Any, _request: Requested) -> ProductCreate:
    """The body as a new product's fields."""
    return parse_model(ProductCreate, body)


post(
    router,
    "/admin/products",
    create_product,
    decode=product_of,
    name="admin.create_product",
    scope="admin",
    status_code=201,
    tags=["admin"],
    summary="Create a product",
    openapi_extra=openapi.request_body(ProductCreate, example=PRODUCT_EXAMPLE),
    responses=openapi.responses(
        ok=(201, "Created.", openapi.json_content(openapi.ref(openapi.Created))),
        refused=openapi.ADMIN_POST_REFUSALS,
        notes={409: "Or another product already has this code."},
    ),
)


def read_product(session: Session, product_id: str) -> Product:
    """Return one product."""
    product = service.find_product(session, product_id)
    if product is None:
        raise ApiError(404, f"no product with id {product_id}")
    return product


get(
    router,
    "/admin/products/{product_id}",
    read_product,
    name="admin.read_product",
    scope="admin",
    response=ProductRead,
    ok="The product.",
    summary="Read a product",
    tags=["admin"],
)
