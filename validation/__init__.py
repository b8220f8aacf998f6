"""Acceptance validation of the PowerScale + DGX A100 cluster: parsers, thresholds, verdict, report.

Run `python -m validation --help`.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
