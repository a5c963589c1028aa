"""Which keys make a file an experiment rather than a lab. Apart from the experiment model,
so telling the two kinds of file apart (`netrig validate`, `up`, `plan`) imports neither.

    is_experiment({"topology": {...}, "measure": [...]})    # True
"""

from __future__ import annotations

from typing import Any

EXPERIMENT_KEYS = (
    "measure",
    "events",
    "vary",
    "params",
    "repeat",
    "order",
    "warmup",
    "cooldown",
    "stop_on_failure",
)


def is_experiment(data: Any) -> bool:
    """A file with `measure:` (or any other experiment key) is an experiment, else a lab."""
    return isinstance(data, dict) and any(k in data for k in EXPERIMENT_KEYS)
