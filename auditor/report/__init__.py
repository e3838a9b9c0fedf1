"""Rendering results: CSV tables, the HTML report, diffs and the nightly history.

Everything but `files` is a pure function of results; `write_report` is what `auditor sweep`
calls at its end to put report.html, results.csv, matrix.csv, summary.md and serve.csv into the run directory.
"""

from auditor.report.files import write_diff, write_diff_junit, write_junit, write_report, write_summary

__all__ = ["write_diff", "write_diff_junit", "write_junit", "write_report", "write_summary"]
