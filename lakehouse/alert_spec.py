"""A pipeline's alert patterns as typed values (``alerts:`` in its definition; ``lakehouse.alert_checks``
parses and validates them). Each pattern watches the events of one key, in event time:

* ``sequence``: an event matching ``first`` followed, on the same key, by one matching ``then`` at most
  ``within`` later;
* ``absence``: no event from a key for ``within`` after one of its events (the watermark, which the other
  keys' events move, tells when that time has passed);
* ``threshold``: ``count`` events matching ``when`` whose times span at most ``within``.

A condition is ``field op value`` over one schema field, with an operator of ``OPERATORS``: never a SQL
string. The same operator function evaluates it on Python values (the oracle) and on Spark columns.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KINDS = ("sequence", "absence", "threshold")
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
ORDERING = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: Any

    def apply(self, operand: Any) -> Any:
        """``operand op value``: a bool for a Python value (False for None, as SQL's NULL comparison is
        not true), a boolean Column for a Spark column."""
        if operand is None:
            return False
        return OPERATORS[self.op](operand, self.value)

    def __str__(self) -> str:
        return f"{self.field} {self.op} {self.value!r}"


@dataclass(frozen=True)
class AlertPattern:
    name: str
    kind: str
    key: str
    within: str
    within_ms: int
    first: Condition | None = None  # sequence: the opening event; threshold: the counted events
    then: Condition | None = None  # sequence: the closing event
    count: int = 0  # threshold

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return tuple(c for c in (self.first, self.then) if c is not None)
