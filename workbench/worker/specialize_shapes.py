"""`lh-specialize-shapes{shapes=0:64x32,1:32x48 function=NAME}`: dynamic dims of a function's tensor
(or plain memref) arguments made static (upstream MLIR test files and torch exports with a dynamic batch write
tensor<?x?xf32>; `run` makes inputs, and the selectors pick tiles, for static shapes only).

Each named argument takes the given static type; its uses read a tensor.cast (memref.cast) back to the old type,
which canonicalization folds into the ops (linalg, tensor) so the static shape propagates; a returned
value that became static is returned as such (the function's result type follows). Options:
`shapes`: comma-separated INDEX:DxDx... (every dim, static ones included: they must agree);
`function`: the function (default: the only public one with a body).
"""
from __future__ import annotations


class SpecializeError(ValueError):
    pass


def parse_shapes(text: str) -> dict[int, list[int]]:
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        index, sep, dims = item.partition(":")
        try:
            if not sep:
                raise ValueError
            out[int(index)] = [int(d) for d in dims.lower().split("x")]
        except ValueError:
            raise SpecializeError(f"shapes: {item!r} is not INDEX:DxD... (e.g. 0:64x32)")
        if any(d < 0 for d in out[int(index)]):
            raise SpecializeError(f"shapes: {item!r} has a negative dim")
    if not out:
        raise SpecializeError("shapes: give at least one INDEX:DxD... (e.g. shapes=0:64x32,1:32x48)")
    return out


def specialize(module, shapes: dict[int, list[int]], function: str = "") -> str:
    """Make the named arguments of `function` static; returns the function's name."""
    from mlir import ir
    from mlir.dialects import memref, tensor
    from mlir.passmanager import PassManager

    funcs = [op.operation for op in module.body.operations
             if op.operation.name == "func.func" and len(op.operation.regions[0].blocks)]
    name_of = lambda f: ir.StringAttr(f.attributes["sym_name"]).value  # noqa: E731
    if function:
        funcs = [f for f in funcs if name_of(f) == function]
        if not funcs:
            raise SpecializeError(f"no function @{function} with a body")
    else:
        funcs = [f for f in funcs if "sym_visibility" not in f.attributes
                 or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"]
        if len(funcs) != 1:
            raise SpecializeError(f"{len(funcs)} public functions: name one with function=NAME")
    f = funcs[0]
    block = f.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    for index, dims in sorted(shapes.items()):
        if not 0 <= index < len(inputs):
            raise SpecializeError(f"@{name_of(f)} has {len(inputs)} arguments: no argument {index}")
        old = inputs[index]
        plain_memref = (isinstance(old, ir.MemRefType) and str(old) == str(
            ir.MemRefType.get(old.shape, old.element_type, memory_space=old.memory_space)))
        if not isinstance(old, ir.RankedTensorType) and not plain_memref:
            raise SpecializeError(f"argument {index} is {old}: only ranked tensors and memrefs without a "
                                  "layout are specialized")
        if old.rank != len(dims) or any(o >= 0 and o != d for o, d in zip(old.shape, dims)):
            raise SpecializeError(f"argument {index} is {old}: {'x'.join(map(str, dims))} does not fit it")
        if plain_memref:   # (upstream's memref tests: linalg ops on memref<?x?xf32> arguments)
            new = ir.MemRefType.get(dims, old.element_type, memory_space=old.memory_space)
        else:
            new = ir.RankedTensorType.get(dims, old.element_type, old.encoding)
        arg = block.arguments[index]
        arg.set_type(new)
        inputs[index] = new
        first = block.operations[0] if len(block.operations) else None
        with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), f.location:
            cast = (memref.CastOp if plain_memref else tensor.CastOp)(old, arg)
        arg.replace_all_uses_except(cast.result, cast.operation)
        for use in list(cast.result.uses):   # TOSA ops take the static type as it is (they fold no cast):
            if use.owner.name.startswith("tosa."):   # tosa-infer-shapes below carries it through them
                use.owner.operands[use.operand_number] = arg
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, list(ftype.results)))
    # TOSA ops keep their declared (dynamic) result types through canonicalization: infer them
    infer = "func.func(tosa-infer-shapes)," if any(op.name.startswith("tosa.") for op in _all_ops(f)) else ""
    PassManager.parse(f"builtin.module({infer}canonicalize)").run(module.operation)
    # returned values that became static: the function returns them as such (callers inside the module
    # would need a cast; a payload's entry has none)
    ret = [op for op in f.regions[0].blocks[-1].operations][-1]
    results = []
    for i, v in enumerate(ret.operands):
        src = v.owner if not isinstance(v.owner, ir.Block) else None
        if src is not None and src.operation.name in ("tensor.cast", "memref.cast"):
            ret.operands[i] = src.operands[0]
        results.append(ret.operands[i].type)
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    PassManager.parse("builtin.module(canonicalize)").run(module.operation)
    return name_of(f)


def _all_ops(root) -> list:
    from workbench.worker.ir_walk import ops_where

    return ops_where(root, lambda op: True)
