"""Analyses beyond the paper: how the distances differ, independent of any classifier."""
