"""A key's read: the schema of the columns it asks."""

from __future__ import annotations

import pyarrow as pa

from diagnostics.store.keyread import cast_to, of_names

SCHEMA = pa.schema([("timestamp", pa.timestamp("ns", tz="UTC")), ("gpu", pa.int16()), ("replay", pa.float64())])


def test_the_columns_asked_come_in_the_schemas_order_and_are_built_once_for_the_same_ask() -> None:
    asked = of_names(SCHEMA, ("replay", "timestamp"))
    assert asked.names == ["timestamp", "replay"]
    assert asked.field("replay").type == pa.float64()
    assert of_names(SCHEMA, ("replay", "timestamp")) is asked


def test_a_table_of_the_columns_in_another_order_is_laid_out_as_asked() -> None:
    table = pa.table({"replay": pa.array([1.5]), "timestamp": pa.array([7], pa.timestamp("ns", tz="UTC"))})
    laid = cast_to(table, of_names(SCHEMA, tuple(table.schema.names)))
    assert laid.column_names == ["timestamp", "replay"]
    assert laid.column("replay").to_pylist() == [1.5]
