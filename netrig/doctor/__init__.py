"""What this host can and cannot do for netrig, found by trying, and how to fix the gaps.

    from netrig.doctor import has_feature, probe_features, probe_tools
    if not has_feature("netem"): ...          # lab validation, before anything is created

`features` probes the kernel in throwaway namespaces; `tools` finds user-space programs and
Python packages; `report` turns both into what degrades and what is impossible.
"""

from netrig.doctor.features import FeatureResult, has_feature, probe_features
from netrig.doctor.tools import ToolResult, has_tool, probe_tools

__all__ = [
    "FeatureResult",
    "ToolResult",
    "has_feature",
    "has_tool",
    "probe_features",
    "probe_tools",
]
