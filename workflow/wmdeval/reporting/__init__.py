"""Reporting: the paper's tables and figures from the collected scores."""
