# Shared helpers: config validation, the datasets of this run, and output paths.
import json
import re
import sys

from wmdeval import config as wmdeval_config
from wmdeval.io import WmdevalError
from wmdeval.methods import WMD, WMD_TFIDF

try:
    wmdeval_config.validate(config, source="config")
except WmdevalError as error:
    # One line naming the key, before any job is planned.
    sys.exit(f"wmdeval: {error}")

DATASETS = wmdeval_config.selected_datasets(config)
VARIANTS = config["variants"]


# Wildcards are names from the config, never paths.
wildcard_constraints:
    dataset="|".join(map(re.escape, config["datasets"])),
    variant="original|clean",
    embedding="[A-Za-z0-9][A-Za-z0-9_.-]*",


scattergather:
    wmd_shards=config["wmd"]["shards"],


def spec_json(spec):
    """A config entry as one JSON argument of the wmdeval CLI."""
    return json.dumps(spec, sort_keys=True)


def dataset_spec(wildcards):
    return config["datasets"][wildcards.dataset]


def embedding_file(name):
    """Path of a named embedding: the file from the config, or the trained demo vectors."""
    spec = config["embeddings"][name]
    if spec["format"] == "train-word2vec":
        return f"resources/embeddings/{name}.vec"
    return spec["path"]


def embedding_format(name):
    spec = config["embeddings"][name]
    return "word2vec-text" if spec["format"] == "train-word2vec" else spec["format"]


def logged(path):
    return f"results/logs/{path}.log"


def benchmarked(path):
    return f"results/benchmarks/{path}.tsv"


def final_outputs():
    outputs = [
        "results/scores.parquet",
        "results/tables/duplicates.csv",
        "results/tables/oov.csv",
        "results/tables/table2.md",
    ]
    outputs += expand("results/figures/figure3_{variant}.png", variant=VARIANTS)
    outputs += expand("results/figures/figure5_{variant}.png", variant=VARIANTS)
    return outputs


TRAINED_EMBEDDINGS = [
    name
    for name, spec in config["embeddings"].items()
    if spec["format"] == "train-word2vec"
]


wildcard_constraints:
    # Only embeddings the workflow trains itself are outputs; "(?!)" matches nothing.
    trained="|".join(map(re.escape, TRAINED_EMBEDDINGS)) or "(?!)",
    method="wmd|wmd-tfidf",


def variant_inputs(wildcards):
    """The filtered documents and splits; the clean variant also needs its survivors."""
    inputs = {
        "documents": f"results/{wildcards.dataset}/oov/documents.parquet",
        "splits": f"results/{wildcards.dataset}/ingest/splits.parquet",
    }
    if wildcards.variant == "clean":
        inputs["kept"] = f"results/{wildcards.dataset}/duplicates/kept.parquet"
    return inputs
