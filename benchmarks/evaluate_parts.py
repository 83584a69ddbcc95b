"""CPU of the evaluation's parts: each method alone, the fixed cost every part pays, and the
whole evaluation, on a variant a knn-mode workflow run has finished (its documents, splits
and the transport methods' neighbour tables), e.g. the passages of
``python benchmarks/scale_growth.py run --every 4 --run`` (21,409 passages, one fold).

Each part is timed as an ``evaluate_part`` job runs it (``knn.evaluate_variant`` with
``methods``), the inputs read once beforehand and only the part's own neighbour tables
given: ``fixed`` evaluates no method (the documents' count matrix, the splits, the empty
tables written nowhere); a method alone is the fixed cost and that method. CPU of this
process (``time.process_time``), not wall, so that other work on the machine distorts it
less. planning/plan.py's evaluate constants quote the recorded file
(benchmarks/results/evaluate_parts.json).

    python benchmarks/evaluate_parts.py --variant <run>/results/passages/original [--record]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import record

from wmdeval.classification.knn import evaluate_variant
from wmdeval.core import io
from wmdeval.core.methods import METHODS
from wmdeval.distances.wmd.search import read_neighbour_tables


def cpu_of(documents, splits, tables, methods) -> float:
    """CPU seconds of one part of ``methods`` (slugs), given only its own tables."""
    given = {slug: table for slug, table in tables.items() if slug in methods}
    started = time.process_time()
    evaluate_variant(
        documents, splits, {}, None, "bench", "original", neighbour_tables=given, methods=methods
    )
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", type=Path, required=True, help="results/<dataset>/<variant>")
    record.add_argument(parser, "evaluate_parts")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the methods' wkNN underflow lines
    root = args.variant
    documents = io.read_documents(root / "documents.parquet")
    splits = io.read_splits(root / "splits.parquet")
    tables = {
        slug: read_neighbour_tables(
            root / "neighbours" / f"{slug}.parquet",
            root / "neighbours" / f"{slug}.certificates.parquet",
        )
        for slug in ("wmd", "wmd-tfidf")
    }
    fixed = cpu_of(documents, splits, tables, [])
    methods = {m.slug: cpu_of(documents, splits, tables, [m.slug]) for m in METHODS}
    whole = cpu_of(documents, splits, tables, [m.slug for m in METHODS])
    baselines = [cpu - fixed for slug, cpu in methods.items() if not slug.startswith("wmd")]
    listed = [methods[slug] - fixed for slug in ("wmd", "wmd-tfidf")]
    n = documents.num_rows
    figures = {
        "documents": n,
        "folds": len(set(splits.column("fold").to_pylist())),
        "fixed_cpu_seconds": round(fixed, 2),
        "method_cpu_seconds": {slug: round(cpu, 2) for slug, cpu in methods.items()},
        "whole_cpu_seconds": round(whole, 1),
        "baseline_cpu_seconds_min": round(min(baselines), 2),
        "baseline_cpu_seconds_max": round(max(baselines), 2),
        "baseline_seconds_per_entry": float(f"{sum(baselines) / len(baselines) / n / n:.2e}"),
        "listed_seconds_per_document": float(f"{max(listed) / n:.1e}"),
        "fixed_seconds_per_document": float(f"{fixed / n:.1e}"),
    }
    print(
        f"evaluate_parts: {n:,} documents: fixed {fixed:.1f} CPU-s a part; a baseline"
        f" {min(baselines):.1f}-{max(baselines):.1f} s beyond it; WMD, WMD-TF-IDF"
        f" {listed[0]:.1f}, {listed[1]:.1f} s; the whole evaluation {whole:.1f} s"
    )
    record.write(args.record, "evaluate_parts", figures)


if __name__ == "__main__":
    main()
