"""Shard collectives that LLVM 22's convert-shard-to-mpi does not lower, rewritten into ones it does
(worker side, before convert-shard-to-mpi).

MLIR 22.1.8's convert-shard-to-mpi lowers `shard.all_reduce` (to mpi.allreduce), `shard.update_halo`
and the process-index ops; `shard.all_gather`, `shard.all_slice`, `shard.all_to_all` and
`shard.reduce_scatter` fail to legalize ("failed to legalize operation 'shard.all_gather' that was
explicitly marked illegal"), and its mpi dialect has no allgather / alltoall op. Resharding between
the ops of a chain (a column split feeding an op that wants rows, a split result returned
replicated) is exactly where shard-partition inserts them.

Each such op becomes a call of a private helper function which convert-shard-to-mpi then lowers
like any other code. With `method=p2p` (the default) all_gather and all_to_all exchange blocks
point to point (mpi.send / mpi.recv, which MLIR 22 lowers; its nonblocking isend / irecv / wait
are not lowered): on a communicator split for the group of `grid_axes` (as convert-shard-to-mpi
makes for an all-reduce), in N-1 steps the process of group index `me` trades blocks with
`me xor k` (k = 1 .. N-1: every step pairs all processes, the lower one sends first, so blocking
calls cannot deadlock; N must be a power of two, else the all-reduce form is used). Each process
sends and receives (N-1)/N of its data, as MPI_Allgather / MPI_Alltoall would (pairwise, not
their tuned algorithms). The helper works on buffers: the call site passes its tensor through
bufferization.to_buffer (read only) and a fresh result buffer back through to_tensor.

`method=allreduce`, and reduce_scatter and all_slice always, are tensor-level helpers of
shard.process_multi_index, tensor ops and shard.all_reduce:

- all_slice (no communication): this process's block along `slice_axis` (tensor.extract_slice at
  its index within the group of `grid_axes`, row-major over those axes in their listed order);
- all_gather: a zero-filled tensor of the gathered shape, this process's input inserted at its
  block, and an all-reduce (sum) over the group: every other block adds zeros, so the result is
  exact (a -0.0 comes back as +0.0). It moves the whole gathered tensor through MPI_Allreduce;
- all_to_all: all_gather along `concat_axis`, then all_slice along `split_axis` (the gathered tensor
  is N times what an MPI_Alltoall would move);
- reduce_scatter: all_reduce with the op's reduction, then all_slice along `scatter_axis`.
"""
from __future__ import annotations

import re

from mlir import ir

from workbench.worker.ir_walk import ops_where

REWRITTEN = ("shard.all_gather", "shard.all_slice", "shard.all_to_all", "shard.reduce_scatter")
HELPER = "lh_shard_"


class CollectiveError(Exception):
    pass


def _shape(t) -> tuple[list[int], str]:
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        raise CollectiveError(f"{t}: only statically shaped tensors are supported")
    return list(rt.shape), str(rt.element_type)


def _ttype(shape: list[int], elt: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elt}>" if shape else f"tensor<{elt}>"


def _zero(elt: str) -> str:
    if elt.startswith(("f", "bf")):
        return f"0.0 : {elt}"
    if elt.startswith("i") or elt == "index":
        return f"0 : {elt}"
    raise CollectiveError(f"element type {elt}: no zero for a gather through an all-reduce")


def _int_attr(op, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _grid_axes(op) -> list[int]:
    text = str(op.attributes["grid_axes"])          # array<i16: 0, 1>
    return [int(x) for x in text.partition(":")[2].rstrip(">").split(",") if x.strip()]


def _grids(module) -> dict[str, list[int]]:
    from workbench.worker.mpi.sharding import _grid_shapes

    return _grid_shapes(module)


class _Body:
    """Text of a helper's body: SSA names and lines."""

    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def add(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"    {name} = {text}")
        return name

    def const(self, value: int) -> str:
        return self.add(f"arith.constant {value} : index")


def _group_index(b: _Body, grid: str, shape: list[int], axes: list[int]) -> tuple[str, int]:
    """(SSA index of this process within the group of grid `axes` (row-major in their order), group size)."""
    if not axes:
        return b.const(0), 1
    idx = b.fresh()
    b.lines.append(f"    {idx}:{len(axes)} = shard.process_multi_index on @{grid} axes = [{', '.join(map(str, axes))}] : "
                   + ", ".join(["index"] * len(axes)))
    linear, size = None, 1
    for k in reversed(range(len(axes))):
        term = f"{idx}#{k}"
        if size != 1:
            term = b.add(f"arith.muli {term}, {b.const(size)} : index")
        linear = term if linear is None else b.add(f"arith.addi {linear}, {term} : index")
        size *= shape[axes[k]]
    return linear, size


def _slice(b: _Body, src: str, full: list[int], axis: int, part: list[int], index: str, elt: str) -> str:
    off = b.add(f"arith.muli {index}, {b.const(part[axis])} : index")
    offsets = ", ".join(off if d == axis else "0" for d in range(len(full)))
    return b.add(f"tensor.extract_slice {src}[{offsets}] [{', '.join(map(str, part))}] [{', '.join(['1'] * len(full))}] : "
                 f"{_ttype(full, elt)} to {_ttype(part, elt)}")


def _gather(b: _Body, src: str, part: list[int], axis: int, n: int, index: str, elt: str, grid: str,
            axes: list[int]) -> tuple[str, list[int]]:
    full = list(part)
    full[axis] *= n
    empty = b.add(f"tensor.empty() : {_ttype(full, elt)}")
    zero = b.add(f"arith.constant {_zero(elt)}")
    zeros = b.add(f"linalg.fill ins({zero} : {elt}) outs({empty} : {_ttype(full, elt)}) -> {_ttype(full, elt)}")
    off = b.add(f"arith.muli {index}, {b.const(part[axis])} : index")
    offsets = ", ".join(off if d == axis else "0" for d in range(len(full)))
    placed = b.add(f"tensor.insert_slice {src} into {zeros}[{offsets}] [{', '.join(map(str, part))}] "
                   f"[{', '.join(['1'] * len(full))}] : {_ttype(part, elt)} into {_ttype(full, elt)}")
    summed = b.add(f"shard.all_reduce {placed} on @{grid} grid_axes = [{', '.join(map(str, axes))}] : "
                   f"{_ttype(full, elt)} -> {_ttype(full, elt)}")
    return summed, full


def _geometry(op, grids: dict[str, list[int]]) -> tuple:
    """(grid name, grid shape, the op's grid axes, input shape, element type, output shape) of a
    collective on a static grid."""
    grid = ir.FlatSymbolRefAttr(op.attributes["grid"]).value
    if grid not in grids:
        raise CollectiveError(f"{op.name}: grid @{grid} not found (or not a static shard.grid)")
    in_shape, elt = _shape(op.operands[0].type)
    out_shape, _ = _shape(op.results[0].type)
    return grid, grids[grid], _grid_axes(op), in_shape, elt, out_shape


def _helper_text(op, name: str, grids: dict[str, list[int]]) -> str:
    grid, gshape, axes, in_shape, elt, out_shape = _geometry(op, grids)
    b = _Body()
    index, n = _group_index(b, grid, gshape, axes)
    src = "%x"
    kind = op.name
    if kind == "shard.all_slice":
        res = _slice(b, src, in_shape, _int_attr(op, "slice_axis"), out_shape, index, elt)
    elif kind == "shard.all_gather":
        res, full = _gather(b, src, in_shape, _int_attr(op, "gather_axis"), n, index, elt, grid, axes)
        if full != out_shape:
            raise CollectiveError(f"{kind}: gathered {full}, the op says {out_shape}")
    elif kind == "shard.all_to_all":
        gathered, full = _gather(b, src, in_shape, _int_attr(op, "concat_axis"), n, index, elt, grid, axes)
        res = _slice(b, gathered, full, _int_attr(op, "split_axis"), out_shape, index, elt)
    elif kind == "shard.reduce_scatter":
        reduction = re.search(r"(\w+)>$", str(op.attributes["reduction"])) if "reduction" in op.attributes else None
        red = f" reduction = {reduction.group(1)}" if reduction else ""
        summed = b.add(f"shard.all_reduce {src} on @{grid} grid_axes = [{', '.join(map(str, axes))}]{red} : "
                       f"{_ttype(in_shape, elt)} -> {_ttype(in_shape, elt)}")
        res = _slice(b, summed, in_shape, _int_attr(op, "scatter_axis"), out_shape, index, elt)
    else:
        raise CollectiveError(f"{kind}: not rewritten")
    return (f"func.func private @{name}(%x: {_ttype(in_shape, elt)}) -> {_ttype(out_shape, elt)} {{\n"
            + "\n".join(b.lines) + f"\n    return {res} : {_ttype(out_shape, elt)}\n}}")


def _mtype(shape: list[int], elt: str, strides: list[int] | None = None) -> str:
    dims = "x".join(map(str, shape))
    layout = f", strided<[{', '.join(map(str, strides))}], offset: ?>" if strides is not None else ""
    return f"memref<{dims}x{elt}{layout}>" if shape else f"memref<{elt}{layout}>"


def _row_major(shape: list[int]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _block_view(b: _Body, src: str, shape: list[int], elt: str, axis: int, block: list[int], index: str,
                strided: bool = False) -> str:
    """memref.subview of `src` (row-major `shape`, or any layout if `strided`): block number `index`
    along `axis`, of size `block`."""
    off = b.add(f"arith.muli {index}, {b.const(block[axis])} : index")
    offsets = ", ".join(off if d == axis else "0" for d in range(len(shape)))
    src_type = _mtype(shape, elt, ["?"] * len(shape)) if strided else _mtype(shape, elt)
    view_type = _mtype(block, elt, ["?"] * len(shape) if strided else _row_major(shape))
    return b.add(f"memref.subview {src}[{offsets}] [{', '.join(map(str, block))}] [{', '.join(['1'] * len(shape))}] : "
                 f"{src_type} to {view_type}")


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _p2p_helper_text(op, name: str, grids: dict[str, list[int]]) -> str | None:
    """The buffer-level helper of an all_gather / all_to_all (None: use the all-reduce form)."""
    if op.name not in ("shard.all_gather", "shard.all_to_all"):
        return None
    grid, gshape, axes, in_shape, elt, out_shape = _geometry(op, grids)
    group = 1
    for a in axes:
        group *= gshape[a]
    if group < 2 or not _is_power_of_two(group):
        return None
    b = _Body()
    me, _ = _group_index(b, grid, gshape, axes)
    others = [a for a in range(len(gshape)) if a not in axes]
    color, _ = _group_index(b, grid, gshape, others)
    world = b.add("mpi.comm_world : !mpi.comm")
    comm = b.add(f"mpi.comm_split({world}, {b.add(f'arith.index_cast {color} : index to i32')}, "
                 f"{b.add(f'arith.index_cast {me} : index to i32')}) : !mpi.comm")
    tag = b.add("arith.constant 1717 : i32")
    any_layout = ["?"] * len(in_shape)       # the input buffer may be a view (of a slice, say)
    if op.name == "shard.all_gather":
        axis = _int_attr(op, "gather_axis")
        chunk = list(in_shape)
        packed = b.add(f"memref.alloc() : {_mtype(chunk, elt)}")   # MPI needs it contiguous
        b.lines.append(f"    memref.copy %x, {packed} : {_mtype(in_shape, elt, any_layout)} to {_mtype(chunk, elt)}")

        def send_view(_peer):          # every peer gets the whole input
            return packed
        out_axis = axis
    else:
        split, concat = _int_attr(op, "split_axis"), _int_attr(op, "concat_axis")
        chunk = list(in_shape)
        chunk[split] //= group

        def send_view(peer):           # chunk `peer` along split_axis, packed
            view = _block_view(b, "%x", in_shape, elt, split, chunk, peer, strided=True)
            packed = b.add(f"memref.alloc() : {_mtype(chunk, elt)}")
            b.lines.append(f"    memref.copy {view}, {packed} : {_mtype(chunk, elt, any_layout)} to {_mtype(chunk, elt)}")
            return packed
        out_axis = concat
    out_view_type = _mtype(chunk, elt, _row_major(out_shape))
    # this process's own block
    mine = send_view(me)
    mine_out = _block_view(b, "%out", out_shape, elt, out_axis, chunk, me)
    b.lines.append(f"    memref.copy {mine}, {mine_out} : {_mtype(chunk, elt)} to {out_view_type}")
    recv = b.add(f"memref.alloc() : {_mtype(chunk, elt)}")
    lo, hi = b.const(1), b.const(group)
    step = b.fresh()
    outer = b.lines
    b.lines = []
    peer = b.add(f"arith.xori {me}, {step} : index")
    peer32 = b.add(f"arith.index_cast {peer} : index to i32")
    sent = send_view(peer)
    first = b.add(f"arith.cmpi ult, {me}, {peer} : index")
    # MLIR 22's MPI lowering counts the elements of the first dimension only: 1-D buffers
    flat = _mtype([_numel(chunk)], elt)
    reassoc = f"[[{', '.join(map(str, range(len(chunk))))}]]"
    sent1 = b.add(f"memref.collapse_shape {sent} {reassoc} : {_mtype(chunk, elt)} into {flat}")
    recv1 = b.add(f"memref.collapse_shape {recv} {reassoc} : {_mtype(chunk, elt)} into {flat}")
    send = f"mpi.send({sent1}, {tag}, {peer32}, {comm}) : {flat}, i32, i32"
    receive = f"mpi.recv({recv1}, {tag}, {peer32}, {comm}) : {flat}, i32, i32"
    b.lines.append(f"    scf.if {first} {{\n      {send}\n      {receive}\n    }} else {{\n      {receive}\n      {send}\n    }}")
    theirs = _block_view(b, "%out", out_shape, elt, out_axis, chunk, peer)
    b.lines.append(f"    memref.copy {recv}, {theirs} : {_mtype(chunk, elt)} to {out_view_type}")
    body = ["  " + line for line in b.lines]
    b.lines = outer + [f"    scf.for {step} = {lo} to {hi} step {lo} {{"] + body + ["    }"]
    return (f"func.func private @{name}(%x: {_mtype(in_shape, elt, any_layout)}, %out: {_mtype(out_shape, elt)}) {{\n"
            + "\n".join(b.lines) + "\n    return\n}")


def _parse_helper(module, grid: str, gshape: list[int], text: str):
    """Append the helper function `text` (which refers to shard.grid @grid) to `module`."""
    with module.context:
        parsed = ir.Module.parse(f'shard.grid @{grid}(shape = {"x".join(map(str, gshape))}) '
                                 f'{{sym_visibility = "private"}}\n{text}')
        module.body.append(list(parsed.body.operations)[1].clone())


def _call_on_buffers(op, name: str) -> None:
    """Replace `op` (tensor -> tensor) with: its input as a read-only buffer, a fresh result buffer, a
    call of the buffer-level helper `name`, the result buffer as the op's tensor."""
    in_t, out_t = op.operands[0].type, op.results[0].type
    in_shape, elt = _shape(in_t)
    out_shape, _ = _shape(out_t)
    in_m = ir.Type.parse(_mtype(in_shape, elt, ["?"] * len(in_shape)))
    out_m = ir.Type.parse(_mtype(out_shape, elt))
    with ir.InsertionPoint(op), op.location:
        buf = ir.Operation.create("bufferization.to_buffer", results=[in_m], operands=[op.operands[0]],
                                  attributes={"read_only": ir.UnitAttr.get()})
        out = ir.Operation.create("memref.alloc", results=[out_m], operands=[],
                                  attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])})
        ir.Operation.create("func.call", results=[], operands=[buf.results[0], out.results[0]],
                            attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
        tensor = ir.Operation.create("bufferization.to_tensor", results=[out_t], operands=[out.results[0]],
                                     attributes={"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()})
    op.results[0].replace_all_uses_with(tensor.results[0])
    op.erase()


METHODS = ("p2p", "allreduce")


def lower_collectives(module, method: str = "p2p") -> int:
    """Every all_gather / all_slice / all_to_all / reduce_scatter -> a call of a helper (see the module
    docstring; `method` picks how gathers and all-to-alls move data); the number rewritten."""
    if method not in METHODS:
        raise CollectiveError(f"method={method!r}: expected one of {', '.join(METHODS)}")
    ops = ops_where(module, lambda op: op.name in REWRITTEN)
    if not ops:
        return 0
    grids = _grids(module)
    taken = {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
             if "sym_name" in op.attributes}
    n = 0
    for op in ops:
        while f"{HELPER}{n}" in taken:
            n += 1
        name = f"{HELPER}{n}"
        taken.add(name)
        grid = ir.FlatSymbolRefAttr(op.attributes["grid"]).value
        p2p = _p2p_helper_text(op, name, grids) if method == "p2p" else None
        if p2p is not None:
            _parse_helper(module, grid, grids[grid], p2p)
            with module.context:
                _call_on_buffers(op, name)
            continue
        _parse_helper(module, grid, grids[grid], _helper_text(op, name, grids))
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create("func.call", results=[op.results[0].type], operands=[op.operands[0]],
                                       attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
    return len(ops)
