"""The CLI table (wmdeval/cli.py): every row resolves, and the rules use only its commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from wmdeval import cli

REPO = Path(__file__).resolve().parents[1]


def test_every_command_calls_a_function_that_takes_exactly_its_arguments():
    assert cli.check_table() == []


def test_the_table_check_sees_a_wrong_row(monkeypatch):
    """The check itself can fail: a misspelt keyword and a function that does not exist."""
    wrong = (
        cli.Command(
            "x", "cleaning.vocabulary:run_select", "", (cli.path("--documents", "documents"),)
        ),
        cli.Command("y", "cleaning.vocabulary:no_such_function", "", ()),
        # an optional flag for a parameter without a default: left out, the call fails
        cli.Command(
            "z",
            "distances.wmd.blocks:run_subset",
            "",
            (
                cli.path("--matrix", "matrix_path"),
                cli.path("--out", "out_path"),
                cli.path("--documents", "documents_path", required=False),
            ),
        ),
    )
    monkeypatch.setattr(cli, "COMMANDS", wrong)
    problems = cli.check_table()
    assert "x: cleaning.vocabulary:run_select has no parameter 'documents'" in problems
    assert "x: nothing always passes 'documents_path'" in problems
    assert any(p.startswith("y: cleaning.vocabulary:no_such_function") for p in problems)
    assert "z: nothing always passes 'documents_path'" in problems


def test_command_names_are_unique_and_each_is_listed_by_help():
    names = [command.name for command in cli.COMMANDS]
    assert len(names) == len(set(names))
    result = subprocess.run(
        [sys.executable, "-m", "wmdeval.cli", "--help"], capture_output=True, text=True, check=True
    )
    for name in names:
        assert name in result.stdout


def test_every_command_a_rule_runs_is_in_the_table():
    used = set()
    for rules in (REPO / "workflow" / "rules").glob("*.smk"):
        used |= set(re.findall(r'"wmdeval ([a-z0-9-]+) ', rules.read_text()))
    assert used, "no wmdeval commands found in the rules"
    assert used <= {command.name for command in cli.COMMANDS}


def test_arguments_reach_the_function_by_keyword(monkeypatch):
    """Flags map to parameters by name; an optional flag left out is not passed at all,
    and a pair-valued flag fills two parameters."""
    calls = {}

    def fake(**keywords):
        calls.update(keywords)

    command = cli.Command(
        "t",
        "unused:unused",
        "",
        (
            cli.path("--documents", "documents_path"),
            cli.path("--kept", "kept_path", required=False),
            cli.Arg("--block", ("block", "n_blocks"), type=cli.block_name),
            cli.Arg("--out", "outputs", type=cli.name_and_path, repeat=True, collect=dict),
        ),
    )
    monkeypatch.setattr(cli.Command, "resolve", lambda self: fake)
    monkeypatch.setattr(cli, "COMMANDS", (command,))
    assert (
        cli.main(
            [
                "t",
                "--documents",
                "d.parquet",
                "--block",
                "3-of-8",
                "--out",
                "n2o=a.parquet",
                "--out",
                "ksc=b.parquet",
            ]
        )
        == 0
    )
    assert calls == {
        "documents_path": "d.parquet",
        "block": 2,
        "n_blocks": 8,
        "outputs": {"n2o": "a.parquet", "ksc": "b.parquet"},
    }


@pytest.mark.parametrize("text", ["0-of-4", "5-of-4", "3of4", "a-of-b"])
def test_a_bad_block_name_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(
            [
                "wmd-block",
                "--documents",
                "d",
                "--embeddings",
                "e",
                "--weighting",
                "bow",
                "--block",
                text,
                "--threads",
                "1",
                "--out",
                "o",
            ]
        )
    assert stop.value.code == 2
    assert "--block" in capsys.readouterr().err


def snakemake_blocks(keyword: str, text: str) -> dict[str, str]:
    """{name: text} of the top-level ``rule`` or ``def`` blocks of a rules file."""
    pattern = rf"^{keyword} (\w+)\W.*?\n(.*?)(?=^\S|\Z)"
    return {m.group(1): m.group(2) for m in re.finditer(pattern, text, re.MULTILINE | re.DOTALL)}


def test_every_rule_passes_the_required_flags_of_its_command_and_no_unknown_one():
    """The other half of the table's contract: what each rule's shell line (with the
    params and common.smk helpers that build parts of it) gives its command."""
    rules_dir = REPO / "workflow" / "rules"
    helpers = snakemake_blocks("def", (rules_dir / "common.smk").read_text())
    by_name = {command.name: command for command in cli.COMMANDS}
    checked = 0
    for rules in sorted(rules_dir.glob("*.smk")):
        for rule, text in snakemake_blocks("rule", rules.read_text()).items():
            used = re.findall(r'"wmdeval ([a-z0-9-]+)', text)
            if not used:
                continue
            # comments name helpers too: only the code's calls count
            text = re.sub(r"(^|\s)#.*$", "", text, flags=re.MULTILINE)
            called = [body for name, body in helpers.items() if re.search(rf"\b{name}\b", text)]
            code = re.sub(r"(^|\s)#.*$", "", "\n".join([text, *called]), flags=re.MULTILINE)
            given = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", code))
            command = by_name[used[0]]
            known = {argument.flag for argument in command.arguments}
            required = {argument.flag for argument in command.arguments if argument.required}
            assert given <= known, f"rule {rule}: {sorted(given - known)} unknown to {used[0]}"
            assert required <= given, f"rule {rule} does not pass {sorted(required - given)}"
            checked += 1
    assert checked >= 25
