"""Shard collectives that LLVM 22's convert-shard-to-mpi does not lower, rewritten into ones it does
(worker side, before convert-shard-to-mpi).

MLIR 22.1.8's convert-shard-to-mpi lowers `shard.all_reduce` (to mpi.allreduce), `shard.update_halo`
and the process-index ops; `shard.all_gather`, `shard.all_slice`, `shard.all_to_all` and
`shard.reduce_scatter` fail to legalize ("failed to legalize operation 'shard.all_gather' that was
explicitly marked illegal"), and its mpi dialect has no allgather / alltoall op. Resharding between
the ops of a chain (a column split feeding an op that wants rows, a split result returned
replicated) is exactly where shard-partition inserts them.

Each such op becomes a call of a private helper function of tensor ops, shard.process_multi_index
and shard.all_reduce, which convert-shard-to-mpi then lowers like any other code:

- all_slice (no communication): this process's block along `slice_axis` (tensor.extract_slice at
  its index within the group of `grid_axes`, row-major over those axes in their listed order);
- all_gather: a zero-filled tensor of the gathered shape, this process's input inserted at its
  block, and an all-reduce (sum) over the group: every other block adds zeros, so the result is
  exact (a -0.0 comes back as +0.0). It moves the whole gathered tensor through MPI_Allreduce,
  about twice an MPI_Allgather's volume;
- all_to_all: all_gather along `concat_axis`, then all_slice along `split_axis` (the gathered tensor
  is N times what an MPI_Alltoall would move: correct, not bandwidth-optimal);
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


def _helper_text(op, name: str, grids: dict[str, list[int]]) -> str:
    grid = ir.FlatSymbolRefAttr(op.attributes["grid"]).value
    if grid not in grids:
        raise CollectiveError(f"{op.name}: grid @{grid} not found (or not a static shard.grid)")
    gshape = grids[grid]
    axes = _grid_axes(op)
    in_shape, elt = _shape(op.operands[0].type)
    out_shape, _ = _shape(op.results[0].type)
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


def lower_collectives(module) -> int:
    """Every all_gather / all_slice / all_to_all / reduce_scatter -> a call of a helper made of
    shard.all_reduce and tensor ops; the number rewritten."""
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
        text = _helper_text(op, name, grids)
        # the helper refers to the grid: parsed inside a module that declares it
        with module.context:
            parsed = ir.Module.parse(f'shard.grid @{ir.FlatSymbolRefAttr(op.attributes["grid"]).value}'
                                     f'(shape = {"x".join(map(str, grids[ir.FlatSymbolRefAttr(op.attributes["grid"]).value]))})'
                                     f' {{sym_visibility = "private"}}\n{text}')
            helper = list(parsed.body.operations)[1]
            module.body.append(helper.clone())
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create("func.call", results=[op.results[0].type], operands=[op.operands[0]],
                                       attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
    return len(ops)
