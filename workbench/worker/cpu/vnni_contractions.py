"""`lh-vnni-contractions`: bf16 matmuls and batch matmuls accumulating in f32 (named ops reading bf16, or
reading f32 extensions of bf16 tensors, as torch-mlir writes a bf16 linear layer) become a contraction
over B packed in pairs along K (the VNNI layout `vdpbf16ps` reads), for machines with AVX512-BF16.

    C[m, n] += A[m, k] * B[k, n]          (A: M x K bf16, B: K x N bf16, C: M x N f32)
 -> C3[m, no, ni] += A3[m, ko, ki] * Bp[no, ko, ni, ki]
       A3 = A viewed as M x K/2 x 2 (tensor.expand_shape: no copy)
       Bp = linalg.pack of B: N/16 x K/2 x 16 x 2 (one panel of 16 columns after the other, each row of a
            panel the 16 column pairs; 8 or 4 columns where 16 do not divide N (B[2ko, n], B[2ko + 1, n]): the micro-kernel reads 64 contiguous bytes
            per K pair); a B that is a transpose (x @ W.T) is packed from W directly
       C3 = C viewed as M x N/16 x 16 (no copy)

The body extends both bf16 operands and accumulates in f32, as torch does; the schedule
(pipelines/cpu/matmul_vnni.py) vectorizes its (1, 1, 16, 1, 2) tiles into vector.contract ops that
upstream's x86vector patterns turn into `x86vector.avx512.dot` (vdpbf16ps: 16 f32 lanes, each adding two
bf16 products). The rewritten op carries VNNI_ATTR (the selector picks the schedule by it).

An operand may also be the f32 result of a generic whose body yields the extension of a bf16 value (after the
elementwise fusion, torch-mlir's `extf` of a bf16 layer-norm or GELU output is fused into that op): the op is
rebuilt to write the bf16 tensor, which the contraction reads; any other reader gets its f32 extension.

Eligible: static shapes, K even, N a multiple of 4 (the panel is 16 columns where N allows, else 8 or 4),
default indexing maps.
"""
from __future__ import annotations

#: packed panel widths, widest first: f32 accumulators of one 512-, 256- or 128-bit vector (vdpbf16ps on
#: zmm, or ymm / xmm with AVX512VL); the widest that divides N
PANELS = (16, 8, 4)
#: bf16 values per 32-bit pair (vdpbf16ps multiplies pairs)
PAIR = 2
#: the attribute the rewritten contraction carries (unit): workbench/targets/cpu.py selects by it
VNNI_ATTR = "lh.vnni"
#: the attribute of the AMX layout's contraction (`amx=True`): pipelines/cpu/matmul_amx.py schedules it
AMX_ATTR = "lh.amx"
#: columns of an AMX tile's result (16 f32 = 64 bytes a row): N must be a multiple for the AMX layout
AMX_COLUMNS = 16


def _tensor_type(value):
    from mlir import ir

    t = value.type
    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    return t if isinstance(t, ir.RankedTensorType) else None


def _element(value) -> str:
    t = _tensor_type(value)
    return str(t.element_type) if t is not None else ""


def _extension_source(value):
    """The bf16 tensor `value` is the exact f32 extension of (an elementwise linalg.generic whose body is one
    arith.extf from bf16, identity maps), else None."""
    from mlir import ir

    owner = value.owner
    if not isinstance(owner, ir.OpView) and not isinstance(owner, ir.Operation):
        return None
    op = owner.operation if hasattr(owner, "operation") else owner
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return None
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if body != ["arith.extf", "linalg.yield"]:
        return None
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(not m.is_permutation or any(ir.AffineDimExpr(r).position != i for i, r in enumerate(m.results))
           for m in maps):
        return None
    source = op.operands[0]
    return source if _element(source) == "bf16" else None


#: reshapes a bf16 operand's extension may be read through (the fusion's reshape propagation leaves a
#: linear layer's matmul over collapsed rows reading collapse_shape(extf(x)): lh-shared-rhs-matmuls)
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


def _bf16_input(value, build: bool = False):
    """`value` itself when bf16, the bf16 tensor it extends when an f32 extension of one, else None. An f32
    reshape (collapse / expand_shape) of such an extension: with `build`, the same reshape of the bf16 tensor
    (made at the current insertion point); without, the bf16 tensor (a check: nothing is made). A generic's
    f32 result that is a bf16 rounding extended back (`_rounding`): with `build`, the producer rebuilt to
    yield the bf16 tensor (`_bf16_result`), that tensor; without, `value` (not None: a check)."""
    if _element(value) == "bf16":
        return value
    if _element(value) != "f32":
        return None
    owner = value.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    if getattr(op, "name", "") in _RESHAPES and len(op.results) == 1:
        source = _bf16_input(op.operands[0], build)
        if source is None or not build:
            return source
        from mlir import ir
        from mlir.dialects import tensor

        shape = list(_tensor_type(value).shape)
        result = ir.RankedTensorType.get(shape, _tensor_type(source).element_type)
        reassociation = op.attributes["reassociation"]
        if op.name == "tensor.collapse_shape":
            return tensor.CollapseShapeOp(result, source, reassociation).result
        return tensor.ExpandShapeOp(result, source, reassociation, [], shape).result
    source = _extension_source(value)
    if source is not None or _rounding(value) is None:
        return source
    return _bf16_result(value) if build else value


def _rounding(value):
    """The bf16 value in a linalg.generic's body whose `arith.extf` to f32 the body yields as `value`, when
    the body does not read that result's init; else None. Then `value` is exactly a bf16 tensor's extension,
    the extension fused into its producer: the fusion folds torch-mlir's `extf` of a bf16 layer-norm output
    into the layer norm (whose f32 body then ends in truncf to bf16, extf back to f32), of a bf16 GELU's
    output into the GELU (its bf16 ops, then extf)."""
    from mlir import ir

    owner = value.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    if getattr(op, "name", "") != "linalg.generic" or _tensor_type(value) is None:
        return None
    index = ir.OpResult(value).result_number
    block = op.regions[0].blocks[0]
    n_inputs = len(op.operands) - len(op.results)
    if list(block.arguments[n_inputs + index].uses):
        return None
    extf = list(block.operations)[-1].operands[index].owner
    if not isinstance(extf, (ir.Operation, ir.OpView)) or extf.operation.name != "arith.extf":
        return None
    narrow = extf.operands[0]
    return narrow if str(narrow.type) == "bf16" and str(extf.results[0].type) == "f32" else None


def _bf16_result(value):
    """`value`'s producer (`_rounding` holds) rebuilt to yield the bf16 tensor for it (the extension's
    operand, into a bf16 init); what else read `value` reads that tensor's f32 extension (an elementwise generic,
    which `_extension_source` takes and the rewrite erases once nothing reads it). The bf16 result."""
    from mlir import ir
    from mlir.dialects import tensor

    owner = value.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    index = ir.OpResult(value).result_number
    narrow = _rounding(value)
    block = op.regions[0].blocks[0]
    yield_op = list(block.operations)[-1]
    extf = yield_op.operands[index].owner
    n_inputs = len(op.operands) - len(op.results)
    bf16 = ir.BF16Type.get()
    shape = list(_tensor_type(value).shape)
    attributes = {a.name: a.attr for a in (op.attributes[n] for n in range(len(op.attributes)))}
    with ir.InsertionPoint(op), op.location:
        init = tensor.EmptyOp(shape, bf16).result
        operands = list(op.operands)
        operands[n_inputs + index] = init
        types = [r.type for r in op.results]
        types[index] = init.type
        new = ir.Operation.create("linalg.generic", results=types, operands=operands, attributes=attributes,
                                  regions=1)
        arg_types = [a.type for a in block.arguments]
        arg_types[n_inputs + index] = bf16
        fresh = new.regions[0].blocks.append(*arg_types)
        for old_arg, new_arg in zip(block.arguments, fresh.arguments):
            old_arg.replace_all_uses_with(new_arg)
        for inner in list(block.operations):
            fresh.append(inner.operation)
        if isinstance(narrow.owner, ir.Block):   # (the extension of a bf16 input: its new argument)
            narrow = fresh.arguments[ir.BlockArgument(narrow).arg_number]
        yield_op.operands[index] = narrow
        if not list(extf.results[0].uses):
            extf.operation.erase()
        rounded = new.results[index]
        widened = _extension(rounded, _tensor_type(value))
    for n, (old, result) in enumerate(zip(op.results, new.results)):
        old.replace_all_uses_with(widened if n == index else result)
    old_init = op.operands[n_inputs + index]
    op.erase()
    from workbench.worker.ir_walk import erase_unread

    erase_unread(old_init, ("tensor.empty",))
    return rounded


def _extension(value, f32_type):
    """An elementwise linalg.generic extending the bf16 tensor `value` to `f32_type` (at the current
    insertion point)."""
    from mlir import ir
    from mlir.dialects import arith, linalg, tensor

    rank = len(f32_type.shape)
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    init = tensor.EmptyOp(list(f32_type.shape), f32_type.element_type).result
    generic = linalg.GenericOp([f32_type], [value], [init], ir.ArrayAttr.get([identity, identity]),
                               ir.ArrayAttr.get([parallel] * rank))
    block = generic.regions[0].blocks.append(_tensor_type(value).element_type, f32_type.element_type)
    with ir.InsertionPoint(block):
        linalg.YieldOp([arith.ExtFOp(f32_type.element_type, block.arguments[0]).result])
    return generic.results[0]


def _transposed_source(value, rank: int):
    """The tensor `value` is the transpose of in its last two dims (linalg.transpose), else None."""
    owner = value.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    if getattr(op, "name", "") != "linalg.transpose":
        return None
    from mlir import ir

    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    expected = list(range(rank - 2)) + [rank - 1, rank - 2]
    return op.operands[0] if perm == expected else None


def _default_maps(op) -> bool:
    """The op's indexing maps are a plain (batch) matmul's: A[b.., m, k], B[b.., k, n], C[b.., m, n]."""
    from mlir import ir

    try:
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        key = [[ir.AffineDimExpr(r).position for r in m.results] for m in maps]
    except (KeyError, ValueError, TypeError):
        return True   # (no maps: the named op's defaults)
    lead = list(range(len(key[0]) - 2)) if key else []
    m, n, k = len(lead), len(lead) + 1, len(lead) + 2
    return key == [lead + [m, k], lead + [k, n], lead + [m, n]]


def _eligible(op) -> bool:
    from mlir import ir

    if op.name not in ("linalg.matmul", "linalg.batch_matmul") or len(op.results) != 1:
        return False
    if not _default_maps(op):
        return False   # (a transposed form: lh-plain-matmul-layout makes it plain first)
    a, b, c = op.operands
    if _element(c) != "f32" or _bf16_input(a) is None or _bf16_input(b) is None:
        return False
    types = [_tensor_type(v) for v in (a, b, c)]
    if any(t is None or not t.has_static_shape for t in types):
        return False
    k, n = types[1].shape[-2:]
    return k % PAIR == 0 and k > 0 and panel_width(n) > 0


def panel_width(n: int) -> int:
    """The widest of PANELS that divides `n` (0: none)."""
    return next((p for p in PANELS if n % p == 0), 0)


def _pack_b(b, batch: int):
    """B (batch.. x K x N, bf16) packed as batch.. x N/16 x K/2 x 16 x 2 (from W when B = transpose(W))."""
    from mlir import ir
    from mlir.dialects import linalg, tensor

    rank = batch + 2
    t = _tensor_type(b)
    k, n = t.shape[-2:]
    lead = list(t.shape[:batch])
    panel = panel_width(n)
    packed_shape = lead + [n // panel, k // PAIR, panel, PAIR]
    dest = tensor.EmptyOp(packed_shape, t.element_type).result
    w = _transposed_source(b, rank)
    if w is not None:   # W: batch.. x N x K, tiles over (n, k) in order: no outer permutation
        source, inner, perm = w, [batch, batch + 1], None
    else:               # B: batch.. x K x N, tiles (n, k); outer dims (n/16, k/2)
        source, inner, perm = b, [batch + 1, batch], list(range(batch)) + [batch + 1, batch]
    pack = linalg.PackOp(source, dest, inner, [], [panel, PAIR], outer_dims_perm=perm)
    return pack.result


def _expand_last(value, factor: int):
    """`value` (.. x D) viewed as .. x D/factor x factor."""
    from mlir import ir
    from mlir.dialects import tensor

    t = _tensor_type(value)
    shape = list(t.shape)
    new = shape[:-1] + [shape[-1] // factor, factor]
    groups = [[i] for i in range(len(shape) - 1)] + [[len(shape) - 1, len(shape)]]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
                                                        for i in g]) for g in groups])
    result = ir.RankedTensorType.get(new, t.element_type)
    return tensor.ExpandShapeOp(result, value, reassociation, [], new).result


def _collapse_last(value):
    """`value` (.. x A x B) viewed as .. x A*B."""
    from mlir import ir
    from mlir.dialects import tensor

    t = _tensor_type(value)
    shape = list(t.shape)
    rank = len(shape)
    groups = [[i] for i in range(rank - 2)] + [[rank - 2, rank - 1]]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
                                                        for i in g]) for g in groups])
    result = ir.RankedTensorType.get(shape[:-2] + [shape[-2] * shape[-1]], t.element_type)
    return tensor.CollapseShapeOp(result, value, reassociation).result


def _vnni_generic(a3, bp, c3, batch: int, mark: str = VNNI_ATTR):
    """C3[b.., m, no, ni] += ext(A3[b.., m, ko, ki]) * ext(Bp[b.., no, ko, ni, ki]) over loops
    (b.., m, no, ni, ko, ki), tagged `mark` (VNNI_ATTR, or AMX_ATTR: the same operands are AMX tiles, a B
    tile one panel's 16 K pairs, 1 KiB contiguous)."""
    from mlir import ir

    bs = list(range(batch))
    m, no, ni, ko, ki = range(batch, batch + 5)
    n_loops = batch + 5

    def amap(dims):
        return ir.AffineMapAttr.get(ir.AffineMap.get(n_loops, 0, [ir.AffineDimExpr.get(d) for d in dims]))

    maps = [amap(bs + [m, ko, ki]), amap(bs + [no, ko, ni, ki]), amap(bs + [m, no, ni])]
    return widening_multiply_add(a3, bp, c3, maps, batch + 3, 2, mark)


def widening_multiply_add(lhs, rhs, out, maps: list, parallel: int, reductions: int, mark: str):
    """A linalg.generic out += f32(lhs) * f32(rhs) over `parallel` then `reductions` loops (`maps`:
    AffineMapAttrs of lhs, rhs, out), marked `mark` for its schedule; its result."""
    from mlir import ir
    from mlir.dialects import arith, linalg

    par, red = (ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in ("parallel", "reduction"))
    iterators = ir.ArrayAttr.get([par] * parallel + [red] * reductions)
    f32 = ir.F32Type.get()
    generic = linalg.GenericOp([out.type], [lhs, rhs], [out], ir.ArrayAttr.get(maps), iterators)
    narrow = _tensor_type(lhs).element_type
    block = generic.regions[0].blocks.append(narrow, _tensor_type(rhs).element_type, f32)
    with ir.InsertionPoint(block):
        x, y, acc = block.arguments
        product = arith.MulFOp(arith.ExtFOp(f32, x).result, arith.ExtFOp(f32, y).result).result
        linalg.YieldOp([arith.AddFOp(acc, product).result])
    generic.operation.attributes[mark] = ir.UnitAttr.get()
    return generic.results[0]


def vnni_contractions(module, amx: bool = False) -> int:
    """Rewrite every eligible contraction (module docstring); how many were rewritten. `amx`: those whose N
    is a multiple of AMX_COLUMNS are tagged AMX_ATTR instead (their panels 16 columns wide: each AMX B tile
    one panel's 16 K pairs, 1 KiB contiguous, where a B tile of whole rows of B read 16 rows 2N bytes apart;
    on the device the change of layout alone measured within noise)."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where

    rewritten = 0
    for op in ops_where(module, _eligible):
        batch = 1 if op.name == "linalg.batch_matmul" else 0
        with ir.InsertionPoint(op), op.location:
            a16 = _bf16_input(op.operands[0], build=True)
            b16 = _bf16_input(op.operands[1], build=True)
            # (read after: a rounding fused into a producer was split off it, the producer replaced)
            a, b, c = op.operands
            a3 = _expand_last(a16, PAIR)
            on_tiles = amx and _tensor_type(c).shape[-1] % AMX_COLUMNS == 0
            bp = _pack_b(b16, batch)
            c3 = _expand_last(c, panel_width(_tensor_type(c).shape[-1]))
            result = _collapse_last(_vnni_generic(a3, bp, c3, batch, AMX_ATTR if on_tiles else VNNI_ATTR))
        op.results[0].replace_all_uses_with(result)
        op.erase()
        for value in (a, b):
            _erase_if_dead(value)
        rewritten += 1
    return rewritten


def _erase_if_dead(value) -> None:
    """Erase the op defining `value` (an extension or transpose the rewrite read through) once nothing
    uses it, and so on up its operands."""
    from workbench.worker.ir_walk import erase_unread

    erase_unread(value, ("linalg.generic", "linalg.transpose", "tensor.empty") + _RESHAPES)
