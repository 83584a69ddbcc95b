"""Distances between documents: the BOW/TF-IDF baselines, WMD and PCA-projected vectors."""
