"""Elementwise fusion that never multiplies work (the CPU target's preparation step).

Upstream's `linalg-fuse-elementwise-ops` fuses an elementwise producer into every consumer that is
its only user, whatever the consumer reads it for. Where the consumer reads the producer's result
broadcast (its indexing map for that operand leaves out a parallel loop, or is no plain dimension
list: a window), the fused body recomputes the producer once per use instead of once per element:
scaled attention scores scaled inside the q @ k^T contraction (two multiplications per
multiply-add, and the contraction is no longer a matmul the packed schedules take), a batch norm's
1/sqrt(var + eps) computed for every element instead of every channel.

`fuse_elementwise(module)`: such operands get a temporary second use (a call of a private
declaration: upstream fuses single-use producers only; workbench/worker/fusion_guards.py), then
upstream's pipeline runs (integer powers expanded, and before it squares written as `powf x, 2.0`,
elementwise fusion, unit dims folded,
canonicalization), then the calls and declarations go. Last, a producer that several elementwise
ops read element for element (upstream leaves it: not single-use) is fused with all of them into one
op with their results (`fuse_shared_producers`): a sort stage's comparison and its selects of the
values and of the indices are one pass over memory instead of three, no bool tensor written in
between.
"""
from __future__ import annotations

from workbench.worker.fusion_guards import PIPELINE  # upstream's fusion, as both targets run it



def _broadcast_operands(op) -> list:
    """The input operands of linalg op `op` that it reads broadcast (a parallel loop left out of
    their map) or through a window (a map result that is no plain loop dimension)."""
    from mlir import ir

    from workbench.worker.payload_inspect import _indexing_maps, _iterators_from_maps, iterator_types

    maps = _indexing_maps(op)     # a generic's, or a named op's (the pass generalizes named ops)
    if not maps:
        return []
    try:
        iterators = iterator_types(op)
    except (KeyError, ValueError):
        iterators = _iterators_from_maps(maps)
    parallel = {d for d, it in enumerate(iterators) if it == "parallel"}
    n_inputs = len(op.operands) - len(op.results)
    out = []
    for amap, value in zip(maps[:n_inputs], list(op.operands)[:n_inputs]):
        dims = set()
        plain = True
        for expr in amap.results:
            if isinstance(expr, ir.AffineDimExpr):
                dims.add(ir.AffineDimExpr(expr).position)
            elif not isinstance(expr, ir.AffineConstantExpr):
                plain = False
        if not plain or parallel - dims:
            out.append(value)
    return out


def _is_linalg_result(value) -> bool:
    from mlir import ir

    return isinstance(value.owner, (ir.Operation, ir.OpView)) and value.owner.name.startswith("linalg.")


def _is_reshape_result(value) -> bool:
    from mlir import ir

    from workbench.worker.fusion_guards import RESHAPES

    return isinstance(value.owner, (ir.Operation, ir.OpView)) and value.owner.name in RESHAPES


#: a producer whose body is one of these (and its yield) is cheaper to recompute in each consumer than
#: to write out and read back: torch-mlir widens a layer norm's input to f64 once for the mean and the
#: variance (a 64 MB f64 copy of a 32 MB input at 16x512x1024)
CASTS = {"arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
         "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast"}


def _duplicate_casts(module) -> int:
    """Each further linalg consumer of an elementwise cast (one input, all loops parallel, a body of one
    cast) gets a copy of it, so that upstream's fusion (single-use producers only) takes it into every
    consumer; consumers reading it broadcast keep the shared one. How many copies."""
    from mlir import ir

    from workbench.worker.ir_walk import ops_where
    from workbench.worker.payload_inspect import iterator_types

    copies = 0
    for op in ops_where(module, lambda o: o.name == "linalg.generic"):
        try:
            iterators = iterator_types(op)
            body = [o.operation.name for o in op.regions[0].blocks[0].operations]
        except (KeyError, ValueError, IndexError):
            continue
        if (len(op.results) != 1 or len(op.operands) != 2 or any(it != "parallel" for it in iterators)
                or len(body) != 2 or body[0] not in CASTS):
            continue
        uses = [(u.owner, u.operand_number) for u in op.results[0].uses]
        consumers = [(owner, n) for owner, n in uses if owner.name.startswith("linalg.")
                     and op.results[0] not in _broadcast_operands(owner)]
        if len(uses) < 2 or len(consumers) != len(uses):
            continue
        for owner, n in consumers[1:]:
            with ir.InsertionPoint(owner):
                copy = op.operation.clone()
            owner.operands[n] = copy.results[0]
            copies += 1
    return copies


def _square_powers(module) -> int:
    """`math.powf %x, 2.0` (a constant exponent of two: torch's `x.pow(2.0)`, `weight.norm()` as Wav2Vec2's
    weight norm writes it; torch-mlir keeps it a powf, which LLVM calls libm's powf for, per element) ->
    `arith.mulf %x, %x`: the same correctly rounded square. (Integer powers, `math.fpowi`, are expanded by
    the pipeline; other float exponents are left alone.)"""
    from mlir import ir
    from mlir.dialects import arith

    from workbench.worker.ir_walk import defining_op, ops_where

    done = 0
    for op in ops_where(module, lambda o: o.name == "math.powf"):
        const = defining_op(op.operands[1])
        if const is None or const.name != "arith.constant" or not isinstance(op.operands[0].type, ir.FloatType):
            continue
        value = const.attributes["value"]
        if not isinstance(value, ir.FloatAttr) or ir.FloatAttr(value).value != 2.0:
            continue
        with ir.InsertionPoint(op), op.location:
            square = arith.MulFOp(op.operands[0], op.operands[0]).result
        op.results[0].replace_all_uses_with(square)
        op.erase()
        done += 1
    return done


def fuse_elementwise(module) -> int:
    """The guarded fusion (module docstring); how many operands were kept from fusing."""
    from workbench.worker.fusion_guards import run_guarded
    from workbench.worker.ir_walk import ops_where

    _duplicate_casts(module)
    _square_powers(module)
    guards: list[tuple[object, object]] = []     # (value, consumer)
    for op in ops_where(module, lambda o: o.name.startswith("linalg.") and o.name not in ("linalg.yield", "linalg.index")):
        for value in _broadcast_operands(op):
            values = [value]
            if _is_reshape_result(value):
                values.append(value.owner.operands[0])   # fusion by expansion looks through the reshape
            guards += [(v, op) for v in values if _is_linalg_result(v)]
    guards += [(op.results[0], op) for op in ops_where(module, _columns_expanded_later)]
    run_guarded(module, PIPELINE, guards)
    fuse_shared_producers(module)
    return len(guards)


def _columns_expanded_later(op) -> bool:
    """A named linalg.matmul whose result (directly or through single-use elementwise ops: its bias, its
    activation) a tensor.expand_shape splits along the columns: `Linear(z).view(b, c, h, w)` (a decoder's
    unflatten). Fusion by expansion would rewrite the matmul over the split columns (a generic whose B is
    read with the column dims outermost: 0.6 GFLOP/s at 8x8192x64, no packed schedule takes it); kept,
    it stays a matmul of the matmul family and the reshape stays a view."""
    from mlir import ir

    if op.name != "linalg.matmul" or len(op.results) != 1:
        return False
    value = op.results[0]
    for _ in range(8):      # (the epilogue: bias, activation, ...)
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].owner
        if user.name == "tensor.expand_shape":
            groups = ir.ArrayAttr(user.attributes["reassociation"])
            return len(ir.ArrayAttr(groups[len(groups) - 1])) > 1
        if not _parallel_generic(user) or len(user.results) != 1:
            return False
        value = user.results[0]
    return False


def _parallel_generic(op) -> bool:
    """A linalg.generic on tensors with only parallel loops and a body without nested regions."""
    from workbench.worker.payload_inspect import iterator_types

    if op.name != "linalg.generic" or not op.results:
        return False
    try:
        if any(it != "parallel" for it in iterator_types(op)):
            return False
    except (KeyError, ValueError):
        return False
    return all(len(o.regions) == 0 for o in op.regions[0].blocks[0].operations)


def _merge_into_users(producer) -> bool:
    """Fuse an elementwise producer that several elementwise ops read (each with the map it writes
    with: no broadcast) into one op with all their results, the producer computed once in its body:
    upstream fuses single-use producers only, which leaves a shared one written out and read back (a
    sort stage's comparison, read by the select of the values and by that of the indices). The users
    must take every other operand, and every value their bodies read from outside, from before the first
    of them (the fused op goes there)."""
    from mlir import ir
    from mlir.dialects import linalg

    if not _parallel_generic(producer) or len(producer.results) != 1:
        return False
    result = producer.results[0]
    body = producer.regions[0].blocks[0]
    n_in = len(producer.operands) - 1
    if len(list(body.arguments[n_in].uses)):
        return False   # (the producer reads its init)
    out_map = producer.attributes["indexing_maps"][n_in]
    users = []
    for use in result.uses:
        owner = use.owner
        if not _parallel_generic(owner) or use.operand_number >= len(owner.operands) - len(owner.results):
            return False
        if owner.attributes["indexing_maps"][use.operand_number] != out_map:
            return False
        if not any(owner.operation == u.operation for u in users):
            users.append(owner)
    if len(users) < 2 or any(u.operation.block != producer.operation.block for u in users):
        return False
    ops = list(producer.operation.block.operations)

    def at(o):
        return next(i for i, b in enumerate(ops) if b.operation == o.operation)

    users.sort(key=at)   # (the fused op's results in the users' order)
    first = at(users[0])
    movable = []   # operand-free definitions after the first user (another user's tensor.empty init)
    for u in users:
        # values a body reads from outside it (a gather's tensor.extract of a tensor): defined after the
        # first user, the fused op there would read them before their definition
        for o in u.regions[0].blocks[0].operations:
            for value in o.operands:
                owner = value.owner
                if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.block == u.operation.block \
                        and at(owner) >= first:
                    return False
        for value in u.operands:
            if value == result:
                continue
            owner = value.owner
            if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.block == u.operation.block \
                    and at(owner) >= first:
                if len(owner.operands) or len(owner.regions):
                    return False
                movable.append(owner)
    for owner in movable:
        owner.operation.move_before(ops[first].operation)
    # the fused op's inputs (deduplicated by value and map) and maps; the users' outputs in their order
    inputs, maps = [], []

    def add_input(value, amap):
        for i, (v, m) in enumerate(zip(inputs, maps)):
            if v == value and m == amap:
                return i
        inputs.append(value)
        maps.append(amap)
        return len(inputs) - 1
    producer_args = [add_input(v, producer.attributes["indexing_maps"][j])
                     for j, v in enumerate(list(producer.operands)[:n_in])]
    user_args = []
    for u in users:
        k_in = len(u.operands) - len(u.results)
        user_args.append([None if v == result else add_input(v, u.attributes["indexing_maps"][j])
                          for j, v in enumerate(list(u.operands)[:k_in])])
    outputs, out_maps, result_types = [], [], []
    for u in users:
        k_in = len(u.operands) - len(u.results)
        for j, v in enumerate(list(u.operands)[k_in:]):
            outputs.append(v)
            out_maps.append(u.attributes["indexing_maps"][k_in + j])
        result_types += [r.type for r in u.results]

    def element(t):
        try:
            return ir.ShapedType(t).element_type
        except ValueError:   # (a scalar operand)
            return t

    with ir.InsertionPoint(ops[first]), ops[first].location:
        fused = linalg.GenericOp(result_types, inputs, outputs, ir.ArrayAttr.get(maps + out_maps),
                                 producer.attributes["iterator_types"])
    block = fused.regions[0].blocks.append(*[element(v.type) for v in inputs + outputs])
    args = list(block.arguments)
    yielded = []
    with ir.InsertionPoint(block):
        mapping = {}

        def clone_body(op, operand_args, out_base):
            # op's body into the fused one: its input arguments -> the fused inputs (None: the
            # producer's value), its output arguments -> the fused outputs from out_base; its yield's values
            old = op.regions[0].blocks[0]
            n = len(operand_args)
            for j, arg in enumerate(old.arguments):
                if j < n:
                    mapping[arg] = args[operand_args[j]] if operand_args[j] is not None else produced
                else:
                    mapping[arg] = args[len(inputs) + out_base + j - n]
            body_ops = list(old.operations)
            for o in body_ops[:-1]:
                new = o.operation.clone()
                for i, v in enumerate(new.operands):
                    if v in mapping:
                        new.operands[i] = mapping[v]
                for r_old, r_new in zip(o.results, new.results):
                    mapping[r_old] = r_new
            return [mapping.get(v, v) for v in body_ops[-1].operands]

        produced = clone_body(producer, producer_args, 0)[0]
        base = 0
        for u, u_args in zip(users, user_args):
            yielded += clone_body(u, u_args, base)
            base += len(u.results)
        linalg.YieldOp(yielded)
    k = 0
    for u in users:
        for r in u.results:
            r.replace_all_uses_with(fused.results[k])
            k += 1
    for u in users:
        u.operation.erase()
    init = producer.operands[n_in].owner
    producer.operation.erase()
    if isinstance(init, (ir.Operation, ir.OpView)) and init.name == "tensor.empty" and not list(init.results[0].uses):
        init.operation.erase()
    return True


def fuse_shared_producers(module) -> int:
    """`_merge_into_users` wherever it applies, until nothing changes; how many producers it fused."""
    from workbench.worker.ir_walk import ops_where

    fused = 0
    while True:
        for op in ops_where(module, lambda o: o.name == "linalg.generic"):
            if _merge_into_users(op):
                fused += 1
                break
        else:
            return fused
