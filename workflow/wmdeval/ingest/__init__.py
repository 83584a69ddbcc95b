"""Data in: corpora (raw text, bundled, Kusner .mat files), downloads and word embeddings."""
