"""Products: the interface's crm/products list and the admin API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
from ridercrm.errors import ApiError
from ridercrm.products import service
from ridercrm.products.schemas import (
    PRODUCT_EXAMPLE,
    NewProduct,
    Product,
    ProductCreate,
    ProductRead,
)
from ridercrm.web import openapi
from ridercrm.web.runtime import Reply, operation, run_post, run_read
from ridercrm.web.validation import parse_model

router = APIRouter(tags=["products"])


@router.get(
    "/crm/products",
    summary="List products (scope products)",
    responses=openapi.responses(
        ok=(
            200,
            "Every product.",
            openapi.json_content({"type": "array", "items": openapi.ref(Product)}),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def list_products(
    request: Request, _call: Call = Depends(operation("crm.products", scope="products"))
) -> Response:
    """List every product with its id, name, code, price and whether it is active."""

    def handler(session: Session, _payload: None) -> Reply:
        return Reply(
            [ProductRead.model_validate(p).to_json() for p in service.list_products(session)]
        )

    return await run_read(request, handler)


@router.post(
    "/admin/products",
    status_code=201,
    tags=["admin"],
    summary="Create a product",
    openapi_extra=openapi.request_body(NewProduct, example=PRODUCT_EXAMPLE),
    responses=openapi.responses(
        ok=(201, "Created.", openapi.json_content(openapi.ref(openapi.Created))),
        refused=openapi.ADMIN_POST_REFUSALS,
        notes={409: "Or another product already has this code."},
    ),
)
async def create_product(
    request: Request, call: Call = Depends(operation("admin.create_product", scope="admin"))
) -> Response:
    """Create a product from name, code and price."""

    def handler(session: Session, payload: Any) -> Reply:
        data = parse_model(ProductCreate, payload)
        try:
            product = service.create_product(session, data=data)
        except service.DuplicateCode:
            raise ApiError(409, f"code: {data.code} is already used by another product") from None
        return Reply({"id": product.id}, status=201)

    return await run_post(request, call, handler)


@router.get(
    "/admin/products/{product_id}",
    tags=["admin"],
    summary="Read a product",
    responses=openapi.responses(
        ok=(200, "The product.", openapi.json_content(openapi.ref(Product))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_product(
    request: Request,
    product_id: str,
    _call: Call = Depends(operation("admin.read_product", scope="admin")),
) -> Response:
    """Return one product."""

    def handler(session: Session, _payload: None) -> Reply:
        product = service.find_product(session, product_id)
        if product is None:
            raise ApiError(404, f"no product with id {product_id}")
        return Reply(ProductRead.model_validate(product).to_json())

    return await run_read(request, handler)
