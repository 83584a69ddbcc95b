"""wmdeval: re-evaluating document distances for kNN text classification."""

__version__ = "0.1.0"
