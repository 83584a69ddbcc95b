"""The per-variant part of the five classifier-free analyses, in one process.

N2O (:mod:`wmdeval.analyses.n2o`), crossmatch tests (:mod:`wmdeval.analyses.crossmatch`),
corpus distances and known-similarity corpora (:mod:`wmdeval.analyses.corpus_distance`),
and WMD against BOW (:mod:`wmdeval.analyses.wmd_vs_bow`) each live in their own module,
with their own table or figure rule. For one dataset variant they all read the same
documents and WMD matrices, so the workflow runs the enabled ones in one job:

- the matrices are read, and held in memory, once rather than once per analysis (on
  20news the two float64 WMD matrices take 5.7 GB);
- on the demo, each analysis's own work is a fraction of a second, less than starting a
  Python process with numpy, pyarrow and scipy; one job instead of five is what keeps
  the analyses cheap next to the demo's run time (docs/analyses.md).

Every table is computed before any is written, so a failing analysis leaves none.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping

import pyarrow as pa

from ..core import io, schemas
from ..core.variant import Variant
from ..distances.factory import read_variant
from . import corpus_distance, crossmatch, n2o, wmd_vs_bow

log = logging.getLogger("wmdeval.analyses.per_variant")

#: analysis name (as under ``analyses:`` in the config) -> (results function, schema).
#: Each function takes (variant data, dataset, variant, seed=..., report=..., **settings),
#: the settings being that analysis's config keys other than ``enabled``, ``report`` the
#: subject of its progress lines in the job's log.
ANALYSES: dict[str, tuple[Callable[..., pa.Table], pa.Schema]] = {
    "n2o": (n2o.n2o_results, schemas.N2O),
    "crossmatch": (crossmatch.crossmatch_results, schemas.CROSSMATCH),
    "corpus_distances": (corpus_distance.corpus_distance_results, schemas.CORPUS_DISTANCES),
    "ksc": (corpus_distance.ksc_results, schemas.KSC),
    "wmd_vs_bow": (wmd_vs_bow.analysis_table, schemas.WMD_VS_BOW),
}


@functools.cache
def _schema_settings() -> dict[str, dict]:
    """analysis name -> its settings' defaults, from the config schema (``enabled`` left out)."""
    from ..core import config

    return {
        name: {k: v for k, v in config.defaults("analyses", name).items() if k != "enabled"}
        for name in ANALYSES
    }


def check_request(
    outputs: Mapping[str, object], settings: Mapping[str, Mapping]
) -> dict[str, dict]:
    """Every output names a known analysis, and its settings are among the analysis's
    config keys. Returns each requested analysis's settings, the schema's default for any
    key not given."""
    defaults = _schema_settings()
    complete = {}
    for name in outputs:
        if name not in ANALYSES:
            raise io.WmdevalError(
                f"unknown analysis '{name}' (expected one of {', '.join(ANALYSES)})"
            )
        given = dict(settings.get(name, {}))
        unknown = sorted(set(given) - set(defaults[name]))
        if unknown:
            raise io.WmdevalError(
                f"analysis '{name}': unknown setting(s) {unknown}, expected "
                f"some of {sorted(defaults[name])}"
            )
        complete[name] = {**defaults[name], **given}
    return complete


def analysis_results(
    corpus: Variant,
    dataset: str,
    variant: str,
    settings: Mapping[str, Mapping],
    names: list[str],
    seed: int,
) -> dict[str, pa.Table]:
    """The tables of the analyses ``names`` on one prepared variant (``settings``: every
    key of each, as :func:`check_request` returns them)."""
    tables = {}
    for name in names:
        results, _ = ANALYSES[name]
        started = time.process_time()
        tables[name] = results(
            corpus,
            dataset,
            variant,
            seed=seed,
            report=f"analyses {dataset}/{variant} {name}",
            **settings[name],
        )
        log.info(
            "%s/%s %s: %d rows in %.2f s CPU",
            dataset,
            variant,
            name,
            tables[name].num_rows,
            time.process_time() - started,
        )
    return tables


def run_analyses(
    documents_path: str | os.PathLike,
    splits_path: str | os.PathLike,
    wmd_paths: Mapping[str, str | os.PathLike],
    dataset: str,
    variant: str,
    settings: Mapping[str, Mapping],
    outputs: Mapping[str, str | os.PathLike],
    seed: int,
) -> dict[str, pa.Table]:
    """Run the analyses named in ``outputs`` (name -> Parquet path) on one dataset
    variant and write each table. ``wmd_paths``: WMD method slug -> DISTANCES file (a
    WMD method without one is left out); ``settings``: the ``analyses:`` config."""
    settings = check_request(outputs, settings)
    corpus = read_variant(documents_path, splits_path, wmd_paths)
    names = [name for name in ANALYSES if name in outputs]
    tables = analysis_results(corpus, dataset, variant, settings, names, seed)
    for name in names:
        io.write_table(tables[name], outputs[name], ANALYSES[name][1])
    return tables


__all__ = ["ANALYSES", "check_request", "analysis_results", "run_analyses"]
