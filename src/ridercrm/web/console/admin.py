"""Console pages for admins: products, API keys, staff users and webhook endpoints.

Secrets (a new API key, a new or reset password) are shown once, on the page that
answers the change, and kept nowhere: the audit record stores the change without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.responses import Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from ridercrm.events import manage as webhooks
from ridercrm.fields import error_messages
from ridercrm.keys import service as keys
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate, ProductRead
from ridercrm.staff import rules
from ridercrm.staff import service as staff_service
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter(prefix="/admin")


# --- products ---------------------------------------------------------------------


async def _products_page(
    visit: Visit, done: Done | None = None, form: dict[str, str] | None = None
) -> Response:
    listed = await visit.read(lambda session: list(products.list_products(session)))
    return visit.render(
        "admin_products.html",
        {"products": listed, "done": done, "form": form or {}},
        status=done.status if done else 200,
    )


@router.page("/products", role="admin", name="admin_products")
async def products_page(visit: Visit) -> Response:
    """Products: list, create, deactivate."""
    return await _products_page(visit)


@router.form("/products", role="admin", audit="console.create_product")
async def create_product(posted: Posted) -> Response:
    """Create a product through the same service as the admin API."""
    asked = {name: posted.form.get(name, "") for name in ("name", "code", "price")}

    def work(session: Session) -> dict[str, Any]:
        try:
            data = ProductCreate.model_validate(asked)
        except ValidationError as exc:
            raise frame.ConsoleProblem("; ".join(error_messages(exc))) from None
        product = products.create_product(session, data=data)
        return ProductRead.model_validate(product).model_dump(mode="json")

    done = await posted.change(asked=asked, work=work)
    return await _products_page(posted, done, None if done.ok else asked)


def _activation(form: Mapping[str, str]) -> str:
    active = form.get("active") == "true"
    return "console.activate_product" if active else "console.deactivate_product"


@router.form("/products/{product_id}/active", role="admin", audit=_activation)
async def set_product_active(posted: Posted, product_id: str) -> Response:
    """Deactivate (or activate again) a product."""
    answer = posted.form.get("active")
    if answer not in ("true", "false"):  # "maybe" deactivated it
        raise frame.ConsoleRefusal(400, "active: true or false")
    active = answer == "true"

    def work(session: Session) -> dict[str, Any]:
        product = products.set_active(session, raw_id=product_id[:40], active=active)
        return ProductRead.model_validate(product).model_dump(mode="json")

    done = await posted.change(asked={"product": product_id[:40], "active": active}, work=work)
    return await _products_page(posted, done)


# --- API keys ---------------------------------------------------------------------


async def _keys_page(visit: Visit, done: Done | None = None, shown: str | None = None) -> Response:
    listed = await visit.read(lambda session: list(keys.list_keys(session)))
    return visit.render(
        "admin_keys.html",
        {"keys": listed, "scopes": keys.SCOPES, "done": done, "shown": shown},
        status=done.status if done else 200,
    )


@router.page("/keys", role="admin", name="admin_keys")
async def keys_page(visit: Visit) -> Response:
    """API keys: list, create (shown once), revoke."""
    return await _keys_page(visit)


@router.form("/keys", role="admin", audit="console.create_key")
async def create_key(posted: Posted) -> Response:
    """Create an API key with the chosen scopes; its secret is shown once, here."""
    fields = posted.lists
    name = (fields.get("name") or [""])[-1]
    scopes = [scope for scope in fields.get("scope", []) if scope]
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        key, plaintext = keys.create_key(session, name=name, scopes=scopes)
        secret["key"] = plaintext
        return {"id": key.id, "name": key.name, "prefix": key.prefix, "scopes": key.scopes}

    done = await posted.change(asked={"name": name, "scopes": scopes}, work=work)
    return await _keys_page(posted, done, secret.get("key"))


@router.form("/keys/{key_id}/revoke", role="admin", audit="console.revoke_key")
async def revoke_key(posted: Posted, key_id: str) -> Response:
    """Revoke an API key; requests made with it are refused from now on."""
    ident = key_id[:20]

    def work(session: Session) -> dict[str, Any]:
        if not ident.isdigit():
            raise frame.ConsoleProblem(f"no active key {ident!r}")
        key = keys.revoke_key(session, ident=ident)
        return {"id": key.id, "name": key.name}

    done = await posted.change(asked={"key": ident}, work=work)
    return await _keys_page(posted, done)


# --- staff users ------------------------------------------------------------------


async def _users_page(
    visit: Visit, done: Done | None = None, shown: tuple[str, str] | None = None
) -> Response:
    def read(session: Session) -> tuple[list[Any], dict[int, Any]]:
        return list(staff_service.list_users(session)), staff_service.failed_sign_ins(session)

    listed, failed = await visit.read(read)
    return visit.render(
        "admin_users.html",
        {"users": listed, "failed": failed, "roles": rules.ROLES, "done": done, "shown": shown},
        status=done.status if done else 200,
    )


@router.page("/users", role="admin", name="admin_users")
async def users_page(visit: Visit) -> Response:
    """Staff users: list, create, disable, enable, reset a password."""
    return await _users_page(visit)


@router.form("/users", role="admin", audit="console.create_staff_user")
async def create_user(posted: Posted) -> Response:
    """Create a staff user; the generated password is shown once, here."""
    name, role = posted.form.get("name", "").strip(), posted.form.get("role", "")
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        user, password = staff_service.create_user(session, name=name, role=role)
        secret["password"] = password
        return {"name": user.name, "role": user.role}

    done = await posted.change(asked={"name": name, "role": role}, work=work)
    shown = (name, secret["password"]) if "password" in secret else None
    return await _users_page(posted, done, shown)


@router.form("/users/{name}/disable", role="admin", audit="console.disable_staff_user")
async def disable_user(posted: Posted, name: str) -> Response:
    """Disable a staff user and end their sessions."""
    if name == posted.user.name:
        raise frame.ConsoleRefusal(400, "You cannot disable yourself; ask another admin.")
    done = await posted.change(
        asked={"name": name},
        work=lambda session: {"name": staff_service.disable_user(session, name=name).name},
    )
    return await _users_page(posted, done)


@router.form("/users/{name}/enable", role="admin", audit="console.enable_staff_user")
async def enable_user(posted: Posted, name: str) -> Response:
    """Enable a staff user again and lift a lock-out."""
    done = await posted.change(
        asked={"name": name},
        work=lambda session: {"name": staff_service.enable_user(session, name=name).name},
    )
    return await _users_page(posted, done)


@router.form("/users/{name}/reset-password", role="admin", audit="console.reset_staff_password")
async def reset_password(posted: Posted, name: str) -> Response:
    """Give a staff user a new password (shown once, here) and end their sessions."""
    secret: dict[str, str] = {}

    def work(session: Session) -> dict[str, Any]:
        user, password = staff_service.reset_password(session, name=name)
        secret["password"] = password
        return {"name": user.name}

    done = await posted.change(asked={"name": name}, work=work)
    shown = (name, secret["password"]) if "password" in secret else None
    return await _users_page(posted, done, shown)


# --- webhook endpoints ------------------------------------------------------------


@router.page("/webhooks", role="admin", name="admin_webhooks")
async def webhooks_page(visit: Visit) -> Response:
    """Webhook endpoints with their health: last success, failing since, pending."""

    def read(session: Session) -> list[tuple[Any, webhooks.Health]]:
        return [
            (endpoint, webhooks.health_of(session, endpoint.id))
            for endpoint in webhooks.list_endpoints(session)
        ]

    return visit.render("admin_webhooks.html", {"endpoints": await visit.read(read)})
