# The tests compute with the OpenBLAS kernels the workflow's jobs use (config
# blas_kernels, its default here), set before anything loads numpy: a test that compares
# its own products with a workflow run's (a matrix solved again in other blocks, say)
# must compare like with like, whatever kernels OpenBLAS would pick for this CPU.
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

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


# The opt-in real-SLURM test goes first: it mostly waits on the cluster, so it overlaps
# the others best from the start (last, it ran alone for its last 200 s, the other
# worker idle).
FIRST = ("test_slurm.py",)


def pytest_collection_modifyitems(items):
    """The SLURM test's file first (FIRST), then the files with most tests first: the
    order pytest-xdist hands files out by default (pyproject's --no-loadscope-reorder
    turns that off, so that the SLURM test can go first). With ``--dist loadfile`` each
    file goes to one worker, so a file's module-scoped fixture (a workflow run) is built
    once. On 2 cores, without the SLURM test, xdist's order ran the suite in 8 min 51 s,
    the files of whole-workflow runs first in 9 min 56 s (all of them then compete from
    the start)."""
    counts = Counter(item.path for item in items)

    def order(item) -> tuple[bool, int]:
        return item.path.name not in FIRST, -counts[item.path]

    items.sort(key=order)  # stable: file order within a rank


def pytest_configure(config):
    """The controller (or the only process) opens the directory where every worker's
    Snakemake runs note the rules they ran (workflow_helpers.record_rules)."""
    from workflow_helpers import RULES_RUN

    if not hasattr(config, "workerinput"):  # not a pytest-xdist worker
        os.environ[RULES_RUN] = tempfile.mkdtemp(prefix="wmdeval-rules-run-")


def pytest_sessionfinish(session, exitstatus):
    """Every rule of the workflow runs in at least one end-to-end test. Checked once the
    whole suite (the README's `pytest`, nothing selected) has passed: a rule that no test's
    Snakemake run executed fails the session, named."""
    from workflow_helpers import RULES_RUN, recorded_rules, rule_names

    config = session.config
    directory = os.environ.get(RULES_RUN)
    whole_suite = (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not config.option.keyword
        and not config.option.markexpr
        and not getattr(config.option, "lf", False)
        and not getattr(config.option, "deselect", None)
        and not config.option.collectonly
    )
    try:
        if hasattr(config, "workerinput") or exitstatus != 0 or not whole_suite:
            return
        missing = rule_names() - recorded_rules(Path(directory))
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if missing:
            reporter.write_line(
                f"FAILED: no end-to-end test ran the rules {', '.join(sorted(missing))}",
                red=True,
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            reporter.write_line("every rule of the workflow ran in an end-to-end test")
    finally:
        if directory and not hasattr(config, "workerinput"):
            shutil.rmtree(directory, ignore_errors=True)
