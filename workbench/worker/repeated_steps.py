"""Repeated runs of the same ops in a function body, each run a call of one outlined function.

An exported recurrent model (torch.nn.LSTM / GRU through torch-mlir) unrolls its time loop: the
same cell's ~20 ops once per time step, a 128-step sequence ~2500 ops in one function. Every later
stage (per-op schedules, bufferization, lowering, LLVM's optimizer, the check's reference) then
works 128 times on the same thing. Outlined, the cell is one private function, called once per
step: the stages see one cell, whatever the sequence length. The same holds for any model whose
body repeats a block of ops (identical layers of a stack).

On tensors, before anything is scheduled (`outline_repeated_steps(module)`):

1. A function's top-level ops split into *work* ops and *rematerializable* ones (operand-free
   ops such as `tensor.empty` and scalar or splat constants, and `linalg.fill` of those): the latter
   are cheap to recreate in the outlined function, wherever the export happened to put them.
2. Runs of work ops that repeat with a period P (the same op text, SSA names aside, every P ops)
   are candidates; the one that saves most ops ((repeats - 1) * P) is checked step by step: every
   value an op of a step uses must come from the same op of its own step, or from outside the step
   (an argument of the call: the previous step's state, this step's input slice, the weights), or
   be the same rematerializable value in every step. The run ends at the first step that differs.
3. With at least `min_repeats` steps and `min_ops` ops in them, the first step's ops move into a
   private function `@<func>_step<K>` and every step becomes a `func.call`; values of a step used
   after it are the call's results. Repeated until no run is left (a stack of such layers).

A call costs nanoseconds against a step of an RNN; ops of different steps no longer fuse with each
other (elementwise fusion within a step is unchanged).
"""
from __future__ import annotations

import numpy as np
from mlir import ir

#: fewer repeats than this are left inline (outlining two copies of a block saves little compile time)
DEFAULT_MIN_REPEATS = 4
#: ... and so are runs of fewer ops than this, all steps together
DEFAULT_MIN_OPS = 64
#: the longest step looked for: every period up to it is one pass over the function's ops (a 400k-op function
#: tried all 100k periods, and each candidate of a run of identical ops was walked again: select ran for hours)
MAX_PERIOD = 4096
#: ops whose result is a view of their first operand's buffer once bufferized
VIEW_OPS = {"tensor.extract_slice", "tensor.collapse_shape", "tensor.expand_shape", "tensor.cast"}
#: ops that recreate a value from nothing but their attributes and other such values
REMATERIALIZABLE_OPS = {"arith.constant", "tensor.empty", "linalg.fill"}


def _is_rematerializable(op, remat: dict) -> bool:
    """A cheap, pure op of rematerializable operands: tensor.empty of static shape, a scalar or splat
    constant (a weight matrix is not recreated: it stays one value, passed to the calls), a fill."""
    name = op.name
    if name not in REMATERIALIZABLE_OPS or len(op.regions) > 1:
        return False
    if name == "arith.constant":
        value = op.attributes["value"]
        return not isinstance(value.type, ir.ShapedType) or (
            isinstance(value, ir.DenseElementsAttr) and value.is_splat)
    return all(_producer(v) in remat for v in op.operands)


def _producer(value):
    """The operation defining `value` (None for a block argument)."""
    owner = value.owner
    return owner.operation if isinstance(owner, ir.OpView) else (owner if isinstance(owner, ir.Operation) else None)


def _shape_text(op, printed: dict | None = None) -> str:
    """The op's name, attributes, types and nested ops, with the values it uses numbered in order of
    first appearance: equal for ops that differ only in which values they use (printing each op was
    milliseconds an op in a large module). `printed`: types and attributes already printed (MLIR uniques
    them: a function of 100k ops has a few dozen), kept across the calls of one body."""
    names: dict = {}
    parts: list[str] = []
    printed = {} if printed is None else printed

    def name(value) -> str:
        return names.setdefault(value, f"%{len(names)}")

    def text(x) -> str:
        t = printed.get(x)
        if t is None:
            t = printed[x] = str(x)
        return t

    def visit(o):
        attrs = ",".join(f"{a.name}={text(a.attr)}" for a in (o.attributes[i] for i in range(len(o.attributes))))
        parts.append(f"{o.name}({','.join(name(v) for v in o.operands)}){{{attrs}}}:"
                     f"{','.join(text(v.type) for v in o.operands)}->{','.join(text(r.type) for r in o.results)}")
        for region in o.regions:
            parts.append("{")
            for block in region.blocks:
                parts.append("^(" + ",".join(f"{name(a)}:{text(a.type)}" for a in block.arguments) + ")")
                for nested in block.operations:
                    visit(nested.operation)
                    for r in nested.results:
                        name(r)
            parts.append("}")

    visit(op)
    return ";".join(parts)


def _captured_slots(op) -> list[tuple]:
    """(operation, operand index, value) for every operand of `op` and of the ops nested in it whose
    value is defined outside `op`, in walk order."""
    inside: set = set()
    slots: list[tuple] = []

    def visit(o, top: bool):
        for i, v in enumerate(o.operands):
            if top or v not in inside:
                slots.append((o, i, v))
        for region in o.regions:
            for block in region.blocks:
                inside.update(block.arguments)
                for nested in block.operations:
                    visit(nested.operation, False)
                    inside.update(nested.results)
        return slots

    return visit(op.operation, True)


class _Body:
    """One function body's top-level ops, split into work ops and rematerializable ones."""

    def __init__(self, func, outlined: set[str] = frozenset()):
        self.func = func
        block = func.regions[0].blocks[0]
        ops = [op.operation for op in block.operations][:-1]   # (the terminator stays)
        self.remat: dict = {}   # operation -> its recipe (text, operand recipes)
        self.work: list = []
        # views of the function's arguments (each time step's slice of the input sequence): no part of
        # a step, whose ops get them as arguments (their offsets differ from step to step)
        self.leading: list = []
        arguments = set(block.arguments)
        for op in ops:
            if _is_rematerializable(op, self.remat):
                self.remat[op] = (_shape_text(op), tuple(self.remat[_producer(v)] for v in op.operands))
            elif op.name in VIEW_OPS and all(v in arguments for v in op.operands):
                self.leading.append(op)
            else:
                self.work.append(op)
        self.index = {op: i for i, op in enumerate(self.work)}
        self.slots = [_captured_slots(op) for op in self.work]
        # a call of a function outlined here matches nothing (the calls of one run would repeat too)
        printed: dict = {}
        texts = [(i,) if _callee(op) in outlined else _shape_text(op, printed) for i, op in enumerate(self.work)]
        ids: dict = {}
        self.shape = np.array([ids.setdefault(t, len(ids)) for t in texts], dtype=np.int64)
        # how many of work[:i] compute (see _computes): whether a run does is a difference, not a walk
        self.computing = np.concatenate(([0], np.cumsum([_computes(op) for op in self.work], dtype=np.int64)))

    def computes(self, start: int, stop: int) -> bool:
        """Whether any of work[start:stop] computes (not views and reshapes only)."""
        return bool(self.computing[stop] - self.computing[start])

    def source(self, value, start: int, stop: int):
        """Where `value`, used by an op of the step work[start:stop], comes from: ("in", op offset,
        result number) from an op of the step, ("remat", recipe), or ("pass",) from anywhere else."""
        producer = _producer(value)
        at = self.index.get(producer, -1) if producer is not None else -1
        if start <= at < stop:
            return ("in", at - start, ir.OpResult(value).result_number)
        if producer in self.remat:
            return ("remat", self.remat[producer])
        return ("pass",)

    def candidates(self, min_repeats: int, min_ops: int) -> list[tuple[int, int, int]]:
        """(start, period, repeats) of runs of work ops whose shapes repeat with that period, the most
        ops saved first."""
        n = len(self.shape)
        found = []
        for period in range(1, min(n // max(min_repeats, 2), MAX_PERIOD) + 1):
            same = np.concatenate(([False], self.shape[:-period] == self.shape[period:], [False]))
            edges = np.flatnonzero(np.diff(same.astype(np.int8)))
            for begin, end in zip(edges[::2], edges[1::2]):
                repeats = (end - begin) // period + 1
                if repeats >= min_repeats and repeats * period >= min_ops:
                    found.append((int(begin), period, int(repeats)))
        return sorted(found, key=lambda c: (-(c[2] - 1) * c[1], c[1], c[0]))

    def best_rotation(self, start: int, period: int, repeats: int) -> tuple[int, int]:
        """(start, repeats) of the run's steps starting at the op (of the first period) that leaves the
        fewest values to pass that would be copied at each call (non-contiguous slices), then the
        fewest values to pass: a step boundary where the state is a few whole tensors. A step later
        than `start` leaves one step fewer in the run."""
        probe = min(repeats - 1, 3)

        def cost(at: int):
            alike, sources = self.steps_alike(at, period, probe)
            if alike < probe:
                return None
            passed = {v for i in range(period) for j, (_, _, v) in enumerate(self.slots[at + i])
                      if sources[i][j][0] == "pass"}
            return sum(not _contiguous(v) for v in passed), len(passed)

        costs = [(c, shift) for shift in range(period) if (c := cost(start + shift)) is not None]
        if not costs:
            return start, repeats
        shift = min(costs)[1]
        return start + shift, repeats - (1 if shift else 0)

    def steps_alike(self, start: int, period: int, repeats: int) -> tuple[int, list]:
        """How many steps from `start` have the first step's data flow (see the module doc), and the
        sources per slot of the first step (a slot whose source differs between steps is passed)."""
        first = [[self.source(v, start, start + period) for _, _, v in self.slots[start + i]] for i in range(period)]
        alike = 1
        for k in range(1, repeats):
            s = start + k * period
            ok = True
            for i in range(period):
                slots = self.slots[s + i]
                if len(slots) != len(first[i]):
                    ok = False
                    break
                for j, (_, _, v) in enumerate(slots):
                    src = self.source(v, s, s + period)
                    if src == first[i][j]:
                        continue
                    if src[0] == "in" or first[i][j][0] == "in":
                        ok = False
                        break
                    first[i][j] = ("pass",)   # rematerializable here, something else there
                if not ok:
                    break
            if not ok:
                break
            alike += 1
        if alike < repeats:   # the sources were widened over steps that are not taken
            return self.steps_alike(start, period, alike) if alike > 1 else (1, first)
        return alike, first


def _computes(op) -> bool:
    """A linalg op or any op with a body: loops once lowered (not a view, reshape or call)."""
    return op.name.startswith("linalg.") or len(op.regions) > 0


def _callee(op) -> str:
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value if op.name == "func.call" else ""


def _operation(op):
    return op.operation if isinstance(op, ir.OpView) else op


def _top_level(op, func):
    """The ancestor of `op` (itself included) directly in `func`'s body."""
    while True:
        parent = op.parent
        if parent is None or _operation(parent) == func:
            return op
        op = _operation(parent)


#: the argument attribute one-shot bufferization takes as the argument's buffer layout
BUFFER_LAYOUT = "bufferization.buffer_layout"


def _argument_layout(t) -> dict:
    """{BUFFER_LAYOUT: row-major strides, any offset} for a tensor of static shape: a call passes a
    contiguous slice (this step's rows of a sequence) as it is, where an identity layout would copy it
    into a fresh buffer at every call. {} for other types."""
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return {}
    strides, step = [], 1
    for d in reversed(t.shape):
        strides.insert(0, step)
        step *= d
    return {BUFFER_LAYOUT: ir.Attribute.parse(f"strided<[{', '.join(map(str, strides))}], offset: ?>")}


def _contiguous(value) -> bool:
    """Whether `value`'s buffer will be row-major contiguous: a fresh buffer, or views of one that keep
    it so (a slice of whole inner rows, reshapes). A call casts such a buffer to the argument layout
    of `_argument_layout`; any other (a column slice) would be copied into a buffer of that layout,
    which one-shot bufferization does not allocate (a dynamic offset without a value)."""
    producer = _producer(value)
    if producer is None or producer.name not in VIEW_OPS:
        return True
    if producer.name == "tensor.extract_slice":
        source = ir.RankedTensorType(producer.operands[0].type)
        sizes = list(ir.DenseI64ArrayAttr(producer.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(producer.attributes["static_strides"]))
        if len(producer.operands) > 1 or any(s != 1 for s in strides) or not source.has_static_shape:
            return False
        outer = next((i for i, size in enumerate(sizes) if size != 1), len(sizes))
        if sizes[outer + 1:] != list(source.shape)[outer + 1:]:
            return False   # a block of partial rows
    return _contiguous(producer.operands[0])


def _outline(body: _Body, start: int, period: int, repeats: int, sources: list, name: str) -> None:
    func = body.func
    steps = [body.work[start + k * period:start + (k + 1) * period] for k in range(repeats)]
    # the arguments: one per passed slot, shared by slots that hold the same value in every step
    arg_of_slot: dict[tuple[int, int], int] = {}
    arg_values: list[list] = []   # per argument, its value in each step
    for i in range(period):
        for j, src in enumerate(sources[i]):
            if src[0] != "pass":
                continue
            values = [body.slots[start + k * period + i][j][2] for k in range(repeats)]
            at = next((a for a, vs in enumerate(arg_values) if vs == values), None)
            if at is None:
                at = len(arg_values)
                arg_values.append(values)
            arg_of_slot[(i, j)] = at
    # the results: values of a step used after it (in any step)
    results: list[tuple[int, int]] = []
    for step in steps:
        members = set(step)
        for i, op in enumerate(step):
            for r, value in enumerate(op.results):
                if (i, r) not in results and any(_top_level(_operation(use.owner), func) not in members
                                                 for use in value.uses):
                    results.append((i, r))
    first = steps[0]
    arg_types = [vs[0].type for vs in arg_values]
    result_types = [first[i].results[r].type for i, r in results]
    loc = func.location
    # rematerializable ops and views of the arguments first (they use nothing else): a value passed
    # to a call is then defined before it, wherever the export put it
    for op in list(body.remat) + body.leading:
        op.move_before(body.work[0])
    # the calls, each before its step's first op
    calls = []
    for k, step in enumerate(steps):
        with loc, ir.InsertionPoint(step[0]):
            calls.append(ir.Operation.create("func.call", results=result_types,
                                             operands=[vs[k] for vs in arg_values],
                                             attributes={"callee": ir.FlatSymbolRefAttr.get(name)}))
    for k, step in enumerate(steps):
        members = set(step)
        for m, (i, r) in enumerate(results):
            for use in list(step[i].results[r].uses):
                owner = _operation(use.owner)
                if _top_level(owner, func) not in members and owner != calls[k]:
                    owner.operands[use.operand_number] = calls[k].results[m]
    # the function: the first step's ops moved into it, its outside values its arguments
    with loc, ir.InsertionPoint.after(func):
        new = ir.Operation.create("func.func", regions=1, attributes={
            "sym_name": ir.StringAttr.get(name), "sym_visibility": ir.StringAttr.get("private"),
            "function_type": ir.TypeAttr.get(ir.FunctionType.get(arg_types, result_types))})
    new.attributes["arg_attrs"] = ir.ArrayAttr.get([
        ir.DictAttr.get(_argument_layout(vs[0].type) if all(_contiguous(v) for v in vs) else {}) for vs in arg_values])
    block = new.regions[0].blocks.append(*arg_types, arg_locs=[loc] * len(arg_types))
    with loc, ir.InsertionPoint(block):
        ret = ir.Operation.create("func.return", operands=[first[i].results[r] for i, r in results])
    cloned: dict = {}

    def rematerialize(value):
        producer = _producer(value)
        if producer not in cloned:
            operands = [rematerialize(v) for v in producer.operands]   # (defined before the copy)
            copy = producer.clone(ir.InsertionPoint(ret))
            for j, v in enumerate(operands):
                copy.operands[j] = v
            cloned[producer] = copy
        return cloned[producer].results[ir.OpResult(value).result_number]

    for i, op in enumerate(first):
        for j, (owner, index, value) in enumerate(body.slots[start + i]):
            src = sources[i][j]
            if src[0] == "pass":
                owner.operands[index] = block.arguments[arg_of_slot[(i, j)]]
            elif src[0] == "remat":
                owner.operands[index] = rematerialize(value)
    for op in first:
        op.move_before(ret)
    for step in steps[1:]:
        for op in reversed(step):
            op.erase()
    # rematerializable ops only the outlined steps used
    for op in reversed(list(body.remat)):
        if all(not list(r.uses) for r in op.results):
            op.erase()


def outline_repeated_steps(module, min_repeats: int = DEFAULT_MIN_REPEATS, min_ops: int = DEFAULT_MIN_OPS) -> list[tuple[str, int, int]]:
    """Outline repeated runs of ops (module doc); [(function, ops per step, calls)] of each outlined."""
    from workbench.worker.ir_walk import symbol_names

    taken = symbol_names(module)
    done = []
    for func in [op.operation for op in module.body.operations]:
        if func.name != "func.func" or not func.regions[0].blocks:
            continue
        base = ir.StringAttr(func.attributes["sym_name"]).value
        while True:
            body = _Body(func, {name for name, _, _ in done})
            for start, period, repeats in body.candidates(min_repeats, min_ops):
                if not body.computes(start, start + period):
                    continue   # views and reshapes only (a run of collapse_shapes): nothing to compile
                if repeats > min_repeats:
                    start, repeats = body.best_rotation(start, period, repeats)
                alike, sources = body.steps_alike(start, period, repeats)
                if alike >= min_repeats and alike * period >= min_ops:
                    break
            else:
                break
            name = next(f"{base}_step{k}" for k in range(len(taken) + 1) if f"{base}_step{k}" not in taken)
            taken.add(name)
            _outline(body, start, period, alike, sources, name)
            done.append((name, period, alike))
    return done
