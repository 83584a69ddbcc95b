# The tests compute with the OpenBLAS kernels the workflow's jobs use (config
# blas_kernels, its default here), set before anything loads numpy: a test that compares
# its own products with a workflow run's (a matrix solved again in other blocks, say)
# must compare like with like, whatever kernels OpenBLAS would pick for this CPU.
import os

from wmdeval.core.config import defaults
from wmdeval.planning.environment import job_environment

os.environ.update(job_environment(defaults("blas_kernels")))

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

from wmdeval.ingest.corpora import documents_table  # noqa: E402


@pytest.fixture
def make_documents():
    """Build a DOCUMENTS table from [(label, {word: count}), ...]."""

    def make(rows):
        from collections import Counter

        return documents_table([Counter(bag) for _, bag in rows], [label for label, _ in rows])

    return make


def table_rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()
