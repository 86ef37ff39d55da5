"""The importer sends rows as value tuples; their order must be the builders' order."""

import datetime as dt

from ridercrm.transfer.rows import PERSON_ROW_COLUMNS, PRODUCT_ROW_COLUMNS, person_rows, product_row

NOW = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)


def test_person_row_values_are_in_the_declared_column_order() -> None:
    data = {"first_name": "Ann", "last_name": "Lee", "email": "ann@example.com"}
    row, keys = person_rows("contact", data, now=NOW)
    assert tuple(row) == PERSON_ROW_COLUMNS
    assert keys


def test_product_row_values_are_in_the_declared_column_order() -> None:
    row = product_row({"name": "Learner", "code": "L", "price": 1}, now=NOW)
    assert tuple(row) == PRODUCT_ROW_COLUMNS
