"""The paper's scale, rehearsed: does every job fit the memory and time it declares?

Writes a stand-in Kusner-layout ``.mat`` file for each paper dataset (docs/protocol.md
§2.1): its documents, its train/test layout (five fixed splits, or one fold), its classes,
its vocabulary size, its distinct words per document, and a 300-d unit vector per word
(float64, as MATLAB stores them; one vector per word, the same in every document, with the
word strings). Where real text of that corpus and size is in ``../shared/data``
(``--data``), the documents are real: 20news from ``20news_bydate.tsv`` (its own
train/test division), amazon from ``amazon_reviews.tsv``, tokenised like the workflow
(letters a-z, Kusner's 115 stop words, at most 500 tokens per post as Kusner's 20news
file), the vocabulary cut to the paper's size by frequency and each document to its
first words so that their mean is the paper's. The others are
generated: words drawn from a Zipf law over the paper's vocabulary, distinct words per
document Poisson around the paper's mean. The script says which is which.

Then it runs the workflow on them as a user would (``snakemake -s <repo>/Snakefile`` in
``--workdir``, with config/paper.yaml's settings and only these ``.mat`` datasets, so no
``embeddings:``), every stage at full size except exact transport solves: with
``--solve-sample K`` (default 1) only K of each method's stored work units are solved
(neighbour-search shards in knn mode, blocks in full mode, out of ``--units``), and the
jobs that need all of them (gathers, neighbour tables, evaluate and what follows) are not
run and are listed; the analyses' sample matrices are solved whole, at
``--sample-documents`` documents. ``--solve-sample 0`` runs everything (for a small
``--scale``).

Each job's peak RSS and wall time come from its Snakemake ``benchmark:`` file; its declared
``mem_mb`` and ``runtime`` from the runs' logs in ``.snakemake/log`` (as evaluated when the
job started). Rerun with the same options, it keeps its stand-in files and the workflow
resumes where it stopped. Prints,
per job kind, the jobs run, declared mem_mb against the measured peak, and declared runtime
against the measured time, flagging a peak above its declaration (``OVER``) and a job above
1 GB whose peak is under 40 % of its declaration (``2.5x+``).

    python benchmarks/paper_scale.py [--scale 1.0] [--datasets 20news ...] [--cores 2]
        [--solve-sample 1] [--units 64] [--sample-documents 1000] [--workdir DIR]
        [--until RULE ...] [--forcerun RULE ...]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from scipy.io import savemat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DIM = 300
#: Kusner's 20news file kept at most this many tokens per post.
MAX_TOKENS = 500


class Corpus:
    """One paper dataset's shape (docs/protocol.md §2.1)."""

    def __init__(self, name, documents, train, test, vocabulary, words, classes, layout):
        self.name, self.documents, self.train, self.test = name, documents, train, test
        self.vocabulary, self.words, self.classes, self.layout = vocabulary, words, classes, layout


PAPER = {
    c.name: c
    for c in (
        Corpus("bbcsport", 737, 517, 220, 13243, 116.5, 5, "five-fold"),
        Corpus("twitter", 3108, 2176, 932, 6344, 9.9, 3, "five-fold"),
        Corpus("recipe", 4370, 3059, 1311, 5708, 48.3, 15, "five-fold"),
        Corpus("ohsumed", 9152, 3999, 5153, 31789, 60.2, 10, "one-fold"),
        Corpus("classic", 7093, 4965, 2128, 24277, 38.7, 4, "five-fold"),
        Corpus("reuters", 7674, 5485, 2189, 22425, 36.0, 8, "one-fold"),
        Corpus("amazon", 8000, 5600, 2400, 42063, 44.6, 4, "five-fold"),
        Corpus("20news", 18821, 11293, 7528, 29671, 69.3, 20, "one-fold"),
    )
}
#: Real text in --data: file, and whether it carries its own train/test split.
REAL_TEXT = {"20news": "20news_bydate.tsv", "amazon": "amazon_reviews.tsv"}


# ----------------------------------------------------------------------------- documents
def scaled(corpus: Corpus, scale: float) -> Corpus:
    """The corpus at ``scale`` of its documents (train and test alike)."""
    if scale == 1.0:
        return corpus
    train, test = max(5, round(corpus.train * scale)), max(5, round(corpus.test * scale))
    documents = train + test if corpus.layout == "one-fold" else round(corpus.documents * scale)
    if corpus.layout == "five-fold":
        test = max(5, round(documents * corpus.test / corpus.documents))
        train = documents - test
    return Corpus(
        corpus.name,
        documents,
        train,
        test,
        corpus.vocabulary,
        corpus.words,
        corpus.classes,
        corpus.layout,
    )


def stopwords() -> frozenset[str]:
    path = REPO / "workflow" / "wmdeval" / "data" / "stopwords" / "kusner115.txt"
    return frozenset(path.read_text().split())


def real_documents(corpus: Corpus, path: Path, rng) -> tuple[list[dict], list[str], list[str]]:
    """(bags, labels, subsets) of the corpus's documents from a real table: train rows
    first then test rows (its own split, else a seeded division), the vocabulary cut to
    the paper's size by frequency."""
    letters, stop = re.compile(r"[a-z]+"), stopwords()
    csv.field_size_limit(1 << 30)
    with open(path, newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    if rows and rows[0].get("split") in ("train", "test"):
        parts = {s: [r for r in rows if r["split"] == s] for s in ("train", "test")}
    else:
        order = rng.permutation(len(rows))
        parts = {"train": [rows[i] for i in order[corpus.test :]], "test": []}
        parts["test"] = [rows[i] for i in order[: corpus.test]]
    # a seeded subset of each part, in file order (the files are sorted by label: the
    # first rows would be one class)
    chosen = []
    for part, wanted in (("train", corpus.train), ("test", corpus.test)):
        keep = np.sort(rng.permutation(len(parts[part]))[:wanted])
        chosen += [parts[part][i] for i in keep]
    subsets = ["train"] * min(corpus.train, len(parts["train"]))
    subsets += ["test"] * (len(chosen) - len(subsets))
    tokens = [
        [t for t in letters.findall(r["text"].lower()) if t not in stop][:MAX_TOKENS]
        for r in chosen
    ]
    frequency = collections.Counter(t for doc in tokens for t in set(doc))
    kept = {w for w, _ in frequency.most_common(corpus.vocabulary)}
    bags = [collections.Counter(t for t in doc if t in kept) for doc in tokens]
    # Kusner's files hold only words of the GoogleNews vocabulary, fewer per document than
    # the posts' own: keep each document's first words, in the same share for all, so that
    # the mean matches the paper's
    share = min(1.0, corpus.words / max(np.mean([len(b) for b in bags]), 1e-9))
    bags = [dict(list(bag.items())[: max(1, round(share * len(bag)))]) for bag in bags]
    return bags, [r["label"] for r in chosen], subsets


def generated_documents(corpus: Corpus, rng) -> tuple[list[dict], list[str], list[str]]:
    """(bags, labels, subsets): Zipf words over the paper's vocabulary, Poisson sizes."""
    weights = 1.0 / np.arange(1, corpus.vocabulary + 1)
    cumulative = np.cumsum(weights) / weights.sum()
    bags = []
    for _ in range(corpus.documents):
        size = max(1, int(rng.poisson(corpus.words)))
        draws = np.searchsorted(cumulative, rng.random(4 * size + 8))
        distinct = list(dict.fromkeys(draws.tolist()))[:size]
        bags.append({f"w{w}": int(rng.geometric(0.6)) for w in distinct})
    labels = [f"c{k % corpus.classes}" for k in range(corpus.documents)]
    subsets = ["train"] * corpus.train + ["test"] * (corpus.documents - corpus.train)
    return bags, labels, subsets


def cells(items: list) -> np.ndarray:
    out = np.empty((1, len(items)), dtype=object)
    for k, item in enumerate(items):
        out[0, k] = item
    return out


def write_mat(corpus: Corpus, bags, labels, subsets, path: Path, rng) -> dict:
    """The Kusner layout of these documents; the file's statistics."""
    vocabulary = sorted({w for bag in bags for w in bag})
    vectors = rng.standard_normal((len(vocabulary), DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {w: k for k, w in enumerate(vocabulary)}
    names = sorted(set(labels))
    codes = np.array([[names.index(label) + 1 for label in labels]], dtype=np.float64)

    def fields(docs: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = cells([vectors[[index[w] for w in bags[d]]].T for d in docs])
        bow = cells([np.array([list(bags[d].values())], dtype=np.float64) for d in docs])
        words = cells([cells([np.array([w]) for w in bags[d]]) for d in docs])
        return x, bow, words

    all_docs = list(range(len(bags)))
    if corpus.layout == "five-fold":
        x, bow, words = fields(all_docs)
        n, n_test = len(bags), corpus.documents - corpus.train
        tests = [np.sort(rng.permutation(n)[:n_test]) + 1 for _ in range(5)]
        trains = [np.setdiff1d(np.arange(1, n + 1), t) for t in tests]
        content = {"X": x, "BOW_X": bow, "words": words, "Y": codes}
        content |= {"TR": np.array(trains, np.float64), "TE": np.array(tests, np.float64)}
    else:
        content = {}
        for part, subset in (("tr", "train"), ("te", "test")):
            docs = [d for d in all_docs if subsets[d] == subset]
            x, bow, words = fields(docs)
            content |= {f"x{part}": x, f"BOW_x{part}": bow, f"words_{part}": words}
            content[f"y{part}"] = codes[:, docs]
    savemat(path, content)
    sizes = [len(bag) for bag in bags]
    return {
        "documents": len(bags),
        "vocabulary": len(vocabulary),
        "words_per_document": float(np.mean(sizes)) if sizes else 0.0,
        "mb": path.stat().st_size / 1e6,
    }


# ------------------------------------------------------------------------------ the run
def run_config(names: list[str], args) -> dict:
    """config/paper.yaml's settings with the stand-in .mat files as its only datasets."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    config["datasets"] = {n: {"format": "kusner-mat", "path": f"mats/{n}.mat"} for n in names}
    del config["embeddings"]  # the .mat files carry their vectors
    config["run"] = names
    config["wmd"] |= {
        "blocks": args.units,
        "search_shards": args.units,
        "threads": args.threads,
        "sample_documents": args.sample_documents,
        # at a smaller --scale, each dataset keeps the mode it gets at the paper's size
        "auto_min_documents": max(
            2, round(config["wmd"].get("auto_min_documents", 2000) * args.scale)
        ),
    }
    return config


def snakemake(workdir: Path, args, *targets: str, extra: tuple[str, ...] = ()) -> str:
    """Run the workflow in ``workdir``; its log (stderr). Stops the script on failure."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "--cores",
        str(args.cores),
        "--configfile",
        "paper_scale.yaml",
        *extra,
        "--",
        *targets,
    ]
    print("$ " + " ".join(command[2:]), flush=True)
    run = subprocess.run(command, cwd=workdir, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"paper_scale: the workflow failed:\n{run.stderr[-4000:]}")
    return run.stderr


def solve_targets(workdir: Path, config: dict, args) -> list[str]:
    """The first --solve-sample work units of every transport method of every variant."""
    plan = snakemake(workdir, args, "all", extra=("-n", "--quiet", "rules"))
    modes = dict(re.findall(r"(\S+?)=(full|knn) \(", plan.split("WMD mode per dataset:")[1]))
    methods = ["wmd", "wmd-tfidf", "wrd", *(f"wmd-pca{d}" for d in config["pca_dims"])]
    units = [f"{k}-of-{args.units}" for k in range(1, args.solve_sample + 1)]
    targets = []
    for dataset, mode in modes.items():
        for variant in config["variants"]:
            for method in methods:
                if mode == "full" and variant == "clean" and method != "wmd-tfidf":
                    continue  # a sub-matrix of the original's (wmd_subset), never solved
                kind = "neighbour_shards" if mode == "knn" else "wmd_blocks"
                root = f"results/{dataset}/{variant}/{kind}/{method}"
                targets += [f"{root}/{unit}.parquet" for unit in units]
    return targets


def evaluate_arguments(
    root: str, matrices: dict[str, str], settings: str, dataset: str, variant: str, out: str
) -> list[str]:
    """``wmdeval evaluate``'s arguments as the rule passes them: the variant's documents
    and splits in ``root``, the methods' matrices ({slug: path}), the evaluation settings
    (JSON), scores and predictions into ``out``."""
    return [
        "evaluate",
        "--documents",
        f"{root}/documents.parquet",
        "--splits",
        f"{root}/splits.parquet",
        "--wmd",
        json.dumps(matrices),
        "--settings",
        settings,
        "--dataset",
        dataset,
        "--variant",
        variant,
        "--out",
        f"{out}/scores.parquet",
        "--out-predictions",
        f"{out}/predictions.parquet",
    ]


def evaluate_without_solves(workdir: Path, config: dict, args) -> list[tuple]:
    """``evaluate`` at full size without the transport methods' neighbour tables or
    matrices (they need every solve): the 12 baselines and the dense methods' matrices,
    run as the rule runs it (``wmdeval evaluate``), timed by /usr/bin/time. Its
    declaration is the rule's, from :func:`wmdeval.planning.resources.evaluate_mem_mb`.
    Returns (mem_mb, peak MB, runtime min, seconds) per variant."""
    from wmdeval.core.config import defaults
    from wmdeval.planning.resources import evaluate_mem_mb

    settings = json.dumps(config.get("evaluation") or defaults("evaluation"), sort_keys=True)
    dense = ["wcd", "rwmd", "cosine-mean"]
    jobs = []
    for dataset in config["run"]:
        for variant in config["variants"]:
            root = f"results/{dataset}/{variant}"
            matrices = {slug: f"{root}/distances/{slug}.parquet" for slug in dense}
            # knn mode: RWMD's lists come from WMD's search (not run here), no matrix
            matrices = {
                slug: path
                for slug, path in matrices.items()
                if slug != "rwmd" or (workdir / path).exists()
            }
            if not all((workdir / path).exists() for path in matrices.values()):
                continue
            out = f"rehearsal/{dataset}/{variant}"
            command = ["/usr/bin/time", "-f", "%M %e", "wmdeval"]
            command += evaluate_arguments(root, matrices, settings, dataset, variant, out)
            print(f"$ wmdeval evaluate ({dataset}/{variant}: baselines, {', '.join(matrices)})")
            run = subprocess.run(command, cwd=workdir, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"paper_scale: evaluate failed:\n{run.stderr[-4000:]}")
            kilobytes, seconds = run.stderr.strip().splitlines()[-1].split()
            declared_mb = evaluate_mem_mb(workdir / f"{root}/documents.parquet")
            # runtime: the rule's 60 minutes
            jobs.append((declared_mb, float(kilobytes) / 1000, 60.0, float(seconds)))
    return jobs


def declared(log: str) -> dict[str, tuple[str, dict[str, str]]]:
    """benchmark file -> (rule, resources) of every job the log started."""
    found, rule, bench = {}, None, None
    for line in log.splitlines():
        if m := re.match(r"^(?:local)?rule (\S+):$", line):
            rule, bench = m.group(1), None
        elif m := re.match(r"^\s+benchmark: (\S+)$", line):
            bench = m.group(1)
        elif (m := re.match(r"^\s+resources: (.+)$", line)) and rule and bench:
            values = dict(item.split("=", 1) for item in m.group(1).split(", ") if "=" in item)
            found[bench] = (rule, values)
    return found


def measured(path: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a Snakemake benchmark file."""
    with path.open() as stream:
        row = next(csv.DictReader(stream, delimiter="\t"))
    rss = float(row["max_rss"]) if row["max_rss"] not in ("", "-", "NA") else float("nan")
    return float(row["s"]), rss


def report(workdir: Path, log: str, extra: dict[str, list[tuple]] | None = None) -> list[str]:
    """The table per job kind; its lines. ``extra``: job kind -> (declared mem_mb, peak
    MB, declared runtime min, seconds) of jobs run outside Snakemake."""
    kinds = collections.defaultdict(list, {k: list(v) for k, v in (extra or {}).items()})
    for bench, (rule, resources) in declared(log).items():
        path = workdir / bench
        if path.exists():
            seconds, rss = measured(path)
            mem = float(resources.get("mem_mb", "nan"))
            runtime = float(resources.get("runtime", "nan"))
            kinds[rule].append((mem, rss, runtime, seconds))
    lines = [
        "| job | jobs | declared mem_mb | peak RSS MB (max) | peak / declared | "
        "declared runtime min | measured min (max) | flag |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rule, jobs in sorted(kinds.items()):
        # the job of the kind that comes closest to its declaration, and the largest
        worst = max(jobs, key=lambda j: j[1] / j[0])
        peak = max(j[1] for j in jobs)
        flags = []
        if any(j[1] > j[0] for j in jobs):
            flags.append("OVER")
        if any(j[1] > 1000 and j[1] < 0.4 * j[0] for j in jobs):
            flags.append("2.5x+")
        if any(j[3] / 60 > j[2] for j in jobs):
            flags.append("SLOW")
        lines.append(
            f"| {rule} | {len(jobs)} | {max(j[0] for j in jobs):,.0f} | {peak:,.0f} | "
            f"{worst[1] / worst[0]:.0%} | {max(j[2] for j in jobs):,.0f} | "
            f"{max(j[3] for j in jobs) / 60:,.1f} | {' '.join(flags)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of each corpus's documents")
    parser.add_argument("--datasets", nargs="+", default=list(PAPER), choices=list(PAPER))
    parser.add_argument("--data", type=Path, default=DATA, help="real text (../shared/data)")
    parser.add_argument("--workdir", type=Path, default=Path("paper-scale"))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="wmd.threads")
    parser.add_argument("--units", type=int, default=64, help="wmd.blocks and search_shards")
    parser.add_argument("--solve-sample", type=int, default=1, help="units solved; 0: all")
    parser.add_argument("--sample-documents", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--until",
        nargs="+",
        metavar="RULE",
        help="run only these rules and those before them (e.g. duplicates filter_oov for "
        "the cheap stages at the paper's size)",
    )
    parser.add_argument(
        "--forcerun",
        nargs="+",
        default=[],
        metavar="RULE",
        help="run these rules' jobs again (and what follows them), e.g. to measure a job "
        "kind again after a fix; the table keeps each job's latest run",
    )
    record.add_argument(parser, "paper_scale")
    args = parser.parse_args()

    workdir = args.workdir.resolve()
    (workdir / "mats").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    corpora = {}
    print(f"paper_scale: scale {args.scale}, {DIM}-d unit vectors, workdir {workdir}")
    for name in args.datasets:
        corpus = scaled(PAPER[name], args.scale)
        path = workdir / "mats" / f"{name}.mat"
        real = name in REAL_TEXT and (args.data / REAL_TEXT[name]).exists()
        source = f"real text ({REAL_TEXT[name]})" if real else "generated"
        # An unchanged stand-in is kept, so that a rerun resumes the workflow where it
        # stopped instead of starting again from a newer file.
        made_as = json.dumps({"scale": args.scale, "seed": args.seed, "source": source})
        stamp = path.with_suffix(".json")
        if path.exists() and stamp.exists() and json.loads(stamp.read_text())["made_as"] == made_as:
            stats = json.loads(stamp.read_text())["stats"]
            written = "kept from an earlier run"
        else:
            started = time.perf_counter()
            if real:
                bags, labels, subsets = real_documents(corpus, args.data / REAL_TEXT[name], rng)
            else:
                bags, labels, subsets = generated_documents(corpus, rng)
            stats = write_mat(corpus, bags, labels, subsets, path, rng)
            del bags, labels, subsets  # 3 GB at 20news: not held while the workflow runs
            stamp.write_text(json.dumps({"made_as": made_as, "stats": stats}))
            written = f"written in {time.perf_counter() - started:.0f} s"
        corpora[name] = {
            "source": source,
            "documents": stats["documents"],
            "vocabulary": stats["vocabulary"],
            "words_per_document": round(stats["words_per_document"], 1),
        }
        print(
            f"  {name}: {source}, {corpus.layout}, {stats['documents']:,} documents "
            f"(paper {PAPER[name].documents:,}), vocabulary {stats['vocabulary']:,} "
            f"(paper {PAPER[name].vocabulary:,}), {stats['words_per_document']:.1f} distinct "
            f"words per document (paper {PAPER[name].words}), {stats['mb']:,.0f} MB, {written}",
            flush=True,
        )

    config = run_config(args.datasets, args)
    (workdir / "paper_scale.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    started = time.perf_counter()
    outside: dict[str, list[tuple]] = {}  # jobs run outside Snakemake, by kind
    if args.until:
        snakemake(workdir, args, "all", extra=("--until", *args.until))
    elif args.solve_sample:
        # everything but the transport solves, then a sample of those
        again = ("--forcerun", *args.forcerun) if args.forcerun else ()
        snakemake(
            workdir,
            args,
            "all",
            extra=("--omit-from", "wmd_block", "wmd_search", "wmd_search_with_rwmd", *again),
        )
        snakemake(workdir, args, *solve_targets(workdir, config, args), extra=again)
        outside["evaluate (no transport methods)"] = evaluate_without_solves(workdir, config, args)
        print(
            f"  solves limited to {args.solve_sample} of {args.units} units per method: "
            "not run: wmd_gather, wmd_subset, wmd_neighbours, and the jobs after evaluate; "
            "evaluate run outside Snakemake with the baselines and dense methods only"
        )
    else:
        snakemake(workdir, args, "all")
    wall = time.perf_counter() - started
    print(f"  workflow: {wall:,.0f} s wall")
    # Every run's log in this workdir, oldest first: a job rerun later is declared later.
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    lines = report(workdir, "\n".join(p.read_text() for p in logs), outside)
    print("\n".join(lines))
    figures = {
        "datasets": corpora,
        "scale": args.scale,
        "cores": args.cores,
        "wall_minutes": round(wall / 60),
        "table": record.table(lines),
    }
    record.write(args.record, "paper_scale", figures)


if __name__ == "__main__":
    main()
