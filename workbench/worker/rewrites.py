"""Run a worker-side rewrite (the `rewrite` step kind) named in the catalogue workbench/common/rewrites.py."""
from __future__ import annotations

import importlib

from workbench.common.rewrites import REWRITES, RewriteError


def run(module, name: str, params: dict) -> int:
    """Apply rewrite `name` to `module` (compile worker); returns how many ops it replaced."""
    if name not in REWRITES:
        raise RewriteError(f"unknown rewrite {name!r} (known: {', '.join(sorted(REWRITES))})")
    mod_name, fn_name = REWRITES[name]["impl"].split(":")
    mod = importlib.import_module(mod_name)
    try:
        return getattr(mod, fn_name)(module, **params)
    except (ValueError, RuntimeError) as e:
        raise RewriteError(str(e)) from e
