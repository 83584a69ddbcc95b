"""The repository's documentation is self-contained: what it cites, it ships.

The experiment is specified in docs/protocol.md. Code comments, table captions, configs
and READMEs cite its numbered sections as "docs/protocol.md §n", so every such citation
must name a section that exists, and nothing may cite a specification file the
repository does not contain. Links and paths to documents and images must resolve too.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from wmdeval.core.config import validate

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL_PAGE = ROOT / "docs" / "protocol.md"

# A specification outside the repository, cited by file name or by bare section sign.
# (Written as a pattern so that this file does not match itself.)
FOREIGN_CITATION = re.compile(r"PROTOCOL(\.md| §)")
# "docs/protocol.md §7", possibly followed by more sections: "§5, §6", "§5–6", "§5 and §6".
CITATION = re.compile(
    r"docs/protocol\.md\s+(§\d+(?:\.\d+)?(?:\s*(?:,|and|–|-)\s*§?\d+(?:\.\d+)?)*)"
)
SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# "## 7. Classification" or "### 7.2 Weighted kNN"
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)

TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".smk",
    ".yaml",
    ".yml",
    ".rst",
    ".txt",
    ".toml",
    ".cfg",
    ".sh",
    ".json",
    ".ini",
}
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "venv",
    ".snakemake",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "results",
    "resources",
}


def repository_files() -> list[Path]:
    """Tracked and untracked-but-not-ignored text files (what a commit would hold)."""
    try:
        listed = (
            subprocess.run(
                ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                cwd=ROOT,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .split("\0")
        )
        paths = [ROOT / p for p in listed if p]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk instead
        paths = []
        for top, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
            paths += [Path(top) / f for f in files]
        paths += [ROOT / "results" / "README.md", ROOT / "resources" / "README.md"]
    return sorted(
        p for p in paths if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name == "Snakefile")
    )


def protocol_sections() -> set[str]:
    return set(HEADING.findall(PROTOCOL_PAGE.read_text(encoding="utf-8")))


def cited_sections(text: str) -> list[str]:
    return [
        number
        for match in CITATION.finditer(text)
        for number in SECTION_NUMBER.findall(match.group(1))
    ]


def test_protocol_document_exists_with_numbered_sections():
    assert PROTOCOL_PAGE.is_file(), "docs/protocol.md is missing"
    sections = protocol_sections()
    assert {str(n) for n in range(1, 10)} <= sections, sorted(sections)


def test_nothing_cites_a_specification_outside_the_repository():
    offenders = []
    for path in repository_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FOREIGN_CITATION.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_protocol_citation_names_an_existing_section():
    sections = protocol_sections()
    citations, dangling = 0, []
    for path in repository_files():
        for number in cited_sections(path.read_text(encoding="utf-8")):
            citations += 1
            if number not in sections:
                dangling.append(f"{path.relative_to(ROOT)}: §{number}")
    assert not dangling, "no such section in docs/protocol.md: " + ", ".join(dangling)
    # The code and docs do cite it: a regex that matched nothing would pass vacuously.
    assert citations >= 20


def test_citation_pattern_reads_lists_and_ranges():
    text = "see docs/protocol.md §5, §6 and docs/protocol.md §7.2; docs/protocol.md §3–4"
    assert cited_sections(text) == ["5", "6", "7.2", "3", "4"]


def test_protocol_internal_references_exist():
    text = PROTOCOL_PAGE.read_text(encoding="utf-8")
    sections = protocol_sections()
    missing = sorted({n for n in re.findall(r"§(\d+(?:\.\d+)?)", text) if n not in sections})
    assert not missing, f"docs/protocol.md refers to missing sections: {missing}"


# ------------------------------------------------------------------ links and paths
FENCED_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
DOCUMENT_PATH = re.compile(r"^[\w./-]+\.(md|png|svg)$")
# Paths under these are written by the workflow, not shipped with the repository.
GENERATED = ("results/", "resources/data/", "resources/downloads/")


def linked_paths(markdown: Path) -> list[tuple[str, Path]]:
    """(as written, resolved) for every relative .md/.png/.svg link or backticked path.

    Markdown links resolve against the file's folder; backticked paths are written
    from the repository root, as everywhere in these documents. Fenced code blocks hold
    commands, whose output names are not claims about the repository.
    """
    text = FENCED_BLOCK.sub("", markdown.read_text(encoding="utf-8"))
    found = []
    for target in MARKDOWN_LINK.findall(text):
        target = target.split("#")[0]
        if "://" not in target and DOCUMENT_PATH.match(target):
            found.append((target, (markdown.parent / target).resolve()))
    for span in CODE_SPAN.findall(text):
        if DOCUMENT_PATH.match(span) and not (
            span.startswith(GENERATED) and span not in ("results/README.md",)
        ):
            found.append((span, (ROOT / span).resolve()))
    return found


def documentation_files() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "config" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]


def test_every_linked_document_and_image_exists():
    missing, checked = [], 0
    for markdown in documentation_files():
        for written, resolved in linked_paths(markdown):
            checked += 1
            if not resolved.is_file():
                missing.append(f"{markdown.relative_to(ROOT)}: {written}")
    assert not missing, "\n".join(missing)
    assert checked >= 3  # README's figure and rule graph, config/README.md, ...


def test_link_check_sees_a_missing_file(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "![a figure](docs/nowhere.png) and `config/nowhere.md`\n"
        "```\nsnakemake --rulegraph > made_by_a_command.svg\n```\n"
    )
    written = [w for w, resolved in linked_paths(page) if not resolved.is_file()]
    assert written == ["docs/nowhere.png", "config/nowhere.md"]


# ------------------------------------------------------ paper.yaml's raw-text example
BLOCK_START = "# >>> raw-text datasets for Tables 4 and 5"
BLOCK_END = "# <<<"


def uncommented_paper_config() -> tuple[str, list[str]]:
    """config/paper.yaml with its commented raw-text block switched on; the new names."""
    lines = (ROOT / "config" / "paper.yaml").read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(BLOCK_START)]
    assert len(starts) == 1, f"config/paper.yaml: expected one '{BLOCK_START}' line"
    start = starts[0]
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip().startswith(BLOCK_END))
    body = []
    for line in lines[start + 1 : end]:
        indent = len(line) - len(line.lstrip())
        stripped = line.lstrip()
        assert stripped.startswith("# "), f"config/paper.yaml: not commented out: {line!r}"
        body.append(line[:indent] + stripped[2:])
    names = list(yaml.safe_load(textwrap.dedent("\n".join(body))))
    return "\n".join(lines[:start] + body + lines[end + 1 :]) + "\n", names


def deep_merge(base: dict, update: dict) -> dict:
    """Snakemake's --configfile merge: nested mappings merge, anything else replaces."""
    merged = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def test_paper_config_raw_text_example_validates_when_uncommented():
    text, names = uncommented_paper_config()
    paper = yaml.safe_load(text)
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    assert names and all(paper["datasets"][n]["format"] == "table" for n in names)
    # The example is only useful if the run selects it, so add the names as the comment says.
    paper["run"] = [*paper["run"], *names]
    config = validate(deep_merge(default, paper), "config/paper.yaml (uncommented)")
    for name in names:
        spec = config["datasets"][name]
        assert spec["embeddings"] in paper["embeddings"]
        assert ("path" in spec) != ("url" in spec)
    assert config["all_words"] is True


def test_paper_config_as_shipped_validates():
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text(encoding="utf-8"))
    config = validate(deep_merge(default, paper), "config/paper.yaml")
    assert all(config["datasets"][n]["format"] == "kusner-mat" for n in config["run"])


@pytest.mark.parametrize("path", ["config/paper.yaml", "README.md"])
def test_tables_4_and_5_need_raw_text_is_said(path):
    text = " ".join((ROOT / path).read_text(encoding="utf-8").split())
    assert "Tables 4 and 5" in text and "raw text" in text
    assert ".mat" in text
