"""Rendering results: CSV tables, HTML matrices, diffs. Pure functions of results."""
