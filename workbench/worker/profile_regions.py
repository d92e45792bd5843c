"""`lh-profile-regions`: time each top-level op of the payload's functions (`run --profile`).

Every op at the top level of a public function's body that does work (a loop nest, a linalg op, a
call, a copy: anything but constants, views, allocations and index arithmetic) is bracketed by two
`rtclock()` calls, and the difference is added to its slot of the public global
`__lh_profile_seconds` (memref<N x f64>); `__lh_profile_calls` counts the calls of the functions;
`_lh_profile_*_address()` return their addresses (ExecutionEngine looks up functions, not data).
The module gets `lh.profile_regions`, the label of each slot: the op, its `lh.op` ids (those of the
op and of the ops inside it, which per-op schedules keep on their tiled loops' bodies) and the
payload line it came from. The run worker reads both globals after the timed calls (per call:
seconds / calls). The functions those functions call (lh-outline-repeated-steps' private step function of a
stack of layers, called once per layer) are timed the same way, their slots labelled `@callee`: a call of one
is not a slot of its own (its time is its ops'), and only the functions no timed function calls (the entry)
count calls. Applied before the target's lowering, the brackets stay where they are: the
rtclock calls have side effects, so nothing moves across them, and a loop nest keeps its place.
"""
from __future__ import annotations

import re

SECONDS = "__lh_profile_seconds"
CALLS = "__lh_profile_calls"
LABELS_ATTR = "lh.profile_regions"
#: global -> the function that returns its address (as an index)
ADDRESS_OF = {SECONDS: "_lh_profile_seconds_address", CALLS: "_lh_profile_calls_address"}
#: top-level ops not worth a timer: they do no work of their own (or are the timers' own)
UNTIMED = re.compile(r"^(arith\.(constant|index_cast|index_castui)|ub\.poison|tensor\.(empty|dim|cast|expand_shape|"
                     r"collapse_shape|extract_slice|extract|from_elements)|memref\.(alloc|alloca|dealloc|subview|"
                     r"expand_shape|collapse_shape|cast|reinterpret_cast|dim|get_global|extract_strided_metadata|"
                     r"assume_alignment)|bufferization\.(to_tensor|to_buffer|to_memref|alloc_tensor|"
                     r"dealloc_tensor)|affine\.apply|func\.return|cf\.assert|shard\..*)$")
WRAPPER_PREFIX = "_lh_"   # the benchmark wrapper's functions (_lh_bench, _lh_call)
MAX_LABEL = 120


class ProfileError(ValueError):
    pass


def _name(op) -> str:
    from mlir import ir

    return ir.StringAttr(op.attributes["sym_name"]).value


def _bodies(module) -> dict:
    """name -> func.func of every function with a body but the benchmark wrapper's."""
    out = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and len(op.regions[0].blocks) and not _name(op).startswith(WRAPPER_PREFIX):
            out[_name(op)] = op
    return out


def _is_public(op) -> bool:
    from mlir import ir

    return "sym_visibility" not in op.attributes or ir.StringAttr(op.attributes["sym_visibility"]).value == "public"


def _callee(op) -> str | None:
    from mlir import ir

    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value if op.name == "func.call" else None


def _nested_callees(op) -> set[str]:
    """The functions the ops nested in `op` call (func.call inside its regions)."""
    found: set[str] = set()

    def visit(o):
        for region in o.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if _callee(inner):
                        found.add(_callee(inner))
                    visit(inner)

    visit(op)
    return found


def _timed_functions(module) -> list:
    """The functions to time: the public ones and, transitively, the private ones with bodies they call from
    the top level of their bodies. A private function also called from inside another op (a loop) is not
    timed on its own: its time is that op's."""
    bodies = _bodies(module)
    inside: set[str] = set()   # (private functions called from inside an op)
    while True:
        timed = [f for f in bodies.values() if _is_public(f)]
        names = {_name(f) for f in timed}
        grew = False
        i = 0
        while i < len(timed):
            for op in timed[i].regions[0].blocks[0].operations:
                op = op.operation
                nested = _nested_callees(op) & bodies.keys()
                if nested - names - inside:
                    inside |= nested - names
                    grew = True
                callee = _callee(op)
                if callee in bodies and callee not in names and callee not in inside:
                    names.add(callee)
                    timed.append(bodies[callee])
            i += 1
        if not grew:
            return timed


def _calls_with_next(function, names: set[str]) -> list:
    """(func.call of one of `names`, the op after it) anywhere in `function`'s body."""
    found = []

    def visit(o):
        for region in o.regions:
            for block in region.blocks:
                ops = [inner.operation for inner in block.operations]
                for i, inner in enumerate(ops):
                    if _callee(inner) in names and i + 1 < len(ops):
                        found.append((inner, ops[i + 1]))
                    visit(inner)

    visit(function)
    return found


def _ids_inside(op) -> list[str]:
    """`lh.op` ids of `op` and of the ops nested in it, in order, each once: their `lh.op` attributes
    (matmul schedules keep them on their loops' bodies) and the names `tag-ops` gave their locations
    (what tiling and vectorization keep)."""
    from mlir import ir

    from workbench.worker.op_ids import location_ids

    seen: list[str] = []

    def visit(o):
        found = [ir.StringAttr(o.attributes["lh.op"]).value] if "lh.op" in o.attributes else []
        for ident in found + location_ids(o.location):
            if ident not in seen:
                seen.append(ident)
        for region in o.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(op)
    return seen


_PAYLOAD_OP = re.compile(r"=\s*\"?([a-z_][\w]*\.[\w.]+)")


def _line_of(op, lines_of: dict) -> str:
    """`OP (file.mlir:LINE)` of the op's location (the first file location of a fused one): the op the
    payload has on that line (a loop nest's origin), read from the payload file; '' without one."""
    m = re.search(r'"([^"]+)":(\d+):\d+', str(op.location))
    if not m:
        return ""
    path, line = m.group(1), int(m.group(2))
    if path not in lines_of:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines_of[path] = f.read(1 << 24).splitlines()
        except OSError:
            lines_of[path] = []
    text = lines_of[path][line - 1] if 0 < line <= len(lines_of[path]) else ""
    origin = _PAYLOAD_OP.search(text)
    where = f"({path.rsplit('/', 1)[-1]}:{line})"
    return f"<- {origin.group(1)} {where}" if origin and origin.group(1) != op.name else where


def label(op, function: str, several: bool, lines_of: dict) -> str:
    ids = _ids_inside(op)
    parts = [f"@{function}" if several else "", op.name]
    if ids:
        parts.append(",".join(ids[:4]) + (f",+{len(ids) - 4}" if len(ids) > 4 else ""))
    line = _line_of(op, lines_of)
    if line:
        parts.append(line)
    text = " ".join(p for p in parts if p)
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 3] + "..."


def instrument(module) -> list[str]:
    """Bracket the timed ops of every public function with rtclock calls; returns the slot labels."""
    from mlir import ir
    from mlir.dialects import arith, func, memref

    if any(op.operation.name == "memref.global" and _name(op.operation) == SECONDS for op in module.body.operations):
        raise ProfileError("the module is instrumented already")
    functions = _timed_functions(module)
    if not any(_is_public(f) for f in functions):
        raise ProfileError("no public function with a body to profile")
    timed_names = {_name(f) for f in functions}

    def _call_of_timed(op) -> bool:   # (its time is the callee's ops')
        return _callee(op) in timed_names

    targets = []   # (function, timed op, the op after it: where its closing clock goes)
    for f in functions:
        ops = [op.operation for op in f.regions[0].blocks[0].operations]
        # (a timed op is never the terminator: func.return is untimed)
        targets += [(f, op, ops[i + 1]) for i, op in enumerate(ops)
                    if not UNTIMED.match(op.name) and not _call_of_timed(op)]
    if not targets:
        raise ProfileError("the functions do no work to time (only constants and views)")
    f64 = ir.F64Type.get()
    index = ir.IndexType.get()
    slots = ir.MemRefType.get([len(targets)], f64)
    calls = ir.MemRefType.get([1], f64)
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        zeros = lambda n: ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([n], f64),  # noqa: E731
                                                          ir.FloatAttr.get(f64, 0.0))
        memref.GlobalOp(SECONDS, ir.TypeAttr.get(slots), initial_value=zeros(len(targets)))
        memref.GlobalOp(CALLS, ir.TypeAttr.get(calls), initial_value=zeros(1))
        if not any(op.operation.name == "func.func" and _name(op.operation) == "rtclock" for op in module.body.operations):
            clock = func.FuncOp("rtclock", ir.FunctionType.get([], [f64]))
            clock.sym_visibility = ir.StringAttr.get("private")
        # the JIT finds functions, not data: each global's address comes from a function of its own
        for name, kind in ((SECONDS, slots), (CALLS, calls)):
            getter = func.FuncOp(ADDRESS_OF[name], ir.FunctionType.get([], [index]))
            getter.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            with ir.InsertionPoint(getter.add_entry_block()):
                g = memref.GetGlobalOp(kind, name).result
                func.ReturnOp([memref.ExtractAlignedPointerAsIndexOp(g).result])
    labels: list[str] = []
    lines_of: dict[str, list[str]] = {}
    several = len(functions) > 1

    def count(at, step: float) -> None:
        with at, ir.Location.unknown():
            g = memref.GetGlobalOp(calls, CALLS).result
            zero = arith.ConstantOp(index, 0).result
            one = arith.ConstantOp(f64, step).result
            memref.StoreOp(arith.AddFOp(memref.LoadOp(g, [zero]).result, one).result, g, [zero])

    # the call count: +1 at each timed function's entry, -1 after each call of one from another (so that
    # only the calls that come in from outside, the run's, count)
    for f in functions:
        count(ir.InsertionPoint.at_block_begin(f.regions[0].blocks[0]), 1.0)
    for f in functions:
        for call, after in _calls_with_next(f, timed_names):
            count(ir.InsertionPoint(after), -1.0)
    for slot, (f, op, after) in enumerate(targets):
        labels.append(label(op, _name(f), several, lines_of))
        with ir.InsertionPoint(op), ir.Location.unknown():
            start = func.CallOp([f64], "rtclock", []).result
        with ir.InsertionPoint(after), ir.Location.unknown():
            end = func.CallOp([f64], "rtclock", []).result
            g = memref.GetGlobalOp(slots, SECONDS).result
            i = arith.ConstantOp(index, slot).result
            spent = arith.SubFOp(end, start).result
            memref.StoreOp(arith.AddFOp(memref.LoadOp(g, [i]).result, spent).result, g, [i])
    module.operation.attributes[LABELS_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in labels])
    return labels

