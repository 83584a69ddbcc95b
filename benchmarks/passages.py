"""The passage corpus of the scale benchmarks: 20 Newsgroups' posts cut into passages.

Built deterministically from ``../shared/data/20news_bydate.tsv`` (18,846 posts):

- each post's text is split on white space into tokens, and cut into consecutive passages
  of ``PASSAGE_TOKENS`` (60) tokens; a last piece of fewer than ``MIN_TOKENS`` (20) is
  dropped;
- each passage keeps its post's newsgroup (``label``) and split (``split``: train/test);
- the result is 85,635 passages, in the order of the posts and, within a post, of the text.

Subsets: ``every=2`` keeps every second passage (the 0th, 2nd, ...); ``size=n, seed=s`` a
seeded random subset of ``n`` passages (``np.random.default_rng(s)``), in corpus order.

The corpus is read as one ``format: table`` dataset (``passage_config``) with
``knn_pruning.NEWS_CONFIG``'s preparation: kusner115 stop words and a 50-d Word2Vec trained
on the corpus. ``python benchmarks/passages.py OUT.tsv [--every 2 | --size n --seed s]``
writes the table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

REPO = Path(__file__).resolve().parent.parent
NEWS = REPO.parent / "shared" / "data" / "20news_bydate.tsv"
#: Tokens per passage, and the fewest a post's last piece keeps to be a passage.
PASSAGE_TOKENS = 60
MIN_TOKENS = 20
#: Passages of the whole corpus, as the builder gives them (checked by the scale benchmarks).
PASSAGES = 85_635


def passages(data: Path = NEWS, every: int = 1, size: int | None = None, seed: int = 0) -> pa.Table:
    """The passage table (columns ``label``, ``text``, ``split``, ``post``: the post's row in
    ``data``), whole or the subset the arguments name (module docstring)."""
    posts = pacsv.read_csv(data, parse_options=pacsv.ParseOptions(delimiter="\t"))
    labels, texts, splits, origin = [], [], [], []
    for row, (label, text, split) in enumerate(
        zip(
            posts.column("label").to_pylist(),
            posts.column("text").to_pylist(),
            posts.column("split").to_pylist(),
            strict=True,
        )
    ):
        tokens = (text or "").split()
        for start in range(0, len(tokens), PASSAGE_TOKENS):
            piece = tokens[start : start + PASSAGE_TOKENS]
            if len(piece) < MIN_TOKENS:  # only a post's last piece can be this short
                continue
            labels.append(label)
            texts.append(" ".join(piece))
            splits.append(split)
            origin.append(row)
    table = pa.table({"label": labels, "text": texts, "split": splits, "post": origin})
    keep = np.arange(table.num_rows)[::every]
    if size is not None:
        keep = np.sort(np.random.default_rng(seed).choice(keep, size, replace=False))
    return table.take(keep)


def write_passages(out: Path, **subset) -> pa.Table:
    """:func:`passages` written to ``out`` as a tab-separated table with a header."""
    table = passages(**subset)
    out.parent.mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, out, pacsv.WriteOptions(delimiter="\t"))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=NEWS)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    table = write_passages(
        args.out, data=args.data, every=args.every, size=args.size, seed=args.seed
    )
    print(f"passages: {table.num_rows} written to {args.out}")


if __name__ == "__main__":
    main()
