"""How the suite checks that every rule of the workflow runs in some end-to-end test: each
successful Snakemake run of a test notes the rules it ran (workflow_helpers.record_rules),
and once the whole suite has passed, tests/conftest.py's pytest_sessionfinish compares their
union with ``snakemake --list-rules``."""

from __future__ import annotations

import re
import subprocess

from workflow_helpers import (
    REPO,
    RULES_RUN,
    executed_rules,
    record_rules,
    recorded_rules,
    rule_names,
)

LOG = """\
[Fri Nov 27 16:00:00 2026]
localrule all:
    input: results/scores.parquet
    jobid: 0

[Fri Nov 27 16:00:01 2026]
rule wmd_block:
    output: results/x/original/wmd_blocks/wmd/1-of-4.parquet
    wildcards: dataset=x, variant=original, method=wmd, shard=1-of-4
checkpoint sample_variant:
Finished jobid: 3 (Rule: evaluate)
    rule inside an indented line: not a job
"""


def test_executed_rules_are_the_job_headers_of_a_log():
    assert executed_rules(LOG) == {"all", "wmd_block", "sample_variant"}


def test_only_successful_real_runs_are_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv(RULES_RUN, str(tmp_path))
    record_rules(subprocess.CompletedProcess(["snakemake"], 0, "", "rule ingest:\n"))
    record_rules(subprocess.CompletedProcess(["snakemake", "-n"], 0, "", "rule planned:\n"))
    record_rules(subprocess.CompletedProcess(["snakemake"], 1, "", "rule failed:\n"))
    record_rules(subprocess.CompletedProcess(["snakemake"], 0, "rule evaluate:\n", ""))
    assert recorded_rules(tmp_path) == {"ingest", "evaluate"}


def test_the_rule_list_is_every_rule_the_files_define():
    sources = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    text = "\n".join(path.read_text() for path in sources)
    defined = set(re.findall(r"^(?:rule|checkpoint) (\w+):", text, re.M))
    defined |= set(re.findall(r"^use rule \w+ as (\w+)", text, re.M))
    assert len(defined) > 40
    assert rule_names() == defined
