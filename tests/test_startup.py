"""What a job pays before its work: the imports every short job of a run repeats.

A run of the workflow is hundreds of short processes (the demo: 118), so a module that
costs a second to import costs minutes of a run's CPU. These tests keep out of the jobs'
imports what they do not use (see wmd/pot_simplex.py and core/io.read_table)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from workflow_helpers import python_output

from wmdeval.core import io as wio


def test_a_wmd_job_loads_the_solver_without_the_rest_of_pot():
    # what made every WMD job pay ~2 CPU-s at start-up: POT's __init__ and what it imports
    out = python_output(
        """
        import sys
        import wmdeval.distances.wmd.blocks, wmdeval.distances.wmd.search
        heavy = ("ot", "sklearn", "pandas", "networkx", "scipy.stats")
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy))
        """
    )
    assert out == "[]"


def test_reading_a_table_leaves_pyarrow_dataset_unimported(tmp_path):
    # pq.read_table goes through pyarrow.dataset (~0.3 CPU-s to import); io.read_table
    # reads the same table without it
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"doc_id": [1, 2], "x": [0.5, None]}), path)
    out = python_output(
        f"""
        import sys
        from wmdeval.core import io
        table = io.read_table({str(path)!r})
        print(table.num_rows, "pyarrow.dataset" in sys.modules)
        """
    )
    assert out == "2 False"
    assert wio.read_table(path).schema.equals(pq.read_table(path).schema, check_metadata=True)
    assert wio.read_table(path).to_pydict() == pq.read_table(path).to_pydict()


def test_the_query_roles_and_random_splits_leave_scikit_learn_unimported():
    # every job that reads the kNN protocol's query roles (forecasts, searches,
    # evaluations, analyses) paid ~1.2 CPU-s for sklearn's train_test_split
    out = python_output(
        """
        import sys
        import numpy as np
        from wmdeval.core import roles
        from wmdeval.ingest import corpora
        folds = [(np.arange(0, 40), np.arange(40, 50))]
        found = roles.query_roles(folds, np.zeros(50, dtype=bool), None)
        corpora.random_splits(30, folds=2, test_size=0.3, seed=0)
        heavy = ("sklearn", "scipy.stats")
        print(len(found), sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy))
        """
    )
    assert out == "3 []"
