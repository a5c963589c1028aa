"""Measurements: running the tools and parsing their output into samples."""
