"""FlexGraph from Python: datasets from arrays, training, prediction and embeddings over the C++ core.

    import numpy as np, flexgraph
    ds = flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train_idx, test=test_idx)
    run = flexgraph.train(ds, model="gcn", epochs=50, seed=1)
    h = run.model.embed(ds)

The run report (``python -m flexgraph.report``) needs no extension module; everything else loads
``flexgraph._core`` on first use. A build tree's module is found through ``FLEXGRAPH_MODULE_DIR``
(the folder holding ``_core*.so``, e.g. ``build/release/python/flexgraph``).
"""

from __future__ import annotations

import os

__version__ = "0.1.0"

_module_dir = os.environ.get("FLEXGRAPH_MODULE_DIR")
if _module_dir:
    __path__.append(_module_dir)  # noqa: F821 (the package's own search path)


def _load_core() -> None:
    """Loads the extension module with its symbols global, as the flexgraph binary exports them:
    a model library loaded by path (``udf_library="lib.so"``) resolves them from it. A missing
    module is reported when the API is first used (the report needs none)."""
    import sys

    # As `flexgraph train` (runtime/cli/main.cc): training owns the cores, so OpenMP threads spin
    # briefly between parallel regions; libgomp reads this when it loads. Set values are kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "30000")
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | os.RTLD_GLOBAL)
    try:
        from . import _core  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.setdlopenflags(flags)


_load_core()

_API = ("Dataset", "Run", "Model", "Recommendations", "train", "load_model", "models", "Error", "InvalidArgumentError")
__all__ = list(_API)


def __getattr__(name: str):
    if name in _API:
        from . import _api

        return getattr(_api, name)
    raise AttributeError(f"module 'flexgraph' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_API))
