"""Walking and extending payload IR (worker side): the ops of a module or op that satisfy a predicate,
the module's symbols, functions added from generated text."""
from __future__ import annotations

from typing import Callable

from mlir import ir


def _dense_elements(attr):
    """The bindings' downcast of a DenseIntOrFPElementsAttr, which knows only int and float elements: it
    raised TypeError ("Can't cast unknown element type") for `dense<[(1.0, 2.0)]> : tensor<2xcomplex<f32>>`,
    so that merely reading such a constant's `value` (`op.attributes["value"]`) failed every pass of
    ours that looks at constants. Other element types (complex) are plain DenseElementsAttrs."""
    element = ir.ShapedType(attr.type).element_type
    if isinstance(element, ir.FloatType):
        return ir.DenseFPElementsAttr(attr)
    if isinstance(element, (ir.IntegerType, ir.IndexType)):
        return ir.DenseIntElementsAttr(attr)
    return ir.DenseElementsAttr(attr)


def _register_dense_elements_caster() -> None:
    # attribute casters live in the bindings' process-wide type-caster map, keyed by TypeID (which needs a
    # context to look up); every worker that touches payload IR imports this module
    with ir.Context():
        typeid = ir.Attribute.parse("dense<0.0> : tensor<1xf32>").typeid
    ir.register_type_caster(typeid, replace=True)(_dense_elements)


_register_dense_elements_caster()


def is_dense_resource(attr) -> bool:
    """Whether an attribute is a `dense_resource<name>` (its bytes in the module's resource blobs)."""
    try:
        ir.DenseResourceElementsAttr(attr)
    except (ValueError, TypeError):
        return False
    return True


def ops_where(root, keep: Callable[[object], bool]) -> list:
    """Every op nested in `root` (a module or an op, itself included) for which `keep(op)` holds, in walk order."""
    found = []

    def visit(op):
        if keep(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.operation.walk(visit)
    return found


def iterator_types(op) -> list[str]:
    """A linalg op's iterator types as words ("parallel", "reduction"); KeyError/ValueError without them."""
    # "#linalg.iterator_type<reduction>" -> "reduction" (str.strip with a char set eats letters)
    return [str(a).rsplit("<", 1)[-1].rstrip(">").strip('"') for a in ir.ArrayAttr(op.attributes["iterator_types"])]


#: ops that run their regions more than once: an op nested in one runs once per iteration
LOOP_OPS = frozenset({"scf.for", "scf.while", "scf.parallel", "scf.forall", "affine.for", "affine.parallel",
                      "gpu.launch"})


def inside_loop(op) -> bool:
    """Whether `op` is nested in a loop (LOOP_OPS) of its function."""
    parent = op.parent
    while parent is not None and parent.operation.name != "func.func":
        if parent.operation.name in LOOP_OPS:
            return True
        parent = parent.operation.parent
    return False


def callee_name(op) -> str:
    """The symbol a call op names (`callee`), or "" (an indirect call, an op that calls nothing)."""
    try:
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    except (KeyError, ValueError):
        return ""


def llvm_calls(root, callee: str) -> list:
    """The `llvm.call` ops nested in `root` that call `callee`, in walk order (lowered code's runtime calls)."""
    return ops_where(root, lambda op: op.name == "llvm.call" and callee_name(op) == callee)


def symbol_names(module) -> set[str]:
    """The symbol names of the module's top-level ops."""
    return {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
            if "sym_name" in op.attributes}


def append_parsed(module, text: str) -> None:
    """Parse `text` (top-level ops: helper functions, globals, the declarations they call) and append
    copies of the ops whose symbol `module` does not have yet; ir.MLIRError if it does not parse
    (callers say what they were generating)."""
    extra = ir.Module.parse(text)
    existing = symbol_names(module)
    for op in list(extra.body.operations):
        name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else None
        if name is None or name not in existing:
            module.body.append(op.clone())


def has_custom_indexing_maps(op) -> bool:
    """A named linalg op printed with explicit `indexing_maps` (e.g. a matmul with a transposed operand)."""
    return "indexing_maps" in str(op).split("ins(")[0]


def apply_transform(module, body: str) -> None:
    """Apply a transform sequence to `module`: `body` is its ops over %root (transform_text.transform_module
    wraps it), parsed in the module's context."""
    from mlir.dialects.transform import interpreter

    from workbench.common.transform_text import ENTRY, transform_module

    schedule = ir.Module.parse(transform_module(body), module.context)
    entry = next(op for op in schedule.body.operations if op.operation.name == "transform.named_sequence"
                 and ir.StringAttr(op.attributes["sym_name"]).value == ENTRY)
    interpreter.apply_named_sequence(module.operation, entry, schedule.operation)


def clone_mapped(op, mapping: dict, ip=None):
    """A clone of `op` (at `ip`, else the current insertion point) whose operands found in `mapping` are
    replaced by what they map to; its results are recorded in `mapping` as the originals' stand-ins (a
    linalg body copied somewhere else op by op)."""
    clone = op.operation.clone(ip=ip) if ip is not None else op.operation.clone()
    for k, operand in enumerate(clone.operands):
        if operand in mapping:
            clone.operands[k] = mapping[operand]
    for old, new in zip(op.results, clone.results):
        mapping[old] = new
    return clone


def element_bits(element_type) -> int | None:
    """The width in bits of a float or integer element type, None for another (index, complex, ...)."""
    for cls in (ir.FloatType, ir.IntegerType):
        try:
            return cls(element_type).width
        except (ValueError, TypeError):
            continue
    return None


def ranked_tensor_type(value, static: bool = False):
    """`value`'s ranked tensor type (with `static`: only when its shape is static), else None."""
    t = value.type
    t = t.maybe_downcast() if hasattr(t, "maybe_downcast") else t
    if not isinstance(t, ir.RankedTensorType) or (static and not t.has_static_shape):
        return None
    return t


def defining_op(value):
    """The operation defining `value`, None for a block argument."""
    try:
        owner = ir.OpResult(value).owner
    except (TypeError, ValueError):
        return None   # a block argument
    return owner.operation if hasattr(owner, "operation") else owner


def erase_unread(value, names: tuple[str, ...]) -> None:
    """Erase the op defining `value` when it is one of `names` (ops without side effects) and nothing reads
    its results any more, and so on up its operands: what a rewrite read through and left behind."""
    op = defining_op(value)
    if op is None or op.name not in names or any(True for r in op.results for _ in r.uses):
        return
    operands = list(op.operands)
    op.erase()
    for operand in operands:
        erase_unread(operand, names)
