"""`transform.tune.knob` ops of a transform module (compile worker side): read them, select values.

A knob `%t = transform.tune.knob<"tile_m"> options = [16, 32, 64] -> !transform.param<i64>` is a
tunable of the schedule. `read` lists the knobs (array options become Python values, the rest is
kept as text); `select` writes the chosen values back as each knob's `selected` attribute (the
attribute from `options` that equals the value, so types match), which is how the interpreter
resolves the choice.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.ir_walk import ops_where

KNOB_OP = "transform.tune.knob"


def _py(attr: ir.Attribute):
    """A Python value for a simple attribute, else its text."""
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    return str(attr)


def _knob_ops(module: ir.Module) -> list:
    return ops_where(module, lambda op: op.name == KNOB_OP)


def _name(op) -> str:
    return ir.StringAttr(op.attributes["name"]).value


def read(module: ir.Module) -> list[dict]:
    out = []
    for op in _knob_ops(module):
        options = op.attributes["options"]
        entry: dict = {"name": _name(op), "options_text": str(options), "options": None, "selected": None}
        if isinstance(options, ir.ArrayAttr):
            entry["options"] = [_py(a) for a in options]
        if "selected" in op.attributes:
            entry["selected"] = _py(op.attributes["selected"])
        out.append(entry)
    return out


def _same(value, attr_value) -> bool:
    if isinstance(value, bool) or isinstance(attr_value, bool):
        return isinstance(value, bool) and isinstance(attr_value, bool) and value == attr_value
    return value == attr_value


def select(module: ir.Module, values: dict, path: str, error=ValueError) -> None:
    """Set `selected` on every knob named in `values`; an unknown name or a value outside an
    array of options raises `error`."""
    ops = _knob_ops(module)
    names = {_name(op) for op in ops}
    unknown = sorted(set(values) - names)
    if unknown:
        raise error(f"{path}: no transform.tune.knob named {', '.join(unknown)} (knobs: "
                    f"{', '.join(sorted(names)) or 'none'})")
    for op in ops:
        name = _name(op)
        if name not in values:
            continue
        value = values[name]
        options = op.attributes["options"]
        if isinstance(options, ir.ArrayAttr):
            match = [a for a in options if _same(value, _py(a))]
            if not match:
                raise error(f"{path}: knob {name}={value!r} is not one of its options {options}")
            op.attributes["selected"] = match[0]
        else:
            text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
            try:
                op.attributes["selected"] = ir.Attribute.parse(text)
            except (ValueError, ir.MLIRError) as e:
                raise error(f"{path}: knob {name}={value!r} is not an attribute: {e}")
