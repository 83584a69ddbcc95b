"""Config validation against the schema wmdeval/data/config.schema.yaml, with defaults.

Errors are one line naming the key (``datasets.news.fromat: unknown key``), so a
misspelling stops the workflow before any job runs.
"""

from __future__ import annotations

import copy
import math
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import WmdevalError

# Package data, read through importlib.resources: it must be found in any install of
# wmdeval (a wheel too), not only next to a source checkout.
SCHEMA = resources.files("wmdeval") / "data" / "config.schema.yaml"


#: libyaml's safe loader where PyYAML was built with it: the same data in a seventh of the
#: pure-Python loader's CPU (0.06 s for the schema, which many jobs read for defaults)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_schema() -> dict:
    return yaml.load(SCHEMA.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)


def _with_defaults(validator_class):
    """A validator that fills in ``default`` of absent properties while validating."""
    check_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _location(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def _one_line(error: jsonschema.ValidationError) -> str:
    where = _location(error)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        keys = ", ".join(f"{where}.{k}" if where != "<top level>" else k for k in extra)
        return f"{keys}: unknown key (a misspelling?)"
    if error.validator == "required":
        return f"{where}: {error.message}"
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return f"{where}: {error.instance!r} is not one of: {allowed}"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{where}: expected {expected}, got {error.instance!r}"
    return f"{where}: {error.message}"


def defaults(*keys: str) -> Any:
    """The schema's default of the config key at ``keys`` (e.g. ``defaults("evaluation")``),
    nested defaults filled in: the one place every default lives. Stage functions called
    without a setting (by hand, from a test) take it from here."""
    schema = load_schema()
    sub = schema
    for key in keys:
        try:
            sub = sub["properties"][key]
        except KeyError:
            raise KeyError(f"no config key {'.'.join(keys)} in the schema") from None
    if "default" not in sub:
        raise KeyError(f"config key {'.'.join(keys)} has no default")
    value = copy.deepcopy(sub["default"])
    # Validating against the key's own schema (with the root's definitions) fills the
    # defaults of its nested keys.
    _with_defaults(jsonschema.Draft202012Validator)(
        {**sub, "$defs": schema.get("$defs", {})}
    ).validate(value)
    return value


def validate(config: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """Validate ``config`` in place (defaults filled in) and return it.

    Raises WmdevalError with a one-line message naming ``source`` and the key.
    """
    schema = load_schema()
    coerce_strings(config, schema)
    _check_names(config, schema, source)
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        # The deepest error is the most specific one (a typo inside a dataset, not "datasets").
        error = max(errors, key=lambda e: len(e.absolute_path))
        raise WmdevalError(f"{source}: {_one_line(error)}")
    _check_references(config, source)
    return config


def _check_names(config: Any, schema: dict, source: str) -> None:
    """Every key of the config is a string, no dataset takes a name the schema reserves
    (the workflow's own folders and files directly under results/, and under
    results/logs/ and results/benchmarks/, where results/<dataset>/ and
    results/logs/<dataset>/ are a dataset's), and ``run`` lists at least one dataset:
    one line each, before the schema's messages, which would not say that YAML turned an
    unquoted ``123`` or ``yes`` into a number or a boolean."""
    key = _non_string_key(config, ())
    if key is not None:
        where, name = key
        place = ".".join(where) or "<top level>"
        raise WmdevalError(
            f"{source}: {place}: the name {name!r} is {_kind(name)}, not a "
            "string (YAML reads an unquoted number, yes/no, on/off or true/false so); put "
            "the name in quotes"
        )
    if not isinstance(config, dict):
        return
    reserved = schema["properties"]["datasets"]["propertyNames"]["not"]["enum"]
    datasets = config.get("datasets")
    if isinstance(datasets, dict):
        for name in datasets:
            if name in reserved:
                raise WmdevalError(
                    f"{source}: datasets.{name}: the name {name!r} is one of the workflow's "
                    f"own folders and files under results/ ({', '.join(reserved)}); "
                    "rename the dataset"
                )
    if config.get("run") == []:
        raise WmdevalError(
            f"{source}: run: an empty list runs no dataset; list the datasets to run, or "
            "leave `run` out (or null) to run every dataset"
        )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else f"a {type(value).__name__}"


def _non_string_key(value: Any, where: tuple[str, ...]) -> tuple[tuple[str, ...], Any] | None:
    """(path, key) of the first dict key that is not a string, depth first; None if none."""
    if isinstance(value, dict):
        for key, member in value.items():
            if not isinstance(key, str):
                return where, key
            found = _non_string_key(member, (*where, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for member in value:
            found = _non_string_key(member, where)
            if found is not None:
                return found
    return None


# ------------------------------------------------------------------ command-line strings
# Snakemake's `--config key=value` reads a top-level value as int, float, True/False or YAML
# with every scalar a string: `wmd='{threads: 2}'` arrives as {"threads": "2"},
# `all_words=false` as "false", `run=null` as "null". Such strings are read as the type the
# schema expects at their place before validation; one that cannot be read is left as it
# is, so validation reports it as usual ("wmd.threads: expected integer, got '2x'").

_INTEGER = re.compile(r"[+-]?[0-9]+")
_BOOLEANS = {"true": True, "yes": True, "false": False, "no": False}
_NULLS = ("null", "~", "")
_UNREAD = object()  # a string that is not a value of the type tried


def coerce_strings(config: dict[str, Any], schema: dict) -> dict[str, Any]:
    """Replace, in place, the strings of ``config`` where ``schema`` expects another type
    by the value they spell (see above); return ``config``."""
    _coerce_members(config, schema, schema)
    return config


def _coerce_members(instance: Any, schema: dict, root: dict) -> None:
    """Coerce the members of a dict or list ``instance`` against its ``schema``."""
    schema = _resolved(schema, root)
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        others = schema.get("additionalProperties")
        for key, value in instance.items():
            sub = properties.get(key, others)
            if isinstance(sub, dict):
                instance[key] = _coerced(value, sub, root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        instance[:] = [_coerced(value, schema["items"], root) for value in instance]


def _coerced(value: Any, schema: dict, root: dict) -> Any:
    schema = _resolved(schema, root)
    if isinstance(value, str):
        value = _read_string(value, schema)
    if isinstance(value, dict | list):
        _coerce_members(value, schema, root)
    return value


def _resolved(schema: dict, root: dict) -> dict:
    """``schema`` with a local ``$ref`` (``#/$defs/name``) replaced by what it names."""
    while "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _read_string(text: str, schema: dict) -> Any:
    types = schema.get("type")
    if types is None:
        return text  # an enum of strings, or no constraint
    types = [types] if isinstance(types, str) else types
    if "null" in types and text.strip().lower() in _NULLS:
        return None
    # a string where no other type the key allows reads it (wmd.search_shards: "8" is 8,
    # "auto" stays a string)
    for expected in types:
        value = _read_as(text, expected)
        if value is not _UNREAD:
            return value
    return text


def _read_as(text: str, expected: str) -> Any:
    word = text.strip()
    if expected == "integer" and _INTEGER.fullmatch(word):
        return int(word)
    if expected == "number":
        if _INTEGER.fullmatch(word):
            return int(word)
        try:
            number = float(word)
        except ValueError:
            return _UNREAD
        return number if math.isfinite(number) else _UNREAD
    if expected == "boolean":
        return _BOOLEANS.get(word.lower(), _UNREAD)
    if expected in ("array", "object"):
        try:
            # Scalars stay strings, as Snakemake reads them; the caller coerces them next.
            value = yaml.load(text, Loader=yaml.BaseLoader)
        except yaml.YAMLError:
            return _UNREAD
        if isinstance(value, list if expected == "array" else dict):
            return value
    return _UNREAD


def _check_references(config: dict[str, Any], source: str) -> None:
    datasets, embeddings = config["datasets"], config["embeddings"]
    for name, spec in datasets.items():
        where = f"{source}: datasets.{name}"
        fmt = spec["format"]
        if fmt == "demo" and "source" not in spec:
            raise WmdevalError(f"{where}.source: required for format demo")
        if fmt in ("kusner-mat", "table"):
            _check_source(spec, where, f"format {fmt}")
        if fmt != "kusner-mat":
            ref = spec.get("embeddings")
            if ref is None:
                raise WmdevalError(f"{where}.embeddings: required for format {fmt}")
            if ref not in embeddings:
                raise WmdevalError(f"{where}.embeddings: no embedding named {ref!r}")
    for name, spec in embeddings.items():
        where = f"{source}: embeddings.{name}"
        if spec["format"] == "train-word2vec":
            if not spec["train_on"]:
                raise WmdevalError(f"{where}.train_on: list the datasets to train on")
            for ref in spec["train_on"]:
                if ref not in datasets:
                    raise WmdevalError(f"{where}.train_on: no dataset named {ref!r}")
                if datasets[ref]["format"] == "kusner-mat":
                    raise WmdevalError(f"{where}.train_on: {ref!r} has no raw text")
        else:
            _check_source(spec, where, f"format {spec['format']}")
    for ref in config.get("run") or []:
        if ref not in datasets:
            raise WmdevalError(f"{source}: run: no dataset named {ref!r}")
    _check_methods(config, source)


def _check_methods(config: dict[str, Any], source: str) -> None:
    """The paper's 14 run; every method name is unique; a .npy needs its ids; the
    significance reference is a method of the run."""
    from .methods import METHODS, configured_methods, pca_method_name

    listed = config["methods"]["builtin"]
    missing = [m.slug for m in METHODS if m.slug not in listed]
    if missing:
        raise WmdevalError(
            f"{source}: methods.builtin: the paper's 14 methods always run (its tables "
            f"need them); add {', '.join(missing)}"
        )
    for name, spec in config["methods"]["vectors"].items():
        if spec["path"].endswith(".npy") and not spec.get("ids"):
            raise WmdevalError(
                f"{source}: methods.vectors.{name}.ids: required for a .npy path "
                "(the doc_id of each row)"
            )
    names: dict[str, str] = {}
    run_methods = [*configured_methods(config["methods"])]
    run_names = [m.name for m in run_methods]
    run_names += [pca_method_name("WMD", dim) for dim in config["pca_dims"]]
    for method in run_methods:
        if method.name in names:
            raise WmdevalError(
                f"{source}: methods: two methods are named {method.name!r} "
                f"({names[method.name]} and {method.slug}); rename one"
            )
        names[method.name] = method.slug
    reference = config["significance"]["reference"]
    if reference not in run_names:
        raise WmdevalError(
            f"{source}: significance.reference: {reference!r} is not a method of this run "
            f"(expected one of: {', '.join(run_names)})"
        )
    if config["significance"]["variant"] not in config["variants"]:
        raise WmdevalError(
            f"{source}: significance.variant: {config['significance']['variant']!r} is "
            f"not in variants {config['variants']}"
        )


def _check_source(spec: dict[str, Any], where: str, what: str) -> None:
    """A file comes from exactly one of `path` and `url`."""
    if ("path" in spec) == ("url" in spec):
        raise WmdevalError(f"{where}: needs exactly one of `path` or `url` for {what}")
    if spec.get("member") and "url" not in spec:
        raise WmdevalError(f"{where}.member: only with `url` (a downloaded zip archive)")


def selected_datasets(config: dict[str, Any]) -> list[str]:
    """The datasets this run processes, in config order."""
    run = config.get("run")
    return list(run) if run else list(config["datasets"])


#: Stop-word choices that name a bundled list or none; anything else is a file path.
_NAMED_STOPWORDS = ("kusner115", "none")


def stopword_file(spec: dict[str, Any]) -> str | None:
    """The stop-word file a dataset's entry names (``stopwords:`` other than a bundled
    list or none), else None."""
    stopwords = spec.get("stopwords")
    if isinstance(stopwords, str) and stopwords not in _NAMED_STOPWORDS:
        return stopwords
    return None


def local_files(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(config key, path) of every local file the selected datasets read: their
    ``path``, a stop-word file, and the ``path`` of their embeddings (or, for embeddings
    the workflow trains, of the datasets it trains on).

    No rule makes these files, so when one is missing Snakemake cannot build what
    depends on it. In a directory that still holds outputs of an earlier run, it would
    then take those outputs as given and rerun only the jobs after them, so this list
    is checked before any job is planned (see :func:`missing_local_files`).
    """
    datasets, embeddings = config["datasets"], config["embeddings"]
    found: dict[str, str] = {}

    def dataset_files(name: str) -> None:
        spec = datasets[name]
        if "path" in spec:
            found.setdefault(f"datasets.{name}.path", spec["path"])
        stopwords = stopword_file(spec)
        if stopwords is not None:
            found.setdefault(f"datasets.{name}.stopwords", stopwords)

    methods = config.get("methods") or {}
    for name in selected_datasets(config):
        dataset_files(name)
        # users' per-dataset files, for every dataset (a .mat one has no `embeddings`)
        for kind in ("vectors", "matrices"):
            for method, method_spec in (methods.get(kind) or {}).items():
                for key in ("path", "ids"):
                    if method_spec.get(key):
                        found.setdefault(
                            f"methods.{kind}.{method}.{key} ({name})",
                            dataset_path(method_spec[key], name),
                        )
        embedding = datasets[name].get("embeddings")
        if embedding is None:
            continue
        spec = embeddings[embedding]
        if "path" in spec:
            found.setdefault(f"embeddings.{embedding}.path", spec["path"])
        for trained_on in spec.get("train_on") or []:
            dataset_files(trained_on)
    return list(found.items())


def dataset_path(pattern: str, dataset: str) -> str:
    """A per-dataset file of ``methods:``: "{dataset}" in ``pattern`` replaced."""
    return pattern.replace("{dataset}", dataset)


def missing_local_files(config: dict[str, Any], source: str = "config") -> None:
    """Raise WmdevalError naming the first local input file of the run that is absent."""
    for key, path in local_files(config):
        if not Path(path).is_file():
            raise WmdevalError(
                f"{source}: {key}: {path}: no such file (paths are relative "
                "to the working directory)"
            )
