"""The one user-facing error type, at the bottom of the package: it imports nothing of
wmdeval, so every module (``core`` included) can raise it without an import cycle."""

from __future__ import annotations


class WmdevalError(Exception):
    """A user-facing problem (bad input, bad config): printed as one line, no traceback."""
