"""Every number the documentation attributes to a benchmark is that benchmark's recorded
result, and the pages stay short.

A benchmark run with ``--record`` writes ``benchmarks/results/<name>.json`` (its figures,
the command, the machine, the date; ``benchmarks/record.py``). A page quotes it with one of
three markers (benchmarks/results/README.md):

- ``<!-- bench:<name>.<key>[.<key>...] -->`` right before a number: the number is that
  figure, at the precision the page shows;
- ``<!-- bench-table:<name>.<key> -->`` on the line before a Markdown table: the table's
  header and rows are that figure's ``header`` and ``rows``, cell by cell;
- ``<!-- bench-source:<name> -->`` before a sentence that names the run: it holds the
  file's command, CPU, core count and date.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
README_LINES = 300
PAGE_LINES = 400

NUMBER = r"[-+−]?\d[\d,]*(?:\.\d+)?"
INLINE = re.compile(r"<!-- bench:([\w.-]+) -->\s*(" + NUMBER + ")")
TABLE = re.compile(r"<!-- bench-table:([\w.-]+) -->\n((?:\|.*\n?)+)")
SOURCE = re.compile(r"<!-- bench-source:([\w-]+) -->(.*?)(?:\n\n|\Z)", re.S)
ANY_MARKER = re.compile(r"<!-- bench(?:-table|-source)?:")


def pages() -> list[Path]:
    return [REPO / "README.md", REPO / "config" / "README.md", *sorted(REPO.glob("docs/*.md"))]


def result(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    assert path.is_file(), f"no benchmarks/results/{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def figure(reference: str):
    """``name.key.key`` -> the value under the file's ``figures``."""
    name, *keys = reference.split(".")
    value = result(name)["figures"]
    for key in keys:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def number(text: str) -> tuple[float, int]:
    """A number as a page prints it (thousands commas, bold, a Unicode minus): its value and
    the decimals shown."""
    text = text.strip().strip("*").replace(",", "").replace("−", "-")
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return float(text), decimals


def same(recorded, shown: str) -> bool:
    """Whether a page's cell or number shows the recorded value."""
    if isinstance(recorded, bool) or not isinstance(recorded, int | float):
        return str(recorded) == shown.strip()
    try:
        value, decimals = number(shown)
    except ValueError:
        return False
    return f"{recorded:.{decimals}f}" == f"{value:.{decimals}f}"


def quoted(page: Path) -> tuple[list, list, list]:
    text = page.read_text(encoding="utf-8")
    return INLINE.findall(text), TABLE.findall(text), SOURCE.findall(text)


def test_result_files_say_where_they_come_from():
    files = sorted(RESULTS.glob("*.json"))
    assert files, "no benchmark results in benchmarks/results/"
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for field in ("benchmark", "command", "machine", "date", "source", "figures"):
            assert field in data, f"{path.name}: no {field!r}"
        assert data["command"].startswith("python benchmarks/"), path.name
        assert {"cpu", "cores"} <= set(data["machine"]), path.name
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", data["date"]), path.name


def test_every_marker_is_read():
    """A marker the patterns below do not match (a typo, a number missing) fails here
    instead of going unchecked."""
    for page in pages():
        text = page.read_text(encoding="utf-8")
        inline, tables, sources = quoted(page)
        assert len(ANY_MARKER.findall(text)) == len(inline) + len(tables) + len(sources), (
            f"{page.relative_to(REPO)}: a bench marker without its number, table or sentence"
        )


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_quoted_numbers_are_the_recorded_ones(page):
    inline, tables, sources = quoted(page)
    wrong = [
        f"{reference}: page {shown}, recorded {figure(reference)}"
        for reference, shown in inline
        if not same(figure(reference), shown)
    ]
    for reference, block in tables:
        recorded = figure(reference)
        lines = [line for line in block.strip().splitlines() if line.strip()]
        cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
        if cells[0] != recorded["header"]:
            wrong.append(f"{reference}: header {cells[0]} is not {recorded['header']}")
        rows = cells[2:]
        if len(rows) != len(recorded["rows"]):
            wrong.append(f"{reference}: {len(rows)} rows, recorded {len(recorded['rows'])}")
        for row, want in zip(rows, recorded["rows"], strict=False):
            if len(row) != len(want) or not all(map(same, want, row)):
                wrong.append(f"{reference}: row {row} is not {want}")
    for name, sentence in sources:
        data = result(name)
        sentence = " ".join(sentence.split())
        for part in (
            f"`{data['command']}`",
            data["machine"]["cpu"],
            f"{data['machine']['cores']} cores",
            data["date"],
        ):
            if part not in sentence:
                wrong.append(f"{name}: the sentence after bench-source lacks {part!r}")
    assert not wrong, f"{page.relative_to(REPO)}:\n" + "\n".join(wrong)


def test_the_markers_are_checked(tmp_path, monkeypatch):
    """The check reads a marked number and table, and sees a number that differs."""
    figures = {"speed": 1.704, "t": {"header": ["a"], "rows": [[2]]}}
    (tmp_path / "demo.json").write_text(json.dumps({"figures": figures}))
    monkeypatch.setitem(globals(), "RESULTS", tmp_path)
    assert same(figure("demo.speed"), "1.70") and not same(figure("demo.speed"), "1.8")
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- bench:demo.speed -->1.70x\n\n<!-- bench-table:demo.t -->\n| a |\n|---|\n| 3 |\n"
    )
    inline, tables, _ = quoted(page)
    assert inline == [("demo.speed", "1.70")] and tables[0][0] == "demo.t"
    assert not same(figure("demo.t")["rows"][0][0], "3")


def test_readme_and_docs_are_short():
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(readme) <= README_LINES, f"README.md: {len(readme)} lines > {README_LINES}"
    for page in sorted(REPO.glob("docs/*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        assert len(lines) <= PAGE_LINES, f"{page.relative_to(REPO)}: {len(lines)} lines"


def test_report_links_the_guide():
    """The rendered report's description (workflow/report/workflow.rst) links the README,
    relative to results/report.html, where the report is written, and names docs/."""
    text = (REPO / "workflow" / "report" / "workflow.rst").read_text(encoding="utf-8")
    targets = re.findall(r"`[^`<]*<([^>]+)>`_", text)
    assert "../README.md" in targets, targets
    for target in targets:
        if "://" not in target:
            assert (REPO / "results" / target).resolve().is_file(), target
    assert "``docs/``" in text


def test_readme_keeps_the_two_commands():
    """The demo and the test command, exactly (.ci/run runs the second)."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert venv + "pip install -e . && snakemake --cores 2" in lines
    assert venv + "pip install -e '.[test]' && pytest" in lines


def test_readme_own_corpus_example_is_a_valid_config():
    """The README's my.yaml (a text table and a .mat file), merged into the demo config as
    Snakemake merges --configfile, passes the schema; its files are the user's."""
    import yaml

    from wmdeval.core import config

    text = (REPO / "README.md").read_text(encoding="utf-8")
    example = yaml.safe_load(text.split("```yaml\n# my.yaml\n", 1)[1].split("```", 1)[0])
    assert {s["format"] for s in example["datasets"].values()} == {"table", "kusner-mat"}
    merged = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key, value in example.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    checked = config.validate(merged, source="README my.yaml")
    assert checked["run"] == ["reviews", "mydata"]


def test_a_benchmark_records_its_command_machine_and_date(tmp_path, monkeypatch):
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import record
    finally:
        sys.path.pop(0)
    argv = ["benchmarks/demo.py", "--threads", "2", "--record", str(tmp_path / "x.json")]
    monkeypatch.setattr(sys, "argv", argv)
    record.write(tmp_path / "x.json", "demo", {"speed": 1.7})
    written = json.loads((tmp_path / "x.json").read_text())
    assert written["command"] == "python benchmarks/demo.py --threads 2"
    assert written["figures"] == {"speed": 1.7} and written["benchmark"] == "demo"
    assert written["machine"]["cores"] >= 1 and written["machine"]["cpu"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", written["date"])
    record.write(None, "demo", {})  # no --record: nothing written
    assert record.table(["| a | b |", "|---|---|", "| x | 1,234 |"]) == {
        "header": ["a", "b"],
        "rows": [["x", 1234]],
    }
