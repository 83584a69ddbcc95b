"""`snakemake --config key=value` overrides: what Snakemake's own parser delivers (every
scalar inside a YAML value a string, `false` and `null` strings too) is read as the type the
schema expects, and a string that cannot be read gives the usual one-line error."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.utils import update_config

from wmdeval.core import config
from wmdeval.core.errors import WmdevalError

REPO = Path(__file__).resolve().parents[1]
DEMO = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def overridden(*entries: str) -> dict:
    """The demo config with ``--config`` entries merged in as Snakemake does, validated."""
    cfg = copy.deepcopy(DEMO)
    update_config(cfg, parse_config(list(entries)))
    return config.validate(cfg)


def at(cfg: dict, dotted: str):
    for key in dotted.split("."):
        cfg = cfg[int(key)] if isinstance(cfg, list) else cfg[key]
    return cfg


@pytest.mark.parametrize(
    ("entry", "key", "expected"),
    [
        # integer
        ("wmd={blocks: 16}", "wmd.blocks", 16),
        ("wmd={threads: +2}", "wmd.threads", 2),
        ("report={seed: -3}", "report.seed", -3),
        # boolean, case-insensitive true/false/yes/no
        ("all_words=false", "all_words", False),
        ("all_words=FALSE", "all_words", False),
        ("all_words=No", "all_words", False),
        ("all_words=true", "all_words", True),
        ("all_words=Yes", "all_words", True),
        ("all_words=False", "all_words", False),
        ("wmd={skip_test_pairs: false}", "wmd.skip_test_pairs", False),
        ("duplicates={near: {enabled: YES}}", "duplicates.near.enabled", True),
        # number: decimals, exponents, integers
        ("duplicates={near: {max_l1: 0.25}}", "duplicates.near.max_l1", 0.25),
        ("evaluation={knn: {validation_size: .5}}", "evaluation.knn.validation_size", 0.5),
        ("evaluation={wknn: {gammas: [1, 2.5e-2]}}", "evaluation.wknn.gammas", [1, 0.025]),
        # arrays, empty or of typed items
        ("variants=[original]", "variants", ["original"]),
        ("pca_dims=[]", "pca_dims", []),
        ("pca_dims=[5, 10]", "pca_dims", [5, 10]),
        ("evaluation={knn: {k: [1, 3]}}", "evaluation.knn.k", [1, 3]),
        ("run=[subjects]", "run", ["subjects"]),
        # null, where the schema allows it
        ("run=null", "run", None),
        ("run=~", "run", None),
        ("run=", "run", None),
        ("analyses={n2o: {queries: null}}", "analyses.n2o.queries", None),
        ("analyses={n2o: {queries: 7}}", "analyses.n2o.queries", 7),
        # through $ref: a dataset, its vocabulary
        ("datasets={subjects: {folds: 3}}", "datasets.subjects.folds", 3),
        ("datasets={subjects: {normalize: yes}}", "datasets.subjects.normalize", True),
        ("datasets={subjects: {sha256: null}}", "datasets.subjects.sha256", None),
        (
            "datasets={subjects: {vocabulary: {max_words_per_doc: 20}}}",
            "datasets.subjects.vocabulary.max_words_per_doc",
            20,
        ),
        (
            "datasets={subjects: {vocabulary: {max_words_per_doc: Null}}}",
            "datasets.subjects.vocabulary.max_words_per_doc",
            None,
        ),
        ("embeddings={demo-word2vec: {epochs: 5}}", "embeddings.demo-word2vec.epochs", 5),
        # strings stay strings where the schema wants a string
        ("datasets={subjects: {stopwords: none}}", "datasets.subjects.stopwords", "none"),
        ("datasets={subjects: {text_column: 16}}", "datasets.subjects.text_column", "16"),
        ("datasets={subjects: {split_column: 'no'}}", "datasets.subjects.split_column", "no"),
    ],
)
def test_command_line_value_is_read_as_the_schema_type(entry, key, expected):
    value = at(overridden(entry), key)
    assert value == expected
    assert type(value) is type(expected)
    if isinstance(expected, list):
        assert [type(v) for v in value] == [type(v) for v in expected]


def test_overrides_merge_with_the_rest_of_the_config():
    cfg = overridden("wmd={blocks: 16}", "all_words=false")
    assert cfg["wmd"] == {
        "blocks": 16,
        "skip_test_pairs": True,
        "threads": 1,
        "mode": "auto",
        "auto_min_documents": 2000,
        "search_shards": "auto",
        "list_shards": "auto",
        "sample_documents": 1000,
        "sample_seed": 0,
        "forecast_queries": 30,
        "forecast_seed": 0,
    }
    assert cfg["datasets"]["subjects"]["format"] == "demo"


def test_typed_values_are_left_alone():
    cfg = copy.deepcopy(DEMO)
    assert config.coerce_strings(cfg, config.load_schema()) == DEMO


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("wmd={blocks: sixteen}", "wmd.blocks: expected integer, got 'sixteen'"),
        ("wmd={blocks: 1.5}", "wmd.blocks: expected integer, got '1.5'"),
        ("wmd={blocks: null}", "wmd.blocks: expected integer, got 'null'"),
        ("all_words=maybe", "all_words: expected boolean, got 'maybe'"),
        ("all_words=1", "all_words: expected boolean, got 1"),
        ("duplicates={near: {max_l1: nan}}", "duplicates.near.max_l1: expected number, got 'nan'"),
        (
            "duplicates={near: {max_l1: 0.1.2}}",
            "duplicates.near.max_l1: expected number, got '0.1.2'",
        ),
        ("pca_dims=[5, x]", "pca_dims.1: expected integer, got 'x'"),
        ("pca_dims=5", "pca_dims: expected array, got 5"),
        ("run=subjects", "run: expected array or null, got 'subjects'"),
        ("variants=[original, dirty]", "variants.1: 'dirty' is not one of: original, clean"),
        ("analyses={ksc: {enabled: on}}", "analyses.ksc.enabled: expected boolean, got 'on'"),
    ],
)
def test_unreadable_string_is_one_line_naming_key_and_type(entry, message):
    with pytest.raises(WmdevalError) as error:
        overridden(entry)
    assert str(error.value) == f"config: {message}"


def test_broken_yaml_string_is_one_line():
    cfg = copy.deepcopy(DEMO)
    cfg["pca_dims"] = "[1, 2"
    with pytest.raises(WmdevalError) as error:
        config.validate(cfg)
    assert str(error.value) == "config: pca_dims: expected array, got '[1, 2'"
