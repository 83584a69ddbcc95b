import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from wmdeval.cleaning import duplicates
from wmdeval.cleaning.vocabulary import select_variant
from wmdeval.core import schemas
from wmdeval.core.io import read_table
from wmdeval.ingest.corpora import splits_table


# ----------------------------------------------------------------------------- references
def bags_by_id(documents):
    return {
        d: dict(zip(w, c, strict=True))
        for d, w, c in zip(
            documents.column("doc_id").to_pylist(),
            documents.column("words").to_pylist(),
            documents.column("counts").to_pylist(),
            strict=True,
        )
    }


def brute_force_pairs(documents):
    bags = bags_by_id(documents)
    return {(a, b) for a, b in itertools.combinations(sorted(bags), 2) if bags[a] == bags[b]}


def brute_force_summary(documents, splits):
    """Every count of the summary, from the explicit list of duplicate pairs."""
    pairs = brute_force_pairs(documents)
    labels = dict(
        zip(
            documents.column("doc_id").to_pylist(),
            documents.column("label").to_pylist(),
            strict=True,
        )
    )
    side = {}
    for fold, doc, subset in zip(
        *(splits.column(c).to_pylist() for c in splits.column_names), strict=True
    ):
        side.setdefault(fold, {})[doc] = subset
    crossing = [
        {(a, b) for a, b in pairs if a in s and b in s and s[a] != s[b]}
        for _, s in sorted(side.items())
    ]
    bags = bags_by_id(documents)
    group_sizes = {}
    for a in {d for pair in pairs for d in pair}:
        key = tuple(sorted(bags[a].items()))
        group_sizes[key] = group_sizes.get(key, 0) + 1
    return {
        "documents": documents.num_rows,
        "duplicate_pairs": len(pairs),
        "duplicate_samples": len({d for pair in pairs for d in pair}),
        "groups": len(group_sizes),
        "largest_group": max(group_sizes.values(), default=0),
        "pairs_different_labels": sum(labels[a] != labels[b] for a, b in pairs),
        "pairs_across_train_test_any_fold": len(set().union(*crossing)),
        "pairs_across_train_test_per_fold": [len(c) for c in crossing],
    }


def kept_by_plain_loop(doc_ids, groups, seed):
    """The paper's cleaning loop, literally."""
    group_of = {int(d): g for g, ids in enumerate(groups) for d in ids}
    kept_groups, keep = set(), np.zeros(len(doc_ids), dtype=bool)
    for position in np.random.RandomState(seed).permutation(len(doc_ids)):
        group = group_of.get(int(doc_ids[position]))
        if group is None or group not in kept_groups:
            kept_groups.add(group)
            keep[position] = True
    return np.asarray(doc_ids)[keep]


def brute_force_near(documents, max_l1):
    """{(doc_a, doc_b): L1} of non-identical pairs of non-empty documents, dense."""
    bags = bags_by_id(documents)
    vocabulary = sorted({w for bag in bags.values() for w in bag})
    column = {w: k for k, w in enumerate(vocabulary)}
    ids = sorted(d for d, bag in bags.items() if bag)
    dense = np.zeros((len(ids), len(vocabulary)))
    for r, d in enumerate(ids):
        for w, c in bags[d].items():
            dense[r, column[w]] = c
    dense /= dense.sum(axis=1, keepdims=True)
    out = {}
    for r, s in itertools.combinations(range(len(ids)), 2):
        distance = np.abs(dense[r] - dense[s]).sum()
        if distance <= max_l1 and bags[ids[r]] != bags[ids[s]]:
            out[(ids[r], ids[s])] = distance
    return out


# ----------------------------------------------------------------------------- corpora
def random_corpus(make_documents, rng, n_docs, n_words, max_len, max_count=2, n_labels=3):
    rows = []
    for _ in range(n_docs):
        n = rng.integers(0, max_len + 1)
        rows.append(
            (
                f"l{rng.integers(n_labels)}",
                {
                    f"w{rng.integers(n_words)}": int(rng.integers(1, max_count + 1))
                    for _ in range(n)
                },
            )
        )
    return make_documents(rows)


def with_doc_ids(documents, doc_ids, order):
    """The same corpus under other doc ids, rows in another order."""
    table = documents.set_column(0, "doc_id", pa.array(np.asarray(doc_ids, dtype=np.int32)))
    return table.take(pa.array(order))


def random_splits(rng, doc_ids, n_folds):
    """Each fold holds a random ~90% of the documents, each in train or test."""
    folds, ids, subsets = [], [], []
    for fold in range(n_folds):
        for d in doc_ids:
            if rng.random() < 0.9:
                folds.append(fold)
                ids.append(int(d))
                subsets.append("test" if rng.random() < 0.3 else "train")
    return splits_table(folds, ids, subsets)


def summary_rows(documents, splits, seed=0):
    rows = duplicates.duplicate_report(documents, splits, "toy", seed).summary.to_pylist()
    assert [r["variant"] for r in rows] == ["original", "clean"]
    return rows


# ----------------------------------------------------------------------------- exact duplicates
TOY = [
    ("x", {"a": 1, "b": 2}),  # 0 \
    ("y", {"b": 2, "a": 1}),  # 1  } group of three, mixed labels; 1 lists its words reversed
    ("x", {"a": 1, "b": 2}),  # 2 /
    ("x", {"a": 1, "b": 3}),  # 3 differs in one count
    ("z", {"c": 1}),  # 4 \ pair
    ("z", {"c": 1}),  # 5 /
    ("z", {}),  # 6 empty, unique
]
# fold 0: 4 train / 5 test -> only the pair crosses; fold 1: 1 is test -> (0,1), (1,2) cross
TOY_SPLITS = (
    [0] * 7 + [1] * 7,
    list(range(7)) * 2,
    [
        "train",
        "train",
        "train",
        "test",
        "train",
        "test",
        "test",
        "train",
        "test",
        "train",
        "train",
        "train",
        "train",
        "test",
    ],
)


def test_known_groups_both_rows(make_documents):
    docs = make_documents(TOY)
    splits = splits_table(*TOY_SPLITS)
    assert [g.tolist() for g in duplicates.duplicate_groups(docs)] == [[0, 1, 2], [4, 5]]
    original, clean = summary_rows(docs, splits)
    assert original == {
        "dataset": "toy",
        "variant": "original",
        "documents": 7,
        "duplicate_pairs": 4,
        "duplicate_samples": 5,
        "groups": 2,
        "largest_group": 3,
        "pairs_different_labels": 2,  # (0,1) and (1,2)
        "pairs_across_train_test_any_fold": 3,  # (4,5) in fold 0; (0,1), (1,2) in fold 1
        "pairs_across_train_test_per_fold": [1, 2],
    }
    assert clean == {
        "dataset": "toy",
        "variant": "clean",
        "documents": 4,
        "duplicate_pairs": 0,
        "duplicate_samples": 0,
        "groups": 0,
        "largest_group": 0,
        "pairs_different_labels": 0,
        "pairs_across_train_test_any_fold": 0,
        "pairs_across_train_test_per_fold": [0, 0],
    }


def test_groups_table(make_documents):
    docs = make_documents(TOY)
    report = duplicates.duplicate_report(docs, splits_table(*TOY_SPLITS), "toy", 0)
    groups, kept = report.groups, report.kept
    assert groups.schema == schemas.DUPLICATE_GROUPS
    rows = groups.to_pylist()
    assert [(r["group"], r["doc_id"], r["label"]) for r in rows] == [
        (0, 0, "x"),
        (0, 1, "y"),
        (0, 2, "x"),
        (1, 4, "z"),
        (1, 5, "z"),
    ]
    assert [sum(r["kept"] for r in rows if r["group"] == g) for g in (0, 1)] == [1, 1]
    assert {r["doc_id"] for r in rows if r["kept"]} == set(kept.tolist()) & {0, 1, 2, 4, 5}
    assert set(kept.tolist()) >= {3, 6}


def test_no_duplicates_and_tiny_corpora(make_documents):
    for rows in ([], [("x", {"a": 1})], [("x", {"a": 1}), ("x", {"a": 2})]):
        docs = make_documents(rows)
        n = len(rows)
        splits = splits_table([0] * n, list(range(n)), ["train"] * n)
        original, clean = summary_rows(docs, splits)
        assert original["duplicate_pairs"] == clean["duplicate_pairs"] == 0
        assert original["documents"] == clean["documents"] == n
        assert duplicates.duplicate_groups(docs) == []
        corpus = duplicates.flatten_documents(docs)
        near = duplicates.near_duplicate_pairs(
            corpus, duplicates.duplicate_group_numbers(corpus), 1.9
        )
        assert near.num_rows == (1 if n == 2 else 0)  # {a: 1} and {a: 2} are proportional


@pytest.mark.parametrize("seed", range(12))
def test_summary_matches_brute_force_on_random_corpora(make_documents, seed):
    rng = np.random.default_rng(seed)
    # small vocabularies and short documents -> many groups, some large (like twitter)
    docs = random_corpus(
        make_documents,
        rng,
        n_docs=int(rng.integers(20, 120)),
        n_words=int(rng.integers(2, 6)),
        max_len=3,
    )
    if seed % 2:  # doc ids that are not row positions, rows not in doc_id order
        n = docs.num_rows
        docs = with_doc_ids(docs, 1000 - 7 * np.arange(n), rng.permutation(n))
    splits = random_splits(rng, docs.column("doc_id").to_pylist(), n_folds=int(rng.integers(1, 6)))
    original, clean = summary_rows(docs, splits, seed)
    expected = brute_force_summary(docs, splits)
    assert {k: original[k] for k in expected} == expected

    groups = duplicates.duplicate_groups(docs)
    assert {
        (int(a), int(b)) for g in groups for a, b in itertools.combinations(g, 2)
    } == brute_force_pairs(docs)
    assert [int(g[0]) for g in groups] == sorted(int(g[0]) for g in groups)

    kept = duplicates.kept_documents(docs.column("doc_id").to_numpy(), groups, seed)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    assert {k: clean[k] for k in expected} == brute_force_summary(clean_docs, clean_splits)
    assert clean["duplicate_pairs"] == 0
    assert clean["documents"] == docs.num_rows - sum(len(g) - 1 for g in groups)


def fake_hash_zero(corpus):
    return np.zeros(len(corpus), dtype=np.uint64)


def fake_hash_length(corpus):
    return corpus.lengths.astype(np.uint64)


def fake_hash_first_word(corpus):
    """Collides for every pair of bags with the same first word (and for empty bags)."""
    first = np.zeros(len(corpus), dtype=np.uint64)
    non_empty = corpus.lengths > 0
    first[non_empty] = corpus.word_ids[corpus.offsets[:-1][non_empty]].astype(np.uint64) + 1
    return first


@pytest.mark.parametrize("fake_hash", [fake_hash_zero, fake_hash_length, fake_hash_first_word])
def test_hash_collisions_never_merge_different_bags(make_documents, monkeypatch, fake_hash):
    rng = np.random.default_rng(7)
    corpora = [make_documents(TOY)] + [
        random_corpus(make_documents, rng, n_docs=80, n_words=5, max_len=3) for _ in range(5)
    ]
    expected = [[g.tolist() for g in duplicates.duplicate_groups(docs)] for docs in corpora]
    monkeypatch.setattr(duplicates, "bag_hashes", fake_hash)
    for docs, groups in zip(corpora, expected, strict=True):
        assert [g.tolist() for g in duplicates.duplicate_groups(docs)] == groups


def test_real_hash_separates_the_toy_bags(make_documents):
    corpus = duplicates.flatten_documents(make_documents(TOY))
    hashes = duplicates.bag_hashes(corpus).tolist()
    assert hashes[0] == hashes[1] == hashes[2] and hashes[4] == hashes[5]
    assert len({hashes[0], hashes[3], hashes[4], hashes[6]}) == 4


# ----------------------------------------------------------------------------- cleaning
def test_kept_documents_matches_the_plain_loop():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        doc_ids = rng.permutation(np.arange(n) * 3 + 5)
        group_of = rng.integers(-3, 6, n)  # negative: no duplicate
        groups = [np.sort(doc_ids[group_of == g]) for g in range(6) if (group_of == g).sum() > 1]
        seed = trial % 4
        assert np.array_equal(
            duplicates.kept_documents(doc_ids, groups, seed),
            kept_by_plain_loop(doc_ids, groups, seed),
        )


def test_one_survivor_per_group_seeded(make_documents):
    docs = make_documents([("x", {"a": 1})] * 3 + [("x", {"b": 1}), ("x", {"c": 1})])
    ids = docs.column("doc_id").to_numpy()
    groups = duplicates.duplicate_groups(docs)
    kept = duplicates.kept_documents(ids, groups, seed=0)
    order = np.random.RandomState(0).permutation(len(ids))
    first = next(int(ids[p]) for p in order if ids[p] in (0, 1, 2))
    assert sorted(kept.tolist()) == sorted([first, 3, 4])
    assert np.array_equal(kept, duplicates.kept_documents(ids, groups, seed=0))


def test_run_writes_clean_splits_without_removed_documents(make_documents, tmp_path):
    from wmdeval.core.io import write_table

    rng = np.random.default_rng(11)
    docs = random_corpus(make_documents, rng, n_docs=150, n_words=4, max_len=3)
    splits = random_splits(rng, range(docs.num_rows), n_folds=5)
    write_table(docs, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    write_table(splits, tmp_path / "splits.parquet", schemas.SPLITS)
    paths = {k: tmp_path / f"{k}.parquet" for k in ("groups", "summary", "kept", "near")}
    duplicates.run_duplicates(
        tmp_path / "documents.parquet",
        tmp_path / "splits.parquet",
        "toy",
        0,
        paths["groups"],
        paths["summary"],
        paths["kept"],
        near_path=paths["near"],
        near_max_l1=0.5,
    )
    kept = read_table(paths["kept"]).column("doc_id").to_numpy()
    groups = read_table(paths["groups"], schemas.DUPLICATE_GROUPS)
    removed = pc.filter(groups.column("doc_id"), pc.invert(groups.column("kept"))).to_numpy()
    assert len(removed) and not set(removed) & set(kept)
    assert len(kept) + len(removed) == docs.num_rows

    clean_docs, clean_splits = select_variant(docs, splits, kept)
    assert not set(clean_splits.column("doc_id").to_pylist()) & set(removed)
    assert duplicates.duplicate_groups(clean_docs) == []
    # the original variant is untouched by the run
    assert read_table(tmp_path / "splits.parquet", schemas.SPLITS).equals(splits)
    assert read_table(tmp_path / "documents.parquet", schemas.DOCUMENTS).equals(docs)

    summary = read_table(paths["summary"]).to_pylist()
    assert [r["variant"] for r in summary] == ["original", "clean"]
    assert summary[0]["duplicate_samples"] == groups.num_rows
    assert summary[1]["duplicate_pairs"] == 0
    assert summary[1]["documents"] == len(kept)
    assert read_table(paths["near"]).schema.names == duplicates.NEAR_DUPLICATES.names


def test_run_without_near_path_writes_no_near_table(make_documents, tmp_path):
    from wmdeval.core.io import write_table

    write_table(make_documents(TOY), tmp_path / "d.parquet", schemas.DOCUMENTS)
    write_table(splits_table(*TOY_SPLITS), tmp_path / "s.parquet", schemas.SPLITS)
    duplicates.run_duplicates(
        tmp_path / "d.parquet",
        tmp_path / "s.parquet",
        "toy",
        0,
        tmp_path / "g.parquet",
        tmp_path / "sum.parquet",
        tmp_path / "k.parquet",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "d.parquet",
        "g.parquet",
        "k.parquet",
        "s.parquet",
        "sum.parquet",
    ]


# ----------------------------------------------------------------------------- near duplicates
def corpus_with_near_copies(make_documents, rng, n_base, n_words):
    """Random documents plus perturbed copies: one count changed, one word added or
    dropped, scaled (proportional) and exact copies, and a few empty documents."""
    rows = []
    for _ in range(n_base):
        size = int(rng.integers(1, 12))
        words = rng.choice(n_words, size, replace=False, p=zipf(n_words))
        rows.append((f"l{rng.integers(3)}", {f"w{w}": int(rng.integers(1, 6)) for w in words}))
    for _, bag in list(rows):
        kind = rng.integers(6)
        copy = dict(bag)
        word = sorted(copy)[rng.integers(len(copy))]
        if kind == 0:
            copy[word] += 1
        elif kind == 1:
            copy[f"w{rng.integers(n_words)}"] = 1
        elif kind == 2 and len(copy) > 1:
            del copy[word]
        elif kind == 3:
            copy = {w: 2 * c for w, c in copy.items()}
        elif kind == 4:
            copy[word] = max(1, copy[word] - 1)
        rows.append((f"l{rng.integers(3)}", copy))
    rows += [("l0", {})] * 2
    order = rng.permutation(len(rows))
    return make_documents([rows[k] for k in order])


def corpus_dominated_by_common_words(make_documents, rng, n_docs):
    """Most mass on a few common words, the rest on rare ones: the shared words that make
    pairs near are the common ones, which sort last in the prefix order."""
    rows = []
    for _ in range(n_docs):
        bag = {f"common{c}": int(rng.integers(15, 18)) for c in range(int(rng.integers(1, 3)))}
        bag.update({f"rare{rng.integers(300)}": 1 for _ in range(int(rng.integers(0, 4)))})
        rows.append(("x", bag))
    return make_documents(rows)


def zipf(n):
    weights = 1 / np.arange(1, n + 1)
    return weights / weights.sum()


def near_as_dict(table):
    return {
        (a, b): d
        for a, b, d in zip(
            table.column("doc_a").to_pylist(),
            table.column("doc_b").to_pylist(),
            table.column("l1_distance").to_pylist(),
            strict=True,
        )
    }


@pytest.mark.parametrize("max_l1", [0.0, 0.05, 0.1, 0.3, 0.8, 1.5])
def test_near_duplicates_match_brute_force(make_documents, monkeypatch, max_l1):
    # tiny batches: exercise the batching of the exact check
    monkeypatch.setattr(duplicates, "DENSE_CELLS", 3 * 40)
    monkeypatch.setattr(duplicates, "ENTRIES_PER_BATCH", 50)
    rng = np.random.default_rng(int(max_l1 * 100))
    for trial in range(6):
        docs = (
            corpus_with_near_copies(make_documents, rng, n_base=60, n_words=40)
            if trial % 2
            else corpus_dominated_by_common_words(make_documents, rng, n_docs=80)
        )
        corpus = duplicates.flatten_documents(docs)
        table = duplicates.near_duplicate_pairs(
            corpus, duplicates.duplicate_group_numbers(corpus), max_l1
        )
        assert table.schema == duplicates.NEAR_DUPLICATES
        found = near_as_dict(table)
        expected = brute_force_near(docs, max_l1 + 1e-12)
        # the same pairs up to rounding right at the threshold
        assert {p for p, d in expected.items() if d <= max_l1 - 1e-12} <= set(found)
        assert set(found) <= set(expected)
        for pair, distance in found.items():
            assert distance == pytest.approx(expected[pair], abs=1e-12)
        keys = list(found)
        assert keys == sorted(keys) and all(a < b for a, b in keys)
        labels = dict(
            zip(docs.column("doc_id").to_pylist(), docs.column("label").to_pylist(), strict=True)
        )
        assert table.column("label_a").to_pylist() == [labels[a] for a, _ in keys]
        assert table.column("label_b").to_pylist() == [labels[b] for _, b in keys]
        if max_l1 >= 0.3:
            assert found  # the corpus really contains near duplicates


def test_near_duplicates_known_pairs(make_documents):
    docs = make_documents(
        [
            ("x", {"a": 10, "b": 10}),  # 0
            ("x", {"a": 10, "b": 10}),  # 1 identical to 0: not a near duplicate
            ("y", {"a": 11, "b": 10}),  # 2 one count changed
            ("y", {"a": 20, "b": 20}),  # 3 proportional to 0: distance 0
            ("z", {"c": 1}),  # 4
            ("z", {}),  # 5 empty: never paired
            ("z", {}),  # 6
        ]
    )
    corpus = duplicates.flatten_documents(docs)
    found = near_as_dict(
        duplicates.near_duplicate_pairs(corpus, duplicates.duplicate_group_numbers(corpus), 0.1)
    )
    d = abs(11 / 21 - 0.5) * 2
    assert set(found) == {(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    assert found[(0, 3)] == 0.0 and found[(0, 2)] == pytest.approx(d)


def test_near_duplicates_reject_bad_threshold(make_documents):
    corpus = duplicates.flatten_documents(make_documents(TOY))
    groups = duplicates.duplicate_group_numbers(corpus)
    for bad in (-0.1, 2.0):
        with pytest.raises(duplicates.WmdevalError):
            duplicates.near_duplicate_pairs(corpus, groups, bad)
