import pyarrow as pa
import pytest

from wmdeval.ingest.corpora import documents_table


@pytest.fixture
def make_documents():
    """Build a DOCUMENTS table from [(label, {word: count}), ...]."""

    def make(rows):
        from collections import Counter

        return documents_table([Counter(bag) for _, bag in rows], [label for label, _ in rows])

    return make


def table_rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()
