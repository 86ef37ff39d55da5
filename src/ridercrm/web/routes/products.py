"""Products: the interface's crm/products list and the admin API."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
from ridercrm.errors import ApiError
from ridercrm.products import service
from ridercrm.products.schemas import (
    PRODUCT_EXAMPLE,
    ProductCreate,
    ProductRead,
)
from ridercrm.web import openapi
from ridercrm.web.operations import Requested, post
from ridercrm.web.runtime import Reply, operation, run_read
from ridercrm.web.validation import parse_model

router = APIRouter(tags=["products"])

ListProducts = Annotated[Call, Depends(operation("crm.products", scope="products"))]
ReadProduct = Annotated[Call, Depends(operation("admin.read_product", scope="admin"))]


@router.get(
    "/crm/products",
    summary="List products (scope products)",
    responses=openapi.responses(
        ok=(
            200,
            "Every product.",
            openapi.json_content({"type": "array", "items": openapi.ref(ProductRead)}),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def list_products(request: Request, _call: ListProducts) -> Response:
    """List every product with its id, name, code, price and whether it is active."""
    return await run_read(request, products_reply)


def products_reply(session: Session, _: None) -> Reply:
    """Every product."""
    return Reply(
        [
            ProductRead.model_validate(p).model_dump(mode="json")
            for p in service.list_products(session)
        ]
    )


def create_product(session: Session, data: ProductCreate) -> Reply:
    """Create a product from name, code and price."""
    try:
        product = service.create_product(session, data=data)
    except service.DuplicateCode:
        raise ApiError(409, f"code: {data.code} is already used by another product") from None
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


@router.get(
    "/admin/products/{product_id}",
    tags=["admin"],
    summary="Read a product",
    responses=openapi.responses(
        ok=(200, "The product.", openapi.json_content(openapi.ref(ProductRead))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_product(request: Request, product_id: str, _call: ReadProduct) -> Response:
    """Return one product."""
    return await run_read(request, product_reply, product_id)


def product_reply(session: Session, product_id: str) -> Reply:
    """The product ``product_id`` names, or 404."""
    product = service.find_product(session, product_id)
    if product is None:
        raise ApiError(404, f"no product with id {product_id}")
    return Reply(ProductRead.model_validate(product).model_dump(mode="json"))
