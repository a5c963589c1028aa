"""scipy's C shortest paths, imported without the rest of scipy.sparse.csgraph.

The package's __init__ imports scipy.sparse.linalg and scipy.linalg (for its Laplacian):
~45 ms of `netrig up` of a 1000-node ring, for a function netrig never calls. The
extension module that holds shortest_path needs only scipy.sparse and two small modules
of the package, so those are loaded under a bare stand-in for the package, which is then
taken away again (a later `import scipy.sparse.csgraph` runs its __init__ as usual and finds
the loaded submodules). Only while no other thread runs here but quiet ones (forked.quiet,
which import nothing): another thread importing the package then would see the stand-in.

    shortest_path, coo_matrix = csgraph.load()
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from netrig.base import forked


def load() -> tuple[Any, Any]:
    """(scipy.sparse.csgraph.shortest_path, scipy.sparse.coo_matrix)."""
    from scipy import sparse

    name = "scipy.sparse.csgraph"
    if name in sys.modules or not forked.alone():  # another thread may import meanwhile
        from scipy.sparse.csgraph import shortest_path

        return shortest_path, sparse.coo_matrix
    stand_in = types.ModuleType(name)
    stand_in.__path__ = [os.path.join(os.path.dirname(sparse.__file__), "csgraph")]
    sys.modules[name] = stand_in
    try:
        from scipy.sparse.csgraph._shortest_path import shortest_path
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
    return shortest_path, sparse.coo_matrix
