# The tests compute with the OpenBLAS kernels the workflow's jobs use (config
# blas_kernels, its default here), set before anything loads numpy: a test that compares
# its own products with a workflow run's (a matrix solved again in other blocks, say)
# must compare like with like, whatever kernels OpenBLAS would pick for this CPU.
import os
import shutil
import tempfile
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


# The test files whose work is the longest chain, longest first (--durations): the real
# SLURM run (opt-in; mostly waiting on the cluster, so it overlaps the others best from the
# start), then the files of several workflow runs.
LONGEST_FIRST = (
    "test_slurm.py",
    "test_workflow_small.py",
    "test_workflow.py",
    "test_workflow_inputs.py",
    "test_user_mat.py",
)


def pytest_collection_modifyitems(items):
    """The whole workflow's runs first, the longest first (LONGEST_FIRST). pytest-xdist
    (``--dist loadfile``) hands each test file to one worker, so a file's module-scoped
    fixture (a workflow run) is built once; handing out the files that run whole workflows
    before the quick ones keeps the slowest chain of work from starting last (pyproject's
    --no-loadscope-reorder: else xdist hands out the files with most tests first)."""

    def order(item) -> tuple[bool, int]:
        name = item.path.name
        rank = LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
        return item.get_closest_marker("e2e") is None, rank

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
