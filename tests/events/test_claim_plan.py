"""The deliverer's claim and the queue metrics read the open deliveries' partial index:
after an outage the backlog is sent oldest first without walking the delivery log's
delivered rows, or sorting every due delivery, on each round (bench/README.md, Events)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, func, literal, select, text
from sqlalchemy.sql import Select

from ridercrm.db import utcnow
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Delivery, is_open

OPEN_INDEX = "ix_webhook_deliveries_open"


def plan_of(engine: Engine, query: Select[Any]) -> str:
    """The database's plan for ``query`` with its parameters bound, as a prepared
    statement run many times is planned: on PostgreSQL, the generic plan, which cannot
    see a parameter's value (so a partial index serves only constants written out)."""
    compiled = query.compile(dialect=engine.dialect, compile_kwargs={"render_postcompile": True})
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {compiled.string}",
                tuple(compiled.params[name] for name in compiled.positiontup or ()),
            )
            return "\n".join(str(row[-1]) for row in rows)
        names: list[str] = []

        def placeholder(found: re.Match[str]) -> str:
            names.append(found.group(1))
            return f"${len(names)}"

        sql = re.sub(r"%\((\w+)\)s", placeholder, compiled.string)
        # SET LOCAL: undone by the rollback below, not left on the pooled connection.
        connection.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
        connection.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a tiny table is scanned
        connection.exec_driver_sql(f"PREPARE planned AS {sql}")
        # EXECUTE's arguments written out: a utility statement takes no parameters.
        arguments = ", ".join(
            str(
                literal(compiled.params[name]).compile(
                    dialect=engine.dialect, compile_kwargs={"literal_binds": True}
                )
            )
            for name in names
        )
        rows = connection.exec_driver_sql(
            f"EXPLAIN EXECUTE planned({arguments})" if names else "EXPLAIN EXECUTE planned"
        )
        plan = "\n".join(str(row[0]) for row in rows)
        connection.exec_driver_sql("DEALLOCATE planned")  # prepared statements outlive it
        connection.rollback()
        return plan


def test_the_claim_walks_the_open_deliveries_in_order(
    engine: Engine, make_deliverer: Callable[..., Deliverer]
) -> None:
    deliverer = make_deliverer()
    plan = plan_of(engine, deliverer._due(utcnow(), 32, set()))
    assert OPEN_INDEX in plan, plan
    # SQLite walks it in id order rather than sorting every due delivery. (PostgreSQL
    # chooses by its statistics: on this near-empty table a sort of nothing costs least.)
    assert "TEMP B-TREE" not in plan, plan


def test_the_queue_metrics_count_the_open_deliveries_from_their_index(engine: Engine) -> None:
    query = select(func.count(), func.min(Delivery.created_at)).where(is_open(Delivery.status))
    assert OPEN_INDEX in plan_of(engine, query)


def test_the_index_holds_only_open_deliveries(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        sql = "SELECT sql FROM sqlite_master WHERE name = :name"
    else:
        sql = "SELECT indexdef FROM pg_indexes WHERE indexname = :name"
    with engine.connect() as connection:
        definition = connection.execute(text(sql), {"name": OPEN_INDEX}).scalar_one()
    assert re.search(r"WHERE.*status.*pending.*sending", definition), definition
