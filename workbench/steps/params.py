"""Parameter schemas: what a step accepts, and validation of edited values.

A schedule generator's schema is read from its signature with `ast` (no code runs
until the user trusts the file): each keyword parameter's annotation gives the type,
its literal default the default. An optional module-level `PARAMS = {name: {...}}`
dict literal adds constraints (`choices`, `min`, `max`, `help`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "list": list}


class ParamError(ValueError):
    pass


@dataclass
class ParamSpec:
    name: str
    type: str = "any"          # int | float | bool | str | list[int] | list | any
    default: Any = None
    help: str = ""
    choices: list | None = None
    min: float | None = None
    max: float | None = None

    def describe(self) -> str:
        s = self.type
        if self.choices:
            s += " in {" + ", ".join(map(str, self.choices)) + "}"
        if self.min is not None or self.max is not None:
            s += f" in [{'' if self.min is None else self.min}, {'' if self.max is None else self.max}]"
        return s

    def coerce(self, value: Any) -> Any:
        v = _coerce(self.name, self.type, value)
        if self.choices and v not in self.choices:
            raise ParamError(f"{self.name}={value!r}: expected one of {self.choices}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if self.min is not None and v < self.min:
                raise ParamError(f"{self.name}={value!r}: must be >= {self.min}")
            if self.max is not None and v > self.max:
                raise ParamError(f"{self.name}={value!r}: must be <= {self.max}")
        return v


def _coerce(name: str, typ: str, value: Any) -> Any:
    def bad() -> ParamError:
        return ParamError(f"{name}={value!r}: expected {typ}")

    if typ == "any":
        return value
    if typ == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise bad()
    if typ == "int":
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value, 0)
            except ValueError:
                raise bad()
        raise bad()
    if typ == "float":
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise bad()
    if typ == "str":
        if isinstance(value, (list, dict)):
            raise bad()
        return str(value)
    if typ.startswith("list"):
        if isinstance(value, str):
            from workbench.steps.spec import parse_value

            value = parse_value(value)
        if not isinstance(value, (list, tuple)):
            raise bad()
        inner = typ[5:-1] if typ.startswith("list[") else "any"
        return [_coerce(f"{name}[{i}]", inner, x) for i, x in enumerate(value)]
    return value


@dataclass
class Schema:
    params: dict[str, ParamSpec] = field(default_factory=dict)
    open: bool = False  # accepts keys not listed (generator with **kwargs)

    def defaults(self) -> dict[str, Any]:
        return {k: p.default for k, p in self.params.items() if p.default is not None}

    def validate(self, values: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in values.items():
            spec = self.params.get(k)
            if spec is None:
                if self.open:
                    out[k] = v
                    continue
                known = ", ".join(self.params) or "none"
                raise ParamError(f"unknown parameter {k!r} (known: {known})")
            out[k] = spec.coerce(v)
        return out


def _annotation_type(node: ast.AST | None) -> str:
    if node is None:
        return "any"
    text = ast.unparse(node)
    text = text.replace("List", "list").replace("typing.", "")
    if text in _TYPES or text.startswith("list"):
        return text
    return "any"


def _infer_type(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    for name, t in (("int", int), ("float", float), ("str", str)):
        if isinstance(default, t):
            return name
    if isinstance(default, list):
        return "list[int]" if default and all(isinstance(x, int) for x in default) else "list"
    return "any"


def generator_schema(path: Path, gen: str) -> tuple[Schema, bool]:
    """(schema, wants_payload) of generator `gen` in `path`, read without executing it."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except OSError as e:
        raise ParamError(f"cannot read schedule file {path}: {e.strerror}")
    except SyntaxError as e:
        raise ParamError(f"{path}:{e.lineno}:{e.offset}: syntax error: {e.msg}")
    extra: dict[str, dict] = {}
    fn = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == gen:
            fn = node
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in node.targets):
            try:
                extra = ast.literal_eval(node.value)
            except ValueError:
                extra = {}
    if fn is None:
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
        raise ParamError(f"{path.name} has no generator {gen!r} (functions: {', '.join(names) or 'none'})")
    schema = Schema(open=fn.args.kwarg is not None)
    args = fn.args.args + fn.args.kwonlyargs
    defaults = [None] * (len(fn.args.args) - len(fn.args.defaults)) + list(fn.args.defaults) + list(fn.args.kw_defaults)
    wants_payload = False
    for a, d in zip(args, defaults):
        if a.arg == "payload":
            wants_payload = True
            continue
        default = None
        if d is not None:
            try:
                default = ast.literal_eval(d)
            except ValueError:
                default = None
        typ = _annotation_type(a.annotation)
        if typ == "any" and default is not None:
            typ = _infer_type(default)
        spec = ParamSpec(a.arg, typ, default)
        for key, val in (extra.get(a.arg) or {}).items():
            if hasattr(spec, key):
                setattr(spec, key, val)
        schema.params[a.arg] = spec
    return schema, wants_payload


def schema_table(schema: Schema, values: dict[str, Any]) -> dict:
    rows = []
    for k, p in schema.params.items():
        rows.append([k, p.describe(), repr(values.get(k, p.default)), repr(p.default), p.help])
    for k, v in values.items():
        if k not in schema.params:
            rows.append([k, "any", repr(v), "", ""])
    return {"columns": ["name", "type", "value", "default", "help"], "rows": rows}
