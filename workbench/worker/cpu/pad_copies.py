"""`lh-pad-copies`: reflection, replication and circular pads (torch's reflection_pad1d/2d/3d,
replication_pad1d/2d/3d, F.pad(mode="reflect" | "replicate" | "circular") as gathers) rewritten into
row copies: one pass over the output, contiguous vector loads and stores, no gathers.

torch-mlir writes such a pad as gathers: an all-parallel linalg.generic per padded dim whose body loads
`input[f(i)]` (`tensor.extract`) at indices computed from index tables (`|n - 1 - |i - p||` for a
reflection, `min(max(i - p, 0), n - 1)` for a replication). The selector's lh-gather-indices splits
each along its innermost loop into a contiguous interior and border columns, three ops, each a pass
over the output's rows (the border columns a cache line per element, vector.gather along the rows).

Here such a gather is recognized from what its index arithmetic computes, not from how it is written:
the tables are computed in its body and a gather of a gather (H then W) composed into one load
(lh-gather-indices' first steps, gathers.py), then every index of the load is evaluated over its loop
(numpy, exact for static shapes). The op is rewritten when every index depends on its own dim's loop
alone and each dim's values are the pad map of widths (p, q) >= 0 over the input's size n (extent
n + p + q): the identity, a reflection (p, q <= n - 1), a replication, or a circular wrap (p, q <= n),
with at least one dim padded. Any rank, any element type of 8 bits or more, pads of 0 on a side.

The result is a loop over the output's rows (every dim but the last; an scf.forall where {threads=N}
is more than 1 and the output has at least {min-work=K} elements, else a nest of scf.for: the async
runtime's dispatch costs tens of microseconds, more than a small pad takes), each row written into
its slice of the output (destination passing, in place once bufferized): the source row index of
each padded outer dim read from a constant table, then along the last dim its runs of unit stride
(the interior, a circular pad's wrapped parts) as vector.transfer_read / transfer_write chunks of
{lanes=16} x 32 bits, and the single elements between them (a reflection's or replication's border)
as scalar loads and stores. Each output element is written once, from the element the gather loaded:
the same values (a copy). The selector passes its thread count and MIN_PARALLEL_WORK (async-parallel-for
in cpu-lower splits the forall's rows over the threads).

Anything else (another map along a dim: a flip, a roll, a stride; an index that mixes loops; more
loads in the body; a row with more than MAX_SINGLES single elements) is left as it is, and a module
without such a pad is not touched at all (the check runs on a copy).
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from workbench.worker.cpu import gathers
from workbench.worker.ir_walk import element_bits, iterator_types, ops_where

#: a row with more single (non-run) elements than this is left to lh-gather-indices (a reflection of
#: most of a long row: unrolled scalar copies would be a large body for little)
MAX_SINGLES = 64
#: runs of up to this many vector chunks are written out chunk by chunk, longer ones loop over chunks
MAX_UNROLLED_CHUNKS = 8


def pad_map(values: np.ndarray, n: int) -> tuple[str, int, int] | None:
    """(kind, p, q) when values[j] (j over n + p + q) is the pad map of widths p, q over a dim of size
    n: "identity" (p = q = 0), "reflect", "replicate" or "circular"; else None."""
    extent = len(values)
    if extent < n or n < 1:
        return None
    for p in range(extent - n + 1):
        q = extent - n - p
        j = np.arange(extent, dtype=np.int64) - p
        if p == q == 0 and np.array_equal(values, j):
            return "identity", 0, 0
        if p == q == 0:
            continue
        if p <= n - 1 and q <= n - 1:
            r = np.abs(j)
            if np.array_equal(values, np.where(r > n - 1, 2 * (n - 1) - r, r)):
                return "reflect", p, q
        if np.array_equal(values, np.clip(j, 0, n - 1)):
            return "replicate", p, q
        if p <= n and q <= n and np.array_equal(values, np.mod(j, n)):
            return "circular", p, q
    return None


def runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """The maximal runs of unit stride of values, as (output start, source start, length)."""
    found = []
    start = 0
    for j in range(1, len(values) + 1):
        if j == len(values) or values[j] != values[j - 1] + 1:
            found.append((start, int(values[start]), j - start))
            start = j
    return found


def _yielded_extract(op):
    """The body's one tensor.extract when the body is index arithmetic, that load and a yield of it, its
    output and inputs unread; else None."""
    body = gathers._body(op)
    if len(op.results) != 1 or any(list(argument.uses) for argument in body.arguments):
        return None
    extracts = []
    for inner in body.operations:
        name = inner.operation.name
        if name == "tensor.extract":
            extracts.append(inner)
        elif name != "linalg.yield" and name not in gathers.INDEX_OPS:
            return None
    if len(extracts) != 1:
        return None
    extract = extracts[0]
    terminator = body.operations[len(body.operations) - 1]
    if terminator.operands[0] != extract.results[0] or gathers._in_body(extract.operands[0], body):
        return None
    return extract


def pad_plan(op) -> dict | None:
    """What a pad gather copies: {"source", "reads" (per index of the load: the loop it reads, or
    ("constant", c)), "tables" (per loop, the source index at each iteration, int64), "maps" ((kind, p, q)
    per loop)}; None where `op` is no pad (module docstring)."""
    if any(it != "parallel" for it in iterator_types(op)):
        return None
    domain = gathers._domain(op)
    maps = gathers._maps(op)
    if domain is None or maps[-1] != ir.AffineMap.get_identity(len(domain)):
        return None
    extract = _yielded_extract(op)
    if extract is None:
        return None
    source = extract.operands[0]
    source_type = ir.RankedTensorType(source.type)
    if not source_type.has_static_shape or not domain:
        return None
    element = source_type.element_type
    if not isinstance(element, (ir.FloatType, ir.IntegerType)) or element_bits(element) < 8:
        return None
    # each loop read by one index of the load, in order (no transpose), the innermost by the last
    # index (rows stay rows); an index that depends on no loop is a constant (a slice of the input)
    reads: list = []   # per load index: loop d, or ("constant", c)
    tables: dict[int, np.ndarray] = {}
    kinds: dict[int, tuple[str, int, int]] = {}
    for k, index in enumerate(list(extract.operands)[1:]):
        deps = gathers.dependence(index, op)
        if deps is None or len(deps) > 1:
            return None
        if not deps:
            values = gathers.evaluate(index, op, 0, 1)
            if values is None or not 0 <= int(values[0]) < source_type.shape[k]:
                return None
            reads.append(("constant", int(values[0])))
            continue
        d = next(iter(deps))
        values = gathers.evaluate(index, op, d, domain[d])
        found = None if values is None else pad_map(values, source_type.shape[k])
        if found is None or d in tables:
            return None
        reads.append(d)
        tables[d] = values
        kinds[d] = found
    loops = [r for r in reads if not isinstance(r, tuple)]
    if loops != list(range(len(domain))) or reads[-1] != len(domain) - 1:
        return None
    if all(kind == "identity" for kind, _, _ in kinds.values()):
        return None   # a copy, not a pad
    if sum(1 for _, _, length in runs(tables[len(domain) - 1]) if length == 1) > MAX_SINGLES:
        return None
    return {"source": source, "reads": reads, "tables": [tables[d] for d in range(len(domain))],
            "maps": [kinds[d] for d in range(len(domain))]}


def _index_constants(lines: list[str]):
    """A function naming index constants of the function `lines` writes: each declared once, at its top."""
    constants: dict[int, str] = {}

    def const(value: int) -> str:
        if value not in constants:
            constants[value] = f"%k{value}"
            lines.insert(1, f"  %k{value} = arith.constant {value} : index")
        return constants[value]

    return const


def _row_slice(out_shape: list[int]) -> tuple[str, str, str]:
    """The offsets, sizes and strides of the output row at the outer loops' indices %i0, %i1, ..."""
    outer = range(len(out_shape) - 1)
    return (", ".join([f"%i{k}" for k in outer] + ["0"]), ", ".join(["1"] * len(outer) + [str(out_shape[-1])]),
            ", ".join(["1"] * len(out_shape)))


def _open_row_loops(lines: list[str], body: list[str], out_shape: list[int], out_t: str, row_t: str,
                    parallel: bool, const) -> str:
    """Open the loops over the output's rows (an scf.forall where `parallel`, else a nest of scf.for loops,
    each carrying the output: the innermost writes its row into it, in place once bufferized) in `lines`, the
    row's extract_slice in `body`; the row's SSA name (%empty for a rank-1 output: no loops)."""
    outer = list(range(len(out_shape) - 1))
    if not outer:
        return "%empty"
    offsets, sizes, ones = _row_slice(out_shape)
    if parallel:
        ivs = ", ".join(f"%i{k}" for k in outer)
        bounds = ", ".join(str(out_shape[k]) for k in outer)
        lines.append(f"  %res = scf.forall ({ivs}) in ({bounds}) shared_outs(%out = %empty) -> ({out_t}) {{")
        carried = "%out"
    else:
        carried = "%empty"
        for k in outer:
            lines.append(f"  %r{k} = scf.for %i{k} = {const(0)} to {const(out_shape[k])} step {const(1)} "
                         f"iter_args(%out{k} = {carried}) -> ({out_t}) {{")
            carried = f"%out{k}"
    body.append(f"    %row0 = tensor.extract_slice {carried}[{offsets}] [{sizes}] [{ones}] : {out_t} to {row_t}")
    return "%row0"


def _close_row_loops(lines: list[str], body: list[str], row: str, out_shape: list[int], out_t: str, row_t: str,
                     parallel: bool) -> str:
    """`body` into `lines`, the row written back into the output, the loops `_open_row_loops` opened closed and
    the output returned: the function's text."""
    outer = list(range(len(out_shape) - 1))
    offsets, sizes, ones = _row_slice(out_shape)
    lines += body
    if outer and parallel:
        lines += ["    scf.forall.in_parallel {",
                  f"      tensor.parallel_insert_slice {row} into %out[{offsets}] [{sizes}] [{ones}] : {row_t} into {out_t}",
                  "    }", "  }", f"  return %res : {out_t}"]
    elif outer:
        lines += [f"    %written = tensor.insert_slice {row} into %out{outer[-1]}[{offsets}] [{sizes}] [{ones}] "
                  f": {row_t} into {out_t}", f"    scf.yield %written : {out_t}", "  }"]
        for k in reversed(outer[:-1]):
            lines += [f"  scf.yield %r{k + 1} : {out_t}", "  }"]
        lines.append(f"  return %r0 : {out_t}")
    else:
        lines.append(f"  return {row} : {out_t}")
    lines.append("}")
    return "\n".join(lines)


def _pad_text(source_type, out_shape: list[int], reads: list, tables: list[np.ndarray], lanes: int,
              parallel: bool) -> str:
    """A function @pad(%src) -> the padded tensor, the rows' copies (module docstring): an scf.forall over the
    rows where `parallel`, else a nest of scf.for loops."""
    element = source_type.element_type
    et = str(element)
    rank = len(out_shape)
    src_t = str(source_type)
    out_t = f"tensor<{'x'.join(map(str, out_shape))}x{et}>"
    chunk = max(1, lanes * 32 // element_bits(element))
    zero = "0.0" if isinstance(element, ir.FloatType) else "0"
    lines = [f"func.func @pad(%src: {src_t}) -> {out_t} {{",
             f"  %zero = arith.constant {zero} : {et}",
             f"  %empty = tensor.empty() : {out_t}"]
    const = _index_constants(lines)

    outer = list(range(rank - 1))
    row_w = out_shape[-1]
    row_t = f"tensor<{row_w}x{et}>"
    body: list[str] = []
    indent = "    " if outer else "  "
    row_index = {}
    for k in outer:
        if np.array_equal(tables[k], np.arange(out_shape[k])):
            row_index[k] = f"%i{k}"
            continue
        values = ", ".join(str(int(v)) for v in tables[k])
        lines.append(f"  %table{k} = arith.constant dense<[{values}]> : tensor<{out_shape[k]}xindex>")
        body.append(f"{indent}%s{k} = tensor.extract %table{k}[%i{k}] : tensor<{out_shape[k]}xindex>")
        row_index[k] = f"%s{k}"
    row = _open_row_loops(lines, body, out_shape, out_t, row_t, parallel, const)
    count = 0

    def src_at(column: str) -> str:
        return ", ".join(const(r[1]) if isinstance(r, tuple) else column if r == rank - 1 else row_index[r]
                         for r in reads)

    for start, first, length in runs(tables[-1]):
        if length == 1:
            count += 1
            body.append(f"{indent}%x{count} = tensor.extract %src[{src_at(const(first))}] : {src_t}")
            body.append(f"{indent}%row{count} = tensor.insert %x{count} into {row}[{const(start)}] : {row_t}")
            row = f"%row{count}"
            continue
        full, tail = divmod(length, chunk)
        if full > MAX_UNROLLED_CHUNKS:
            count += 1
            n = count
            body.append(f"{indent}%row{n} = scf.for %j{n} = {const(0)} to {const(full * chunk)} step {const(chunk)} "
                        f"iter_args(%acc{n} = {row}) -> ({row_t}) {{")
            body.append(f"{indent}  %sj{n} = arith.addi %j{n}, {const(first)} : index")
            body.append(f"{indent}  %dj{n} = arith.addi %j{n}, {const(start)} : index")
            body.append(f"{indent}  %v{n} = vector.transfer_read %src[{src_at(f'%sj{n}')}], %zero {{in_bounds = [true]}} "
                        f": {src_t}, vector<{chunk}x{et}>")
            body.append(f"{indent}  %w{n} = vector.transfer_write %v{n}, %acc{n}[%dj{n}] {{in_bounds = [true]}} "
                        f": vector<{chunk}x{et}>, {row_t}")
            body.append(f"{indent}  scf.yield %w{n} : {row_t}")
            body.append(f"{indent}}}")
            row = f"%row{n}"
            pieces = [(full * chunk, tail)] if tail else []
        else:
            pieces = [(c * chunk, chunk) for c in range(full)] + ([(full * chunk, tail)] if tail else [])
        for offset, width in pieces:
            count += 1
            body.append(f"{indent}%v{count} = vector.transfer_read %src[{src_at(const(first + offset))}], %zero "
                        f"{{in_bounds = [true]}} : {src_t}, vector<{width}x{et}>")
            body.append(f"{indent}%row{count} = vector.transfer_write %v{count}, {row}[{const(start + offset)}] "
                        f"{{in_bounds = [true]}} : vector<{width}x{et}>, {row_t}")
            row = f"%row{count}"
    return _close_row_loops(lines, body, row, out_shape, out_t, row_t, parallel)


def _rewrite(op, plan: dict, lanes: int, threads: int, min_work: int) -> None:
    """Replace pad gather `op` by its rows' copies (parsed from _pad_text, moved in before `op`)."""
    source = plan["source"]
    out_shape = list(ir.RankedTensorType(op.results[0].type).shape)
    parallel = threads > 1 and int(np.prod(out_shape)) >= min_work
    text = _pad_text(ir.RankedTensorType(source.type), out_shape, plan["reads"], plan["tables"], lanes, parallel)
    parsed = ir.Module.parse(text, op.context)
    func = parsed.body.operations[0]
    block = func.regions[0].blocks[0]
    ops = list(block.operations)
    terminator = ops[-1]
    result = terminator.operands[0]
    terminator.erase()
    for inner in ops[:-1]:
        inner.operation.move_before(op)
    block.arguments[0].replace_all_uses_with(source)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _compose_tables(module) -> None:
    """Index tables computed from other tables (torch-mlir's `|n - 1 - |i - p||` over the table of i - p,
    left as a generic of its own where p = 0 folds the first one to the plain index) computed from the
    loop indices alone: input-less tables, which gathers._inline_tables takes."""
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        n_inputs = len(op.operands) - len(op.results)
        if (len(op.results) != 1 or not n_inputs or any(it != "parallel" for it in iterator_types(op))
                or not isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.IntegerType)
                or any(inner.operation.name not in gathers.INDEX_OPS | {"linalg.yield"}
                       for inner in gathers._body(op).operations)):
            continue
        if gathers._inline_tables(op):
            with op.location:
                gathers._drop_unused_inputs(op)


def _pads(module) -> list:
    """(op, plan) for each pad gather of `module`, after gathers.py's first steps (tables computed in the
    bodies, gathers of gathers composed)."""
    _compose_tables(module)
    for op in gathers._gather_ops(module):
        gathers._inline_tables(op)
    while any(gathers._fuse_producer_gathers(op) for op in reversed(gathers._gather_ops(module))):
        pass
    found = []
    for op in gathers._gather_ops(module):
        plan = pad_plan(op)
        if plan is not None:
            found.append((op, plan))
    return found


def pad_copies(module, lanes: int = 16, threads: int = 1, min_work: int = 0) -> int:
    """Rewrite the module's pad gathers (module docstring); how many. A module without one is left
    untouched (the tables are inlined and the gathers composed on a copy first)."""
    from mlir.passmanager import PassManager

    probe = module.operation.clone()
    try:
        if not _pads(probe):
            return 0
    finally:
        probe.erase()
    found = _pads(module)
    for op, plan in found:
        _rewrite(op, plan, lanes, threads, min_work)
    PassManager.parse("builtin.module(func.func(canonicalize,cse))", context=module.context).run(module.operation)
    return len(found)


# -- constant pads (`lh-constant-pad-rows`) ----------------------------------------------------------------
#
# A `tensor.pad` with one value bufferizes to a fill of the whole padded buffer (`linalg.map`) and a copy of the
# source into its interior: two passes over the padded buffer, the interior written twice (a depthwise 3x3's
# 8 x 128 x 58 x 58 input pad: fill 1.2 + copy 1.7 ms of its ~4.5 on one core of the 2-core Icelake host). Here
# such a pad is one pass of row copies instead, as the gather pads above: each row of the padded output is
# written once, a border row (a padded outer dim's index outside the source) as vectors of the value, an
# interior row as the value's vectors around the source row's vector copies.

#: a constant pad with fewer output elements than this is left as it is (a small pad's fill is no pass over
#: memory; its rows' loops would be more code than work)
MIN_CONSTANT_PAD_ELEMENTS = 1 << 12


def constant_pad_plan(op, min_elements: int = MIN_CONSTANT_PAD_ELEMENTS) -> dict | None:
    """{"source", "value", "low", "high"} of a `tensor.pad` this rewrite takes: static shapes, static non-negative
    widths, a region that yields one value defined outside it, elements of 8+ bits, a convolution's layout (rank
    3 or more, the first two dims, batch and channels, unpadded: not a matmul's padded rows or columns, which
    its schedule's packing reads), at least `min_elements` elements; else None."""
    if op.name != "tensor.pad":
        return None
    source = op.operands[0]
    source_type, out_type = ir.RankedTensorType(source.type), ir.RankedTensorType(op.results[0].type)
    if not source_type.has_static_shape or not out_type.has_static_shape or len(op.operands) != 1:
        return None
    element = source_type.element_type
    if not isinstance(element, (ir.FloatType, ir.IntegerType)) or element_bits(element) < 8:
        return None
    low = [int(v) for v in ir.DenseI64ArrayAttr(op.attributes["static_low"])]
    high = [int(v) for v in ir.DenseI64ArrayAttr(op.attributes["static_high"])]
    rank = len(low)
    if rank < 3 or any(v < 0 for v in low + high) or low[0] or low[1] or high[0] or high[1] or not any(low + high):
        return None
    if int(np.prod(list(out_type.shape))) < min_elements:
        return None
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if body[-1].operation.name != "tensor.yield":
        return None
    value = body[-1].operands[0]
    if len(body) == 2 and body[0].operation.name == "arith.constant" and value == body[0].results[0]:
        # (a constant made inside the region, as lh-conv-planes' widened pad has it: made anew before the pad)
        return {"source": source, "value": None, "constant": body[0].attributes["value"], "low": low, "high": high}
    if len(body) != 1 or (isinstance(value, ir.BlockArgument) and value.owner == block) or (
            not isinstance(value, ir.BlockArgument) and value.owner.operation.parent == op.operation):
        return None
    return {"source": source, "value": value, "low": low, "high": high}


def _constant_pad_text(source_type, out_shape: list[int], low: list[int], lanes: int, parallel: bool) -> str:
    """A function @pad(%src, %pv) -> the source padded with %pv (widths `low` before each dim, the rest after),
    row by row (see above): an scf.forall over the rows where `parallel`, else a nest of scf.for loops."""
    element = source_type.element_type
    et = str(element)
    rank = len(out_shape)
    shape = list(source_type.shape)
    src_t = str(source_type)
    out_t = f"tensor<{'x'.join(map(str, out_shape))}x{et}>"
    chunk = max(1, lanes * 32 // element_bits(element))
    lines = [f"func.func @pad(%src: {src_t}, %pv: {et}) -> {out_t} {{", f"  %empty = tensor.empty() : {out_t}"]
    const = _index_constants(lines)
    splats: dict[int, str] = {}


    def splat(width: int) -> str:
        if width not in splats:
            splats[width] = f"%pv{width}"
            lines.insert(1, f"  %pv{width} = vector.broadcast %pv : {et} to vector<{width}x{et}>")
        return splats[width]

    outer = list(range(rank - 1))
    row_w = out_shape[-1]
    row_t = f"tensor<{row_w}x{et}>"
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"%{prefix}{counter[0]}"

    def pieces(length: int) -> list[tuple[int, int]]:
        full, tail = divmod(length, chunk)
        return [(c * chunk, chunk) for c in range(full)] + ([(full * chunk, tail)] if tail else [])

    def fill(code: list[str], indent: str, row: str, start: int, length: int) -> str:
        for offset, width in pieces(length):
            new = fresh("row")
            if width == 1:
                code.append(f"{indent}{new} = tensor.insert %pv into {row}[{const(start + offset)}] : {row_t}")
            else:
                code.append(f"{indent}{new} = vector.transfer_write {splat(width)}, {row}[{const(start + offset)}] "
                            f"{{in_bounds = [true]}} : vector<{width}x{et}>, {row_t}")
            row = new
        return row

    def copy(code: list[str], indent: str, row: str, src_rows: list[str]) -> str:
        start, length = low[-1], shape[-1]
        full = length // chunk
        parts = pieces(length)
        if full > MAX_UNROLLED_CHUNKS:
            new, j, acc, v, d = fresh("row"), fresh("j"), fresh("acc"), fresh("v"), fresh("d")
            code += [f"{indent}{new} = scf.for {j} = {const(0)} to {const(full * chunk)} step {const(chunk)} "
                     f"iter_args({acc} = {row}) -> ({row_t}) {{",
                     f"{indent}  {d} = arith.addi {j}, {const(start)} : index",
                     f"{indent}  {v} = vector.transfer_read %src[{', '.join(src_rows + [j])}], %pv {{in_bounds = [true]}} "
                     f": {src_t}, vector<{chunk}x{et}>"]
            w = fresh("w")
            code += [f"{indent}  {w} = vector.transfer_write {v}, {acc}[{d}] {{in_bounds = [true]}} : vector<{chunk}x{et}>, {row_t}",
                     f"{indent}  scf.yield {w} : {row_t}", f"{indent}}}"]
            row = new
            parts = [p for p in parts if p[0] >= full * chunk]
        for offset, width in parts:
            v, new = fresh("v"), fresh("row")
            code.append(f"{indent}{v} = vector.transfer_read %src[{', '.join(src_rows + [const(offset)])}], %pv "
                        f"{{in_bounds = [true]}} : {src_t}, vector<{width}x{et}>")
            code.append(f"{indent}{new} = vector.transfer_write {v}, {row}[{const(start + offset)}] {{in_bounds = [true]}} "
                        f": vector<{width}x{et}>, {row_t}")
            row = new
        return row

    indent = "    " if outer else "  "
    body: list[str] = []
    row = _open_row_loops(lines, body, out_shape, out_t, row_t, parallel, const)
    # the source row of each outer dim (its index less the low width), and whether the row is inside the source
    src_rows: list[str] = []
    inside: list[str] = []
    for k in outer:
        if low[k]:
            body.append(f"{indent}%s{k} = arith.subi %i{k}, {const(low[k])} : index")
            src_rows.append(f"%s{k}")
        else:
            src_rows.append(f"%i{k}")
        if low[k]:
            body.append(f"{indent}%ge{k} = arith.cmpi sge, %i{k}, {const(low[k])} : index")
            inside.append(f"%ge{k}")
        if low[k] + shape[k] < out_shape[k]:
            body.append(f"{indent}%lt{k} = arith.cmpi slt, %i{k}, {const(low[k] + shape[k])} : index")
            inside.append(f"%lt{k}")
    interior: list[str] = []
    inner = indent + "  " if inside else indent
    r = fill(interior, inner, row, 0, low[-1])
    r = copy(interior, inner, r, src_rows)
    r = fill(interior, inner, r, low[-1] + shape[-1], row_w - low[-1] - shape[-1])
    if inside:
        cond = inside[0]
        for c in inside[1:]:
            both = fresh("in")
            body.append(f"{indent}{both} = arith.andi {cond}, {c} : i1")
            cond = both
        border: list[str] = []
        b = fill(border, inner, row, 0, row_w)
        body.append(f"{indent}%written_row = scf.if {cond} -> ({row_t}) {{")
        body += interior + [f"{inner}scf.yield {r} : {row_t}", f"{indent}}} else {{"]
        body += border + [f"{inner}scf.yield {b} : {row_t}", f"{indent}}}"]
        row = "%written_row"
    else:
        body += interior
        row = r
    return _close_row_loops(lines, body, row, out_shape, out_t, row_t, parallel)


def constant_pad_rows(module, lanes: int = 16, threads: int = 1, min_work: int = 0,
                      min_elements: int = MIN_CONSTANT_PAD_ELEMENTS) -> int:
    """Rewrite the module's constant pads (constant_pad_plan) as row copies (above); how many."""
    from mlir.passmanager import PassManager

    found = [op for op in ops_where(module, lambda o: o.name == "tensor.pad")
             if constant_pad_plan(op, min_elements) is not None]
    for op in found:
        # the plan read now, not when the pads were listed: a pad of a pad (lh-pad-conv-rows' widened rows
        # over a conv's zero pad) reads the rows the rewrite of the first made, not its erased result
        plan = constant_pad_plan(op, min_elements)
        if plan is None:
            continue
        source = plan["source"]
        out_shape = list(ir.RankedTensorType(op.results[0].type).shape)
        parallel = threads > 1 and int(np.prod(out_shape)) >= min_work
        text = _constant_pad_text(ir.RankedTensorType(source.type), out_shape, plan["low"], lanes, parallel)
        parsed = ir.Module.parse(text, op.context)
        block = parsed.body.operations[0].regions[0].blocks[0]
        for made in ops_where(parsed.body.operations[0], lambda o: True):
            made.location = op.location   # (`run --profile` names the rows' loop after the pad)
        ops = list(block.operations)
        terminator = ops[-1]
        result = terminator.operands[0]
        terminator.erase()
        for inner in ops[:-1]:
            inner.operation.move_before(op)
        block.arguments[0].replace_all_uses_with(source)
        value = plan["value"]
        if value is None:
            from mlir.dialects import arith

            with ir.InsertionPoint(op), op.location:
                value = arith.ConstantOp(ir.RankedTensorType(source.type).element_type, plan["constant"]).result
        block.arguments[1].replace_all_uses_with(value)
        op.results[0].replace_all_uses_with(result)
        op.erase()
    if found:
        PassManager.parse("builtin.module(func.func(canonicalize,cse))", context=module.context).run(module.operation)
    return len(found)
