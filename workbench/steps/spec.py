"""The Lighthouse stage-reference grammar.

    file.py[gen=fn,seq=name]{key=val key2=[1,2] flag}
    file.yaml {key=$var}
    pass-pipeline-text{with=options}          (for `pass:` the braces belong to MLIR)

Values are YAML scalars/lists (`32`, `[32,32]`, `True`, `name`); a bare word is `True`;
`$name` is replaced from the variables in scope before the value is read.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from workbench.common import safe_yaml


class SpecError(ValueError):
    pass


#: a path in quotes may hold spaces and brackets (`"/Users/me/My Schedules/tile.mlir"[seq=x]`)
_REF = re.compile(r"^\s*(?P<path>\"[^\"]+\"|'[^']+'|[^\[\]{}\s\"']+)\s*(?:\[(?P<opts>[^\]]*)\])?\s*"
                  r"(?:\{(?P<params>.*)\})?\s*$", re.S)
#: what a path needs quotes for in a stage reference
_QUOTE_PATH = re.compile(r"[\s\[\]{}'\"]")


def split_ref(text: str) -> tuple[str, dict[str, str], str | None]:
    """'file.py[gen=f]{a=1}' -> ('file.py', {'gen': 'f'}, 'a=1')."""
    m = _REF.match(text)
    if not m:
        head = re.split(r"[\[{]", text.strip(), maxsplit=1)[0]
        hint = (f' (a path with spaces goes in quotes: "{head.strip()}")'
                if re.search(r"\S\s+\S", head) and text.strip()[:1] not in "\"'" else "")
        raise SpecError(f"cannot read stage reference {text!r}; expected file[opt=val,...]{{key=val ...}}{hint}")
    opts: dict[str, str] = {}
    if m.group("opts"):
        for part in m.group("opts").split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise SpecError(f"bad option {part!r} in {text!r}; expected name=value")
            k, v = part.split("=", 1)
            opts[k.strip()] = v.strip()
    path = m.group("path")
    if path[0] in "\"'":
        path = path[1:-1]
    return path, opts, m.group("params")


def tokenize(params_text: str) -> list[str]:
    """Split 'a=1 b=[1, 2] c="x y"' on whitespace outside brackets and quotes."""
    tokens, cur, depth, quote = [], [], 0, ""
    for ch in params_text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch.isspace() and depth == 0:
            if cur:
                tokens.append("".join(cur))
                cur = []
            continue
        cur.append(ch)
    if quote or depth:
        raise SpecError(f"unbalanced brackets or quotes in {{{params_text}}}")
    if cur:
        tokens.append("".join(cur))
    return tokens


_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def substitute(text: str, variables: dict[str, Any], where: str = "") -> str:
    def repl(m: re.Match) -> str:
        name = m.group(1)
        if name not in variables:
            raise SpecError(f"undefined variable ${name}" + (f" in {where}" if where else ""))
        if isinstance(variables[name], dict):   # `params: {x: {a: 1}}`: its repr went into the text, and on
            # into MLIR's pass parser: "'' does not refer to a registered pass", `{'a': 1}` on a line of its own
            raise SpecError(f"variable ${name} is a mapping ({_short(repr(variables[name]))}): a variable's value "
                            "is put into the text as it is, so it is a string, a number or a list"
                            + (f" (in {where})" if where else ""))
        value = format_value(variables[name])
        inner = _VAR.search(value)
        if inner:   # `a: $b` (or `a: $a`) went on as the text `$b`, into a pass option MLIR refused
            raise SpecError(f"variable ${name} is {value!r}, which names ${inner.group(1)}: a variable's value is "
                            "used as it is, not substituted again" + (f" (in {where})" if where else ""))
        return value

    return _VAR.sub(repl, text)


#: limits on one parameter's value: a real one is a few numbers or a name. A session with a 100,000-entry
#: list took 38-47 s (the generator, then the transform parser of a 200 kB script) before a clipped error.
MAX_LIST_ITEMS = 4096          # items of a list value, nested lists' items counted too
MAX_STRING_CHARS = 64 << 10    # characters of a string value (64 KiB)
MAX_VALUE_TEXT = 128 << 10     # characters of one value's text in {k=v} (4096 items of up to 31 characters)


def check_value(key: Any, value: Any, where: str = "") -> None:
    """SpecError in one line (naming `where`, the key and the limit) for a value longer than the limits above."""
    items, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) > MAX_STRING_CHARS:
                raise SpecError((f"{where}: " if where else "") + f"parameter {key}: a string of {len(v)} characters, "
                                f"more than the {MAX_STRING_CHARS} allowed")
        elif isinstance(v, (list, tuple, dict)):
            items += len(v)
            if items > MAX_LIST_ITEMS:
                raise SpecError((f"{where}: " if where else "") + f"parameter {key}: {items} list items, more than "
                                f"the {MAX_LIST_ITEMS} allowed")
            stack.extend(v.values() if isinstance(v, dict) else v)


def check_params(params: dict[str, Any], where: str = "") -> dict[str, Any]:
    for k, v in params.items():
        check_value(k, v, where)
    return params


def parse_value(text: str) -> Any:
    try:
        value = safe_yaml.load(text)
    except yaml.YAMLError:
        return text
    return text if value is None else value


def parse_params(params_text: str | None, variables: dict[str, Any] | None = None, where: str = "",
                 step: str = "") -> dict[str, Any]:
    """{k=v} text -> dict; `where` places errors, `step` (with it) names the step in a too-long value's error."""
    at = f"{where} ({step})" if where and step else where or step
    if not params_text or not params_text.strip():
        return {}
    out: dict[str, Any] = {}
    for tok in tokenize(params_text):
        tok = substitute(tok, variables or {}, where)
        k, eq, v = tok.partition("=")
        k = k.strip()
        if not re.match(r"[A-Za-z_]", k):   # `=3`, `5`, `"x"`: not a parameter name
            raise SpecError(f"expected key=value, got {tok!r}" + (" (the name is missing)" if eq and not k else ""))
        if k in out:   # `params 2 tile_m=64 tile_m=32`: the last one won without a word
            raise SpecError(f"{k} given twice ({k}={format_value(out[k])} and {tok.strip()})")
        v = v.strip()
        if len(v) > MAX_VALUE_TEXT:   # refused before YAML reads it
            raise SpecError((f"{at}: " if at else "") + f"parameter {k}: a value written in {len(v)} characters, "
                            f"more than the {MAX_VALUE_TEXT} allowed")
        out[k] = parse_value(v) if eq else True   # a bare name is a flag: True
        check_value(k, out[k], at)
    return out


def format_value(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(format_value(x) for x in v) + "]"
    if isinstance(v, str) and (not v or any(c.isspace() for c in v)):
        return f'"{v}"'
    return str(v)


def format_params(params: dict[str, Any]) -> str:
    if not params:
        return ""
    return "{" + " ".join(f"{k}={format_value(v)}" for k, v in params.items()) + "}"


def format_ref(path: str, opts: dict[str, str], params: dict[str, Any], space_before_params: bool = False) -> str:
    s = path
    if _QUOTE_PATH.search(path):   # a folder with a space in its name: split_ref reads it back
        s = f"'{path}'" if '"' in path else f'"{path}"'
    if opts:
        s += "[" + ",".join(f"{k}={v}" for k, v in opts.items()) + "]"
    p = format_params(params)
    if p:
        s += (" " if space_before_params else "") + p
    return s
