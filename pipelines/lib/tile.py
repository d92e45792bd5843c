"""Tiling schedule generators (each returns transform-dialect module text).

    apply pipelines/lib/tile.py[gen=tile_matmul]{tile_m=64 tile_n=64 tile_k=32}
    apply pipelines/lib/tile.py[gen=tile_op]{op=linalg.generic tile_sizes=[8,32]}
    apply pipelines/lib/tile.py[gen=tile_auto]{target=64}     # sizes picked from the payload
"""
from __future__ import annotations

import math
from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["tile_matmul", "tile_op", "tile_auto"]

PARAMS = {
    "tile_m": {"min": 0, "help": "rows of C per tile (0: do not tile)"},
    "tile_n": {"min": 0, "help": "columns of C per tile (0: do not tile)"},
    "tile_k": {"min": 0, "help": "reduction chunk (0: do not tile)"},
    "loop": {"choices": ["for", "forall"], "help": "scf.for loops or one scf.forall (parallel dims only)"},
    "target": {"min": 1, "help": "largest tile size to pick"},
}



def _tile(handle: str, sizes: list[int], loop: str, name: str = "t") -> str:
    if loop == "forall":
        return (f"    %{name}, %{name}_loop = transform.structured.tile_using_forall {handle} tile_sizes {sizes}\n"
                f"        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n")
    nloops = sum(1 for s in sizes if s)
    if nloops == 0:
        return ""
    loops = f"%{name}_loops:{nloops}" if nloops > 1 else f"%{name}_loops"
    types = ", ".join(["!transform.any_op"] * (nloops + 1))
    return (f"    %{name}, {loops} = transform.structured.tile_using_for {handle} tile_sizes {sizes}\n"
            f"        : (!transform.any_op) -> ({types})\n")


def _match(op: str, var: str = "ops") -> str:
    return (f"    %{var} = transform.structured.match ops{{[\"{op}\"]}} in %root"
            f" : (!transform.any_op) -> !transform.any_op\n")


def tile_matmul(tile_m: int = 32, tile_n: int = 32, tile_k: int = 32, loop: str = "for") -> str:
    """Tile every linalg.matmul by (tile_m, tile_n, tile_k); forall tiles only m and n."""
    sizes = [tile_m, tile_n] if loop == "forall" else [tile_m, tile_n, tile_k]
    return transform_module(_match("linalg.matmul", "mm") + _tile("%mm", sizes, loop))


def tile_op(op: str = "linalg.matmul", tile_sizes: list[int] = [32, 32, 32], loop: str = "for") -> str:
    """Tile every op named `op` with the given per-loop tile sizes."""
    return transform_module(_match(op) + _tile("%ops", list(tile_sizes), loop))


def _pick(dims: list[int], target: int) -> int:
    """Largest power of two <= target dividing every dim (static dims only)."""
    g = 0
    for d in dims:
        if d > 0:
            g = math.gcd(g, d)
    t = 1
    while t * 2 <= target and g and g % (t * 2) == 0:
        t *= 2
    return t


def tile_auto(payload: dict, target: int = 64) -> str:
    """Tile every matmul with the largest power-of-two sizes <= target that divide all matmul shapes."""
    mms = [o for o in payload["ops"] if o["op"] == "linalg.matmul"]
    if not mms:
        raise ValueError("tile_auto: the payload has no linalg.matmul")
    sizes = [_pick([o["dims"][d] for o in mms], target) for d in ("m", "n", "k")]
    return tile_matmul(*sizes)
