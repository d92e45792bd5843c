"""Kernels + host plan from a GPU-lowered module (compile worker side; SYCL targets).

For targets whose host side is not JIT-compiled but driven from Python (dpctl), `run` needs
two things from the lowered module:

* the device binaries: every `gpu.binary` op's object (SPIR-V), by symbol name;
* a *host plan*: the functions reachable from the benchmark wrapper's `_lh_call`, each as a
  list of plain records (constants, allocations, copies, kernel launches, calls, return) that
  the SYCL run worker interprets without MLIR.

The host code must be straight-line: `arith.constant`, `memref.alloc/alloca/dealloc/copy/cast`,
`gpu.launch_func`, `gpu.wait`, `func.call`, `func.return`. Anything else reachable from
`_lh_call` means the module is not lowered for this target yet (`unlowered_host_ops`).
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import gpu  # noqa: F401  (registers the gpu op views)

from workbench.worker import bench_wrapper
from workbench.worker.bench_wrapper import symbol_name as _sym

ARTIFACT = "spirv-kernels"
HOST_OPS = frozenset({"func.return", "func.call", "arith.constant", "memref.alloc", "memref.alloca",
                      "memref.dealloc", "memref.copy", "memref.cast", "memref.extract_strided_metadata",
                      "gpu.launch_func", "gpu.wait"})


class PlanError(Exception):
    pass




def _top_ops(module) -> list:
    return list(module.operation.regions[0].blocks[0].operations)


def _functions(module) -> dict[str, object]:
    return {_sym(op): op for op in _top_ops(module) if op.operation.name == "func.func"}


def reachable_functions(module, root: str = bench_wrapper.WRAPPER_CALL) -> list:
    """`root` and every function it calls (transitively) that has a body, in discovery order."""
    funcs = _functions(module)
    if root not in funcs:
        raise PlanError(f"no @{root} function: the benchmark wrapper is missing")
    order, seen, todo = [], set(), [root]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        f = funcs.get(name)
        if f is None or not f.regions[0].blocks:
            raise PlanError(f"@{name} is called from the host code but has no body")
        order.append(f)
        for op in f.regions[0].blocks[0].operations:
            if op.operation.name == "func.call":
                todo.append(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    return order


def unlowered_host_ops(module) -> set[str]:
    """Ops that keep the module from being run through a SYCL runtime (empty: ready)."""
    left: set[str] = set()
    for op in _top_ops(module):
        if op.operation.name == "gpu.module":
            left.add("gpu.module")
    try:
        funcs = reachable_functions(module)
    except PlanError:
        funcs = [f for f in _functions(module).values() if f.regions[0].blocks]
    for f in funcs:
        blocks = list(f.regions[0].blocks)
        if len(blocks) > 1:
            left.add("cf (multiple blocks)")
        for op in blocks[0].operations if blocks else []:
            name = op.operation.name
            if name not in HOST_OPS:
                left.add(name)
    return left


def _dtype(t) -> str:
    if isinstance(t, ir.IndexType):
        return "index"
    return str(t)


def _scalar_value(attr):
    if isinstance(attr, ir.IntegerAttr):
        return int(ir.IntegerAttr(attr).value)
    if isinstance(attr, ir.FloatAttr):
        return float(ir.FloatAttr(attr).value)
    if isinstance(attr, ir.BoolAttr):
        return int(ir.BoolAttr(attr).value)
    raise PlanError(f"host constant {attr} is not a scalar")


def _memref_info(t) -> dict:
    mt = ir.MemRefType(t)
    if any(ir.ShapedType.is_dynamic_size(d) for d in mt.shape):
        raise PlanError(f"dynamic memref {t} on the host side: the SYCL runtime needs static shapes")
    shape = list(mt.shape)
    contiguous = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        contiguous[i] = contiguous[i + 1] * shape[i + 1]
    strides, offset = mt.get_strides_and_offset()
    if offset != 0 or any(s != c for s, c, n in zip(strides, contiguous, shape) if n != 1):
        raise PlanError(f"memref {t} with a non-contiguous layout crosses the host/device boundary")
    return {"shape": shape, "dtype": str(mt.element_type), "strides": contiguous}


def _function_plan(f) -> dict:
    ids: dict = {}

    def vid(v) -> int:
        key = v
        if key not in ids:
            ids[key] = len(ids)
        return ids[key]

    block = f.regions[0].blocks[0]
    args = [vid(a) for a in block.arguments]
    ops: list[dict] = []
    for op in block.operations:
        name = op.operation.name
        o = op.operation
        if name == "arith.constant":
            t = o.results[0].type
            if not (isinstance(t, (ir.IntegerType, ir.IndexType)) or isinstance(t, ir.FloatType)):
                raise PlanError(f"host constant of type {t} is not supported")
            ops.append({"op": "const", "result": vid(o.results[0]), "value": _scalar_value(o.attributes["value"]),
                        "type": _dtype(t)})
        elif name in ("memref.alloc", "memref.alloca"):
            if len(o.operands):
                raise PlanError(f"{name} with dynamic sizes on the host side")
            info = _memref_info(o.results[0].type)
            ops.append({"op": "alloc", "result": vid(o.results[0]), "shape": info["shape"], "dtype": info["dtype"]})
        elif name == "memref.dealloc":
            ops.append({"op": "dealloc", "operand": vid(o.operands[0])})
        elif name == "memref.cast":
            ops.append({"op": "alias", "result": vid(o.results[0]), "operand": vid(o.operands[0])})
        elif name == "memref.extract_strided_metadata":  # (buffer-deallocation-pipeline) base + static numbers
            info = _memref_info(o.operands[0].type)
            shape, strides = info["shape"], info["strides"]
            res = list(o.results)
            ops.append({"op": "alias", "result": vid(res[0]), "operand": vid(o.operands[0])})
            for r, value in zip(res[1:], [0] + shape + strides):
                ops.append({"op": "const", "result": vid(r), "value": value, "type": "index"})
        elif name == "memref.copy":
            ops.append({"op": "copy", "src": vid(o.operands[0]), "dst": vid(o.operands[1])})
        elif name == "gpu.wait":
            ops.append({"op": "wait"})
            for r in o.results:
                vid(r)
        elif name == "gpu.launch_func":
            ops.append(_launch(op.opview if hasattr(op, "opview") else o.opview, vid))
        elif name == "func.call":
            ops.append({"op": "call", "callee": ir.FlatSymbolRefAttr(o.attributes["callee"]).value,
                        "operands": [vid(v) for v in o.operands], "results": [vid(r) for r in o.results]})
        elif name == "func.return":
            ops.append({"op": "return", "operands": [vid(v) for v in o.operands]})
        else:
            raise PlanError(f"host op {name} is not supported by the SYCL runtime (host code must be "
                            "allocations, copies, constants, calls and gpu.launch_func)")
    return {"args": args, "ops": ops}


def _launch(lf, vid) -> dict:
    kernel = ir.SymbolRefAttr(lf.attributes["kernel"])
    ref = str(kernel)  # @module::@kernel
    parts = [p.strip().lstrip("@").strip('"') for p in ref.split("::")]
    if len(parts) != 2:
        raise PlanError(f"gpu.launch_func kernel reference {ref} is not @module::@kernel")
    if getattr(lf, "clusterSizeX", None) is not None:
        raise PlanError("gpu.launch_func with clusters is not supported by the SYCL runtime")
    args, kinds = [], []
    for v in lf.kernelOperands:
        t = v.type
        if isinstance(t, ir.MemRefType):
            _memref_info(t)
            kinds.append("ptr")
        elif isinstance(t, (ir.IntegerType, ir.IndexType)) or isinstance(t, ir.FloatType):
            kinds.append(_dtype(t))
        else:
            raise PlanError(f"kernel argument of type {t} is not supported")
        args.append(vid(v))
    dyn = lf.dynamicSharedMemorySize
    for r in lf.operation.results:
        vid(r)
    return {"op": "launch", "binary": parts[0], "kernel": parts[1],
            "grid": [vid(lf.gridSizeX), vid(lf.gridSizeY), vid(lf.gridSizeZ)],
            "block": [vid(lf.blockSizeX), vid(lf.blockSizeY), vid(lf.blockSizeZ)],
            "shared_bytes": vid(dyn) if dyn is not None else None,
            "args": args, "arg_kinds": kinds}


def binaries(module) -> dict[str, dict]:
    """gpu.binary symbol -> {"data": bytes, "target": str, "format": int} (first object of each)."""
    out: dict[str, dict] = {}
    for op in _top_ops(module):
        if op.operation.name != "gpu.binary":
            continue
        objs = ir.ArrayAttr(op.attributes["objects"])
        if len(objs) == 0:
            raise PlanError(f"gpu.binary @{_sym(op)} holds no object")
        obj = gpu.ObjectAttr(objs[0])
        out[_sym(op)] = {"data": bytes(obj.object), "target": str(obj.target), "format": int(obj.format)}
    return out


def extract(module) -> dict:
    """The host plan + binaries of a module whose host side is straight-line code."""
    left = unlowered_host_ops(module)
    if left:
        raise PlanError("ops remain that the SYCL runtime cannot run: " + ", ".join(sorted(left)[:8]))
    functions = {_sym(f): _function_plan(f) for f in reachable_functions(module)}
    bins = binaries(module)
    for fn in functions.values():
        for o in fn["ops"]:
            if o["op"] == "launch" and o["binary"] not in bins:
                raise PlanError(f"kernel @{o['binary']}::@{o['kernel']} has no gpu.binary (was gpu-module-to-binary run?)")
    return {"entry": bench_wrapper.WRAPPER_CALL, "functions": functions, "binaries": bins}


def prepare(work, lower: Callable[[], dict | None], meta: dict, inserted: bool) -> dict:
    """prepare_run for the "spirv-kernels" artifact: lower if the host side is not ready, then extract."""
    was_lowered = not unlowered_host_ops(work)
    if not was_lowered:
        failed = lower()
        if failed is not None:
            return failed
    try:
        plan = extract(work)
    except PlanError as e:
        return {"ok": False, "error": f"after lowering: {e}"}
    return {"ok": True, "artifact": plan, "bench": meta, "inserted_wrapper": inserted, "was_lowered": was_lowered}
