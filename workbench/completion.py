"""Front-end-neutral completion, driven by the registry's `Arg.complete` hints.

`Completer(registry, session).complete(text)` takes the command line up to the
cursor and returns `Completion`s: the replacement text, the offset in the line
where the replaced token starts, a display string and a short description.
The REPL adapts them to prompt-toolkit, the TUI to its input line.

Hints understood: `command`, `path` / `path:.ext[,.ext]`, `spec` (apply: files,
named pipelines, `file.py[gen=` generator names, `{key=` parameter keys), `param`
(`key=` from the step's schema), `step`, `target`, `pass`. Python schedule files
are read with `ast`, never imported.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from workbench.common.pass_names import COMMON_PASSES, WORKBENCH_PASSES, pass_names   # what `pass ` completes

SPEC_EXTS = (".mlir", ".py", ".yaml", ".yml")


@dataclass(frozen=True)
class Completion:
    text: str          # the replacement for line[start:]
    start: int         # where the replaced token starts in the line
    display: str = ""
    meta: str = ""

    def apply(self, line: str) -> str:
        return line[: self.start] + self.text


def generator_names(path: Path) -> list[str]:
    """The generators a schedule file declares (`GENERATORS = [...]`), read with `ast` (nothing runs)."""
    from workbench.steps.params import declared_generators

    try:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    return declared_generators(tree) or []


def common_prefix(items: Iterable[str]) -> str:
    items = list(items)
    return os.path.commonprefix(items) if items else ""


class Completer:
    def __init__(self, registry, session=None, cwd: Path | None = None):
        self.registry = registry
        self.session = session
        self._cwd = cwd

    @property
    def cwd(self) -> Path:
        return self._cwd or Path.cwd()

    # -- entry point ------------------------------------------------------------------------
    def complete(self, text: str) -> list[Completion]:
        try:
            return self._complete(text)
        except Exception:  # completion must never break typing
            return []

    def _complete(self, text: str) -> list[Completion]:
        stripped = text.lstrip()
        lead = len(text) - len(stripped)
        if " " not in stripped:
            return self._commands(stripped, lead)
        name, _, rest = stripped.partition(" ")
        cmd = self.registry.get(name)
        if cmd is None:
            return []
        rest_start = lead + len(name) + 1
        return self._args(cmd, rest, rest_start)

    # -- commands ----------------------------------------------------------------------------
    def _commands(self, prefix: str, start: int) -> list[Completion]:
        out = []
        for n in self.registry.names():
            if n.startswith(prefix):
                out.append(Completion(n, start, n, self.registry.get(n).summary))
        return out

    # -- arguments -----------------------------------------------------------------------------
    def _args(self, cmd, rest: str, rest_start: int) -> list[Completion]:
        flags = {f.name: f for f in cmd.flags}
        positionals = list(cmd.args)
        # walk the complete tokens before the current one
        pos = 0
        pending_flag = None
        in_remainder = False  # inside a rest/kv argument: the parser reads no more flags there
        for m in re.finditer(r"\S+", rest):
            tok, tok_end = m.group(0), m.end()
            is_current = tok_end == len(rest)
            if is_current:
                break
            if pending_flag is not None:
                pending_flag = None
                continue
            if tok.startswith("--"):
                f = flags.get(tok.split("=", 1)[0])
                if f is not None and f.takes_value and "=" not in tok:
                    pending_flag = f
                continue
            # an optional int argument followed by something that is not an int: skip it
            while (pos < len(positionals) and positionals[pos].type == "int" and positionals[pos].optional
                   and not tok.lstrip("-").isdigit()):
                pos += 1
            if pos < len(positionals) and positionals[pos].type in ("rest", "kv"):
                in_remainder = True
                break  # a rest/kv argument takes everything from here on
            pos += 1
        current = "" if rest.endswith(" ") or not rest.strip() else rest.split()[-1]
        cur_start = rest_start + len(rest) - len(current)
        if pending_flag is not None:
            return self._hint(pending_flag.complete, cmd, current, cur_start, "str")
        if current.startswith("--") and cmd.flags:   # (`pass --canonicalize`: an mlir-opt flag, no flag of ours)
            return [Completion(f.name + (" " if f.takes_value else ""), cur_start, f.name, f.help)
                    for f in cmd.flags if f.name.startswith(current)]
        out: list[Completion] = []
        # optional int positionals may be skipped: offer both them and what follows
        while pos < len(positionals):
            arg = positionals[pos]
            if arg.type in ("rest", "kv"):
                # the hint sees the whole remainder (e.g. `params 2 k=`, `apply f.py[gen=g]{a=1 b`)
                out += self._hint(arg.complete, cmd, rest.lstrip(), rest_start + len(rest) - len(rest.lstrip()),
                                  arg.type)
                break
            out += self._hint(arg.complete, cmd, current, cur_start, arg.type)
            if not (arg.optional and arg.type == "int") or current.isdigit():
                break
            pos += 1
        if not current and not in_remainder:
            out += [Completion(f.name + " ", cur_start, f.name, f.help) for f in cmd.flags]
        # two optional step arguments (`diff A B`) both offer the steps: once each
        return list({(c.text, c.start): c for c in out}.values())

    def _hint(self, hint: str, cmd, current: str, start: int, arg_type: str) -> list[Completion]:
        kind, _, extra = hint.partition(":")
        if kind == "command":
            return self._commands(current, start)
        if kind == "path":
            exts = tuple(e for e in extra.split(",") if e) or None
            return self._paths(current, start, exts)
        if kind == "choice":
            return [Completion(c, start, c, "") for c in extra.split(",") if c and c.startswith(current)]
        if kind == "run_line":   # the payload file's RUN lines (was `1, 2, 3` whatever the file holds)
            return self._run_lines(current, start)
        if kind == "step":   # `step:applied`: the active steps only (params, tune, select: not the payload)
            return self._steps(current, start, applied_only=extra == "applied")
        if kind == "function":   # `function:entry`: those a run can call, not the benchmark wrapper's
            return [c for c in self._functions(current, start) if extra != "entry" or not c.text.startswith("_lh_")]
        if kind == "target":
            return self._targets(current, start)
        if kind == "spec":
            return self._spec(current, start)
        if kind == "param":
            return self._param_keys(cmd, current, start)
        if kind == "pass":
            inside = re.search(r"([\w.-]+)\{([^{}]*)$", current)   # `pass canonicalize{max-`: its options
            if inside:
                return self._pass_options(inside.group(1), inside.group(2), start + len(current))
            tok = re.split(r"[,\s(]", current)[-1]
            s = start + len(current) - len(tok)
            if tok.startswith("-"):   # mlir-opt's flags: `pass -canonicalize -cse`
                dash = "--" if tok.startswith("--") else "-"
                return [Completion(dash + p, s, dash + p, "pass flag") for p in (*pass_names(), *WORKBENCH_PASSES)
                        if (dash + p).startswith(tok)]
            names = dict.fromkeys((*COMMON_PASSES, *pass_names())) if tok else dict.fromkeys(COMMON_PASSES)
            return [Completion(p, s, p, "pass") for p in (*names, *WORKBENCH_PASSES) if p.startswith(tok)]
        return []

    def _pass_options(self, name: str, typed: str, end: int) -> list[Completion]:
        """`name=` for the options of the pass `name` not given yet whose names start as the last word typed."""
        s = self.session
        if s is None or not hasattr(s, "pass_options"):
            return []
        tok = re.split(r"\s", typed)[-1]
        if "=" in tok:
            return []
        given = set(re.findall(r"([\w-]+)=", typed))
        try:
            options = s.pass_options(name)
        except Exception:   # no worker (closed, cancelled): nothing to offer, never an error while typing
            return []
        return [Completion(o + "=", end - len(tok), o + "=", f"{name} option") for o in options
                if o.startswith(tok) and o not in given]

    # -- hint implementations ---------------------------------------------------------------------
    def _run_lines(self, current: str, start: int) -> list[Completion]:
        """The numbers of the payload file's `// RUN:` lines, each with the start of its command."""
        from workbench.common import split_input

        path = getattr(self.session, "payload_path", None)
        try:
            runs = split_input.find_run_lines(Path(path).read_text()) if path else []
        except (OSError, UnicodeDecodeError):
            return []
        out = []
        for i, run in enumerate(runs, start=1):
            text = " ".join(run.command.split())
            if str(i).startswith(current):
                out.append(Completion(str(i), start, str(i), f"line {run.number}: {text[:60]}"))
        return out

    def _paths(self, current: str, start: int, exts: tuple[str, ...] | None,
               roots: Iterable[Path] | None = None) -> list[Completion]:
        head, _, base = current.rpartition("/")
        dir_part = head + "/" if "/" in current else ""
        out: list[Completion] = []
        seen: set[str] = set()
        for root in roots or (self.cwd,):
            d = Path(os.path.expanduser(dir_part or ".")) if (dir_part.startswith(("/", "~"))) else root / dir_part
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                if not e.name.startswith(base) or (e.name.startswith(".") and not base.startswith(".")):
                    continue
                if e.name in ("__pycache__",):
                    continue
                try:
                    is_dir = e.is_dir()
                except OSError:
                    continue
                if not is_dir and exts and not e.name.endswith(exts):
                    continue
                text = dir_part + e.name + ("/" if is_dir else "")
                if text in seen:
                    continue
                seen.add(text)
                out.append(Completion(text, start, e.name + ("/" if is_dir else ""), "dir" if is_dir else "file"))
        return out

    def _steps(self, current: str, start: int, applied_only: bool = False) -> list[Completion]:
        s = self.session
        if s is None or not getattr(s, "loaded", False):
            return []
        out = []
        for h in s.history():
            if applied_only and (h["index"] == 0 or not h["active"]):
                continue
            idx = str(h["index"])
            if idx.startswith(current):
                out.append(Completion(idx, start, idx, f"{h['kind']} {h['spec']}"[:60]))
        return out

    def _functions(self, current: str, start: int) -> list[Completion]:
        """The functions of the live module (func.func / llvm.func symbols), and the benchmark wrapper's."""
        s = self.session
        if s is None or not getattr(s, "loaded", False):
            return []
        names = dict.fromkeys(re.findall(r"(?:func\.func|llvm\.func)\s+(?:\w+\s+)*@([\w$.]+)", s.view_at(s.cursor)))
        names.update(dict.fromkeys(("_lh_bench", "_lh_call")))
        return [Completion(n, start, n, "function") for n in names if n.startswith(current)]

    def _targets(self, current: str, start: int) -> list[Completion]:
        from workbench.targets import all_targets

        return [Completion(t.name, start, t.name, t.description) for t in all_targets() if t.name.startswith(current)]

    def _named_pipelines(self) -> dict[str, str]:
        from workbench.targets import all_targets

        out: dict[str, str] = {}
        for t in all_targets():
            for name in t.named_pipelines:
                out.setdefault(name, f"{t.name} pipeline")
        return out

    def _spec(self, text: str, start: int) -> list[Completion]:
        """`apply` argument: file refs, named pipelines, [gen=, {key=."""
        # inside {...}: parameter keys of the referenced step
        brace = text.find("{")
        if brace >= 0 and "}" not in text[brace:]:
            ref = text[:brace].strip()
            inner = text[brace + 1:]
            tok = inner.split()[-1] if inner and not inner[-1].isspace() else ""
            schema = self._schema_for_ref(ref)
            if schema is None:
                return []
            tok_start = start + len(text) - len(tok)
            present = {t.split("=", 1)[0] for t in inner.split()[:-1] if "=" in t} if tok else \
                {t.split("=", 1)[0] for t in inner.split() if "=" in t}
            return self._keys(schema, tok, tok_start, present)
        # inside [...]: gen=NAME (generator functions) / seq=
        bracket = text.find("[")
        if bracket >= 0 and "]" not in text[bracket:]:
            path = text[:bracket]
            opts = text[bracket + 1:]
            last = opts.split(",")[-1]
            opt_start = start + len(text) - len(last)
            if last.startswith("gen="):
                resolved = self._resolve(path)
                names = generator_names(resolved) if resolved else []
                prefix = last[4:]
                return [Completion(f"gen={n}]", opt_start, n, "generator") for n in names if n.startswith(prefix)]
            return [Completion(o, opt_start, o, "option") for o in ("gen=", "seq=") if o.startswith(last)]
        if text.startswith("rewrite "):  # a worker-side rewrite by name
            from workbench.steps.kinds import rewrite_names

            name = text[len("rewrite "):]
            if " " in name:
                return []
            return [Completion(n, start + len("rewrite "), n, meta) for n, meta in rewrite_names().items()
                    if n.startswith(name)]
        if " " in text.strip():
            return []
        current = text.strip()
        out: list[Completion] = []
        for name, meta in self._named_pipelines().items():
            if name.startswith(current):
                out.append(Completion(name, start, name, meta))
        for key in ("pass ", "rewrite ", "bench"):
            if key.startswith(current) and current:
                out.append(Completion(key, start, key.strip(), "step kind"))
        from workbench.paths import LIBRARY_DIR

        paths = self._paths(current, start, SPEC_EXTS, roots=(self.cwd, LIBRARY_DIR))
        # a .py schedule needs a generator: offer `file.py[gen=` directly
        out += [Completion(c.text + "[gen=", c.start, c.display, "schedule") if c.text.endswith(".py") else c
                for c in paths]
        return out

    def _resolve(self, ref: str) -> Path | None:
        from workbench.steps.kinds import resolve_path

        p = resolve_path(ref.strip(), self.cwd)
        return p if p.is_file() else None

    def _schema_for_ref(self, ref: str):
        from workbench.steps.kinds import step_from_command

        try:
            ctx = self.session.build_ctx if self.session is not None else None
            return step_from_command(ref, self.cwd).schema(ctx)
        except Exception:
            return None

    def _keys(self, schema, tok: str, start: int, present: set[str]) -> list[Completion]:
        if "=" in tok:
            key, _, val = tok.partition("=")
            spec = schema.params.get(key)
            if spec is None:
                return []
            values: list[Any] = list(spec.choices or []) or ([True, False] if spec.type == "bool" else [])
            if not values and spec.default is not None and val == "":
                values = [spec.default]
            from workbench.steps.spec import format_value

            return [Completion(f"{key}={format_value(v)}", start, format_value(v), spec.describe())
                    for v in values if format_value(v).startswith(val)]
        out = []
        for k, spec in schema.params.items():
            if k.startswith(tok) and k not in present:
                # `; default 64`: ` = 64` after `divides M` read as M's value
                meta = spec.describe() + (f"; default {spec.default!r}" if spec.default is not None else "")
                out.append(Completion(k + "=", start, k, meta))
        return out

    def _step_index(self, done: list[str]) -> tuple[int | None, list[str]]:
        """(the step a `params` / `tune` line is about: its first token when that is a number, else the
        current step; None when there is none, or no such step) and the tokens after that number."""
        s = self.session
        if s is None or not getattr(s, "loaded", False) or s.cursor == 0:
            return None, done
        index = s.cursor
        if done and done[0].isdigit():
            index, done = int(done[0]), done[1:]
        return (index if 1 <= index <= len(s.steps) else None), done

    def _param_keys(self, cmd, text: str, start: int) -> list[Completion]:
        """`key=` tokens for `params [N] ...` (step N's schema) and `bench ...`."""
        schema = None
        tokens = text.split()
        tok = "" if (not text or text[-1].isspace()) else tokens[-1]
        done = tokens[:-1] if tok else tokens
        if cmd.name == "params":
            s = self.session
            if not done and tok.isdigit() and s is not None and getattr(s, "loaded", False) and s.cursor:
                return self._steps(tok, start + len(text) - len(tok))
            index, done = self._step_index(done)
            if index is None:
                return []
            try:
                schema = s.steps[index - 1].step.schema(s.build_ctx)
            except Exception:
                return []
        elif cmd.name == "bench":
            from workbench.steps.kinds import KINDS, Step

            if tok.startswith("entry="):   # the functions of the live module
                return [Completion("entry=" + c.text, start + len(text) - len(tok), c.display, c.meta)
                        for c in self._functions(tok[len("entry="):], 0) if not c.text.startswith("_lh_")]
            schema = KINDS["bench"].schema(Step("bench", "bench"))
        elif cmd.name == "tune":   # `tune [N] key=[a,b]`: step N's keys (the current step's without N)
            s = self.session
            index, done = self._step_index(done)
            if index is None or "=" in tok:
                return []
            try:
                schema = s.steps[index - 1].step.schema(s.build_ctx)
            except Exception:
                return []
            present = {t.split("=", 1)[0] for t in done if "=" in t}
            return [Completion(k + "=[", start + len(text) - len(tok), k, spec.describe())
                    for k, spec in schema.params.items() if k.startswith(tok) and k not in present]
        if schema is None:
            return []
        present = {t.split("=", 1)[0] for t in done if "=" in t}
        return self._keys(schema, tok, start + len(text) - len(tok), present)
