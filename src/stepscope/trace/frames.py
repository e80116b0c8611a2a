"""DataFrames and Arrow tables for notebooks: a profile's events (``Profile.to_pandas``) and a
tool's tables (``Table.to_pandas``), built from typed columns.

pandas and pyarrow are not dependencies of stepscope (a training job that only captures
should not install them): they are imported when a frame is asked for, and their absence
is one line saying what to install.

Dtypes: integers stay integers; where an integer or boolean column has missing values it
becomes pandas' nullable ``Int64`` / ``boolean`` (Arrow: the same type with nulls), not
floats; floats keep NaN; strings are objects (None where missing).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    from stepscope.trace.model import Profile

NO_ID = -1  # trace.model.NO_ID (the model imports this module, not the other way round)

# What to install for each optional module (the extra of the same name installs it too).
INSTALL_HINTS = {"pandas": "pip install pandas (or stepscope[pandas])", "pyarrow": "pip install pyarrow (or stepscope[arrow])"}


def require(module: str) -> ModuleType:
    """The optional module, or one clear line saying how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise StepscopeError(f"{module} is not installed: {INSTALL_HINTS[module]}") from None


@dataclass(frozen=True)
class FrameColumn:
    """One column: ``values`` (int64, float64, bool or object) and, for integer and boolean
    values, ``missing`` (True where the row has no value)."""

    name: str
    values: npt.NDArray[Any]
    missing: npt.NDArray[np.bool_] | None = None


def to_pandas(columns: list[FrameColumn]) -> Any:
    pd = require("pandas")
    data: dict[str, Any] = {}
    for column in columns:
        if column.missing is None or not column.missing.any():
            data[column.name] = column.values
        elif column.values.dtype == np.bool_:
            data[column.name] = pd.arrays.BooleanArray(column.values, column.missing)
        else:
            data[column.name] = pd.arrays.IntegerArray(column.values, column.missing)
    return pd.DataFrame(data, columns=[column.name for column in columns])


def to_arrow(columns: list[FrameColumn]) -> Any:
    pa = require("pyarrow")
    arrays = []
    for column in columns:
        if column.values.dtype == object:
            arrays.append(pa.array(column.values, type=pa.string(), from_pandas=True))
        else:
            arrays.append(pa.array(column.values, mask=column.missing))
    return pa.table(arrays, names=[column.name for column in columns])


def values_column(name: str, kind: str, values: list[Any]) -> FrameColumn:
    """A column of Python values (a tool table's), typed by what it holds: ``kind`` is the
    table column's ("number", "string", "bool"). Numbers that are all integers stay
    integers; any float (or no value at all) makes the column float64."""
    present = [value for value in values if value is not None]
    missing = np.fromiter((value is None for value in values), dtype=bool, count=len(values))
    if kind == "bool" and all(isinstance(value, bool) for value in present):
        return FrameColumn(name, np.asarray([bool(value) for value in values], dtype=bool), missing)
    if kind == "number" and present and all(isinstance(value, int) and not isinstance(value, bool) for value in present):
        return FrameColumn(name, np.asarray([value or 0 for value in values], dtype=np.int64), missing)
    if kind == "number" and all(isinstance(value, int | float) for value in present):
        return FrameColumn(name, np.asarray([np.nan if value is None else value for value in values], dtype=np.float64))
    objects = np.empty(len(values), dtype=object)
    objects[:] = [value if value is None or isinstance(value, str) else str(value) for value in values]
    return FrameColumn(name, objects)


# The event frame's columns (``Profile.to_pandas``), one row per event, plane by plane.
PLANE, LINE, NAME, CATEGORY = "plane", "line", "name", "category"
START_PS, DURATION_PS, DEPTH = "start_ps", "duration_ps", "depth"
# The event table's id columns, absent (NO_ID) as missing.
ID_COLUMNS = ("correlation_id", "external_id", "group_id", "step_num")
EVENT_FRAME_COLUMNS = (PLANE, LINE, NAME, CATEGORY, START_PS, DURATION_PS, DEPTH, *ID_COLUMNS)


def event_columns(profile: Profile) -> list[FrameColumn]:
    """Every event of every plane: where it ran (plane, line label), what it was (name,
    the source's category), when (ps from the profile's start, exact integers), its
    nesting depth on its line and the ids that link events (missing where absent). The raw
    stats (args) are left out: they are per event and per key, the costly part of a trace."""
    planes = [plane for plane in profile.planes if len(plane.events)]

    def strings(per_plane: list[npt.NDArray[np.object_]]) -> npt.NDArray[np.object_]:
        return np.concatenate(per_plane) if per_plane else np.empty(0, dtype=object)

    def ints(column: str) -> npt.NDArray[np.int64]:
        arrays = [getattr(plane.events, column) for plane in planes]
        return np.concatenate(arrays).astype(np.int64, copy=False) if arrays else np.empty(0, dtype=np.int64)

    plane_names = strings([np.full(len(plane.events), plane.name, dtype=object) for plane in planes])
    lines = strings([np.asarray([line.label for line in plane.lines], dtype=object)[plane.events.line] for plane in planes])
    event_names = strings([plane.metadata.name_array[plane.events.metadata_id] for plane in planes])
    categories = strings([np.asarray(plane.metadata.categories, dtype=object)[plane.events.metadata_id] for plane in planes])
    columns = [
        FrameColumn(PLANE, plane_names),
        FrameColumn(LINE, lines),
        FrameColumn(NAME, event_names),
        FrameColumn(CATEGORY, categories),
        FrameColumn(START_PS, ints(START_PS)),
        FrameColumn(DURATION_PS, ints(DURATION_PS)),
        FrameColumn(DEPTH, ints(DEPTH)),
    ]
    for column in ID_COLUMNS:
        values = ints(column)
        columns.append(FrameColumn(column, values, values == NO_ID))
    return columns
