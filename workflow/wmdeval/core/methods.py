"""The 14 document distances and their names (file-name slugs and the paper's names)."""

from __future__ import annotations

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

    @property
    def is_wmd(self) -> bool:
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


WMD = Method("wmd", "WMD", "bow", None, None)
WMD_TFIDF = Method("wmd-tfidf", "WMD-TF-IDF", "tfidf", None, None)

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
BY_SLUG = {m.slug: m for m in METHODS}
BY_NAME = {m.name: m for m in METHODS}
#: the reference row of the rel. column
REFERENCE = "BOW (L1/L1)"


def pca_method_name(base: str, dim: int) -> str:
    """Name of ``base`` (e.g. "WMD") computed on ``dim``-dimensional PCA embeddings."""
    return f"{base} ({dim}-d PCA)"


def pca_wmd(dim: int) -> Method:
    """WMD on embeddings projected to ``dim`` dimensions by PCA (paper Table 8)."""
    return Method(f"wmd-pca{dim}", pca_method_name("WMD", dim), "bow", None, None)


def as_method(method: Method | str) -> Method:
    """A Method from itself, its slug ("bow-l1-l1") or its paper name ("BOW (L1/L1)")."""
    if isinstance(method, Method):
        return method
    found = BY_SLUG.get(method) or BY_NAME.get(method)
    if found is None:
        from .io import WmdevalError

        raise WmdevalError(f"unknown method {method!r}")
    return found


def method_by_slug(slug: str) -> Method:
    """One of the 14 methods, or a PCA WMD ("wmd-pca5")."""
    if slug in BY_SLUG:
        return BY_SLUG[slug]
    if slug.startswith("wmd-pca") and slug[len("wmd-pca") :].isdigit():
        return pca_wmd(int(slug[len("wmd-pca") :]))
    raise KeyError(f"unknown method {slug!r}")
