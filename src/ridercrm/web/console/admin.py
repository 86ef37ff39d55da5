"""Console pages for admins: products, API keys and staff users.

Secrets (a new API key, a new or reset password) are shown once, on the page that
answers the change, and kept nowhere: the audit record stores the change without them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from ridercrm.fields import error_messages
from ridercrm.keys import service as keys
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate, ProductRead
from ridercrm.staff import rules
from ridercrm.staff import service as staff_service
from ridercrm.web.console import frame
from ridercrm.web.console.frame import AsAdmin, Done, Staff

router = APIRouter(prefix="/admin")


# --- products ---------------------------------------------------------------------


async def _products_page(
    request: Request, staff: Staff, done: Done | None = None, form: dict[str, str] | None = None
) -> Response:
    listed = await frame.read(request, lambda session: list(products.list_products(session)))
    return frame.render(
        request,
        staff,
        "admin_products.html",
        {"products": listed, "done": done, "form": form or {}},
        status=done.status if done else 200,
    )


@router.get("/products", name="admin_products")
async def products_page(request: Request, staff: AsAdmin) -> Response:
    """Products: list, create, deactivate."""
    return await _products_page(request, staff)


@router.post("/products")
async def create_product(request: Request, staff: AsAdmin) -> Response:
    """Create a product through the same service as the admin API."""
    form = await frame.checked_form(request, staff)
    asked = {name: form.get(name, "") for name in ("name", "code", "price")}

    def work(session: Session) -> dict[str, Any]:
        try:
            data = ProductCreate.model_validate(asked)
        except ValidationError as exc:
            raise frame.ConsoleProblem("; ".join(error_messages(exc))) from None
        try:
            product = products.create_product(session, data=data)
        except products.DuplicateCode:
            raise frame.ConsoleProblem(f"code: {data.code} is used by another product") from None
        return ProductRead.model_validate(product).model_dump(mode="json")

    done = await frame.change(
        request, staff, operation="console.create_product", asked=asked, work=work
    )
    return await _products_page(request, staff, done, None if done.ok else asked)


@router.post("/products/{product_id}/active")
async def set_product_active(request: Request, product_id: str, staff: AsAdmin) -> Response:
    """Deactivate (or activate again) a product."""
    form = await frame.checked_form(request, staff)
    active = form.get("active") == "true"

    def work(session: Session) -> dict[str, Any]:
        product = products.set_active(session, raw_id=product_id[:40], active=active)
        return ProductRead.model_validate(product).model_dump(mode="json")

    done = await frame.change(
        request,
        staff,
        operation="console.activate_product" if active else "console.deactivate_product",
        asked={"product": product_id[:40], "active": active},
        work=work,
    )
    return await _products_page(request, staff, done)


# --- API keys ---------------------------------------------------------------------


async def _keys_page(
    request: Request, staff: Staff, done: Done | None = None, shown: str | None = None
) -> Response:
    listed = await frame.read(request, lambda session: list(keys.list_keys(session)))
    return frame.render(
        request,
        staff,
        "admin_keys.html",
        {"keys": listed, "scopes": keys.SCOPES, "done": done, "shown": shown},
        status=done.status if done else 200,
    )


@router.get("/keys", name="admin_keys")
async def keys_page(request: Request, staff: AsAdmin) -> Response:
    """API keys: list, create (shown once), revoke."""
    return await _keys_page(request, staff)


@router.post("/keys")
async def create_key(request: Request, staff: AsAdmin) -> Response:
    """Create an API key with the chosen scopes; its secret is shown once, here."""
    await frame.checked_form(request, staff)
    fields = await frame.form_lists(request)
    name = (fields.get("name") or [""])[-1]
    scopes = [scope for scope in fields.get("scope", []) if scope]
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        key, plaintext = keys.create_key(session, name=name, scopes=scopes)
        secret["key"] = plaintext
        return {"id": key.id, "name": key.name, "prefix": key.prefix, "scopes": key.scopes}

    done = await frame.change(
        request,
        staff,
        operation="console.create_key",
        asked={"name": name, "scopes": scopes},
        work=work,
    )
    return await _keys_page(request, staff, done, secret.get("key"))


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str, staff: AsAdmin) -> Response:
    """Revoke an API key; requests made with it are refused from now on."""
    await frame.checked_form(request, staff)
    ident = key_id[:20]

    def work(session: Session) -> dict[str, Any]:
        if not ident.isdigit():
            raise frame.ConsoleProblem(f"no active key {ident!r}")
        key = keys.revoke_key(session, ident=ident)
        return {"id": key.id, "name": key.name}

    done = await frame.change(
        request, staff, operation="console.revoke_key", asked={"key": ident}, work=work
    )
    return await _keys_page(request, staff, done)


# --- staff users ------------------------------------------------------------------


async def _users_page(
    request: Request,
    staff: Staff,
    done: Done | None = None,
    shown: tuple[str, str] | None = None,
) -> Response:
    listed = await frame.read(request, lambda session: list(staff_service.list_users(session)))
    return frame.render(
        request,
        staff,
        "admin_users.html",
        {"users": listed, "roles": rules.ROLES, "done": done, "shown": shown},
        status=done.status if done else 200,
    )


@router.get("/users", name="admin_users")
async def users_page(request: Request, staff: AsAdmin) -> Response:
    """Staff users: list, create, disable, enable, reset a password."""
    return await _users_page(request, staff)


@router.post("/users")
async def create_user(request: Request, staff: AsAdmin) -> Response:
    """Create a staff user; the generated password is shown once, here."""
    form = await frame.checked_form(request, staff)
    name, role = form.get("name", "").strip(), form.get("role", "")
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        user, password = staff_service.create_user(session, name=name, role=role)
        secret["password"] = password
        return {"name": user.name, "role": user.role}

    done = await frame.change(
        request,
        staff,
        operation="console.create_staff_user",
        asked={"name": name, "role": role},
        work=work,
    )
    shown = (name, secret["password"]) if "password" in secret else None
    return await _users_page(request, staff, done, shown)


@router.post("/users/{name}/disable")
async def disable_user(request: Request, name: str, staff: AsAdmin) -> Response:
    """Disable a staff user and end their sessions."""
    await frame.checked_form(request, staff)
    if name == staff.name:
        raise frame.ConsoleRefusal(400, "You cannot disable yourself; ask another admin.")
    done = await frame.change(
        request,
        staff,
        operation="console.disable_staff_user",
        asked={"name": name},
        work=lambda session: {"name": staff_service.disable_user(session, name=name).name},
    )
    return await _users_page(request, staff, done)


@router.post("/users/{name}/enable")
async def enable_user(request: Request, name: str, staff: AsAdmin) -> Response:
    """Enable a staff user again and lift a lock-out."""
    await frame.checked_form(request, staff)
    done = await frame.change(
        request,
        staff,
        operation="console.enable_staff_user",
        asked={"name": name},
        work=lambda session: {"name": staff_service.enable_user(session, name=name).name},
    )
    return await _users_page(request, staff, done)


@router.post("/users/{name}/reset-password")
async def reset_password(request: Request, name: str, staff: AsAdmin) -> Response:
    """Give a staff user a new password (shown once, here) and end their sessions."""
    await frame.checked_form(request, staff)
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        user, password = staff_service.reset_password(session, name=name)
        secret["password"] = password
        return {"name": user.name}

    done = await frame.change(
        request, staff, operation="console.reset_staff_password", asked={"name": name}, work=work
    )
    shown = (name, secret["password"]) if "password" in secret else None
    return await _users_page(request, staff, done, shown)
