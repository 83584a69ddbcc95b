"""The clean variant reuses the original's work: its search takes the original's solved
pairs (distances/wmd/reuse.py), its sample is the original's cut to the clean documents."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_search import PER_QUERY, clustered, five_folds, full_matrix, knn_tables, one_fold

from wmdeval.classification import knn
from wmdeval.cleaning.vocabulary import run_sample, select_variant
from wmdeval.core import io, schemas
from wmdeval.core.roles import candidates_key, query_roles
from wmdeval.distances.wmd import reuse, search, solver


def with_duplicates(n: int, seed: int, every: int = 6) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """A clustered corpus where every ``every``-th document repeats the one before it
    (same words and counts, as duplicates are), its embeddings, and the doc_ids of the
    clean variant (the copies dropped)."""
    docs, emb = clustered(n, seed=seed)
    rows = docs.to_pylist()
    for k in range(every, n, every):
        rows[k]["words"], rows[k]["counts"] = rows[k - 1]["words"], rows[k - 1]["counts"]
    docs = pa.Table.from_pylist(rows, schema=schemas.DOCUMENTS)
    kept = np.array([k for k in range(n) if k % every or k == 0], dtype=np.int32)
    return docs, emb, kept


def both_variants(n, seed, splits, weighting):
    """(original inputs and splits, clean inputs and splits)."""
    docs, emb, kept = with_duplicates(n, seed)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    return (
        (solver.prepare(docs, emb, weighting), splits),
        (solver.prepare(clean_docs, emb, weighting), clean_splits),
        (docs, clean_docs),
    )


@pytest.mark.parametrize("weighting, folds", [("bow", "five"), ("wrd", "five"), ("bow", "one")])
def test_reused_pairs_change_no_byte_and_save_solves(weighting, folds):
    n = 180
    splits = five_folds(n, seed=1) if folds == "five" else one_fold(n)
    (orig, orig_splits), (clean, clean_splits), (_, clean_docs) = both_variants(
        n, 5, splits, weighting
    )
    original_pairs, _ = knn_tables(orig, orig_splits, n_shards=2)
    known = reuse.known_pairs(original_pairs, clean.doc_ids, "original")
    assert len(known) > 0
    # the premise, checked pair by pair: a pair of two clean documents solved in the
    # clean variant is the original's distance, bit for bit
    n_clean = clean.n
    for pair, value in list(known.items())[::7]:
        i, j = divmod(pair, n_clean)
        assert np.float64(solver.wmd_pair(clean, i, j)).tobytes() == np.float64(value).tobytes()

    fresh = search.SearchStats()
    without = knn_tables(clean, clean_splits, stats=fresh)
    folds_ = io.fold_indices(clean_splits, clean.doc_ids)
    runs = []
    for n_shards, threads in ((1, 1), (3, 2)):
        stats = search.SearchStats()
        parts = [
            search.search_shard(clean, folds_, None, s, n_shards, threads, stats, known)
            for s in range(n_shards)
        ]
        runs.append(
            (pa.concat_tables([p for p, _ in parts]), pa.concat_tables([c for _, c in parts]))
        )
        assert stats.reused > 0
        if n_shards == 1:
            assert stats.solves < 0.5 * fresh.solves, (stats.solves, fresh.solves)
    # the same bytes whatever the shards and threads
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])
    pairs, certificates = runs[0]
    # the pairs visited with and without may differ (other potentials), their distances not
    mine, theirs = (
        {(r["query"], r["candidate"]): r["distance"] for r in table.to_pylist()}
        for table in (pairs, without[0])
    )
    both = mine.keys() & theirs.keys()
    assert len(both) > 0.8 * len(theirs)
    assert all(np.float64(mine[p]).tobytes() == np.float64(theirs[p]).tobytes() for p in both)
    assert certificates.select(["query", "candidates", "k"]).equals(
        without[1].select(["query", "candidates", "k"])
    )
    # and the scores are the same
    scores = [
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={"wmd": tables}
        ).to_pylist()
        for tables in (without, (pairs, certificates))
    ]
    assert scores[0] == scores[1]


def test_known_pairs_match_a_plain_loop_and_refuse_two_values():
    doc_ids = np.array([2, 3, 5, 8, 13], dtype=np.int32)
    rows = [(2, 3, 0.5), (3, 2, 0.5), (5, 8, 1.25), (8, 4, 9.0), (13, 2, 2.0), (7, 9, 1.0)]
    table = pa.table(
        {
            "query": pa.array([r[0] for r in rows], pa.int32()),
            "candidate": pa.array([r[1] for r in rows], pa.int32()),
            "distance": pa.array([r[2] for r in rows], pa.float64()),
        },
        schema=schemas.NEIGHBOUR_PAIRS,
    )
    expected = {}
    position = {int(d): k for k, d in enumerate(doc_ids)}
    for q, c, d in rows:
        if q in position and c in position:
            a, b = sorted((position[q], position[c]))
            expected[a * len(doc_ids) + b] = d
    known = reuse.known_pairs(table, doc_ids, "pairs.parquet")
    assert dict(known) == expected
    assert known.get(3) is None and 1 in known

    clash = pa.concat_tables(
        [table, table.slice(0, 1).set_column(2, "distance", pa.array([0.6])).cast(table.schema)]
    )
    with pytest.raises(io.WmdevalError, match="pairs.parquet: the pair of doc_ids 2 and 3"):
        reuse.known_pairs(clash, doc_ids, "pairs.parquet")


def write_variant_files(tmp_path, docs, splits, emb, name):
    paths = {
        "documents": tmp_path / f"{name}-documents.parquet",
        "splits": tmp_path / f"{name}-splits.parquet",
        "embeddings": tmp_path / "embeddings.parquet",
    }
    io.write_table(docs, paths["documents"], schemas.DOCUMENTS)
    io.write_table(splits, paths["splits"], schemas.SPLITS)
    pq.write_table(emb, paths["embeddings"])
    return paths


def test_run_search_reuses_the_files_and_refuses_changed_documents(tmp_path):
    docs, emb, kept = with_duplicates(90, 2)
    splits = five_folds(90, seed=2)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    orig = write_variant_files(tmp_path, docs, splits, emb, "original")
    clean = write_variant_files(tmp_path, clean_docs, clean_splits, emb, "clean")

    def run(paths, out, **reuse_files):
        return search.run_search(
            paths["documents"],
            paths["splits"],
            paths["embeddings"],
            "bow",
            None,
            0,
            1,
            1,
            tmp_path / f"{out}.parquet",
            tmp_path / f"{out}.certificates.parquet",
            **reuse_files,
        )

    run(orig, "original")
    fresh = run(clean, "fresh")
    files = {
        "reuse_pairs": tmp_path / "original.parquet",
        "reuse_documents": orig["documents"],
        "reuse_certificates": tmp_path / "original.certificates.parquet",
        "reuse_splits": orig["splits"],
    }
    reused = run(clean, "reused", **files)
    assert reused.solves < fresh.solves and reused.reused > 0
    tables = {
        name: search.read_neighbour_tables(
            tmp_path / f"{name}.parquet", tmp_path / f"{name}.certificates.parquet"
        )
        for name in ("fresh", "reused")
    }
    scores = [
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={"wmd": t}
        ).to_pylist()
        for t in tables.values()
    ]
    assert scores[0] == scores[1]

    # a shared doc_id whose counts differ: one line naming the file and the document
    rows = docs.to_pylist()
    rows[7]["counts"] = [c + 1 for c in rows[7]["counts"]]
    changed = tmp_path / "changed-documents.parquet"
    io.write_table(pa.Table.from_pylist(rows, schema=schemas.DOCUMENTS), changed, schemas.DOCUMENTS)
    with pytest.raises(
        io.WmdevalError, match=r"changed-documents.parquet: doc_id 7 has other counts"
    ):
        run(clean, "bad", **dict(files, reuse_documents=changed))
    assert not (tmp_path / "bad.parquet").exists()
    with pytest.raises(io.WmdevalError, match="needs all of --reuse-pairs"):
        run(clean, "bad", reuse_pairs=tmp_path / "original.parquet")


def test_the_clean_sample_is_the_original_sample_cut_to_the_clean_documents(tmp_path):
    docs, emb, kept = with_duplicates(120, 3, every=4)
    splits = five_folds(120, seed=3)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    orig = write_variant_files(tmp_path, docs, splits, emb, "original")
    clean = write_variant_files(tmp_path, clean_docs, clean_splits, emb, "clean")
    out = {
        name: (tmp_path / f"{name}-s-docs.parquet", tmp_path / f"{name}-s-splits.parquet")
        for name in ("original", "clean")
    }
    run_sample(orig["documents"], orig["splits"], 40, 0, *out["original"])
    run_sample(
        clean["documents"], clean["splits"], 40, 0, *out["clean"], within_path=out["original"][0]
    )
    original_ids = io.read_documents(out["original"][0]).column("doc_id").to_pylist()
    clean_ids = io.read_documents(out["clean"][0]).column("doc_id").to_pylist()
    assert len(original_ids) == 40
    assert clean_ids == sorted(set(original_ids) & set(kept.tolist()))
    assert len(clean_ids) < 40  # some of the sample were duplicates
    sample_splits = io.read_splits(out["clean"][1])
    assert set(sample_splits.column("doc_id").to_pylist()) == set(clean_ids)
    # the sample's splits are the clean splits' rows of those documents
    wanted = clean_splits.filter(
        pa.compute.is_in(clean_splits.column("doc_id"), pa.array(clean_ids))
    )
    assert sample_splits.equals(wanted.cast(schemas.SPLITS))


# ------------------------------------------------------------------- the original's certificates


def floors_of(orig, orig_splits, orig_certificates, clean, clean_splits, settings=None):
    """The clean queries' floors from the original's certificates (what read_floors does
    from the files)."""
    return reuse.certificate_floors(
        clean.doc_ids,
        clean.empty,
        query_roles(io.fold_indices(clean_splits, clean.doc_ids), clean.empty, settings),
        orig.doc_ids,
        orig.empty,
        query_roles(io.fold_indices(orig_splits, orig.doc_ids), orig.empty, settings),
        orig_certificates,
        "original.certificates.parquet",
    )


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_certificates_settle_lists_without_changing_a_byte(weighting):
    n = 180
    splits = five_folds(n, seed=1)
    (orig, orig_splits), (clean, clean_splits), (docs, clean_docs) = both_variants(
        n, 5, splits, weighting
    )
    original_pairs, original_certificates = knn_tables(orig, orig_splits, n_shards=2)
    known = reuse.known_pairs(original_pairs, clean.doc_ids, "original")
    floors = floors_of(orig, orig_splits, original_certificates, clean, clean_splits)
    folds_ = io.fold_indices(clean_splits, clean.doc_ids)
    roles = query_roles(folds_, clean.empty, None)
    test_keys = {candidates_key(r.candidates) for r in roles if r.name == "test"}
    # every test list of the clean variant is its fold's original training list less the
    # copies; the validation lists are drawn from the clean training lists, so most are
    # not within an original list: no floor
    assert {key for _, key in floors} >= test_keys
    assert any(candidates_key(r.candidates) not in {k for _, k in floors} for r in roles)

    # a dropped copy is among the original top k of some query (the fallback must run)
    dropped = np.setdiff1d(orig.doc_ids, clean.doc_ids)
    assert np.isin(original_pairs.column("candidate").to_numpy(), dropped).any()

    plain = search.SearchStats()
    without = search.search_shard(clean, folds_, None, 0, 1, 1, plain, known)
    runs = []
    for n_shards, threads in ((1, 1), (3, 2)):
        stats = search.SearchStats()
        parts = [
            search.search_shard(clean, folds_, None, s, n_shards, threads, stats, known, floors)
            for s in range(n_shards)
        ]
        runs.append(
            (pa.concat_tables([p for p, _ in parts]), pa.concat_tables([c for _, c in parts]))
        )
        # some lists are settled by their floor, some fall back to the search, whose
        # candidates the original left unsolved start at their certificates' bounds
        assert 0 < stats.floored < len(floors), (stats.floored, len(floors))
        assert stats.floored_candidates > 0
        if n_shards == 1:
            # fewer bounds, and no more solves (the dual ascent leaves few to save: with
            # bow weights here, none)
            assert stats.solves <= plain.solves, (stats.solves, plain.solves)
            assert stats.tight + stats.duals < plain.tight + plain.duals
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])
    pairs, certificates = runs[0]
    search.check_complete(pairs, certificates, clean.doc_ids, "clean")
    assert certificates.select(["query", "candidates", "k"]).equals(
        without[1].select(["query", "candidates", "k"])
    )
    # the certificates hold: every candidate not among the pairs is at least the bound
    exact = full_matrix(clean, clean_splits)
    held = {(r["query"], r["candidate"]) for r in pairs.to_pylist()}
    position = {int(d): k for k, d in enumerate(clean.doc_ids)}
    by_key = {candidates_key(r.candidates): r.candidates for r in roles}
    for row in certificates.to_pylist():
        q = position[row["query"]]
        for c in by_key[row["candidates"]].tolist():
            if (row["query"], int(clean.doc_ids[c])) not in held and np.isfinite(exact[q, c]):
                assert exact[q, c] >= row["unsolved_bound"] * (1 - 1e-9)
    # the same scores as without the certificates and as the full mode's matrix
    slug = "wmd" if weighting == "bow" else "wrd"
    scores = [
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={slug: tables}
        ).to_pylist()
        for tables in (without, (pairs, certificates))
    ]
    full = knn.evaluate_dataset(
        clean_docs, clean_splits, {slug: (clean.doc_ids, exact)}, None, "t", "clean"
    ).to_pylist()
    assert scores[0] == scores[1] == full

    # the candidate floors alone (no list settled): fewer bounds than the pairs alone,
    # certificates that hold, the same scores
    alone_stats = search.SearchStats()
    alone = search.search_shard(
        clean, folds_, None, 0, 1, 1, alone_stats, known, reuse.Floors({}, floors.candidates)
    )
    assert alone_stats.floored == 0 and alone_stats.floored_candidates > 0
    # (its solves: within a few of the pairs alone's, either side: a raised bound changes
    # the visiting order, so the query's potentials, so the candidates its ascent proves)
    assert alone_stats.solves <= plain.solves * 1.01, (alone_stats.solves, plain.solves)
    assert alone_stats.tight + alone_stats.duals < plain.tight + plain.duals
    search.check_complete(*alone, clean.doc_ids, "clean")
    held = {(r["query"], r["candidate"]) for r in alone[0].to_pylist()}
    for row in alone[1].to_pylist():
        q = position[row["query"]]
        for c in by_key[row["candidates"]].tolist():
            if (row["query"], int(clean.doc_ids[c])) not in held and np.isfinite(exact[q, c]):
                assert exact[q, c] >= row["unsolved_bound"] * (1 - 1e-9)
    assert (
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={slug: alone}
        ).to_pylist()
        == full
    )


def test_workers_change_no_byte_of_a_search_with_reuse():
    # the clean variant's search with the original's pairs and certificates (`known`,
    # `floors`, the candidate floors): a query settled by its floors, or searched from
    # raised bounds, takes only its own known distances, so 1, 2 and 3 worker processes
    # give the same bytes and the same per-query counts
    n = 180
    splits = five_folds(n, seed=1)
    (orig, orig_splits), (clean, clean_splits), _ = both_variants(n, 5, splits, "bow")
    original_pairs, original_certificates = knn_tables(orig, orig_splits)
    known = reuse.known_pairs(original_pairs, clean.doc_ids, "original")
    floors = floors_of(orig, orig_splits, original_certificates, clean, clean_splits)
    folds_ = io.fold_indices(clean_splits, clean.doc_ids)
    runs = {}
    for workers in (1, 2, 3):
        stats = search.SearchStats()
        tables = search.search_shard(clean, folds_, None, 0, 1, workers, stats, known, floors)
        runs[workers] = (tables, stats)
    one_tables, one = runs[1]
    assert one.floored > 0 and one.floored_candidates > 0 and one.reused > 0
    for workers in (2, 3):
        tables, stats = runs[workers]
        assert all(t.equals(u) for t, u in zip(tables, one_tables, strict=True))
        assert stats.solves == one.solves + stats.duplicates
        for name in PER_QUERY:
            assert getattr(stats, name) == getattr(one, name), name


def test_queries_their_floors_settle_get_no_bounds(monkeypatch):
    n = 180
    splits = five_folds(n, seed=1)
    (orig, orig_splits), (clean, clean_splits), _ = both_variants(n, 5, splits, "bow")
    original_pairs, original_certificates = knn_tables(orig, orig_splits, n_shards=1)
    known = reuse.known_pairs(original_pairs, clean.doc_ids, "original")
    floors = floors_of(orig, orig_splits, original_certificates, clean, clean_splits)
    roles = query_roles(io.fold_indices(clean_splits, clean.doc_ids), clean.empty, None)
    queries = np.unique(np.concatenate([role.queries for role in roles]))
    tasks = search.query_tasks(roles, clean.empty, queries)
    settled = search.settled_lists(clean, tasks, known, floors)
    assert 0 < len(settled) < len(tasks)

    built = []
    bounds_of = search.LowerBounds

    def recording(inputs, rows, *args, **kwargs):
        built.append(np.asarray(rows).copy())
        return bounds_of(inputs, rows, *args, **kwargs)

    monkeypatch.setattr(search, "LowerBounds", recording)
    stats = search.SearchStats()
    pairs, certificates = search.search_queries(clean, tasks, 2, stats, known, floors)
    assert set(built[0].tolist()) == set(tasks) - set(settled)
    assert stats.floored >= sum(len(tasks[q]) for q in settled)
    # the same tables as when every query gets its bounds
    monkeypatch.setattr(search, "settled_lists", lambda *args: {})
    again = search.search_queries(clean, tasks, 2, None, known, floors)
    assert len(built[1]) == len(tasks)
    assert pairs.equals(again[0]) and certificates.equals(again[1])


def certificate_table(rows):
    return pa.table(
        {
            "query": pa.array([r[0] for r in rows], pa.int32()),
            "candidates": pa.array([r[1] for r in rows], pa.string()),
            "k": pa.array([r[2] for r in rows], pa.int32()),
            "unsolved_bound": pa.array([r[3] for r in rows], pa.float64()),
        },
        schema=schemas.NEIGHBOUR_CERTIFICATES,
    )


def test_a_floor_needs_a_superset_list_and_a_large_enough_k():
    from wmdeval.core.roles import QueryRole

    ids = np.array([10, 11, 12, 13, 14, 15], dtype=np.int32)
    none_empty = np.zeros(6, dtype=bool)
    # original lists over positions of `ids`: A = {11..15}, B = {12, 13}
    big, small = np.array([1, 2, 3, 4, 5]), np.array([2, 3])
    orig_roles = [
        QueryRole(0, "test", np.array([0]), big, 3),
        QueryRole(0, "knn-validation", np.array([0]), small, 2),
    ]
    certs = certificate_table(
        [(10, candidates_key(big), 3, 2.5), (10, candidates_key(small), 2, 4.0)]
    )
    # the clean variant lacks doc_id 14: its lists over its own positions
    clean_ids = np.array([10, 11, 12, 13, 15], dtype=np.int32)
    within = np.array([1, 2, 4])  # {11, 12, 15}: within A only
    pair = np.array([2, 3])  # {12, 13}: within A and B
    outside_k = np.array([2, 3])
    roles = [
        QueryRole(0, "test", np.array([0]), within, 3),
        QueryRole(1, "test", np.array([0]), pair, 2),
    ]
    floors = reuse.certificate_floors(
        clean_ids, np.zeros(5, dtype=bool), roles, ids, none_empty, orig_roles, certs, "c"
    )
    assert floors == {(0, candidates_key(within)): 2.5, (0, candidates_key(pair)): 4.0}
    # single pairs: a certificate bounds its list's members as candidates of its
    # document (over the clean positions; doc_id 10, the query, is in neither list)...
    single = floors.candidates
    assert single.by_query == {0: [(candidates_key(big), 2.5), (candidates_key(small), 4.0)]}
    assert single.row(0, 5).tolist() == [-np.inf, 2.5, 4.0, 4.0, 2.5]
    # ... and its document as a candidate of each member (WMD is symmetric): doc_id 11
    # is in A, doc_id 12 in A and B
    inf = np.inf
    assert single.row(1, 5).tolist() == [2.5, -inf, -inf, -inf, -inf]
    assert single.row(2, 5).tolist() == [4.0, -inf, -inf, -inf, -inf]
    # a document certified on a list that holds it is never bounded against itself
    looped = reuse.CandidateFloors(
        {"L": np.ones(3, dtype=bool)}, {1: [("L", 2.0)]}, {"L": (np.array([1]), np.array([2.0]))}
    )
    assert looped.row(1, 3).tolist() == [2.0, -inf, 2.0]
    assert reuse.CandidateFloors({}, {}).row(0, 3) is None
    # a larger k than B's: only A's bound; a list outside every original list: none
    roles = [
        QueryRole(0, "test", np.array([0]), outside_k, 3),
        QueryRole(0, "test", np.array([0]), np.array([0, 1]), 1),  # holds the query itself
    ]
    floors = reuse.certificate_floors(
        clean_ids, np.zeros(5, dtype=bool), roles, ids, none_empty, orig_roles, certs, "c"
    )
    assert floors == {(0, candidates_key(outside_k)): 2.5}
    # a certificate for a list the original's roles do not give: refused
    bad = certificate_table([(10, candidates_key(np.array([1, 2])), 3, 1.0)])
    with pytest.raises(io.WmdevalError, match=r"^orig.parquet: the certificate of doc_id 10"):
        reuse.certificate_floors(
            clean_ids,
            np.zeros(5, dtype=bool),
            roles,
            ids,
            none_empty,
            orig_roles,
            bad,
            "orig.parquet",
        )


def test_run_search_takes_the_certificates_and_refuses_mismatched_ones(tmp_path):
    docs, emb, kept = with_duplicates(90, 2)
    splits = five_folds(90, seed=2)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    orig = write_variant_files(tmp_path, docs, splits, emb, "original")
    clean = write_variant_files(tmp_path, clean_docs, clean_splits, emb, "clean")

    def run(paths, out, settings=None, **reuse_files):
        return search.run_search(
            paths["documents"],
            paths["splits"],
            paths["embeddings"],
            "bow",
            settings,
            0,
            1,
            1,
            tmp_path / f"{out}.parquet",
            tmp_path / f"{out}.certificates.parquet",
            **reuse_files,
        )

    files = {
        "reuse_pairs": tmp_path / "original.parquet",
        "reuse_documents": orig["documents"],
        "reuse_certificates": tmp_path / "original.certificates.parquet",
        "reuse_splits": orig["splits"],
    }
    run(orig, "original")
    fresh = run(clean, "fresh")
    floored = run(clean, "floored", **files)
    assert floored.floored > 0 and floored.solves < fresh.solves
    tables = [
        search.read_neighbour_tables(
            tmp_path / f"{name}.parquet", tmp_path / f"{name}.certificates.parquet"
        )
        for name in ("fresh", "floored")
    ]
    scores = [
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={"wmd": t}
        ).to_pylist()
        for t in tables
    ]
    assert scores[0] == scores[1]

    # certificates of a search under other settings (other lists): one line naming them
    other = {"knn": {"seed": 7}, "wknn": {"seed": 8}}
    run(orig, "other", settings=other)
    mismatched = dict(files, reuse_certificates=tmp_path / "other.certificates.parquet")
    with pytest.raises(
        io.WmdevalError, match=r"other.certificates.parquet: the certificate of doc_id \d+ names"
    ):
        run(clean, "bad", **mismatched)
    # not a certificates file, or some of the four files without the others
    with pytest.raises(io.WmdevalError, match=r"original.parquet: missing column\(s\)"):
        run(clean, "bad", **dict(files, reuse_certificates=tmp_path / "original.parquet"))
    with pytest.raises(io.WmdevalError, match="needs all of --reuse-pairs"):
        run(clean, "bad", reuse_pairs=files["reuse_pairs"], reuse_documents=orig["documents"])
    # TF-IDF's distances (and bounds) depend on the corpus: its certificates do not carry
    inputs = solver.prepare(clean_docs, emb, "tfidf")
    with pytest.raises(io.WmdevalError, match="TF-IDF weights depend on the corpus"):
        reuse.read_floors(
            files["reuse_certificates"],
            orig["splits"],
            orig["documents"],
            inputs,
            io.fold_indices(clean_splits, inputs.doc_ids),
            None,
            emb,
            "tfidf",
        )
    assert not (tmp_path / "bad.parquet").exists()


def test_rwmd_lists_of_a_reusing_search_cover_its_settled_queries(tmp_path):
    """The clean variant's WMD search settles most lists from the original's certificates
    without bounds; listing RWMD too, it bounds those queries as well: RWMD's lists score
    as the clean variant's dense RWMD matrix, and WMD's tables are the same as without."""
    from wmdeval.distances import embedding

    docs, emb, kept = with_duplicates(90, 2)
    splits = five_folds(90, seed=2)
    clean_docs, clean_splits = select_variant(docs, splits, kept)
    orig = write_variant_files(tmp_path, docs, splits, emb, "original")
    clean = write_variant_files(tmp_path, clean_docs, clean_splits, emb, "clean")
    common = (clean["documents"], clean["splits"], clean["embeddings"], "bow", None, 0, 1, 1)
    search.run_search(
        orig["documents"],
        orig["splits"],
        orig["embeddings"],
        "bow",
        None,
        0,
        1,
        1,
        tmp_path / "original.parquet",
        tmp_path / "original.certificates.parquet",
    )
    files = {
        "reuse_pairs": tmp_path / "original.parquet",
        "reuse_documents": orig["documents"],
        "reuse_certificates": tmp_path / "original.certificates.parquet",
        "reuse_splits": orig["splits"],
    }
    plain = search.run_search(
        *common, tmp_path / "plain.parquet", tmp_path / "plain.certificates.parquet", **files
    )
    assert plain.floored > 0  # lists the original's certificates settle
    listed = search.run_search(
        *common,
        tmp_path / "wmd.parquet",
        tmp_path / "wmd.certificates.parquet",
        **files,
        out_relaxed_pairs=tmp_path / "rwmd.parquet",
        out_relaxed_certificates=tmp_path / "rwmd.certificates.parquet",
    )
    assert listed.floored == plain.floored and listed.solves == plain.solves
    for name in ("parquet", "certificates.parquet"):
        assert (tmp_path / f"wmd.{name}").read_bytes() == (tmp_path / f"plain.{name}").read_bytes()
    inputs = solver.prepare(clean_docs, emb, "bow")
    doc_ids = clean_docs.column("doc_id").to_numpy()
    dense = embedding.relaxed_wmd_matrix(inputs)
    want = knn.evaluate_dataset(
        clean_docs, clean_splits, {"rwmd": (doc_ids, dense)}, None, "t", "clean"
    )
    tables = search.read_neighbour_tables(
        tmp_path / "rwmd.parquet", tmp_path / "rwmd.certificates.parquet"
    )
    got = knn.evaluate_dataset(
        clean_docs, clean_splits, {}, None, "t", "clean", neighbour_tables={"rwmd": tables}
    )
    assert got.to_pylist() == want.to_pylist()

    # RWMD is on the bag of words, and its two files go together: one line each
    with pytest.raises(io.WmdevalError, match="expected --weighting bow, got 'tfidf'"):
        search.run_search(
            *common[:3],
            "tfidf",
            *common[4:],
            tmp_path / "x.parquet",
            tmp_path / "x.certificates.parquet",
            out_relaxed_pairs=tmp_path / "x.rwmd.parquet",
            out_relaxed_certificates=tmp_path / "x.rwmd.certificates.parquet",
        )
    with pytest.raises(io.WmdevalError, match="go together"):
        search.run_search(
            *common,
            tmp_path / "x.parquet",
            tmp_path / "x.certificates.parquet",
            out_relaxed_pairs=tmp_path / "x.rwmd.parquet",
        )
    assert not list(tmp_path.glob("x.*"))
