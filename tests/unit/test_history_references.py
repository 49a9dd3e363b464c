"""The history check's rule (tests/history_references.py), on sample text."""

from __future__ import annotations

import pytest

from tests.history_references import checked_files, references

pytestmark = pytest.mark.unit

# built from parts, so that this file holds no reference itself
STOP, ISSUE, DEFECT = "stop", "issue", "defect"


def test_every_form_of_a_step_reference_is_found_with_its_line_number() -> None:
    text = "\n".join([
        "plain text",
        f"other tables are read at their newest commit (since {STOP} 51)",
        f"## {STOP.title()} 74 (2026-12-06): scenario 3",
        f"measured in {STOP}s 58-61",
        f"the goal {ISSUE} 12 asks for",
        f"p95 goals ({ISSUE.title()}s 10 and 13)",
        f"see {ISSUE} #14",
        f"never lost silently ({ISSUE} 11, {DEFECT} 8)",
        f"{STOP.upper()} 40's JDBC failures",
    ])
    assert [number for number, _ in references(text)] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert references(f"x\n  y ({STOP} 35)  \n") == [(2, f"y ({STOP} 35)")]


def test_words_without_a_step_number_are_not_references() -> None:
    text = "\n".join([
        "the speed job stops when both queries reach the topic end",
        "an issue with 3 brokers",
        "a defective record",
        "backstop 3",
        "nonstop 24/7",
        "stopwatch 5",
        "tissues 4",
    ])
    assert references(text) == []


def test_the_rule_reads_no_grammar_a_verb_before_a_number_counts_too() -> None:
    """Rephrase such a line ("stop both brokers") rather than teach the rule exceptions."""
    assert references(f"{STOP} 2 brokers") == [(1, f"{STOP} 2 brokers")]


def test_generated_results_and_the_changelog_are_not_checked() -> None:
    files = checked_files()
    assert "tests/history_references.py" in files
    assert "CHANGELOG.md" not in files
    assert not [name for name in files if name.startswith("benchmarks/results/")]
