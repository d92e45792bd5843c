"""Parameter schemas: what a step accepts, and validation of edited values.

A schedule generator's schema is read from its signature with `ast` (no code runs
until the user trusts the file): each keyword parameter's annotation gives the type,
its literal default the default. Optional module-level literals add constraints:

    PARAMS = {name: {"choices": [...], "min": 1, "max": 512, "help": "...",
                     "divides": "M",           # value divides payload dim M (or parameter)
                     "multiple_of": 16,        # value is a multiple of 16 (or of a dim / parameter)
                     "power_of_two": True,
                     "when": "impl == 'codegen'",  # divides/multiple_of apply only then
                     "space": [8, 16, 32]}}    # candidate values for `tune`
    CONSTRAINTS = ["reg_m <= block_m", "block_m % reg_m == 0"]   # relations between parameters
    PAYLOAD_OP = "linalg.matmul"               # whose dims (M, N, K ...) the constraints may name

Only the functions a file declares in its module-level `GENERATORS = ["tile_matmul", ...]` (a
literal list of names) can be called as generators: helpers, selectors and anything else in the
file are not reachable from a session, whatever `[gen=...]` it names.

`Schema.validate` checks types, choices and ranges of the given keys; `Schema.check` checks a
complete dict: relations, and (given payload dims) divisibility. Errors name the constraint.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.common.files import read_regular_text
from workbench.common.integers import decimal_digits
from workbench.common.suggest import did_you_mean

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
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
    # constraints added with issue 5 (all optional; older callers construct ParamSpec positionally)
    divides: str | int | None = None        # value | this (payload dim like "M", a parameter, or an int)
    multiple_of: str | int | None = None    # this | value
    power_of_two: bool = False
    space: list | None = None               # explicit candidate values for tuning
    when: str | None = None                 # condition (e.g. "impl == 'codegen'") for divides/multiple_of
    required: bool = False                  # a generator argument without a default: the call needs it

    def describe(self) -> str:
        s = self.type
        if self.choices:
            s += " in {" + ", ".join(map(str, self.choices)) + "}"
        if self.min is not None and self.max is not None:
            s += f" in [{self.min}, {self.max}]"
        elif self.min is not None:   # `int >= 0`, not `int in [0, ]`
            s += f" >= {self.min}"
        elif self.max is not None:
            s += f" <= {self.max}"
        if self.power_of_two:
            s += ", power of 2"
        if self.divides is not None:
            s += f", divides {self.divides}"
        if self.multiple_of is not None:
            s += f", multiple of {self.multiple_of}"
        return s

    def constraint_texts(self) -> list[str]:
        """The constraints on this parameter, as they appear in error messages."""
        out = []
        if self.divides is not None:
            out.append(f"{self.name} divides {self.divides}")
        if self.multiple_of is not None:
            out.append(f"{self.name} multiple of {self.multiple_of}")
        return out

    def coerce(self, value: Any) -> Any:
        v = _coerce(self.name, self.type, value)
        if self.choices and v not in self.choices:
            raise ParamError(f"{self.name}={value!r}: expected one of {self.choices}")
        if isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
            # generators print it into IR (an index attribute): 10**30 failed deep in the parser
            raise ParamError(f"{self.name}={value!r}: does not fit in 64 bits")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if self.min is not None and v < self.min:
                raise ParamError(f"{self.name}={value!r}: must be >= {self.min}")
            if self.max is not None and v > self.max:
                raise ParamError(f"{self.name}={value!r}: must be <= {self.max}")
            if self.power_of_two and (not isinstance(v, int) or v <= 0 or v & (v - 1)):
                raise ParamError(f"{self.name}={value!r}: violates constraint `power of two`")
            if isinstance(self.multiple_of, int) and isinstance(v, int) and v % self.multiple_of:
                raise ParamError(f"{self.name}={value!r}: violates constraint `{self.name} multiple of "
                                 f"{self.multiple_of}`")
            if isinstance(self.divides, int) and isinstance(v, int) and (v == 0 or self.divides % v):
                raise ParamError(f"{self.name}={value!r}: violates constraint `{self.name} divides {self.divides}`")
        return v


def _coerce(name: str, typ: str, value: Any) -> Any:
    def bad() -> ParamError:
        return ParamError(f"{name}={value!r}: expected {typ}")

    if typ == "any":
        return value
    if typ == "None":
        if value is None:
            return value
        raise bad()
    if " | " in typ:   # the first alternative that takes the value (in the annotation's order)
        alternatives = typ.split(" | ")
        if isinstance(value, str) and value.lstrip().startswith("["):   # a list as typed in a form: not a str
            alternatives.sort(key=lambda a: not a.startswith("list"))
        for alternative in alternatives:
            try:
                return _coerce(name, alternative, value)
            except ParamError:
                continue
        raise bad()
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
                if decimal_digits(value):   # over Python's 4300 digits: an integer, too large
                    raise ParamError(f"{name}: an integer of {decimal_digits(value)} digits does not "
                                     "fit in 64 bits") from None
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
    constraints: list[str] = field(default_factory=list)   # relations, e.g. "reg_m <= block_m"
    payload_op: str | None = None                           # op whose dims constraints may name

    @property
    def needs_payload(self) -> bool:
        """True when some constraint names a payload dimension (checking needs the step's input)."""
        names = set(self.params)
        for p in self.params.values():
            for ref in (p.divides, p.multiple_of):
                if isinstance(ref, str) and ref not in names:
                    return True
        return any(n not in names for c in self.constraints for n in _names_in(c))

    def check(self, values: dict[str, Any], dims: dict[str, int] | None = None) -> None:
        """Check a complete parameter dict: cross-parameter relations and, with `dims` (payload
        dimensions by upper-case name, e.g. {"M": 256}), divisibility by payload dimensions.
        Raises ParamError naming the first violated constraint."""
        env: dict[str, Any] = {}
        if dims:
            env.update(dims)
        env.update({k: v for k, v in values.items()})
        for p in self.params.values():
            v = values.get(p.name)
            if not isinstance(v, int) or isinstance(v, bool):
                continue
            if p.when and all(n in env for n in _names_in(p.when)) and not _eval_relation(p.when, env):
                continue
            for is_div, ref, text in ((True, p.divides, f"{p.name} divides {p.divides}"),
                                      (False, p.multiple_of, f"{p.name} multiple of {p.multiple_of}")):
                if ref is None:
                    continue
                other = ref if isinstance(ref, int) else env.get(ref)
                if not isinstance(other, int) or other <= 0:
                    continue  # unknown dimension (dynamic / no such op): the schedule decides
                bad = (v <= 0 or other % v) if is_div else (v % other)
                if bad:
                    raise ParamError(f"{p.name}={v}: violates constraint `{text}` ({ref}={other})")
        for c in self.constraints:
            names = _names_in(c)
            if any(n not in env for n in names):
                continue  # names a payload dim we do not know here
            try:
                ok = _eval_relation(c, env)
            except (ValueError, ZeroDivisionError, TypeError) as e:
                raise ParamError(f"constraint `{c}` cannot be evaluated: {e}")
            if not ok:
                shown = ", ".join(f"{n}={env[n]}" for n in names)
                raise ParamError(f"violates constraint `{c}` ({shown})")

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
                if not self.params:
                    raise ParamError(f"unknown parameter {k!r}: this step has no parameters")
                raise ParamError(f"unknown parameter {k!r} (known: {', '.join(self.params)})"
                                 f"{did_you_mean(k, self.params)}")
            out[k] = spec.coerce(v)
        return out


_ALLOWED_NODES = (ast.Expression, ast.Compare, ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Constant,
                  ast.Load, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Add, ast.Sub, ast.Mult,
                  ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.And, ast.Or, ast.Not, ast.USub, ast.In, ast.NotIn,
                  ast.Tuple, ast.List, ast.IfExp, ast.Call)
_SAFE_FUNCS = {"min": min, "max": max, "abs": abs}


def _parse_relation(text: str) -> ast.Expression:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ParamError(f"constraint `{text}` is not an expression: {e.msg}")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ParamError(f"constraint `{text}`: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _SAFE_FUNCS):
            raise ParamError(f"constraint `{text}`: only min/max/abs calls are allowed")
    return tree


def _names_in(text: str) -> list[str]:
    out: list[str] = []
    for node in ast.walk(_parse_relation(text)):
        if isinstance(node, ast.Name) and node.id not in _SAFE_FUNCS and node.id not in out:
            out.append(node.id)
    return out


def _eval_relation(text: str, env: dict[str, Any]) -> bool:
    code = compile(_parse_relation(text), "<constraint>", "eval")
    return bool(eval(code, {"__builtins__": {}}, {**_SAFE_FUNCS, **env}))


def payload_dims(info: dict, op_name: str | None, op_id: str | None = None) -> list[dict[str, int]]:
    """Upper-case dimension dicts ({"M": 256, "N": 128, "K": 512}) of the payload ops named `op_name`
    (any contraction when None), from `inspect` output; only the op with id `op_id` when given (a
    per-op step's `op` parameter)."""
    out = []
    for op in info.get("ops", []):
        if (op_name and op.get("op") != op_name) or (not op_name and op.get("kind") != "contraction"):
            continue
        if op_id and op.get("id") != op_id:
            continue
        dims = {k.upper(): v for k, v in (op.get("dims") or {}).items() if isinstance(v, int) and v > 0}
        if dims:
            out.append(dims)
    return out


def _annotation_type(node: ast.AST | None) -> str:
    if node is None:
        return "any"
    text = ast.unparse(node)
    text = text.replace("List", "list").replace("typing.", "")
    if text in _TYPES or text.startswith("list"):
        return text
    # `str | list[str]`: an op id or a list of them (a session's `op: true` or `op: {a: 1}` reached the
    # generator, which raised a TypeError with its traceback); `list[int] | None`: a list or None
    alternatives = [a.strip() for a in text.split("|")]
    if len(alternatives) > 1 and all(a in _TYPES or a.startswith("list") or a == "None" for a in alternatives):
        return " | ".join(alternatives)
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


def declared_generators(tree: ast.Module) -> list[str] | None:
    """The names in a schedule file's `GENERATORS = [...]` literal (None when there is none)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
        if any(isinstance(t, ast.Name) and t.id == "GENERATORS" for t in targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
                return list(value)
            return None
    return None


def generator_schema(path: Path, gen: str) -> tuple[Schema, bool]:
    """(schema, wants_payload) of generator `gen` in `path`, read without executing it.

    Applying a step asks for it several times (defaults, constraints, stages): the parse is cached
    for as long as the file is unchanged. Callers must not modify the returned schema."""
    try:
        stat = path.stat()
    except OSError as e:
        raise ParamError(f"cannot read schedule file {path}: {e.strerror}")
    return _generator_schema(str(path), stat.st_mtime_ns, stat.st_size, gen)


@functools.lru_cache(maxsize=64)
def _generator_schema(path_text: str, mtime_ns: int, size: int, gen: str) -> tuple[Schema, bool]:
    path = Path(path_text)
    try:
        tree = ast.parse(read_regular_text(path), filename=str(path))
    except OSError as e:
        raise ParamError(f"cannot read schedule file {path}: {e.strerror}")
    except SyntaxError as e:
        raise ParamError(f"{path}:{e.lineno}:{e.offset}: syntax error: {e.msg}")
    extra: dict[str, dict] = {}
    constraints: list[str] = []
    payload_op = None
    fn = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == gen:
            fn = node
        if isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            try:
                value = ast.literal_eval(node.value) if names & {"PARAMS", "CONSTRAINTS", "PAYLOAD_OP"} else None
            except ValueError:
                value = None
            if "PARAMS" in names and isinstance(value, dict):
                extra = value
            if "CONSTRAINTS" in names and isinstance(value, (list, tuple)):
                constraints = [str(c) for c in value]
            if "PAYLOAD_OP" in names and isinstance(value, str):
                payload_op = value
    declared = declared_generators(tree)
    if declared is None:
        raise ParamError(f"{path.name} declares no generators: list the functions a session may call in a "
                         f"module-level `GENERATORS = [...]`")
    if gen not in declared:
        raise ParamError(f"{path.name} has no generator {gen!r} (declared generators: "
                         f"{', '.join(declared) or 'none'})")
    if fn is None:
        raise ParamError(f"{path.name} declares generator {gen!r} but defines no function of that name")
    schema = Schema(open=fn.args.kwarg is not None, constraints=constraints, payload_op=payload_op)
    for c in constraints:
        _parse_relation(c)  # a malformed constraint is an error in the schedule file
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
        spec = ParamSpec(a.arg, typ, default, required=d is None)
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
    for c in schema.constraints:
        rows.append(["(constraint)", c, "", "", ""])
    return {"columns": ["name", "type", "value", "default", "help"], "rows": rows}


def schema_json(schema: Schema) -> dict:
    """The schema as data (for --json and front ends)."""
    from dataclasses import asdict

    return {"params": {k: asdict(p) for k, p in schema.params.items()}, "open": schema.open,
            "constraints": list(schema.constraints), "payload_op": schema.payload_op}


def candidate_values(spec: ParamSpec, dims: dict[str, int] | None = None, current: Any = None,
                     limit: int = 64) -> list | None:
    """A finite list of values `tune` may try for `spec`, or None when the space is not finite.
    Order: explicit `space`, `choices`, bool, divisors of a known `divides` target within
    [min, max] (respecting power_of_two / multiple_of), powers of two within [min, max]."""
    if spec.space:
        return list(spec.space)
    if spec.choices:
        return list(spec.choices)
    if spec.type == "bool":
        return [False, True]
    if spec.type != "int":
        return None
    lo = int(spec.min) if spec.min is not None else 1
    hi = int(spec.max) if spec.max is not None else None
    target = spec.divides if isinstance(spec.divides, int) else (dims or {}).get(spec.divides or "")
    mult = spec.multiple_of if isinstance(spec.multiple_of, int) else (dims or {}).get(spec.multiple_of or "")
    if target:
        vals = [d for d in range(max(lo, 1), (min(hi, target) if hi else target) + 1) if target % d == 0]
    elif hi is not None and spec.power_of_two:
        vals, v = [], 1
        while v <= hi:
            if v >= lo:
                vals.append(v)
            v *= 2
    elif hi is not None and hi - lo < limit:
        vals = list(range(lo, hi + 1))
    else:
        return None
    if spec.power_of_two:
        vals = [v for v in vals if v > 0 and not v & (v - 1)]
    if mult:
        vals = [v for v in vals if v % mult == 0]
    if len(vals) > limit:  # keep the space small: powers of two and the current value
        keep = [v for v in vals if not v & (v - 1)]
        vals = sorted(set(keep[-limit:] + ([current] if current in vals else [])))
    return vals or None


# -- transform.tune.knob ops of a .mlir schedule ------------------------------------------------
# Reading knobs means parsing the transform module, which only the compile worker does. A session
# passes a reader that uses its own worker (BuildContext.knob_reader); without one (no session), a
# private compile worker is started on first use. Results are cached by the module text's sha256.
_knob_cache: dict[str, list[dict]] = {}
_private_client = None


def _read_knobs(text: str, path: str, reader=None) -> list[dict]:
    import hashlib

    key = hashlib.sha256(text.encode()).hexdigest()
    if key in _knob_cache:
        return _knob_cache[key]
    if reader is None:
        global _private_client
        if _private_client is None:
            import atexit

            from workbench.execution.worker_client import CompileClient

            _private_client = CompileClient()
            atexit.register(_private_client.close)
        reader = lambda t, p: _private_client.request({"op": "knobs", "text": t, "path": p})  # noqa: E731
    ans = reader(text, path)
    if not ans.get("ok"):
        raise ParamError(f"cannot read the knobs of {path}: {ans.get('error')}")
    _knob_cache[key] = ans["knobs"]
    return ans["knobs"]


def knob_schema(text: str, path: str, reader=None) -> Schema:
    """Schema of a transform module: one parameter per `transform.tune.knob` name; array `options`
    become the choices, a `selected` value already in the file the default."""
    if "transform.tune.knob" not in text:
        return Schema()
    schema = Schema()
    for k in _read_knobs(text, path, reader):
        choices = k.get("options")
        typ = "any"
        if choices:
            kinds = {_infer_type(c) for c in choices}
            typ = kinds.pop() if len(kinds) == 1 else "any"
        help_text = "transform.tune.knob" + ("" if choices else f" options = {k.get('options_text')}")
        spec = ParamSpec(k["name"], typ, k.get("selected"), help_text, choices=choices or None)
        if k["name"] in schema.params:  # the same knob name twice: both get the same value
            continue
        schema.params[k["name"]] = spec
    return schema
