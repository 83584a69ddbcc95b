"""Cleaning: duplicate documents and the out-of-vocabulary filter that make the variants."""
