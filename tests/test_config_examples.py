"""Every `--config` example of README.md and config/README.md plans: `snakemake -n` with its
overrides in a temporary copy of the workflow succeeds.

The examples are read from the documents themselves, so a changed or added example is
covered without editing this test.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "config/README.md")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE_CODE = re.compile(r"`([^`]+)`")


def code_snippets(markdown: str) -> list[str]:
    """Lines of fenced code blocks, and inline code spans outside them."""
    snippets = [line for block in FENCE.findall(markdown) for line in block.splitlines()]
    prose = FENCE.sub("", markdown)
    snippets += [" ".join(span.split()) for span in INLINE_CODE.findall(prose)]
    return snippets


def config_examples() -> list[tuple[str, list[str]]]:
    """(document, the `--config` entries) of every documented snakemake command with them."""
    examples = []
    for name in DOCUMENTS:
        for snippet in code_snippets((REPO / name).read_text()):
            if not snippet.startswith("snakemake "):
                continue
            words = shlex.split(snippet, comments=True)
            if "--config" not in words:
                continue
            start = words.index("--config") + 1
            entries = []
            for word in words[start:]:
                if word.startswith("-"):
                    break
                entries.append(word)
            examples.append((name, entries))
    return examples


EXAMPLES = config_examples()


def test_examples_are_found():
    # the extraction itself: config/README.md shows several
    assert sum(name == "config/README.md" for name, _ in EXAMPLES) >= 2
    assert all(entries for _, entries in EXAMPLES)


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("config_examples")
    shutil.copy(REPO / "Snakefile", workdir)
    for name in ("workflow/rules", "workflow/report", "config", "envs"):
        shutil.copytree(REPO / name, workdir / name)
    return workdir


@pytest.mark.parametrize(
    ("document", "entries"), EXAMPLES, ids=[" ".join(entries) for _, entries in EXAMPLES]
)
def test_documented_config_override_plans(workflow_copy, document, entries):
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--config", *entries]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(workflow_copy)}
    run = subprocess.run(
        command, cwd=workflow_copy, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, f"{document}: {shlex.join(entries)}\n{run.stderr[-3000:]}"
    assert "This was a dry-run" in run.stdout + run.stderr


def methods_examples() -> list[str]:
    """The README's YAML examples of `methods:` (Bring your own distance)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", (REPO / "README.md").read_text(), re.S | re.M)
    return [block for block in blocks if block.startswith("methods:")]


def test_readme_has_a_methods_example_of_each_kind():
    import yaml

    kinds = {kind for block in methods_examples() for kind in yaml.safe_load(block)["methods"]}
    assert kinds == {"vectors", "matrices", "callables"}


@pytest.mark.parametrize("block", methods_examples())
def test_readme_methods_example_is_a_valid_config(block):
    """Each example, added to the demo config, passes the schema and the method checks."""
    import yaml

    from wmdeval.core import config

    merged = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key, value in yaml.safe_load(block).items():
        merged[key] = {**merged.get(key, {}), **value}
    config.validate(merged, source="README example")
