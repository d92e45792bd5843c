"""`lh-shared-lhs-matmuls`: sibling matmuls that read the same left-hand matrix become one matmul of the
concatenated right-hand matrices, whose column slices are the siblings' results (on tensors).

DeepFM's embedding bags are eight `A @ W_i` (256 x 1024 x 16) and eight more (256 x 1024 x 1), A the same
256 x 1024 mask for all: sixteen matmuls that each pack and stream all of A for 16 (or 1) columns. One
`A @ concat(W_1, .., W_n)` reads A once and fills whole register tiles. The layer after the `lh-shared-rhs-
matmuls` rewrite (one W, many row blocks) is this one's mirror (one A, many column blocks).

Siblings: in one block, one-result contractions C_i = A @ B_i (+ init) over 2-D static tensors of one element
type, each a `linalg.matmul` (plain, or B read transposed through its indexing maps), or a `linalg.generic`
with those maps, (parallel, parallel, reduction) loops and a multiply-add body; all of one form (plain: the
B_i are concatenated along columns; transposed: along rows) and reading the same SSA value A. A sibling that
depends on another's result (through any chain of ops) is left alone. With `max-columns` > 0 only siblings of
at most that many columns are taken (wide ones fill the register tiles already, and keep their fused epilogues);
with `min-lhs-bytes` > 0 only an A of at least that many bytes (a small A, read again from L1, costs nothing to
read per sibling: a decoder step's 2 x 16 rows).

The merged matmul is built where the last sibling was; ops between the first and the last sibling that read an
earlier sibling's result (their epilogues) move after it, in their order. Its init is a fill of the siblings'
common fill value, or else the concatenation of their inits. Each sibling's result becomes an
`tensor.extract_slice` of the merged one: each element is the same sum of the same products as before.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import iterator_types, ops_where, ranked_tensor_type

#: indexing maps (A, B, C) over (m, n, k) of the two forms taken: B read as K x N, or as N x K
_FORMS = {((0, 2), (2, 1), (0, 1)): "plain", ((0, 2), (1, 2), (0, 1)): "transposed"}


def _form(op) -> str | None:
    """"plain" / "transposed" for a sibling candidate (module docstring), None for any other op."""
    from workbench.worker.cpu.shared_rhs import _map_dims
    from workbench.worker.payload_inspect import _is_mul_add

    if op.name not in ("linalg.matmul", "linalg.generic") or len(op.results) != 1 or len(op.operands) != 3:
        return None
    if op.name == "linalg.generic":
        try:
            if iterator_types(op) != ["parallel", "parallel", "reduction"] or not _is_mul_add(op):
                return None
        except (KeyError, ValueError):
            return None
    if "indexing_maps" in op.attributes:
        dims = _map_dims(op)
        form = _FORMS.get(tuple(dims)) if dims is not None else None
    else:
        form = "plain" if op.name == "linalg.matmul" else None
    if op.name == "linalg.matmul" and "cast" in op.attributes:
        return None   # (an unsigned cast: another product than the generic's)
    types = [ranked_tensor_type(v) for v in op.operands]
    if form is None or any(t is None or t.rank != 2 or not t.has_static_shape for t in types):
        return None
    if len({str(t.element_type) for t in types}) != 1 or not isinstance(types[0].element_type, ir.FloatType):
        return None
    return form


def _columns(op) -> int:
    return ranked_tensor_type(op.operands[2]).shape[1]


def _block_index(block) -> dict:
    """The block's ops (as operations) -> their position in it."""
    return {(op.operation if hasattr(op, "operation") else op): index for index, op in enumerate(block.operations)}


def _fill_value(init):
    """The scalar a `linalg.fill` of `init` writes (None when `init` is no fill's result)."""
    owner = init.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.name == "linalg.fill":
        return owner.operation.operands[0]
    return None


def _in_block(op, block_ops: dict):
    """The ancestor of `op` (itself included) that is one of `block_ops`, None when it is outside them."""
    while op is not None:
        if op in block_ops:
            return op
        parent = op.parent
        op = parent.operation if parent is not None else None
    return None


def _dependents(op, block_ops: dict) -> set:
    """The ops of the block that read `op`'s results, through any chain of ops in it (nested uses count as
    their ancestor's)."""
    found: set = set()
    todo = [op]
    while todo:
        current = todo.pop()
        for result in current.results:
            for use in result.uses:
                user = _in_block(use.owner.operation if hasattr(use.owner, "operation") else use.owner, block_ops)
                if user is not None and user not in found:
                    found.add(user)
                    todo.append(user)
    return found


def _merge(group: list, form: str, block_ops: dict) -> None:
    from mlir.dialects import linalg, tensor

    last = group[-1]
    moved = set()
    for op in group[:-1]:
        moved |= _dependents(op, block_ops)
    position = block_ops[last]
    moved = sorted((op for op in moved if block_ops[op] < position), key=lambda op: block_ops[op])
    a = group[0].operands[0]
    widths = [_columns(op) for op in group]
    rows = ranked_tensor_type(group[0].operands[2]).shape[0]
    element = ranked_tensor_type(a).element_type
    with ir.InsertionPoint(last), last.location:
        merged_type = ir.RankedTensorType.get([rows, sum(widths)], element)
        depth = ranked_tensor_type(a).shape[1]
        weights = tensor.concat(ir.RankedTensorType.get([depth, sum(widths)] if form == "plain" else
                                                        [sum(widths), depth], element),
                                1 if form == "plain" else 0, [op.operands[1] for op in group])
        fills = [_fill_value(op.operands[2]) for op in group]
        if fills[0] is not None and all(f is not None and f == fills[0] for f in fills):
            init = linalg.fill(fills[0], outs=[tensor.empty([rows, sum(widths)], element)])
        else:
            init = tensor.concat(merged_type, 1, [op.operands[2] for op in group])
        maps = None
        if form == "transposed":
            m, n, k = (ir.AffineDimExpr.get(i) for i in range(3))
            maps = [ir.AffineMap.get(3, 0, list(results))
                    for results in ((m, k), (n, k), (m, n))]
        product = linalg.matmul(a, weights, outs=[init], indexing_maps=maps)
        slices = []
        offset = 0
        for op, width in zip(group, widths):
            slices.append(tensor.extract_slice(op.results[0].type, product, [], [], [],
                                               [0, offset], [rows, width], [1, 1]))
            offset += width
    for op in moved:
        op.move_before(last)
    for op, value in zip(group, slices):
        op.results[0].replace_all_uses_with(value)
    inits = [op.operands[2].owner for op in group]
    for op in group:
        op.erase()
    for init in inits:   # (the siblings' own fills, now dead, and the empty tensors they filled)
        init = init.operation if isinstance(init, (ir.Operation, ir.OpView)) else None
        while init is not None and init.name in ("linalg.fill", "tensor.empty") and not list(init.results[0].uses):
            source = init.operands[-1].owner if init.name == "linalg.fill" else None
            init.erase()
            init = source.operation if isinstance(source, (ir.Operation, ir.OpView)) else None


def _lhs_bytes(op) -> int:
    t = ranked_tensor_type(op.operands[0])
    return t.shape[0] * t.shape[1] * max(getattr(t.element_type, "width", 32) // 8, 1)


def merge_shared_lhs(module, max_columns: int = 0, min_lhs_bytes: int = 0) -> int:
    """Merge every group of sibling matmuls (module docstring); how many groups were merged."""
    candidates = [op for op in ops_where(module, lambda o: o.name in ("linalg.matmul", "linalg.generic"))
                  if _form(op) is not None
                  and (max_columns <= 0 or _columns(op) <= max_columns)
                  and _lhs_bytes(op) >= min_lhs_bytes]
    if len(candidates) < 2:
        return 0
    blocks: list[tuple[object, list]] = []   # (a candidate's parent op, its candidates)
    for op in candidates:
        parent = op.parent
        for key, members in blocks:
            if key == parent:
                members.append(op)
                break
        else:
            blocks.append((parent, [op]))
    merged = 0
    for _, members in blocks:
        if len(members) < 2:
            continue
        block = members[0].block
        block_ops = _block_index(block)
        groups: list[tuple[object, str, list]] = []   # (A, form, siblings in block order)
        for op in sorted((m for m in members if m in block_ops), key=lambda m: block_ops[m]):
            key = (op.operands[0], _form(op))
            for a, form, siblings in groups:
                if a == key[0] and form == key[1]:
                    siblings.append(op)
                    break
            else:
                groups.append((key[0], key[1], [op]))
        for _, form, siblings in groups:
            kept, reached = [], set()
            for op in siblings:
                if op in reached:
                    continue   # (it reads an earlier sibling's result)
                kept.append(op)
                reached |= _dependents(op, block_ops)
            if len(kept) >= 2:
                _merge(kept, form, block_ops)
                merged += 1
                block_ops = _block_index(block)
    return merged
