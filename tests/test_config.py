import copy

import pytest
import yaml
from wmdeval import config
from wmdeval.io import WmdevalError

DEMO = yaml.safe_load(open(config.SCHEMA_PATH.parents[2] / "config" / "config.yaml"))


def validated(cfg):
    return config.validate(copy.deepcopy(cfg))


def test_demo_config_is_valid_and_gets_defaults():
    cfg = validated(DEMO)
    assert cfg["evaluation"]["knn"]["k"] == list(range(1, 20))
    assert cfg["evaluation"]["knn"]["validation_size"] == 0.2
    assert cfg["evaluation"]["wknn"]["validation_size"] == 0.3
    assert cfg["evaluation"]["wknn"]["gammas"][0] == 0.005
    assert len(cfg["evaluation"]["wknn"]["gammas"]) == 20
    assert cfg["datasets"]["polarity"]["vocabulary"] == {"min_df": 1, "max_words_per_doc": None}
    assert cfg["embeddings"]["demo-word2vec"]["normalize"] is True
    assert config.selected_datasets(cfg) == ["newsgroups", "polarity"]


def test_misspelled_key_is_one_line_naming_it():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["polarity"]["stopword"] = "none"
    with pytest.raises(WmdevalError) as error:
        validated(cfg)
    message = str(error.value)
    assert "datasets.polarity.stopword: unknown key" in message
    assert "\n" not in message


def test_wrong_type_names_the_key():
    cfg = copy.deepcopy(DEMO)
    cfg["wmd"]["shards"] = "four"
    with pytest.raises(WmdevalError, match=r"wmd\.shards: expected integer"):
        validated(cfg)


def test_wrong_enum_names_the_allowed_values():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["polarity"]["format"] = "csv"
    with pytest.raises(WmdevalError, match=r"datasets\.polarity\.format: 'csv' is not one of"):
        validated(cfg)


def test_reference_to_unknown_embedding():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["polarity"]["embeddings"] = "glove"
    with pytest.raises(WmdevalError, match="no embedding named 'glove'"):
        validated(cfg)


def test_run_selects_and_checks_names():
    cfg = copy.deepcopy(DEMO)
    cfg["run"] = ["polarity"]
    assert config.selected_datasets(validated(cfg)) == ["polarity"]
    cfg["run"] = ["polarity", "nope"]
    with pytest.raises(WmdevalError, match="run: no dataset named 'nope'"):
        validated(cfg)


def test_table_dataset_needs_a_path():
    cfg = copy.deepcopy(DEMO)
    cfg["datasets"]["mine"] = {"format": "table", "embeddings": "demo-word2vec"}
    with pytest.raises(WmdevalError, match="datasets.mine: needs `path` or `url`"):
        validated(cfg)
