import copy
from pathlib import Path

import pytest
import yaml

from wmdeval.core import config
from wmdeval.core.errors import WmdevalError

REPO = Path(__file__).resolve().parents[1]
DEMO = yaml.safe_load(open(REPO / "config" / "config.yaml"))


def validated(cfg):
    return config.validate(copy.deepcopy(cfg))


def test_demo_config_is_valid_and_gets_defaults():
    cfg = validated(DEMO)
    assert cfg["evaluation"]["knn"]["k"] == list(range(1, 20))
    assert cfg["evaluation"]["knn"]["validation_size"] == 0.2
    assert cfg["evaluation"]["wknn"]["validation_size"] == 0.3
    assert cfg["evaluation"]["wknn"]["gammas"][0] == 0.005
    assert len(cfg["evaluation"]["wknn"]["gammas"]) == 20
    assert cfg["datasets"]["subjects"]["vocabulary"] == {"min_df": 1, "max_words_per_doc": None}
    assert cfg["embeddings"]["demo-word2vec"]["normalize"] is True
    assert config.selected_datasets(cfg) == ["newsgroups", "subjects"]


def test_misspelled_key_is_one_line_naming_it():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["subjects"]["stopword"] = "none"
    with pytest.raises(WmdevalError) as error:
        validated(cfg)
    message = str(error.value)
    assert "datasets.subjects.stopword: unknown key" in message
    assert "\n" not in message


def test_wrong_type_names_the_key():
    cfg = copy.deepcopy(DEMO)
    cfg["wmd"]["blocks"] = "four"
    with pytest.raises(WmdevalError, match=r"wmd\.blocks: expected integer"):
        validated(cfg)


def test_wrong_enum_names_the_allowed_values():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["subjects"]["format"] = "csv"
    with pytest.raises(WmdevalError, match=r"datasets\.subjects\.format: 'csv' is not one of"):
        validated(cfg)


def test_reference_to_unknown_embedding():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["subjects"]["embeddings"] = "glove"
    with pytest.raises(WmdevalError, match="no embedding named 'glove'"):
        validated(cfg)


def test_run_selects_and_checks_names():
    cfg = copy.deepcopy(DEMO)
    cfg["run"] = ["subjects"]
    assert config.selected_datasets(validated(cfg)) == ["subjects"]
    cfg["run"] = ["subjects", "nope"]
    with pytest.raises(WmdevalError, match="run: no dataset named 'nope'"):
        validated(cfg)


def test_table_dataset_needs_a_path():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["mine"] = {"format": "table", "embeddings": "demo-word2vec"}
    with pytest.raises(WmdevalError, match="datasets.mine: needs exactly one of `path` or `url`"):
        validated(cfg)


def schema_keys(schema, defs, prefix=""):
    """Every property path of the schema, with <name> for the named maps."""
    if "$ref" in schema:
        schema = {**defs[schema["$ref"].split("/")[-1]], **schema}
    for key, sub in schema.get("properties", {}).items():
        if "$ref" in sub:
            sub = {**defs[sub["$ref"].split("/")[-1]], **sub}
        path = f"{prefix}.{key}" if prefix else key
        if sub.get("type") == "object" and "properties" in sub:
            yield from schema_keys(sub, defs, path)
        elif isinstance(sub.get("additionalProperties"), dict):
            yield from schema_keys(sub["additionalProperties"], defs, f"{path}.<name>")
        else:
            yield path


def test_config_readme_documents_every_key():
    schema = config.load_schema()
    readme = (REPO / "config" / "README.md").read_text()
    missing = [k for k in schema_keys(schema, schema["$defs"]) if f"`{k}`" not in readme]
    assert not missing


def test_the_schema_reads_the_same_with_either_yaml_loader():
    # load_schema takes libyaml's loader where there is one, for speed
    text = config.SCHEMA.read_text(encoding="utf-8")
    assert config.load_schema() == yaml.safe_load(text)
    assert config.load_schema() == yaml.load(text, Loader=yaml.SafeLoader)


def test_every_schema_key_has_a_description():
    schema = config.load_schema()

    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            assert "description" in sub or "$ref" in sub, f"{path}.{key}"
            walk(sub, f"{path}.{key}")
        for sub in node.get("$defs", {}).values():
            walk(sub, path)

    walk(schema, "")


def test_defaults_of_a_key_are_the_schemas_with_nested_defaults_filled():
    from wmdeval.core import config as wconfig

    evaluation = wconfig.defaults("evaluation")
    assert evaluation["knn"] == {"k": list(range(1, 20)), "validation_size": 0.2, "seed": 0}
    assert evaluation["wknn"]["k"] == 19 and evaluation["empty_documents"] == "error"
    assert wconfig.defaults("analyses", "n2o")["ks"] == [5, 10, 19]
    # each call is a fresh copy: a caller changing it changes no other caller's defaults
    evaluation["knn"]["k"].append(99)
    assert wconfig.defaults("evaluation")["knn"]["k"][-1] == 19
    with pytest.raises(KeyError, match="no config key evaluation.nope"):
        wconfig.defaults("evaluation", "nope")


@pytest.mark.parametrize(
    ("value", "message"),
    [(0, "0 is less than the minimum of 1"), ("many", "'many' does not match '^auto$'")],
)
def test_search_shards_is_a_count_or_auto(value, message):
    def with_shards(shards):
        return {**DEMO, "wmd": {**DEMO.get("wmd", {}), "search_shards": shards}}

    assert validated(with_shards("auto"))["wmd"]["search_shards"] == "auto"
    # as Snakemake's --config may deliver it: a string
    assert validated(with_shards("8"))["wmd"]["search_shards"] == 8
    with pytest.raises(WmdevalError, match=r"wmd\.search_shards") as error:
        validated(with_shards(value))
    assert message in str(error.value) and "\n" not in str(error.value)
