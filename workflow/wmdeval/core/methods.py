"""Every document distance and its names (file-name slugs and table names): the paper's
14, WMD on PCA embeddings, the built-in distances beyond the paper (WCD, RWMD, WRD, cosine
of mean word vectors), and the distances a user brings (document vectors, a precomputed
matrix, a Python callable; their slugs carry their config names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

NORMALISATIONS = ("None", "L1", "L2")
METRICS = ("L1", "L2")


@dataclass(frozen=True)
class Method:
    slug: str  # used in file names and wildcards: "bow-l1-l1", "wmd-tfidf"
    name: str  # the paper's name: "BOW (L1/L1)", "WMD-TF-IDF"
    weighting: str  # "bow" or "tfidf"
    norm: str | None  # "None" | "L1" | "L2" for baselines; None for WMD
    metric: str | None  # "L1" | "L2" for baselines; None for WMD
    #: how its distances are made: "baseline" (on the fly, in the evaluate job),
    #: "transport" (exact optimal transport in blocks, or a kNN search in knn mode),
    #: "matrix" (one full matrix per variant), "callable" (a user function, in shards)
    kind: str = "baseline"
    paper: bool = True  # one of the paper's 14 (or its PCA WMD); False: beyond the paper

    @property
    def is_wmd(self) -> bool:
        """Not a baseline: its distances are held by the variant (a matrix or a
        neighbour table) rather than computed from word counts."""
        return self.norm is None


def _baseline(weighting: str, norm: str, metric: str) -> Method:
    label = "BOW" if weighting == "bow" else "TF-IDF"
    return Method(
        slug=f"{weighting}-{norm.lower()}-{metric.lower()}",
        name=f"{label} ({norm}/{metric})",
        weighting=weighting,
        norm=norm,
        metric=metric,
    )


WMD = Method("wmd", "WMD", "bow", None, None, "transport")
WMD_TFIDF = Method("wmd-tfidf", "WMD-TF-IDF", "tfidf", None, None, "transport")

#: Row order of the paper's Table 2: the L1/L1 baselines and WMD first, then the
#: unnormalised baselines of the original study, then the remaining schemes.
METHODS: tuple[Method, ...] = (
    _baseline("bow", "L1", "L1"),
    _baseline("tfidf", "L1", "L1"),
    WMD,
    WMD_TFIDF,
    _baseline("bow", "None", "L2"),
    _baseline("bow", "None", "L1"),
    _baseline("tfidf", "None", "L2"),
    _baseline("tfidf", "None", "L1"),
    _baseline("bow", "L1", "L2"),
    _baseline("bow", "L2", "L1"),
    _baseline("bow", "L2", "L2"),
    _baseline("tfidf", "L1", "L2"),
    _baseline("tfidf", "L2", "L1"),
    _baseline("tfidf", "L2", "L2"),
)
BASELINES = tuple(m for m in METHODS if not m.is_wmd)
WMD_METHODS = (WMD, WMD_TFIDF)

#: Built-in distances beyond the paper, in table order (``methods.builtin`` in the config).
#: WCD and RWMD (Kusner et al. 2015) are WMD's cheap stand-ins, on the same bag-of-words
#: weights; WRD (Yokoi et al. 2020) is transport with word-vector norms as mass and the
#: cosine distance between word directions as cost; the last is 1 - cos between the
#: documents' mean word vectors.
WCD = Method("wcd", "WCD", "bow", None, None, "matrix", paper=False)
RWMD = Method("rwmd", "RWMD", "bow", None, None, "matrix", paper=False)
WRD = Method("wrd", "WRD", "wrd", None, None, "transport", paper=False)
COSINE_MEAN = Method(
    "cosine-mean", "Cosine (mean word vectors)", "bow", None, None, "matrix", paper=False
)
BEYOND_METHODS: tuple[Method, ...] = (WCD, RWMD, WRD, COSINE_MEAN)
BUILTIN_METHODS = METHODS + BEYOND_METHODS

BY_SLUG = {m.slug: m for m in BUILTIN_METHODS}
BY_NAME = {m.name: m for m in BUILTIN_METHODS}
#: the reference row of the rel. column
REFERENCE = "BOW (L1/L1)"


def pca_method_name(base: str, dim: int) -> str:
    """Name of ``base`` (e.g. "WMD") computed on ``dim``-dimensional PCA embeddings."""
    return f"{base} ({dim}-d PCA)"


def pca_wmd(dim: int) -> Method:
    """WMD on embeddings projected to ``dim`` dimensions by PCA (paper Table 8)."""
    return Method(f"wmd-pca{dim}", pca_method_name("WMD", dim), "bow", None, None, "transport")


#: Metrics between user document vectors: slug part -> name part.
VECTOR_METRICS = {"cosine": "cosine", "l2": "L2", "l1": "L1"}


def vectors_method(name: str, metric: str) -> Method:
    """User document vectors ``name`` (``methods.vectors``) compared with ``metric``."""
    return Method(
        f"vectors-{name}-{metric}",
        f"{name} ({VECTOR_METRICS[metric]})",
        "bow",
        None,
        None,
        "matrix",
        paper=False,
    )


def matrix_method(name: str) -> Method:
    """A user's precomputed matrix (``methods.matrices``)."""
    return Method(f"matrix-{name}", name, "bow", None, None, "matrix", paper=False)


def callable_method(name: str) -> Method:
    """A user's Python function (``methods.callables``), run in shards."""
    return Method(f"callable-{name}", name, "bow", None, None, "callable", paper=False)


def configured_methods(methods_config: dict) -> tuple[Method, ...]:
    """Every method a run evaluates besides PCA WMD, in table order, from the validated
    ``methods:`` config: the built-in ones listed, then document vectors (each metric),
    precomputed matrices and callables, each by config name."""
    listed = set(methods_config["builtin"])
    found = [m for m in BUILTIN_METHODS if m.slug in listed]
    for name, spec in sorted(methods_config["vectors"].items()):
        found += [vectors_method(name, metric) for metric in spec["metrics"]]
    found += [matrix_method(name) for name in sorted(methods_config["matrices"])]
    found += [callable_method(name) for name in sorted(methods_config["callables"])]
    return tuple(found)


def as_method(method: Method | str) -> Method:
    """A Method from itself, its slug ("bow-l1-l1") or its paper name ("BOW (L1/L1)")."""
    if isinstance(method, Method):
        return method
    found = BY_NAME.get(method)
    if found is not None:
        return found
    try:
        return method_by_slug(method)
    except KeyError:
        from .errors import WmdevalError

        raise WmdevalError(f"unknown method {method!r}") from None


def method_by_slug(slug: str) -> Method:
    """A built-in method, a PCA WMD ("wmd-pca5") or a user's ("vectors-<name>-<metric>",
    "matrix-<name>", "callable-<name>")."""
    if slug in BY_SLUG:
        return BY_SLUG[slug]
    if slug.startswith("wmd-pca") and slug[len("wmd-pca") :].isdigit():
        return pca_wmd(int(slug[len("wmd-pca") :]))
    if slug.startswith("vectors-"):
        name, _, metric = slug[len("vectors-") :].rpartition("-")
        if name and metric in VECTOR_METRICS:
            return vectors_method(name, metric)
    if slug.startswith("matrix-") and len(slug) > len("matrix-"):
        return matrix_method(slug[len("matrix-") :])
    if slug.startswith("callable-") and len(slug) > len("callable-"):
        return callable_method(slug[len("callable-") :])
    raise KeyError(f"unknown method {slug!r}")


#: "WMD (5-d PCA)": a WMD method on word vectors projected to 5 dimensions (Table 8).
_PCA_METHOD = re.compile(r"^(?P<base>.+) \((?P<dim>[0-9]+)-d PCA\)$")


def parse_pca_method(name: str) -> tuple[str, int] | None:
    """(base method, dimension) of a "(<d>-d PCA)" method name, None for any other name."""
    match = _PCA_METHOD.match(name)
    return (match["base"], int(match["dim"])) if match else None


def name_order(name: str) -> tuple:
    """Sort key of a method name in table order: Table 2 order for the paper's 14; then
    the PCA methods by dimension (and by their base method's Table 2 order); then the
    built-in methods beyond the paper in their order (WCD, RWMD, WRD, cosine); then any
    other name (users' methods) alphabetically. Tables and a variant's methods both
    sort by it.

    A plain alphabetical order would put "WMD (10-d PCA)" before "WMD (5-d PCA)".
    """
    paper = [m.name for m in METHODS]
    if name in paper:
        return (0, paper.index(name), 0, name)
    pca = parse_pca_method(name)
    if pca is not None:
        base, dim = pca
        return (1, dim, paper.index(base) if base in paper else len(paper), name)
    beyond = [m.name for m in BEYOND_METHODS]
    if name in beyond:
        return (2, beyond.index(name), 0, name)
    return (3, 0, 0, name)
