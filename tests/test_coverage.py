"""No silent success: aggregating jobs cover exactly the datasets, variants and methods of
the run (wmdeval.core.coverage), and a run whose input files are missing stops before planning."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from wmdeval.analyses import corpus_distance, crossmatch, n2o, wmd_vs_bow
from wmdeval.core import config as wconfig
from wmdeval.core import io, schemas
from wmdeval.core.coverage import parse_expected, require_exact_coverage, with_method_column
from wmdeval.reporting import figures
from wmdeval.reporting import tables as report

REPO = Path(__file__).resolve().parents[1]


def rows(*keys: tuple[str, str]) -> pa.Table:
    return pa.table({"dataset": [k[0] for k in keys], "variant": [k[1] for k in keys]})


EXPECTED = {"dataset": ["a", "b"], "variant": ["original", "clean"]}


def test_exact_coverage_passes_in_any_row_order_and_with_repeats():
    table = rows(
        ("b", "clean"), ("a", "original"), ("a", "clean"), ("b", "original"), ("a", "original")
    )
    require_exact_coverage(table, EXPECTED, "in.parquet")


def test_a_missing_combination_is_named_with_the_file():
    table = rows(("a", "original"), ("a", "clean"), ("b", "original"))
    with pytest.raises(io.WmdevalError) as error:
        require_exact_coverage(table, EXPECTED, "in.parquet")
    assert str(error.value) == (
        "in.parquet: no rows for dataset 'b', variant 'clean', which "
        "this run covers; refusing to write without them"
    )


def test_several_missing_combinations_are_counted():
    with pytest.raises(io.WmdevalError, match=r"dataset 'a', variant 'clean' \(and 2 more\)"):
        require_exact_coverage(rows(("a", "original")), EXPECTED, "in.parquet")


def test_rows_the_run_does_not_cover_are_refused():
    table = rows(
        ("a", "original"), ("a", "clean"), ("b", "original"), ("b", "clean"), ("gone", "original")
    )
    with pytest.raises(
        io.WmdevalError,
        match="rows for dataset 'gone', variant 'original', "
        r"which this run does not cover \(a stale",
    ):
        require_exact_coverage(table, EXPECTED, "in.parquet")


def test_an_empty_expectation_expects_no_rows():
    require_exact_coverage(rows(), {"dataset": [], "variant": ["original"]}, "in.parquet")
    with pytest.raises(io.WmdevalError, match="does not cover"):
        require_exact_coverage(rows(("a", "original")), {"dataset": []}, "in.parquet")


def test_a_missing_column_is_one_line():
    with pytest.raises(io.WmdevalError, match="in.parquet: no column 'method'"):
        require_exact_coverage(rows(("a", "original")), {"method": ["WMD"]}, "in.parquet")


@pytest.mark.parametrize("text", ["[1]", '{"dataset": "a"}', '{"dataset": [1]}', "{"])
def test_parse_expected_rejects_what_is_not_an_object_of_string_lists(text):
    with pytest.raises(io.WmdevalError, match="--expect"):
        parse_expected(text)


def test_with_method_column_renames_and_keeps_a_subset():
    expected = {"dataset": ["a"], "method": ["BOW (L1/L1)", "WMD", "WMD-TF-IDF"]}
    assert with_method_column(expected, "method_a", keep=["WMD", "WMD-TF-IDF"]) == {
        "dataset": ["a"],
        "method_a": ["WMD", "WMD-TF-IDF"],
    }


# ----------------------------------------------------------------- the aggregating jobs


def scores(*keys: tuple[str, str, str], classifier: str = "knn") -> pa.Table:
    """SCORES rows, one fold each, for (dataset, variant, method) keys."""
    return pa.Table.from_pylist(
        [
            {
                "dataset": d,
                "variant": v,
                "method": m,
                "classifier": classifier,
                "fold": 0,
                "param": 1.0,
                "val_accuracy": 0.5,
                "test_error": 0.1,
                "n_test": 10,
                "n_test_empty": 0,
            }
            for d, v, m in keys
        ],
        schema=schemas.SCORES,
    )


def expect_scores(datasets, methods=("BOW (L1/L1)", "WMD")) -> dict[str, list[str]]:
    return {
        "dataset": list(datasets),
        "variant": ["original"],
        "method": list(methods),
        "classifier": ["knn"],
    }


def test_tables_refuse_a_dataset_missing_from_the_scores_and_write_nothing(tmp_path):
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(("a", "original", "BOW (L1/L1)"), ("a", "original", "WMD")), path, schemas.SCORES
    )
    with pytest.raises(io.WmdevalError, match=f"{path}: no rows for dataset 'gone'"):
        report.run_tables(path, tmp_path / "tables", expect_scores(["gone"]))
    assert not (tmp_path / "tables").exists() or not any((tmp_path / "tables").iterdir())


def test_tables_refuse_a_method_missing_from_the_scores(tmp_path):
    path = tmp_path / "scores.parquet"
    io.write_table(scores(("a", "original", "BOW (L1/L1)")), path, schemas.SCORES)
    with pytest.raises(io.WmdevalError, match="method 'WMD'"):
        report.run_tables(path, tmp_path / "tables", expect_scores(["a"]))


def test_tables_refuse_stale_rows_of_a_dataset_the_run_dropped(tmp_path):
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(*[(d, "original", m) for d in ("a", "old") for m in ("BOW (L1/L1)", "WMD")]),
        path,
        schemas.SCORES,
    )
    with pytest.raises(io.WmdevalError, match="dataset 'old'.*does not cover"):
        report.run_tables(path, tmp_path / "tables", expect_scores(["a"]))


def test_table_columns_are_the_expected_datasets_in_their_order(tmp_path):
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(*[(d, "original", m) for d in ("a", "b") for m in ("BOW (L1/L1)", "WMD")]),
        path,
        schemas.SCORES,
    )
    report.run_tables(path, tmp_path / "tables", expect_scores(["b", "a"]))
    header = (tmp_path / "tables" / "table2.csv").read_text().splitlines()[0]
    assert header == "method,b,a,rel."
    # Tables 4/5 have a column only for datasets with all-words scores: none here.
    assert (tmp_path / "tables" / "table4.csv").read_text().splitlines() == ["method,rel."]
    assert "all_words is off" in (tmp_path / "tables" / "table4.md").read_text()


def test_tables_refuse_all_words_scores_that_miss_a_dataset(tmp_path):
    path, allwords = tmp_path / "scores.parquet", tmp_path / "allwords.parquet"
    io.write_table(
        scores(("a", "original", "BOW (L1/L1)"), ("a", "original", "WMD")), path, schemas.SCORES
    )
    io.write_table(scores(("a", "original", "BOW (L1/L1)")), allwords, schemas.SCORES)
    with pytest.raises(io.WmdevalError, match=f"{allwords}: no rows for dataset 'b'"):
        report.run_tables(
            path,
            tmp_path / "tables",
            expect_scores(["a"]),
            allwords,
            expect_scores(["a", "b"], ["BOW (L1/L1)"]),
        )
    with pytest.raises(io.WmdevalError, match="none were given"):
        report.run_tables(
            path,
            tmp_path / "tables",
            expect_scores(["a"]),
            None,
            expect_scores(["a"], ["BOW (L1/L1)"]),
        )


def test_tables_without_all_words_datasets_need_no_all_words_scores(tmp_path):
    """all_words off (or no raw-text dataset): the all-words expectation has no dataset, so
    Tables 4/5 are written without rows and no all-words scores are asked for."""
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(("a", "original", "BOW (L1/L1)"), ("a", "original", "WMD")), path, schemas.SCORES
    )
    report.run_tables(
        path, tmp_path / "tables", expect_scores(["a"]), None, expect_scores([], ["BOW (L1/L1)"])
    )
    assert "all_words is off" in (tmp_path / "tables" / "table4.md").read_text()


def test_collect_scores_refuses_an_incomplete_set(tmp_path):
    path = tmp_path / "a.parquet"
    io.write_table(scores(("a", "original", "WMD")), path, schemas.SCORES)
    with pytest.raises(
        io.WmdevalError, match="no rows for dataset 'a', variant 'original', method 'BOW"
    ):
        report.run_collect([path], tmp_path / "scores.parquet", expect_scores(["a"]))
    assert not (tmp_path / "scores.parquet").exists()


def test_figure3_refuses_a_missing_dataset_and_draws_nothing(tmp_path):
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(("a", "original", "BOW (L1/L1)"), ("a", "original", "WMD")), path, schemas.SCORES
    )
    with pytest.raises(io.WmdevalError, match="no rows for dataset 'gone'"):
        figures.run_figure3(path, tmp_path / "f.png", "original", expect_scores(["a", "gone"]))
    assert list(tmp_path.iterdir()) == [path]


def test_summary_tables_refuse_a_missing_dataset(tmp_path):
    path = tmp_path / "a.parquet"
    io.write_table(pa.table({"dataset": ["a"], "documents": [3]}), path)
    with pytest.raises(io.WmdevalError, match="no rows for dataset 'b'"):
        report.run_summaries(
            [path], tmp_path / "t.csv", tmp_path / "t.md", "T", expected={"dataset": ["a", "b"]}
        )
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "t.md").exists()


def test_summary_table_gets_each_datasets_wmd_mode(tmp_path):
    paths = []
    for name in ("a", "b"):
        paths.append(tmp_path / f"{name}.parquet")
        io.write_table(pa.table({"dataset": [name], "documents": [3]}), paths[-1])
    csv_path, md_path = tmp_path / "t.csv", tmp_path / "t.md"
    report.run_summaries(paths, csv_path, md_path, "T", wmd_modes={"a": "full", "b": "knn"})
    assert csv_path.read_text().splitlines() == [
        "dataset,documents,wmd_mode",
        "a,3,full",
        "b,3,knn",
    ]
    with pytest.raises(io.WmdevalError, match="no mode for dataset b"):
        report.run_summaries(
            paths, tmp_path / "u.csv", tmp_path / "u.md", "T", wmd_modes={"a": "full"}
        )
    assert not (tmp_path / "u.csv").exists()


def _empty_analysis(tmp_path, schema: pa.Schema) -> list:
    """One analysis file of dataset 'a', variant 'original', with no method rows."""
    path = tmp_path / "analysis.parquet"
    io.write_table(schema.empty_table(), path, schema)
    return [path]


@pytest.mark.parametrize(
    "combine, schema, extra",
    [
        (crossmatch.run_crossmatch_table, crossmatch.CROSSMATCH, ()),
        (corpus_distance.run_corpus_distance_table, corpus_distance.CORPUS_DISTANCES, ()),
        (wmd_vs_bow.run_analysis_table, wmd_vs_bow.WMD_VS_BOW, ()),
    ],
)
def test_analysis_tables_refuse_a_missing_dataset_variant(tmp_path, combine, schema, extra):
    paths = _empty_analysis(tmp_path, schema)
    expected = {"dataset": ["a"], "variant": ["original"], "method": ["WMD"]}
    with pytest.raises(io.WmdevalError, match="no rows for dataset 'a', variant 'original'"):
        combine(paths, tmp_path / "t.csv", tmp_path / "t.md", *extra, expected=expected)
    assert not (tmp_path / "t.csv").exists()


def test_n2o_and_ksc_reports_refuse_a_missing_dataset_variant(tmp_path):
    expected = {"dataset": ["a"], "variant": ["original"], "method": ["WMD"]}
    paths = _empty_analysis(tmp_path, n2o.N2O)
    with pytest.raises(io.WmdevalError, match="no rows for dataset 'a'"):
        n2o.run_n2o_report(
            paths, tmp_path / "h.png", tmp_path / "t.csv", tmp_path / "t.md", expected=expected
        )
    paths = _empty_analysis(tmp_path, corpus_distance.KSC)
    with pytest.raises(io.WmdevalError, match="no rows for dataset 'a'"):
        corpus_distance.run_ksc_report(
            paths, [tmp_path / "k.png"], tmp_path / "t.csv", tmp_path / "t.md", expected=expected
        )
    assert not any(p.suffix in (".png", ".csv", ".md") for p in tmp_path.iterdir())


# ------------------------------------------------------------- missing input files


def _config(**datasets) -> dict:
    config = {
        "datasets": datasets,
        "embeddings": {
            "vec": {"format": "glove", "path": "vectors.txt"},
            "trained": {"format": "train-word2vec", "train_on": ["texts"]},
        },
    }
    return config


def test_local_files_of_the_selected_datasets_and_their_embeddings():
    config = _config(
        reviews={
            "format": "table",
            "path": "r.tsv",
            "embeddings": "vec",
            "stopwords": "my-stopwords.txt",
        },
        texts={
            "format": "table",
            "path": "t.csv",
            "embeddings": "trained",
            "stopwords": "kusner115",
        },
        other={"format": "kusner-mat", "path": "other.mat"},
        remote={"format": "kusner-mat", "url": "https://example.org/x.mat"},
    )
    config["run"] = ["reviews", "texts", "remote"]
    assert wconfig.local_files(config) == [
        ("datasets.reviews.path", "r.tsv"),
        ("datasets.reviews.stopwords", "my-stopwords.txt"),
        ("embeddings.vec.path", "vectors.txt"),
        ("datasets.texts.path", "t.csv"),
    ]


def test_a_missing_local_file_is_one_line_naming_the_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _config(gone={"format": "kusner-mat", "path": "/nonexistent/nothing.mat"})
    with pytest.raises(io.WmdevalError) as error:
        wconfig.missing_local_files(config)
    assert str(error.value).startswith(
        "config: datasets.gone.path: /nonexistent/nothing.mat: no such file"
    )
    (tmp_path / "there.mat").write_bytes(b"")
    wconfig.missing_local_files(_config(there={"format": "kusner-mat", "path": "there.mat"}))


def test_users_files_of_every_selected_dataset_are_local_files():
    """methods.vectors / methods.matrices files, "{dataset}" replaced, for every dataset
    of the run, a .mat dataset (without `embeddings`) included."""
    config = _config(
        reviews={"format": "table", "path": "r.tsv", "embeddings": "vec"},
        mat={"format": "kusner-mat", "path": "m.mat"},
    )
    config["methods"] = {
        "vectors": {"sbert": {"path": "v/{dataset}.npy", "ids": "v/{dataset}.ids"}},
        "matrices": {"mine": {"path": "m/{dataset}.parquet"}},
    }
    found = dict(wconfig.local_files(config))
    for dataset in ("reviews", "mat"):
        assert found[f"methods.vectors.sbert.path ({dataset})"] == f"v/{dataset}.npy"
        assert found[f"methods.vectors.sbert.ids ({dataset})"] == f"v/{dataset}.ids"
        assert found[f"methods.matrices.mine.path ({dataset})"] == f"m/{dataset}.parquet"


def test_the_tables_job_writes_exactly_the_files_its_rule_declares(tmp_path):
    """report.smk's outputs are the package's TABLES (a .csv and a .md each): every file
    run_tables writes is declared, and every declared file is written."""
    path = tmp_path / "scores.parquet"
    io.write_table(
        scores(("a", "original", "BOW (L1/L1)"), ("a", "original", "WMD")), path, schemas.SCORES
    )
    report.run_tables(path, tmp_path / "tables", expect_scores(["a"]))
    written = {p.name for p in (tmp_path / "tables").iterdir()}
    declared = {f"{spec.name}.{suffix}" for spec in report.TABLES for suffix in ("csv", "md")}
    assert written == declared
    rules = (REPO / "workflow" / "rules" / "report.smk").read_text()
    assert "for table in PAPER_TABLES" in rules and "TABLES = [" not in rules
