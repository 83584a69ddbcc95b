import itertools

import numpy as np
import pyarrow as pa

from wmdeval import duplicates
from wmdeval.ingest import splits_table


def brute_force_pairs(documents):
    bags = [dict(zip(w, c, strict=True)) for w, c in zip(
        documents.column("words").to_pylist(), documents.column("counts").to_pylist(),
        strict=True)]
    return {(a, b) for a, b in itertools.combinations(range(len(bags)), 2) if bags[a] == bags[b]}


def test_known_groups(make_documents):
    docs = make_documents([
        ("x", {"a": 1, "b": 2}),   # 0 \
        ("y", {"b": 2, "a": 1}),   # 1  } group of three, mixed labels
        ("x", {"a": 1, "b": 2}),   # 2 /
        ("x", {"a": 1, "b": 3}),   # 3 differs in one count
        ("z", {"c": 1}),           # 4 \ pair
        ("z", {"c": 1}),           # 5 /
        ("z", {}),                 # 6 empty, unique
    ])
    groups = duplicates.duplicate_groups(docs)
    assert [g.tolist() for g in groups] == [[0, 1, 2], [4, 5]]
    # fold 0: 4 train / 5 test -> the pair crosses; group 0 all train
    splits = splits_table([0] * 7 + [1] * 7, list(range(7)) * 2,
                          ["train", "train", "train", "test", "train", "test", "test",
                           "train", "test", "train", "train", "train", "train", "test"])
    summary = duplicates.summarise(docs, splits, groups, "toy")
    assert summary["duplicate_pairs"] == 4
    assert summary["duplicate_samples"] == 5
    assert summary["groups"] == 2
    assert summary["largest_group"] == 3
    assert summary["pairs_different_labels"] == 2   # (0,1) and (1,2)
    # fold 0: only (4,5) crosses; fold 1: (0,1) and (1,2) cross
    assert summary["pairs_across_train_test_per_fold"] == [1, 2]
    assert summary["pairs_across_train_test_any_fold"] == 3


def test_one_survivor_per_group_seeded(make_documents):
    docs = make_documents([("x", {"a": 1})] * 3 + [("x", {"b": 1}), ("x", {"c": 1})] * 1)
    ids = docs.column("doc_id").to_numpy()
    groups = duplicates.duplicate_groups(docs)
    kept = duplicates.kept_documents(ids, groups, seed=0)
    assert len(kept) == 3
    assert set(kept) >= {3, 4}
    # the survivor is the group member visited first in the seeded permutation
    order = np.random.RandomState(0).permutation(len(ids))
    first = next(int(ids[p]) for p in order if ids[p] in (0, 1, 2))
    assert first in kept
    assert np.array_equal(kept, duplicates.kept_documents(ids, groups, seed=0))


def test_matches_brute_force_on_random_corpora(make_documents):
    rng = np.random.default_rng(1)
    for _ in range(20):
        rows = []
        for _ in range(60):
            n = rng.integers(0, 3)
            rows.append(("l", {f"w{rng.integers(4)}": int(rng.integers(1, 3)) for _ in range(n)}))
        docs = make_documents(rows)
        groups = duplicates.duplicate_groups(docs)
        pairs = {(int(a), int(b)) for g in groups for a, b in itertools.combinations(g, 2)}
        assert pairs == brute_force_pairs(docs)
        kept = duplicates.kept_documents(docs.column("doc_id").to_numpy(), groups, seed=0)
        assert len(kept) == docs.num_rows - sum(len(g) - 1 for g in groups)
        kept_docs = docs.filter(pa.compute.is_in(docs.column("doc_id"), pa.array(kept)))
        assert not duplicates.duplicate_groups(kept_docs)
