"""The fold of a stateless speed table: its append-only partials -> one row per window, as SQL.

Each micro-batch of a tumbling or sliding pipeline APPENDS its per-window partials (counts, sums,
minima, maxima, the sum and count behind an ``avg``, the HyperLogLog sketch behind an
``approx_distinct``) to ``speed.<p>[__vN]__partials``: one idempotent Delta commit, no MERGE, so a
micro-batch's cost follows the micro-batch and its rows are visible as soon as it commits. Partials
of disjoint event sets combine exactly, so ``speed.<p>[__vN]`` is a VIEW that folds them per window;
the same fold, run by the stream beside its next micro-batches, compacts the table (``replaceWhere``)
so the view reads one row per window plus the last few blocks' rows. A window is final once the
highest watermark a micro-batch recorded has passed its end: no later micro-batch adds to it.
"""

from __future__ import annotations

from lakehouse.pipeline import Pipeline

COMPACT_EVERY = 30  # micro-batches per block: a block's partials are compacted once the next block starts
COMPACTED_SLOT = 2  # the ``slot`` of compacted rows


def slot_of(batch_id: int) -> int:
    """The partition a micro-batch appends to: blocks of ``COMPACT_EVERY`` alternate between slots 0
    and 1, so a compaction of the block just ended (its slot and the compacted slot) never shares a
    partition with the appends of the block under way, and Delta sees no conflict between them."""
    return (batch_id // COMPACT_EVERY) % 2


def fold_columns(p: Pipeline) -> list[str]:
    """The aggregates over every partial row of a window, in the speed contract's order."""
    out: list[str] = []
    for a in p.aggregates:
        n = f"`{a.name}`"
        if a.fn in ("count", "sum"):
            out.append(f"sum({n}) AS {n}")
        elif a.fn in ("min", "max"):
            out.append(f"{a.fn}({n}) AS {n}")
        elif a.fn == "avg":
            out.append(f"sum(`_sum_{a.name}`) / nullif(sum(`_n_{a.name}`), 0) AS {n}")
        else:  # approx_distinct
            out.append(f"CAST(hll_sketch_estimate(hll_union_agg(`_hll_{a.name}`)) AS BIGINT) AS {n}")
    return out


def fold_partial_columns(p: Pipeline) -> list[str]:
    out: list[str] = []
    for a in p.aggregates:
        if a.fn == "avg":
            out += [f"sum(`_sum_{a.name}`) AS `_sum_{a.name}`", f"sum(`_n_{a.name}`) AS `_n_{a.name}`"]
        elif a.fn == "approx_distinct":
            out.append(f"hll_union_agg(`_hll_{a.name}`) AS `_hll_{a.name}`")
    return out


def fold_sql(p: Pipeline, partials: str, where: str = "", compacted: bool = False, finality: bool = True) -> str:
    """One row per window of ``partials``. ``compacted=False``: the speed contract's columns (the
    view); ``compacted=True``: the partials contract's columns (a compaction's output).
    ``finality=False``: without ``is_final`` (its subquery reads the table a second time), for a
    reader that does not use it (the lambda serving view)."""
    grain = [f"`{k}`" for k in (*p.keys, "window_start", "window_end")]
    # batch_id (and lineage): of the window's latest append; batch ids of two lineages do not compare
    head = [*grain, *fold_columns(p), "max(`max_event_time`) AS `max_event_time`",
            "max(`updated_at`) AS `updated_at`", "max_by(`batch_id`, `updated_at`) AS `batch_id`"]
    if compacted:
        cols = [*head, *fold_partial_columns(p), "max(`watermark`) AS `watermark`",
                "max_by(`lineage`, `updated_at`) AS `lineage`", "true AS `compacted`", f"{COMPACTED_SLOT} AS `slot`"]
    else:
        final = [f"coalesce(`window_end` <= (SELECT max(`watermark`) FROM {partials}), false) AS `is_final`"]
        cols = [*head, *(final if finality else []), *fold_partial_columns(p)]
    return (f"SELECT {', '.join(cols)} FROM {partials}{f' WHERE {where}' if where else ''} "
            f"GROUP BY {', '.join(grain)}")
