"""Classification: kNN and weighted kNN tuned on validation, over any document distance."""
