"""What an aggregating job covers, and the check that its input covers exactly that.

A job that combines per-dataset results (scores, tables, figures, analysis tables) is
told by the workflow which datasets, variants and methods this run covers, as
``{column: [values]}``: the rows it must find are every combination of those values.
Snakemake reruns the job when that expectation changes (it is a parameter), and the job
refuses to write anything when its input lacks a combination or holds one the run does
not cover, so a stale or incomplete input can never become a table with an empty
column or a leftover row.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence

import pyarrow as pa

from .errors import WmdevalError

#: column -> the values this run covers; the expected rows are their product.
Expected = Mapping[str, Sequence[str]]


def parse_expected(text: str) -> dict[str, list[str]]:
    """``--expect`` argument (JSON object of lists of strings) -> Expected."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WmdevalError(f"--expect: not JSON: {exc}") from None
    if not isinstance(value, dict) or not all(
        isinstance(values, list) and all(isinstance(v, str) for v in values)
        for values in value.values()
    ):
        raise WmdevalError("--expect: expected a JSON object of lists of strings")
    return value


def _describe(columns: Sequence[str], key: tuple) -> str:
    return ", ".join(f"{column} {value!r}" for column, value in zip(columns, key, strict=True))


def require_exact_coverage(table: pa.Table, expected: Expected, source: str) -> None:
    """Raise WmdevalError unless the distinct rows of ``table`` over the expected
    columns are exactly the product of the expected values.

    ``source`` names the input in the message (a path, or several). An expectation with
    an empty value list expects no rows at all.
    """
    columns = list(expected)
    if not columns:
        return
    for column in columns:
        if column not in table.column_names:
            raise WmdevalError(
                f"{source}: no column {column!r} (columns: {', '.join(table.column_names)})"
            )
    found = set(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    wanted = set(itertools.product(*(expected[c] for c in columns)))
    missing = sorted(wanted - found)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise WmdevalError(
            f"{source}: no rows for {_describe(columns, missing[0])}{more}, "
            "which this run covers; refusing to write without them"
        )
    extra = sorted(found - wanted, key=str)
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        raise WmdevalError(
            f"{source}: rows for {_describe(columns, extra[0])}{more}, "
            "which this run does not cover (a stale input?)"
        )


def expects_rows(expected: Expected) -> bool:
    """Whether ``expected`` asks for any row: no value list is empty (an all-words
    expectation without datasets, for example, asks for none)."""
    return bool(expected) and all(expected.values())


def sources(paths: Sequence[object]) -> str:
    """The inputs named in a message: all of a few, else the first and a count."""
    names = [str(p) for p in paths]
    if len(names) <= 3:
        return ", ".join(names) or "(no inputs)"
    return f"{names[0]} and {len(names) - 1} more inputs"


def with_method_column(
    expected: Expected, column: str, keep: Sequence[str] | None = None
) -> dict[str, list[str]]:
    """``expected`` with its ``method`` key renamed to ``column`` (e.g. ``method_a`` of a
    table of method pairs), keeping only the methods in ``keep`` when given (an
    analysis that covers a subset of the run's methods)."""
    renamed = {key: list(values) for key, values in expected.items() if key != "method"}
    if "method" in expected:
        methods = [m for m in expected["method"] if keep is None or m in keep]
        renamed[column] = methods
    return renamed
