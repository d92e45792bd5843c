"""`lh-row-networks`: a network of many small ops over the same independent rows (torch-mlir's sorting
networks: sort, argsort, topk decomposed into compare-and-swap stages) as one `scf.forall` over chunks of
rows around the whole network.

torch-mlir's decomposition of a sort along the last dim writes each stage of a bitonic network as an
`expand_shape` of the rows into (row, blocks, 2, ...), `extract_slice`s of the two halves, one fused
`linalg.generic` (compare, select the smaller / larger value and its index) and a `collapse_shape` back:
~55 stages for rows of 1024. Scheduled op by op, every stage is a pass over the whole tensor (values and
indices, 12 MiB at 1024 x 1024) and, on several cores, a parallel region of its own: 55 regions a call.
Every op of the network works row by row, though: here the ops that do (below) and the values between
them form a component; when it holds a network (at least MIN_GENERICS generics and MIN_SLICES slices) it
becomes one `scf.forall` over chunks of rows whose body is the network on `chunk` rows: each chunk's
values stay in L1 across all the stages, and there is one parallel region for the network.

A row op for rows R (dim 0 of size R > 1 in every tensor it reads or writes along the rows):
  - `linalg.generic` whose loop d0 is parallel, each output's map has d0 as its first result and nowhere
    else (dim 0 of size R), each input's map likewise or not using d0 at all (read whole by every chunk),
    a body that reads no tensor from above and no `linalg.index 0`;
  - `linalg.transpose` keeping dim 0 first; `linalg.fill` and `tensor.empty` of such a tensor;
  - `tensor.expand_shape` / `tensor.collapse_shape` whose first group is dim 0 with unit dims;
  - `tensor.extract_slice` with static offsets, sizes and strides that takes dim 0 whole (at offset 0,
    stride 1, not dropped).
Such an op computes each row of its results from the same rows of its row operands alone, so the body
on rows [r, r + chunk) yields exactly those rows of every result: the same values (no reassociation).

Values from above that the network reads along its rows are sliced per chunk; the results used after it
are written into their rows (`tensor.parallel_insert_slice`). The forall goes right after the network's
last op; a network whose result is read by an op before that point is left alone (as is every module
without a network). The chunk: the most rows of at most CHUNK_ELEMENTS elements of the widest value that
still leave {threads=N} chunks or more.
"""
from __future__ import annotations

import re

from mlir import ir

from workbench.worker.ir_walk import defining_op, element_bits, iterator_types, ops_where, ranked_tensor_type

#: a component is a network with at least this many generics and this many slices (a softmax or a norm's
#: chain, which the rows schedule fuses, has no slices; see MIN_REDUCTIONS)
MIN_GENERICS = 4
MIN_SLICES = 8
#: ... or this many reductions of the rows (topk: k rounds of a masked max and the index of its first
#: occurrence; a norm or a softmax has two, and a matmul between two ends a component)
MIN_REDUCTIONS = 5
#: a network's values hold at most this many elements per row (a sort of rows of 1024: its values, indices
#: and the halves of a stage; a transformer's layers over a batch of 2, whose elementwise and reduction ops
#: are row ops along the batch too, hold 32 K and more per row: no network)
MAX_ROW_ELEMENTS = 4096
#: a chunk holds at most this many elements of the network's widest value per row times its rows (a row
#: of 1024 f32 values and i64 indices, 12 KiB, in L1 across the stages)
CHUNK_ELEMENTS = 2048
#: ... and rows along the last dims (the network's lanes: torch-mlir moves the rows of a large sort there)
#: this many, in chunks of whole vectors of MIN_LAST_CHUNK (a 1024-element network on 32 rows: 32 K values
#: and as many indices, in L2 across the stages)
LAST_CHUNK_ELEMENTS = 32768
MIN_LAST_CHUNK = 16

#: a norm's statistics (several reductions of the same wide rows, each a pass over memory of its own) are
#: computed chunk by chunk where at least this many reductions read the same value ...
MIN_STATISTICS_READS = 2
#: ... in chunks of rows whose share of that value is at most this many bytes (L2 holds it across the
#: reductions; at least one row)
STATISTICS_CHUNK_BYTES = 512 * 1024

_SHAPE_OPS = ("tensor.expand_shape", "tensor.collapse_shape")


def _pos(rank: int, last: bool) -> int:
    """The rows' dim in a tensor (or loop) of that rank: the first, or with `last` the last."""
    return rank - 1 if last else 0


def _rowdim(value, last: bool) -> int | None:
    t = ranked_tensor_type(value, static=True)
    return t.shape[_pos(t.rank, last)] if t is not None and t.rank >= 1 else None


def _maps(op) -> list:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _uses_loop(m, loop: int, last: bool) -> tuple[bool, bool]:
    """(whether map `m` reads loop `loop`, whether it reads it alone as its rows' result and nowhere else)."""
    results = [str(e) for e in m.results]
    name = re.compile(rf"\bd{loop}\b")
    used = [i for i, r in enumerate(results) if name.search(r)]
    if not used:
        return False, False
    pos = _pos(len(results), last)
    return True, used == [pos] and results[pos] == f"d{loop}"


def _body_is_row_local(op, loop: int) -> bool:
    region_ops = ops_where(op, lambda o: o.operation != op)
    for inner in region_ops:
        if inner.name == "linalg.index" and ir.IntegerAttr(inner.attributes["dim"]).value == loop:
            return False
        for v in inner.operands:
            owner = defining_op(v)
            if ranked_tensor_type(v) is not None and owner is not None and not _nested_in(owner, op):
                return False   # a tensor read from above in the body (a gather): rows unknown
    return True


def _nested_in(inner, outer) -> bool:
    parent = inner.parent if hasattr(inner, "parent") else None
    while parent is not None:
        if parent == outer.operation:
            return True
        parent = parent.parent if hasattr(parent, "parent") else None
    return False


def row_operands(op, rows: int, last: bool = False) -> list[int] | None:
    """The operand positions `op` reads along its rows (sliced per chunk), None when `op` is no row op
    for `rows` along its first dims (with `last`: its last dims; module docstring)."""
    name = op.name
    if not len(op.results) or any(_rowdim(r, last) != rows for r in op.results):
        return None
    if name == "tensor.empty":
        return [] if not len(op.operands) else None
    if name == "linalg.fill":
        return [1] if _rowdim(op.operands[1], last) == rows else None
    if name == "linalg.transpose":
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        pos = _pos(len(perm), last)
        return [0, 1] if perm and perm[pos] == pos and _rowdim(op.operands[0], last) == rows else None
    if name in _SHAPE_OPS:
        src, res = ranked_tensor_type(op.operands[0], True), ranked_tensor_type(op.results[0], True)
        if src is None or res is None or _rowdim(op.operands[0], last) != rows:
            return None
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(op.attributes["reassociation"])]
        wide = res if name == "tensor.expand_shape" else src
        group = groups[-1] if last else groups[0]
        row = group[-1] if last else group[0]
        if row != _pos(wide.rank, last) or any(wide.shape[d] != 1 for d in group if d != row):
            return None
        return [0]
    if name == "tensor.extract_slice":
        src = ranked_tensor_type(op.operands[0], True)
        if len(op.operands) != 1 or src is None or _rowdim(op.operands[0], last) != rows:
            return None
        pos = _pos(src.rank, last)
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        if offsets[pos] != 0 or sizes[pos] != rows or strides[pos] != 1:
            return None
        return [0]
    if name == "linalg.generic":
        iterators = iterator_types(op)
        loop = _pos(len(iterators), last)
        if iterators[loop] != "parallel":
            return None
        n_in = len(op.operands) - len(op.results)
        keep = []
        for k, m in enumerate(_maps(op)):
            used, alone = _uses_loop(m, loop, last)
            if (k >= n_in and not alone) or (used and not alone):
                return None
            if used:
                if _rowdim(op.operands[k], last) != rows:
                    return None
                keep.append(k)
        return keep if _body_is_row_local(op, loop) else None
    return None


def _chunk(rows: int, row_elements: int, threads: int, last: bool) -> int:
    """Rows per chunk: the most that divide `rows`, hold at most CHUNK_ELEMENTS (rows along the last dims:
    LAST_CHUNK_ELEMENTS, and whole vectors where they can) and leave `threads` chunks or more."""
    limit = LAST_CHUNK_ELEMENTS if last else CHUNK_ELEMENTS
    fits = [c for c in range(1, rows + 1)
            if rows % c == 0 and c * row_elements <= limit and rows // c >= threads]
    if last:
        # (the rows are the vector dim inside the chunk: a chunk of whole vectors)
        fits = [c for c in fits if c % MIN_LAST_CHUNK == 0] or fits
    return max(fits, default=1)


def _components(block, rows: int, last: bool) -> tuple[list[list], dict, dict]:
    """The row ops of `block` for `rows` grouped by the values they share (in block order each), the
    block's ops' positions, each row op's row operands."""
    ops = [op.operation for op in block.operations]
    index = {op: i for i, op in enumerate(ops)}
    row_ops = {op: row_operands(op, rows, last) for op in ops}
    row_ops = {op: k for op, k in row_ops.items() if k is not None}
    # an op whose result a row op reads whole (a column index table read along the rows' other dim)
    # computes no rows: it stays outside, read whole by every chunk
    changed = True
    while changed:
        changed = False
        for op, positions in list(row_ops.items()):
            for k, v in enumerate(op.operands):
                src = defining_op(v)
                if k not in positions and src in row_ops and src.name != "tensor.empty":
                    del row_ops[src]
                    changed = True
    parent = {op: op for op in row_ops}

    def find(op):
        while parent[op] != op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op, positions in row_ops.items():
        for k in positions:
            src = defining_op(op.operands[k])
            if src is not None and src in row_ops:
                parent[find(src)] = find(op)
    groups: dict = {}
    for op in row_ops:
        groups.setdefault(find(op), []).append(op)
    return [sorted(g, key=lambda o: index[o]) for g in groups.values()], index, row_ops


def _candidate_rows(block) -> list[tuple[int, bool]]:
    seen = []
    for op in block.operations:
        if op.name == "linalg.generic" and len(op.results):
            for last in (False, True):
                r = _rowdim(op.results[0], last)
                if r is not None and r > 1 and (r, last) not in seen:
                    seen.append((r, last))
    return seen


def _with_rows(t, chunk: int, last: bool):
    shape = list(t.shape)
    shape[_pos(t.rank, last)] = chunk
    return ir.RankedTensorType.get(shape, t.element_type, t.encoding)


def _replace_at(values: list, pos: int, value) -> list:
    values = list(values)
    values[pos] = value
    return values


def _rewrite(group: list, index: dict, row_ops: dict, rows: int, threads: int, last: bool, min_work: int,
             chunk_rows: int = 0) -> bool:
    members = set(group)
    final = group[-1]
    block_ops = sorted(index, key=lambda o: index[o])
    # results read after the network (and not before its end: the forall goes after its last op)
    outputs, dead = [], []
    for op in group:
        if op.name == "tensor.empty":
            continue   # (ops outside keep the original: the forall's body makes its own)
        for r in op.results:
            for use in r.uses:
                top = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                while top not in index and top.parent is not None:
                    top = top.parent
                if top in members:
                    continue
                if (chunk_rows and top in index and top.name in _SHAPE_OPS
                        and not any(len(list(x.uses)) for x in top.results)):
                    # (a reshape nothing reads, which the fusion leaves of the statistics it folded: an
                    # instance norm's 1 x N*C x 1 x 1 mean; erased with the statistics' ops)
                    dead.append(top)
                    continue
                if top not in index or index[top] <= index[final]:
                    return False
                if r not in outputs:
                    outputs.append(r)
    if not outputs:
        return False
    widest = max(_elements(r) // rows for op in group for r in op.results)
    # (a small network on one thread: a parallel region costs more than its rows)
    chunk = _chunk(rows, widest, threads if widest * rows >= min_work else 1, last)
    if chunk_rows:
        chunk = min(chunk, chunk_rows)
    loc = final.location
    index_t = ir.IndexType.get()
    dyn = ir.ShapedType.get_dynamic_size()
    with ir.InsertionPoint(block_ops[block_ops.index(final) + 1]), loc:
        inits = [ir.Operation.create("tensor.empty", results=[r.type]).results[0] for r in outputs]
        forall = ir.Operation.create(
            "scf.forall", results=[r.type for r in outputs], operands=inits,
            attributes={"staticLowerBound": ir.DenseI64ArrayAttr.get([0]),
                        "staticUpperBound": ir.DenseI64ArrayAttr.get([rows // chunk]),
                        "staticStep": ir.DenseI64ArrayAttr.get([1]),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0, 0, len(outputs)])},
            regions=1)
    body = forall.regions[0].blocks.append(index_t, *[r.type for r in outputs])
    iv, shared = body.arguments[0], list(body.arguments[1:])

    def slice_attrs(t) -> dict:
        pos = _pos(t.rank, last)
        return {"static_offsets": ir.DenseI64ArrayAttr.get(_replace_at([0] * t.rank, pos, dyn)),
                "static_sizes": ir.DenseI64ArrayAttr.get(_replace_at(t.shape, pos, chunk)),
                "static_strides": ir.DenseI64ArrayAttr.get([1] * t.rank)}

    mapping: dict = {}
    with ir.InsertionPoint(body), loc:
        from mlir.dialects import arith

        offset = arith.MulIOp(iv, arith.ConstantOp(index_t, chunk).result).result if chunk > 1 else iv
        for op in group:
            for k in row_ops[op]:
                v = op.operands[k]
                if v not in mapping and defining_op(v) not in members:
                    t = ranked_tensor_type(v, True)
                    mapping[v] = ir.Operation.create(
                        "tensor.extract_slice", results=[_with_rows(t, chunk, last)], operands=[v, offset],
                        attributes=dict(slice_attrs(t), operandSegmentSizes=ir.DenseI32ArrayAttr.get([1, 1, 0, 0]))
                    ).results[0]
            clone = op.clone()
            for k, operand in enumerate(clone.operands):
                if operand in mapping:
                    clone.operands[k] = mapping[operand]
            for old, new in zip(op.results, clone.results):
                new.set_type(_with_rows(ranked_tensor_type(old, True), chunk, last))
                mapping[old] = new
            attr = {"tensor.expand_shape": "static_output_shape", "tensor.extract_slice": "static_sizes"}.get(op.name)
            if attr:
                values = list(ir.DenseI64ArrayAttr(clone.attributes[attr]))
                pos = _pos(len(values), last)
                clone.attributes[attr] = ir.DenseI64ArrayAttr.get(_replace_at(values, pos, chunk))
        for r, out in zip(outputs, shared):
            _write_in_place(mapping[r], out, slice_attrs(ranked_tensor_type(r, True)), offset)
        term = ir.Operation.create("scf.forall.in_parallel", regions=1)
    with ir.InsertionPoint(term.regions[0].blocks.append()), loc:
        for r, out in zip(outputs, shared):
            ir.Operation.create(
                "tensor.parallel_insert_slice", operands=[mapping[r], out, offset],
                attributes=dict(slice_attrs(ranked_tensor_type(r, True)),
                                operandSegmentSizes=ir.DenseI32ArrayAttr.get([1, 1, 1, 0, 0])))
    for r, new in zip(outputs, forall.results):
        for use in list(r.uses):
            owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if owner != forall and not _nested_in(owner, forall):
                owner.operands[use.operand_number] = new
    for op in dead:
        op.erase()
    for op in reversed(group):
        if not any(len(list(r.uses)) for r in op.results):
            op.erase()
    return True


def _write_in_place(value, shared, attrs: dict, offset) -> None:
    """A chunk's result computed by a generic into a fresh tensor (`tensor.empty`) is computed into its
    rows of the forall's shared output instead (a slice of it as the generic's init): bufferized in
    place, not into a buffer of its own copied into the output after (a normalization's wide result:
    one more pass over it)."""
    gen = defining_op(value)
    if gen is None or gen.name != "linalg.generic" or len(gen.results) != 1:
        return
    init = gen.operands[len(gen.operands) - 1]
    empty = defining_op(init)
    if empty is None or empty.name != "tensor.empty" or init.type != value.type:
        return
    with ir.InsertionPoint(gen), gen.location:
        dest = ir.Operation.create(
            "tensor.extract_slice", results=[value.type], operands=[shared, offset],
            attributes=dict(attrs, operandSegmentSizes=ir.DenseI32ArrayAttr.get([1, 1, 0, 0]))).results[0]
    gen.operands[len(gen.operands) - 1] = dest


def _elements(value) -> int:
    n = 1
    for d in ranked_tensor_type(value, True).shape:
        n *= d
    return n


def _is_network(group: list, rows: int) -> bool:
    if max(_elements(r) // rows for op in group for r in op.results) > MAX_ROW_ELEMENTS:
        return False   # (a model's layers over its batch: not a network of small ops over short rows)
    generics = [op for op in group if op.name == "linalg.generic"]
    slices = sum(1 for op in group if op.name == "tensor.extract_slice")
    reductions = sum(1 for op in generics if "reduction" in iterator_types(op))
    return len(generics) >= MIN_GENERICS and (slices >= MIN_SLICES or reductions >= MIN_REDUCTIONS)


def _reduced_loops(op) -> int:
    """How many of a generic's reduction loops have more than one iteration (static sizes read off the
    operands' shapes through their maps)."""
    sizes: dict = {}
    for v, m in zip(op.operands, _maps(op)):
        t = ranked_tensor_type(v, True)
        if t is None:
            continue
        for d, e in zip(t.shape, m.results):
            if re.fullmatch(r"d\d+", str(e)):
                sizes[int(str(e)[1:])] = d
    return sum(1 for i, it in enumerate(iterator_types(op)) if it == "reduction" and sizes.get(i, 2) != 1)


def _reread_row_bytes(group: list, rows: int, row_ops: dict) -> int:
    """Bytes per row of the widest value that several reductions of `group` read along the rows while
    every value the group computes (its generics' results) is narrow: a norm's statistics (a group norm's
    mean and variance, each a reduction over the same input rows, one pass over memory each); 0 when the
    group is not that. Rows of MAX_ROW_ELEMENTS or fewer count too where each of the reductions reduces
    several loops (an instance norm's H x W: no row of the rows schedule's chains, which reduce one) and
    the whole value is more than STATISTICS_CHUNK_BYTES (each of their passes over it goes to memory)."""
    generics = [op for op in group if op.name == "linalg.generic"]
    members = set(group)
    for op in generics:
        for r in op.results:
            if _elements(r) // rows <= MAX_ROW_ELEMENTS:
                continue
            # (a wide result: only the normalization the statistics feed, read after the group alone)
            if "reduction" in iterator_types(op) or any(_top(use.owner, members) for use in r.uses):
                return 0
    readers: dict = {}
    for op in generics:
        if "reduction" not in iterator_types(op):
            continue
        for k in row_ops[op]:
            v = op.operands[k]
            if _elements(v) // rows > MAX_ROW_ELEMENTS or (
                    _reduced_loops(op) >= 2 and _elements(v) // rows > 1
                    and _elements(v) * _bytes(v) > STATISTICS_CHUNK_BYTES):
                readers.setdefault(v, set()).add(op)
    wide = [v for v, ops in readers.items() if len(ops) >= MIN_STATISTICS_READS]
    if not wide:
        return 0
    return max(_elements(v) // rows * _bytes(v) for v in wide)


def _bytes(value) -> int:
    """Bytes per element of a tensor value."""
    return max((element_bits(ranked_tensor_type(value, True).element_type) or 32) // 8, 1)


def _top(owner, members: set) -> bool:
    """Whether `owner` (a use's owner) is one of `members` or nested in one."""
    op = owner.operation if hasattr(owner, "operation") else owner
    while op is not None:
        if op in members:
            return True
        op = op.parent if hasattr(op, "parent") else None
    return False


def row_networks(module, threads: int = 1, min_work: int = 0) -> int:
    """Rewrite every network of row ops in `module`'s functions (module docstring); how many."""
    done = 0
    for func in ops_where(module, lambda o: o.name == "func.func"):
        if not len(func.regions[0].blocks):
            continue
        block = func.regions[0].blocks[0]
        for rows, last in _candidate_rows(block):
            groups, index, row_ops = _components(block, rows, last)
            for group in groups:
                if _is_network(group, rows):
                    done += _rewrite(group, index, row_ops, rows, threads, last, min_work)
                    break   # (the block changed: the next row count reads it anew)
                row_bytes = _reread_row_bytes(group, rows, row_ops) if not last else 0
                # (only with a row per core at least: the ops in a chunk run on one core, and a batch short
                # of the cores is better split inside each op, as before)
                if row_bytes and rows >= threads:
                    chunk = max([c for c in range(1, rows + 1) if rows % c == 0
                                 and c * row_bytes <= STATISTICS_CHUNK_BYTES], default=1)
                    done += _rewrite(group, index, row_ops, rows, threads, last, min_work, chunk_rows=chunk)
                    break
    return done
