"""One scenario's outcome: status, correctness checks, metrics, ratios and notes (a plain dict in JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ScenarioResult:
    id: int
    name: str
    status: str = "ok"             # ok | FAILED | skipped
    checks: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, float | None] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def check(self, name: str, expected: Any, actual: Any, ok: bool | None = None) -> bool:
        ok = (expected == actual) if ok is None else ok
        self.checks.append({"name": name, "expected": expected, "actual": actual, "ok": bool(ok)})
        return bool(ok)

    def add_checks(self, checks: list[dict[str, Any]]) -> None:
        self.checks.extend(checks)

    def finish(self) -> ScenarioResult:
        """A wrong answer is a failure, however fast: any failed check marks the scenario FAILED."""
        self.notes = list(dict.fromkeys(self.notes))
        if self.status == "ok" and any(not c["ok"] for c in self.checks):
            self.status = "FAILED"
        if self.status == "ok" and not self.checks:
            self.status = "FAILED"
            self.notes.append("no correctness check ran")
        return self

    def skip(self, reason: str) -> ScenarioResult:
        self.status = "skipped"
        self.notes.append(reason)
        return self

    def fail(self, reason: str) -> ScenarioResult:
        self.status = "FAILED"
        self.notes.append(reason)
        return self

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None
