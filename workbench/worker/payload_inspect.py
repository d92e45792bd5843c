"""Payload inspection (runs inside a worker): functions, linalg ops, shapes, FLOPs.

The result is plain data (dicts/lists) so it crosses the process boundary and is
what selectors and schedule generators (`payload=` argument) receive.
"""
from __future__ import annotations

import math

from mlir import ir

from workbench.worker.ir_walk import iterator_types, ops_where  # noqa: F401  (iterator_types: fusion, shared_rhs import it from here)
from workbench.worker.op_ids import assign_ids, is_payload_linalg_op

# FLOPs per point of the iteration space for named ops (matmul-like ops: mul + add).
_CONTRACTIONS = {
    "linalg.matmul": ("m", "n", "k"),
    "linalg.matmul_transpose_a": ("m", "n", "k"),
    "linalg.matmul_transpose_b": ("m", "n", "k"),
    "linalg.batch_matmul": ("b", "m", "n", "k"),
    "linalg.batch_reduce_matmul": ("b", "m", "n", "k"),
    "linalg.matvec": ("m", "k"),
    "linalg.vecmat": ("k", "n"),
    "linalg.dot": ("k",),
    "linalg.contract": None,
}
_NO_COMPUTE = {"linalg.fill", "linalg.copy", "linalg.transpose", "linalg.broadcast", "linalg.pack",
               "linalg.unpack", "linalg.index", "linalg.yield"}
_SOFTMAX_FLOPS_PER_ELEMENT = 5  # max, sub, exp, sum, div


def _shape(t: ir.Type) -> list[int] | None:
    if isinstance(t, ir.ShapedType):
        st = ir.ShapedType(t)
        if not st.has_rank:
            return None
        return [d if not ir.ShapedType.is_dynamic_size(d) else -1 for d in st.shape]
    return []


def _elem(t: ir.Type) -> str:
    if isinstance(t, ir.ShapedType):
        return str(ir.ShapedType(t).element_type)
    return str(t)


def _sym(op, name="sym_name") -> str:
    try:
        return ir.StringAttr(op.attributes[name]).value
    except Exception:
        return ""


def _linalg():
    """The linalg dialect's Python module, imported on first use: it loads linalg's Python op DSL
    (~0.17 s), which a worker that only parses and applies steps never needs (see `warm_up`)."""
    from mlir.dialects import linalg

    return linalg


def warm_up() -> None:
    """Import what inspection needs ahead of the first `inspect` (the compile worker calls this in a
    background thread once it has answered its first request)."""
    _linalg()


def _indexing_maps(op) -> list | None:
    """The op's indexing maps: its attribute (generic, matmul with maps), else the structured-op
    interface's (named ops whose maps are implicit: convolutions, pooling, ...)."""
    try:
        return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    except Exception:
        pass
    try:
        return [ir.AffineMapAttr(m).value for m in _linalg().get_indexing_maps(op)]
    except Exception:
        return None


def _iterators_from_maps(amaps) -> list[str]:
    """Dimensions the output map uses are parallel, the others reductions (DPS ops: last map = init)."""
    used = {ir.AffineDimExpr(e).position for e in amaps[-1].results if isinstance(e, ir.AffineDimExpr)}
    return ["parallel" if d in used else "reduction" for d in range(amaps[-1].n_dims)]


def _is_convolution(op) -> bool:
    try:
        return bool(_linalg().isa_convolution_op(op))
    except Exception:
        return False


def _iteration_domain(op) -> list[int] | None:
    """Loop ranges from indexing maps and operand shapes (generic and named ops)."""
    amaps = _indexing_maps(op)
    if not amaps:
        return None
    ndims = amaps[0].n_dims
    dims: list[int] = [-1] * ndims
    for amap, operand in zip(amaps, op.operands):
        shape = _shape(operand.type) or []
        for pos, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and pos < len(shape):
                d = ir.AffineDimExpr(expr).position
                if dims[d] < 0 and shape[pos] >= 0:
                    dims[d] = shape[pos]
    return dims


def _body_ops(op) -> int:
    try:
        block = op.regions[0].blocks[0]
    except Exception:
        return 1
    n = sum(1 for inner in block.operations if inner.operation.name not in ("linalg.yield", "linalg.index"))
    return max(n, 1)


_MATMUL_LAYOUTS = {  # (A map results, B map results, C map results) over (d0, d1, d2) = (m, n, k)
    ((0, 2), (2, 1), (0, 1)): "normal",
    ((0, 2), (1, 2), (0, 1)): "transpose_b",
    ((2, 0), (2, 1), (0, 1)): "transpose_a",
    ((2, 0), (1, 2), (0, 1)): "transpose_both",
    # over (d0, d1, d2, d3) = (b, m, n, k): a batch matmul written as a generic (torch-mlir's bmm, q @ k^T)
    ((0, 1, 3), (0, 3, 2), (0, 1, 2)): "batch",
}


def _map_dims_key(op) -> tuple | None:
    """The op's indexing maps as tuples of the dims each result is, or None where a result is no plain
    dim; KeyError where the op has no `indexing_maps` attribute."""
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    try:
        return tuple(tuple(ir.AffineDimExpr(r).position for r in m.results) for m in maps)
    except (ValueError, TypeError):
        return None


def _matmul_layout(op) -> str:
    """"normal" / "transpose_b" / "transpose_a" from the op's indexing maps ("normal" when a named
    matmul has none: its default maps; "" when the maps are no 2-D matmul's)."""
    try:
        key = _map_dims_key(op)
    except (KeyError, ValueError, TypeError):
        return "normal" if op.name == "linalg.matmul" else ""
    return _MATMUL_LAYOUTS.get(key, "")


_BATCH_MATMUL_LAYOUTS = {((0, 1, 3), (0, 3, 2), (0, 1, 2)): "normal", ((0, 1, 3), (0, 2, 3), (0, 1, 2)): "transpose_b"}


def _batch_matmul_layout(op) -> str:
    """"transpose_b" for a linalg.batch_matmul whose maps read B as b x N x K, else "normal" ("" for
    other maps)."""
    try:
        key = _map_dims_key(op)
    except (KeyError, ValueError, TypeError):
        return "normal"
    return _BATCH_MATMUL_LAYOUTS.get(key, "")


def _batch_dims(op) -> int:
    """How many leading batch loops a generic with a batch matmul's maps over (b0, .., bL-1, m, n, k) has
    (A[b.., m, k], B[b.., k, n], C[b.., m, n]); 0 for other maps."""
    try:
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        key = [tuple(ir.AffineDimExpr(r).position for r in m.results) for m in maps]
    except (KeyError, ValueError, TypeError):
        return 0
    if len(key) != 3:
        return 0
    lead = maps[0].n_dims - 3
    batch = tuple(range(lead))
    m, n, k = lead, lead + 1, lead + 2
    return lead if key == [batch + (m, k), batch + (k, n), batch + (m, n)] else 0


def _is_mul_add(op) -> bool:
    """The generic's body is `yield out + a * b` (f32 mulf then addf)."""
    body = [o.name for o in op.regions[0].blocks[0].operations]
    return body == ["arith.mulf", "arith.addf", "linalg.yield"]


def describe_linalg_op(op) -> dict:
    name = op.name
    ins = [o for o in op.operands]
    info: dict = {"op": name, "operand_types": [str(o.type) for o in ins],
                  "dtype": _elem(ins[-1].type) if ins else "", "in_dtype": _elem(ins[0].type) if ins else "",
                  "flops": 0, "kind": "other"}
    if name in _CONTRACTIONS and _CONTRACTIONS[name]:
        info["kind"] = "contraction"
        shapes = [_shape(o.type) for o in ins]
        dims = {}
        if name in ("linalg.matmul",):
            layout = _matmul_layout(op)
            if layout == "transpose_b":      # x @ w.T: B is N x K
                (m, k), (n, _) = shapes[0][-2:], shapes[1][-2:]
            elif layout == "transpose_a":    # A is K x M
                (k, m), (_, n) = shapes[0][-2:], shapes[1][-2:]
            elif layout == "transpose_both":  # A is K x M, B is N x K
                (k, m), (n, _) = shapes[0][-2:], shapes[1][-2:]
            else:
                (m, k), (_, n) = shapes[0][-2:], shapes[1][-2:]
            info["layout"] = layout
            dims = {"m": m, "n": n, "k": k}
        elif name == "linalg.matmul_transpose_a":
            (k, m), (_, n) = shapes[0][-2:], shapes[1][-2:]
            dims = {"m": m, "n": n, "k": k}
        elif name == "linalg.matmul_transpose_b":
            (m, k), (n, _) = shapes[0][-2:], shapes[1][-2:]
            dims = {"m": m, "n": n, "k": k}
        elif name in ("linalg.batch_matmul", "linalg.batch_reduce_matmul"):
            b, m, k = shapes[0]
            n = shapes[1][-1]
            if name == "linalg.batch_matmul" and _batch_matmul_layout(op) == "transpose_b":  # B is b x N x K
                n = shapes[1][1]
                info["layout"] = "transpose_b"
            dims = {"b": b, "m": m, "n": n, "k": k}
        elif name == "linalg.matvec":
            m, k = shapes[0]
            dims = {"m": m, "k": k}
        elif name == "linalg.vecmat":
            k, n = shapes[1]
            dims = {"k": k, "n": n}
        elif name == "linalg.dot":
            dims = {"k": shapes[0][0]}
        info["dims"] = dims
        if all(v >= 0 for v in dims.values()):
            info["flops"] = 2 * math.prod(dims.values())
        return info
    if name == "linalg.softmax":
        info["kind"] = "softmax"
        shape = _shape(ins[0].type) or []
        info["shape"] = shape
        if all(d >= 0 for d in shape):
            info["flops"] = _SOFTMAX_FLOPS_PER_ELEMENT * math.prod(shape)
        return info
    if name in _NO_COMPUTE:
        info["kind"] = "data-movement"
        return info
    domain = _iteration_domain(op)
    iterators = []
    try:
        iterators = iterator_types(op)
    except Exception:
        amaps = _indexing_maps(op) if domain is not None else None
        iterators = _iterators_from_maps(amaps) if amaps else []
    if name == "linalg.reduce":
        info["kind"] = "reduction"
        shape = _shape(ins[0].type) or []
        info["shape"] = shape
        if all(d >= 0 for d in shape):
            info["flops"] = math.prod(shape) * _body_ops(op)
        return info
    if name == "linalg.generic" and "lh.vnni" in op.attributes and domain is not None and len(domain) >= 5:
        # a bf16 contraction with B in K pairs (lh-vnni-contractions): loops (b.., m, no, ni, ko, ki)
        *batch, m, no, ni, ko, ki = domain
        info.update(kind="contraction", layout="vnni", panel=ni,
                    dims={**({"b": math.prod(batch)} if batch else {}), "m": m, "n": no * ni, "k": ko * ki})
        if all(d >= 0 for d in domain):
            info["flops"] = 2 * math.prod(domain)
        return info
    if name == "linalg.generic" and "lh.amx" in op.attributes and domain is not None and len(domain) >= 5:
        # a bf16 contraction for AMX tiles (lh-vnni-contractions{amx=1}): loops (b.., m, no, ni, ko, ki)
        *batch, m, no, ni, ko, ki = domain
        info.update(kind="contraction", layout="amx",
                    dims={**({"b": math.prod(batch)} if batch else {}), "m": m, "n": no * ni, "k": ko * ki})
        if all(d >= 0 for d in domain):
            info["flops"] = 2 * math.prod(domain)
        return info
    conv_layout = next((a for a in ("vnni_conv", "amx_conv") if f"lh.{a}" in op.attributes), None)
    if name == "linalg.generic" and conv_layout and domain is not None and len(domain) == 8:
        # a bf16 convolution over channel pairs (lh-vnni-convs, {amx=1}): loops (n, f, oh, ow, co, kh, kw, ci)
        info.update(kind="convolution", layout=conv_layout,
                    dims=dict(zip(("n", "f", "oh", "ow", "co", "kh", "kw", "ci"), domain)))
        if all(d >= 0 for d in domain):
            info["flops"] = 2 * math.prod(domain)
        return info
    lead = _batch_dims(op) if name == "linalg.generic" and domain is not None and len(domain) > 4 else 0
    if lead and iterators == ["parallel"] * (len(domain) - 1) + ["reduction"] and _is_mul_add(op):
        # a batch matmul with several batch dims (b0, b1, m, n, k: attention's per-head products once
        # the reshapes around them are folded): b is their product, batch_dims each one's extent
        batch = domain[:lead]
        info.update(kind="contraction", layout="batch", batch_dims=batch,
                    dims={"b": math.prod(batch) if all(d >= 0 for d in batch) else -1,
                          **dict(zip("mnk", domain[lead:]))})
        if all(d >= 0 for d in domain):
            info["flops"] = 2 * math.prod(domain)
        return info
    if name == "linalg.generic" and domain is not None and len(domain) in (3, 4):
        layout = _matmul_layout(op)
        if layout and iterators == ["parallel"] * (len(domain) - 1) + ["reduction"] and _is_mul_add(op):
            # a matmul written as a generic (torch-mlir's `x @ w.T`, a bmm): its layout and (b,) m, n, k
            info.update(kind="contraction", layout=layout, dims=dict(zip("bmnk" if len(domain) == 4 else "mnk", domain)))
            if all(d >= 0 for d in domain):
                info["flops"] = 2 * math.prod(domain)
            return info
    if domain is not None:
        info["domain"] = domain
        info["iterators"] = iterators
        try:
            info["body"] = [o.operation.name for o in op.regions[0].blocks[0].operations][:32]
        except Exception:
            pass
        info["kind"] = ("convolution" if _is_convolution(op) else
                        "reduction" if any("reduction" in it for it in iterators) else "elementwise")
        if domain and all(d >= 0 for d in domain):
            info["flops"] = math.prod(domain) * _body_ops(op)
        return info
    # named elementwise ops without explicit maps (linalg.add, linalg.exp, linalg.elementwise ...)
    out_shape = _shape(ins[-1].type) if ins else None
    info["kind"] = "elementwise"
    info["shape"] = out_shape
    if out_shape is not None and all(d >= 0 for d in out_shape):
        info["flops"] = math.prod(out_shape)
    return info


# ops an index value flows through unchanged in meaning (casts, torch-mlir's negative-index
# normalization `select(i < 0, i + N, i)`)
_INDEX_FLOW = {"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci",
               "arith.select", "arith.addi"}
# ops whose operands from `first` on index into the dimensions of operand `tensor`
_INDEXING = {"tensor.extract": (0, 1), "tensor.insert": (1, 2), "memref.load": (0, 1), "memref.store": (1, 2)}


def index_ranges(func_op) -> dict[int, list[int]]:
    """Integer arguments used as indices: argument -> [0, N) where N is the smallest size of a dimension
    it indexes (followed into linalg bodies, through casts), e.g. an embedding's token ids -> [0, vocab)."""
    ranges: dict[int, list[int]] = {}
    if not func_op.regions or not func_op.regions[0].blocks:
        return ranges
    for i, arg in enumerate(func_op.regions[0].blocks[0].arguments):
        elem = ir.ShapedType(arg.type).element_type if isinstance(arg.type, ir.ShapedType) else arg.type
        if not (isinstance(elem, ir.IntegerType) or isinstance(elem, ir.IndexType)):
            continue
        bound = None
        work, seen = [arg], 0
        while work and seen < 10000:
            value = work.pop()
            seen += 1
            for use in value.uses:
                user, pos = use.owner, use.operand_number
                name = user.name
                if name in _INDEX_FLOW or (name == "tensor.extract" and pos == 0):
                    work.extend(user.results)
                elif name in _INDEXING and pos >= _INDEXING[name][1]:
                    shape = _shape(user.operands[_INDEXING[name][0]].type) or []
                    dim = pos - _INDEXING[name][1]
                    if dim < len(shape) and shape[dim] > 0:
                        bound = shape[dim] if bound is None else min(bound, shape[dim])
                elif len(user.regions) and user.regions[0].blocks and pos < len(user.regions[0].blocks[0].arguments):
                    work.append(user.regions[0].blocks[0].arguments[pos])  # linalg.generic: its block argument
        if bound is not None:
            ranges[i] = [0, bound]
    return ranges


def _linear_terms(expr) -> dict[int, int] | None:
    """An affine expression as {loop dim: coefficient} (constant terms dropped), None when it is not a
    linear combination of dims (floordiv, mod, products of dims)."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}
    if isinstance(expr, ir.AffineConstantExpr):
        return {}
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _linear_terms(expr.lhs), _linear_terms(expr.rhs)
        if lhs is None or rhs is None:
            return None
        for dim, coefficient in rhs.items():
            lhs[dim] = lhs.get(dim, 0) + coefficient
        return lhs
    if isinstance(expr, ir.AffineMulExpr):
        for terms, factor in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(factor, ir.AffineConstantExpr):
                inner = _linear_terms(terms)
                return None if inner is None else {d: c * factor.value for d, c in inner.items()}
    return None


def _projected(amap) -> bool:
    """A projected permutation, constant 0 results allowed (a kept unit dim, `(d0, d1) -> (d0, 0)`:
    torch-mlir's keepdim reductions and broadcasts; the vectorizer takes them)."""
    if amap.is_projected_permutation:
        return True
    dims = []
    for e in amap.results:
        if isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            continue
        if not isinstance(e, ir.AffineDimExpr):
            return False
        dims.append(e.position)
    return len(dims) == len(set(dims))


def _loop_structure(op) -> dict | None:
    """The op as loops (a generic or a generalized named op): iteration domain, iterator types,
    whether every indexing map is a projected permutation (vectorizable per dimension; convs and
    pooling are not), which loop dims each operand uses (`operand_dims`: -1 for an expression; its
    dims and coefficients in `operand_terms`, e.g. [[2, 2], [5, 1]] for `d2 * 2 + d5`, None where
    it is not linear), and the body's op names."""
    try:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        iterators = iterator_types(op)
    except Exception:
        return None
    domain = _iteration_domain(op)
    try:
        body = [inner.operation.name for inner in op.regions[0].blocks[0].operations]
    except Exception:
        body = []
    operand_dims, operand_terms = [], []
    for amap in maps:
        operand_dims.append([ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else -1
                             for e in amap.results])
        terms = [_linear_terms(e) for e in amap.results]
        operand_terms.append([None if t is None else sorted([d, c] for d, c in t.items() if c) for t in terms])
    structure = {"domain": domain, "iterators": iterators, "projected": all(_projected(m) for m in maps),
                 "operand_dims": operand_dims, "operand_terms": operand_terms,
                 "num_inputs": len(maps) - len(op.results) if op.results else None, "body": body}
    if "tensor.extract" in body and operand_dims[-1] and operand_dims[-1][-1] >= 0:
        # loads at computed indices: whether they are contiguous along the output's innermost loop
        from workbench.worker.cpu.gathers import contiguous_extracts

        structure["contiguous_loads"] = contiguous_extracts(op, operand_dims[-1][-1])
    return structure


def _generalized_structures(module, count: int) -> list[dict | None]:
    """`_loop_structure` of each linalg op (walk order) of a generalized copy of the module (named ops
    become linalg.generic one for one, so the k-th op of the copy is the k-th of the module)."""
    from mlir.passmanager import PassManager

    def linalg_ops(root) -> list:
        return ops_where(root, is_payload_linalg_op)

    try:
        # a clone, not a re-parse: parsing again into the module's context would copy its
        # `dense_resource` blobs under new names, and printing a large model costs seconds
        copy = module.operation.clone()
        # ops whose results nothing reads are erased first, as the pass's greedy rewrite would (they are
        # left out of the correspondence; erased there, every later op's index in the copy was off by one)
        unread: set[int] = set()
        while True:
            ops = linalg_ops(copy)
            live = [i for i in range(count) if i not in unread]
            dead = [k for k, op in enumerate(ops)
                    if len(op.results) and not any(True for r in op.results for _ in r.uses)]
            if len(ops) != len(live) or not dead:
                break
            for k in reversed(dead):
                unread.add(live[k])
                ops[k].erase()
        PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))", context=module.context).run(copy)
    except Exception:
        return [None] * count
    found = linalg_ops(copy)
    live = [i for i in range(count) if i not in unread]
    if len(found) != len(live):
        return [None] * count
    structures: list[dict | None] = [None] * count
    for i, op in zip(live, found):
        structures[i] = _loop_structure(op)
    return structures


def _loop_structures(module, linalg: list) -> list[dict | None]:
    """`_loop_structure` of each linalg op (walk order): a generic op's own, a named op's from the
    generalized copy. (The copy's pass runs the greedy driver, which folds what it can in every body: a
    `tensor.extract` of a splat constant became the scalar there while the op still gathered, and the
    selector planned a plain vectorization that failed. The selector plans from the IR it schedules.)"""
    structures = ([None] * len(linalg) if all(op.name == "linalg.generic" for op in linalg)
                  else _generalized_structures(module, len(linalg)))
    return [_loop_structure(op) if op.name == "linalg.generic" else loops for op, loops in zip(linalg, structures)]


def inspect_module(module, loops: bool = True, only: str | None = None) -> dict:
    """Functions and linalg ops (walk order). Each op has a stable `id` (workbench/worker/op_ids.py:
    its `lh.op` attribute, else `<kind>_<index>`) and `tagged` (whether the id is on the op yet);
    `tagged` at the top level: every linalg op carries its id (per-op schedules can match them).
    `loops=False`: the ops without their `loops` (a named op's come from a generalized copy of the whole
    module, most of the cost): what a step's parameter check reads (dims, ids) before each step.
    `only=ID`: {"ops": [the op with that id, without loops and consumers], "only": ID} alone (a per-op
    step's check: one op's dims)."""
    if only is not None:
        found = []
        for op, op_id, tagged in assign_ids(ops_where(module, is_payload_linalg_op)):
            if op_id == only:
                found.append(dict(describe_linalg_op(op), func=_func_of(op), id=op_id, tagged=tagged))
        return {"ops": found, "only": only}
    from workbench.worker.frontend_dialects import is_elementwise_on_tensor

    funcs = []
    linalg = []
    dialects: set[str] = set()
    tensor_elementwise = []

    def visit(op):
        name = op.name
        dialects.add(name.split(".", 1)[0])
        if is_elementwise_on_tensor(op):
            tensor_elementwise.append(name)
        if name == "func.func":
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            funcs.append({
                "name": _sym(op),
                "args": [str(t) for t in ftype.inputs],
                "results": [str(t) for t in ftype.results],
                "declaration": len(op.regions[0].blocks) == 0,
                "visibility": _sym(op, "sym_visibility") or "public",
                "index_ranges": index_ranges(op),
            })
        elif is_payload_linalg_op(op):
            linalg.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    ops = []
    structures = _loop_structures(module, linalg) if loops else [None] * len(linalg)
    for (op, op_id, tagged), structure in zip(assign_ids(linalg), structures):
        info = describe_linalg_op(op)
        if structure is not None:
            info["loops"] = structure
        info["func"] = _func_of(op)
        if _in_parallel_loop(op):
            info["in_parallel_loop"] = True
        info["id"] = op_id
        info["tagged"] = tagged
        ops.append(info)
    _add_consumers(linalg, ops)
    info = {"funcs": funcs, "ops": ops, "total_flops": sum(o["flops"] for o in ops),
            "tagged": all(o["tagged"] for o in ops), "dialects": sorted(dialects),
            "elementwise_on_tensors": len(tensor_elementwise)}
    # sharded payload (shard.grid / shard.shard ops): how the grid splits each entry tensor (the walk's
    # dialects, not a search of the printed module: printing a whole model, weights and all, cost
    # ~0.3 s of every inspect, one per step of a 75-step `select --apply` of a BERT encoder)
    if "shard" in dialects:
        from workbench.worker.mpi.sharding import entry_shardings

        try:
            info["shardings"] = entry_shardings(module)
        except Exception:  # noqa: BLE001  (partitioned code, unusual annotations: shapes decide, as before)
            pass
    return info


def _in_parallel_loop(op) -> bool:
    """Whether `op` is in the body of an scf.forall or scf.parallel (its loops run in one chunk of it: a
    row network's ops, lh-row-networks)."""
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name in ("scf.forall", "scf.parallel"):
            return True
        parent = parent.parent
    return False


def _func_of(op) -> str:
    """The name of the function `op` is in ("" outside one)."""
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return _sym(parent) if parent is not None else ""


#: ops without side effects that only view their operand: a result they alone read, and nothing reads theirs,
#: is unread
_VIEWS = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.cast", "tensor.extract_slice")


def _read(results, depth: int = 0) -> bool:
    """Whether anything reads `results`, through views (_VIEWS) that something reads."""
    for r in results:
        for use in r.uses:
            owner = use.owner
            if getattr(owner, "name", None) not in _VIEWS or depth >= 32 or _read(owner.results, depth + 1):
                return True
    return False


def _add_consumers(linalg: list, ops: list[dict]) -> None:
    """ops[i]["consumers"]: indices (into `ops`, the linalg ops in walk order) of the linalg ops that use
    op i's first result (how the selector finds a matmul's epilogue chain: bias add, relu, ...)."""
    index = {h: i for i, h in enumerate(linalg)}
    for i, h in enumerate(linalg):
        users, other = [], False
        if len(h.results):
            for use in h.results[0].uses:
                j = index.get(use.owner)
                if j is not None and j not in users:
                    users.append(j)
                if j is None:   # (a dead reshape left by the fusion is no use)
                    results = list(use.owner.results)
                    other = other or not results or any(list(r.uses) for r in results)
        ops[i]["consumers"] = users
        # the linalg ops that read it through a tensor.extract_slice (a contraction padded to whole vectors,
        # lh-pad-contraction-dims, read back at its size: attention's Q K^T), where that is its every other use
        sliced, through_slices = [], bool(len(h.results))
        for use in (h.results[0].uses if len(h.results) else []):
            if index.get(use.owner) is not None:
                continue
            if getattr(use.owner, "name", None) != "tensor.extract_slice":
                through_slices = False
                break
            for inner in use.owner.results[0].uses:
                j = index.get(inner.owner)
                if j is None:
                    through_slices = False
                elif j not in sliced:
                    sliced.append(j)
        ops[i]["slice_consumers"] = sliced if through_slices else []
        # (a use by anything else: a return, a reshape: the selector's row chains leave such ops out)
        ops[i]["other_uses"] = other
        # results that nothing reads (an argmax whose index no op uses once a splat's extract is folded): the
        # op is trivially dead on tensors, and the first canonicalization of any step erases it
        # (read only by reshapes nothing reads: a widening extf whose contraction now reads the bf16 source,
        # lh-vnni-contractions, is as dead: a group schedule listing it failed once a step's canonicalization
        # erased it)
        ops[i]["unread"] = bool(len(h.results)) and not _read(h.results)
    for i, h in enumerate(linalg):
        # which linalg op (index into `ops`) produced each operand, -1 for none (a fused row kernel's
        # chain: reductions whose results the next ops of the same rows read)
        producers = []
        for v in h.operands:
            owner = v.owner
            producers.append(index.get(owner, -1) if hasattr(owner, "name") else -1)
        ops[i]["producers"] = producers
        # the name of each operand's defining op ("" for a block argument): a tensor.pad is tileable too
        # (transform.structured.fuse would take it into a consumer's tiles: cpu_selector.init_registers)
        ops[i]["operand_owners"] = [getattr(v.owner, "name", "") for v in h.operands]
