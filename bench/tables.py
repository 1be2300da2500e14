"""What a table of docs/benchmarks.md is made of: a ``Scenario`` (its records, rows and ``Column``s) and its figures.

bench/scenarios.py declares the page's tables with these, and bench/report.py renders them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Record = dict
Rows = dict[tuple, list[Record]]


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[list[Record], Rows], str]


@dataclass(frozen=True)
class Scenario:
    """One table: which records, how they group into rows, and what each row shows."""

    files: tuple[str, ...]  # in the order they were measured: a later file's run is the newer one
    command: str
    row: Callable[[Record], tuple]  # a record's row; the rows are shown sorted by it
    columns: tuple[Column, ...]
    keep: Callable[[Record], bool] = lambda record: True
    # records measured side by side: where set, each such group shows only its latest run, whole, so that its
    # rows compare (the CPU's speed moves from hour to hour); else each row shows its own latest run
    run_group: Callable[[Record], tuple] | None = None
    show: Callable[[tuple], bool] = lambda row: True  # rows that only lend figures to others are not shown
    per_machine: bool = False  # a table for each machine, its rows sorted by the row key
    notes: tuple[str, ...] = field(default=())
    optional: bool = False  # its files may not exist yet: without a record the page says it is not measured yet


def number(value: float) -> str:
    """A figure as the page prints it: three or four significant digits, thousands separated."""
    if abs(value) >= 100:
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.1f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def spread(values: list[float]) -> str:
    """One value, or the range of a run's repeats."""
    low, high = min(values), max(values)
    return number(low) if number(low) == number(high) else f"{number(low)}–{number(high)}"


def figure(name: Callable[[Record], float | None] | str) -> Callable[[list[Record], Rows], str]:
    pick = (lambda record: record.get(name)) if isinstance(name, str) else name
    return lambda found, rows: spread([v for v in map(pick, found) if v is not None]) if any(
        pick(r) is not None for r in found) else "–"
