"""netrig: reproducible network experiments in Linux network namespaces.

Data flow: spec (YAML → typed models) → plan (addresses, routes) → lab (netlink)
→ measure → results → stats/report.
"""

__version__ = "0.1.0"
