"""The dashboard's table search and sort, written the obvious way, so that tests can say
which rows an address (``&q=<table>:<text>``, ``&sort=<table>:<key>:desc``) shows from a
tool's table JSON (``{"columns": [{"key", "kind"}...], "rows": [[...]...]}``) without the
page's code: the search keeps the rows where some text column holds the text, ignoring
case and the text's surrounding blanks (all rows for a blank text); the sort orders by
one column, biggest first, nulls last."""

from __future__ import annotations

from typing import Any


def searched(table: dict[str, Any], text: str) -> list[list[Any]]:
    needle = text.strip().lower()
    if not needle:
        return list(table["rows"])
    text_columns = [index for index, column in enumerate(table["columns"]) if column["kind"] == "string"]
    return [row for row in table["rows"] if any(isinstance(row[i], str) and needle in row[i].lower() for i in text_columns)]


def biggest_first(table: dict[str, Any], rows: list[list[Any]], key: str) -> list[list[Any]]:
    index = [column["key"] for column in table["columns"]].index(key)
    present = [row for row in rows if row[index] is not None]
    return sorted(present, key=lambda row: -row[index]) + [row for row in rows if row[index] is None]


def cell(table: dict[str, Any], row: list[Any], key: str) -> Any:
    return row[[column["key"] for column in table["columns"]].index(key)]
