"""Step kinds: what a step is, what it accepts, how it becomes worker stages, how it is saved.

A `Step` is pure data (kind, spec, options, params, base_dir). Each kind class turns it
into a list of *stages* (dicts the compile worker understands), knows its parameter
schema, and writes it back in the Lighthouse stage grammar.

Kinds: pass, transform, schedule, include, bench, pipeline (a target's named pipeline).
"""
from __future__ import annotations

import contextvars
import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Any, ClassVar

import yaml

from workbench.common import safe_yaml, trust_store
from workbench.common.files import read_regular_text, resolved
from workbench.common.suggest import did_you_mean, did_you_mean_path
from workbench.result import one_line
from workbench.common.bench_defaults import DEFAULT_PARAMS as BENCH_DEFAULTS
from workbench.common.bench_defaults import MAX_BENCH_CALLS, MAX_CALLS_PER_SAMPLE
from workbench.paths import LIBRARY_DIR, in_library
from workbench.steps import spec as S
from workbench.steps.params import ParamError, ParamSpec, Schema, generator_schema, knob_schema
from workbench.targets import TargetError, all_targets, find_named_pipeline

MAX_INCLUDE_DEPTH = 16
#: the pipeline files whose stages are being built, outermost first (an include cycle is named by them)
_INCLUDE_CHAIN: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar("lh_include_chain", default=())


class StepError(ValueError):
    """A step that cannot be built (bad reference, missing file, bad params, untrusted code)."""


class TrustError(StepError):
    def __init__(self, path: Path):
        super().__init__(f"refusing to run Python schedule {path} from outside the installed library "
                         f"without consent: pass --allow-python (headless) or run `trust {path}`")
        self.path = path


@dataclass
class BuildContext:
    """What building stages and schemas may depend on: the trust policy, and the session's compile
    worker for reading `transform.tune.knob` options (`knob_reader(text, path)` -> its answer)."""
    allow_python: bool = False
    trusted: set[str] = field(default_factory=set)
    knob_reader: Callable[[str, str], dict] | None = None

    def check_trust(self, path: Path) -> None:
        """Library files, files trusted in this session, and files whose exact content this user
        applied interactively before (the trust store) may run; anything else needs consent."""
        if self.allow_python or in_library(path) or str(path.resolve()) in self.trusted:
            return
        if trust_store.is_trusted(path, trust_store.PYTHON):
            return
        raise TrustError(path)


@dataclass
class Step:
    kind: str
    spec: str                                  # path / pass text / pipeline name (no params)
    params: dict[str, Any] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)   # gen=, seq=
    base_dir: Path = field(default_factory=Path.cwd)
    #: who produced the parameter dict (`cpu-selector`, `tune:<study>`, `file:<name>`); None: the user.
    #: Saved with the step so that replay uses the recorded dict, never the selector's later answer.
    selected_by: str | None = None
    #: the payload file's RUN line (1-based) a `pass` step came from (`run-line N`): `run --filecheck` follows
    #: that line's runner and FileCheck options. Saved with the step (`run_line: N`).
    run_line: int | None = None

    @property
    def kind_impl(self) -> "StepKind":
        return KINDS[self.kind]

    def resolve(self) -> Path:
        return resolve_path(self.spec, self.base_dir)

    def schema(self, ctx: BuildContext | None = None) -> Schema:
        """The step's parameter schema; `ctx` gives the session's compile worker (transform files
        with knobs are parsed there; without a ctx a private worker is started)."""
        return self.kind_impl.schema(self, ctx)

    def stages(self, ctx: BuildContext) -> list[dict]:
        return self.kind_impl.stages(self, ctx, depth=0)

    def label(self) -> str:
        """The step as one line of text (its control characters, newlines included, escaped)."""
        return one_line(self.kind_impl.label(self))

    def to_entry(self, rel_to: Path | None) -> dict:
        return self.kind_impl.to_entry(self, rel_to)

    def portable(self, session_file: Path) -> "Step":
        return self.kind_impl.portable(self, session_file)

    def require_file(self, what: str) -> Path:
        """The step's file, resolved; a missing one fails in one line that names it as written, with
        the close names of its folder here or in the library (`pipelines/lib/tlie.mlir`)."""
        path = self.resolve()
        if not path.exists():
            ref = self.spec.partition("[")[0].partition("{")[0]
            raise StepError(f"cannot read {what} {ref}: No such file or directory"
                            f"{missing_file_hint(ref, self.base_dir)}")
        return path

    def with_params(self, params: dict[str, Any]) -> "Step":
        new = copy.copy(self)
        new.params = dict(params)
        return new


LIBRARY_PREFIX = LIBRARY_DIR.name  # "pipelines/...": a file of the installed library, wherever it is installed


def _search_paths(ref: str, base_dir: Path, every_root: bool = False) -> list[Path]:
    """Where a stage file `ref` is looked for, in order: itself when absolute, else the referring file's
    folder, the installed library, the library's parent (a `pipelines/...` name; `every_root`: any
    name, for close-name hints), the current folder."""
    p = Path(ref).expanduser()
    if p.is_absolute():
        return [p]
    roots = [base_dir, LIBRARY_DIR]
    if every_root or (p.parts and p.parts[0] == LIBRARY_PREFIX):
        roots.append(LIBRARY_DIR.parent)
    return [root / p for root in [*roots, Path.cwd()]]


def resolve_path(ref: str, base_dir: Path) -> Path:
    """A stage file: relative to the referring file's folder first, then the installed library."""
    if Path(ref).expanduser().is_absolute():
        return Path(ref).expanduser()
    candidates = _search_paths(ref, base_dir)
    for cand in candidates:
        if cand.exists():
            return cand.resolve()
    return resolved(candidates[0])   # (a symlink loop: its use says so)


def missing_file_hint(ref: str, base_dir: Path) -> str:
    """` (did you mean ...?)` for a stage file that is not where `resolve_path` looks: the close names
    in the first of its folders (the referring file's, the library's, the current one) that exists."""
    for cand in _search_paths(ref, base_dir, every_root=True):
        hint = did_you_mean_path(cand, ref)
        if hint:
            return hint
    return ""


def _relpath(path: Path, rel_to: Path | None) -> str:
    """How a saved file names `path`: library files as `pipelines/...` (portable across checkouts and
    machines), others relative to the saved file's folder (or absolute when there is none)."""
    import os

    path = path.resolve()
    if in_library(path):
        return str(Path(LIBRARY_PREFIX) / path.relative_to(LIBRARY_DIR.resolve()))
    if rel_to is None:
        return str(path)
    return os.path.relpath(path, rel_to.resolve())


class StepKind:
    name: ClassVar[str] = ""
    yaml_key: ClassVar[str] = ""
    help: ClassVar[str] = ""

    def schema(self, step: Step, ctx: BuildContext | None = None) -> Schema:
        return Schema()

    def stages(self, step: Step, ctx: BuildContext, depth: int) -> list[dict]:
        raise NotImplementedError

    def label(self, step: Step) -> str:
        return S.format_ref(step.spec, step.options, step.params)

    def portable(self, step: Step, session_file: Path) -> Step:
        """The step as a session saved at `session_file` should refer to it (files it needs copied there)."""
        return step

    def to_entry(self, step: Step, rel_to: Path | None) -> dict:
        entry: dict[str, Any] = {self.yaml_key: S.format_ref(_relpath(step.resolve(), rel_to), step.options,
                                                             step.params)}
        if step.params:
            entry["params"] = dict(step.params)
        if step.selected_by:
            entry["selected_by"] = step.selected_by
        return entry


class PassKind(StepKind):
    name = yaml_key = "pass"
    help = "an MLIR pass pipeline, e.g. `canonicalize,cse` or `func.func(convert-linalg-to-loops)`"

    def stages(self, step, ctx, depth):
        return [{"kind": "pass", "pipeline": step.spec}]

    def label(self, step):
        return step.spec

    def to_entry(self, step, rel_to):
        return {"pass": step.spec, **({"run_line": step.run_line} if step.run_line else {})}


class TransformKind(StepKind):
    name = yaml_key = "transform"
    help = ("a transform-dialect .mlir module; [seq=name] picks the entry sequence; "
            "{knob=value} selects transform.tune.knob options")

    def _text(self, step: Step) -> str:
        try:
            return read_regular_text(step.require_file("transform file"))
        except OSError as e:
            raise StepError(f"cannot read transform file {step.spec}: {e.strerror}")

    def schema(self, step, ctx=None):
        """The module's `transform.tune.knob` ops: name -> options (choices), current `selected` (default)."""
        try:
            return knob_schema(self._text(step), str(step.resolve()), ctx.knob_reader if ctx else None)
        except ParamError as e:
            raise StepError(str(e))

    def stages(self, step, ctx, depth):
        path = step.resolve()
        text = self._text(step)
        stage = {"kind": "transform", "text": text, "path": str(path),
                 "entry": step.options.get("seq", "__transform_main")}
        if step.params:
            try:
                stage["knobs"] = self.schema(step, ctx).validate(step.params)
            except ParamError as e:
                raise StepError(str(e))
        return [stage]


class ScheduleKind(StepKind):
    name = yaml_key = "schedule"
    help = "a Python schedule generator file.py[gen=fn]{key=val ...} called with the parameter dict"

    def _gen(self, step: Step) -> str:
        gen = step.options.get("gen")
        if not gen:
            raise StepError(f"schedule {step.spec} needs a generator: {step.spec}[gen=function]")
        return gen

    def schema(self, step, ctx=None):
        try:
            return generator_schema(step.require_file("schedule file"), self._gen(step))[0]
        except ParamError as e:
            raise StepError(str(e))

    def stages(self, step, ctx, depth):
        path = step.require_file("schedule file")
        if not path.is_file():
            raise StepError(f"schedule file not found: {step.spec}")
        ctx.check_trust(path)
        gen = self._gen(step)
        try:
            schema, wants_payload = generator_schema(path, gen)
            params = schema.validate(step.params)
        except ParamError as e:
            raise StepError(str(e))
        missing = [n for n, p in schema.params.items() if p.required and n not in params]
        if missing:   # the function would raise TypeError in the worker (`missing 1 required positional argument`)
            p = schema.params[missing[0]]
            raise StepError(f"{path.name}:{gen} needs {missing[0]}= ({p.type}; it has no default)"
                            + (f", and {', '.join(m + '=' for m in missing[1:])}" if missing[1:] else ""))
        return [{"kind": "schedule", "path": str(path), "gen": gen, "params": params,
                 "entry": step.options.get("seq", "__transform_main"), "wants_payload": wants_payload}]


def rewrite_names() -> dict[str, str]:
    """The worker-side rewrites a `rewrite` step can name, with their help."""
    from workbench.common.rewrites import REWRITES

    return {name: meta["help"] for name, meta in REWRITES.items()}


class RewriteKind(StepKind):
    """A rewrite done by the compile worker in Python (no MLIR pass exists for it), e.g. `ukernel-calls`:
    replace ops marked `lh.ukernel` at configuration time by calls into a microkernel library."""
    name = yaml_key = "rewrite"
    help = "a worker-side rewrite, e.g. `rewrite ukernel-calls{library=auto}` (marked matmuls -> BLAS calls)"

    def schema(self, step, ctx=None):
        from workbench.common.rewrites import REWRITES

        if step.spec not in REWRITES:
            raise StepError(f"unknown rewrite {step.spec!r} (known: {', '.join(sorted(REWRITES))})")
        return Schema(params={k: ParamSpec(k, **v) for k, v in REWRITES[step.spec]["params"].items()})

    def stages(self, step, ctx, depth):
        schema = self.schema(step)
        try:
            params = schema.defaults()
            params.update(schema.validate(step.params))
        except ParamError as e:
            raise StepError(str(e))
        return [{"kind": "rewrite", "name": step.spec, "params": params}]

    def label(self, step):
        return "rewrite " + S.format_ref(step.spec, step.options, step.params)

    def to_entry(self, step, rel_to):
        entry: dict[str, Any] = {"rewrite": S.format_ref(step.spec, step.options, step.params)}
        return entry




class BenchKind(StepKind):
    name = yaml_key = "bench"
    help = "insert the benchmark wrapper around the entry function as it is at this point"
    _SCHEMA = Schema(params={
        "entry": ParamSpec("entry", "str", "", "entry function (empty: the only uncalled public function)"),
        "warmup": ParamSpec("warmup", "int", BENCH_DEFAULTS["warmup"], "untimed calls before timing", min=0,
                            max=MAX_BENCH_CALLS),
        "iterations": ParamSpec("iterations", "int", BENCH_DEFAULTS["iterations"], "timed calls", min=1,
                                max=MAX_BENCH_CALLS),
        "outputs": ParamSpec("outputs", "str", "", "output argument indices for functions without results"),
        "calls_per_sample": ParamSpec("calls_per_sample", "int", BENCH_DEFAULTS["calls_per_sample"],
                                      "calls back to back between two clock readings, each timed sample their mean "
                                      "(on cuda one stream synchronization a sample: short kernels timed as CUDA "
                                      "events around back-to-back launches time them)", min=1,
                                      max=MAX_CALLS_PER_SAMPLE),
    })

    def schema(self, step, ctx=None):
        return self._SCHEMA

    def stages(self, step, ctx, depth):
        try:
            params = self._SCHEMA.validate(step.params)
        except ParamError as e:
            raise StepError(str(e))
        outputs = str(params.get("outputs") or "").replace(",", " ").split()
        if not all(o.isdigit() and o.isascii() for o in outputs):   # `outputs=abc` was the worker's ValueError
            raise StepError(f"outputs={params['outputs']!r}: expected the indices of the entry's output arguments, "
                            "e.g. `outputs=2` or `outputs=1,2`")
        return [{"kind": "bench", "params": params}]

    def label(self, step):
        return "bench" + (" " + S.format_params(step.params) if step.params else "")

    def to_entry(self, step, rel_to):
        return {"bench": dict(step.params)}


def load_pipeline_yaml(path: Path) -> tuple[list[dict], dict[str, Any]]:
    """(stage entries, declared variable defaults) of a Lighthouse pipeline YAML file."""
    return pipeline_of(read_pipeline_doc(path), path)


def read_pipeline_doc(path: Path) -> Any:
    """A pipeline or session YAML file's document (StepError in one line for what cannot be read)."""
    try:
        doc = safe_yaml.load_file(path)
    except OSError as e:
        raise StepError(f"cannot read pipeline {path}: {e.strerror}")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = str(getattr(e, "problem", None) or e)
        if "'\\t'" in problem:   # a hand edit with tabs: say what to do, not only what the scanner met
            problem += " (a tab: write spaces there; YAML indents with spaces, and this parser wants them after ':' and '-' too)"
        raise StepError(f"{where}: invalid YAML: {problem}")
    return doc


def pipeline_of(doc: Any, path: Path) -> tuple[list[dict], dict[str, Any]]:
    """(stage entries, declared variable defaults) of a pipeline document read from `path`."""
    if not isinstance(doc, dict) or not isinstance(doc.get("Pipeline"), list):
        raise StepError(f"{path}: not a pipeline: expected a top-level 'Pipeline:' list")
    variables = doc.get("Variables") or {}
    if not isinstance(variables, dict):
        raise StepError(f"{path}: 'Variables' must be a mapping")
    return doc["Pipeline"], variables


def step_from_entry(entry: Any, base_dir: Path, variables: dict[str, Any] | None = None,
                    where: str = "", notes: list[str] | None = None) -> Step:
    """One `Pipeline:` list entry -> Step (variables substituted). `notes` receives what the reader should be
    told about the entry (a parameter whose `params:` value overrides another in the reference's {k=v})."""
    if not isinstance(entry, dict):
        raise StepError(f"{where}: a pipeline entry must be a mapping like `pass: ...`, got {entry!r}")
    keys = [k for k in entry if k in ENTRY_KEYS]
    if len(keys) != 1:
        odd = [str(k) for k in entry if k not in ENTRY_KEYS and k not in ENTRY_EXTRA_KEYS]
        hint = did_you_mean(odd[0], ENTRY_KEYS) if odd and not keys else ""
        raise StepError(f"{where}: pipeline entry {short_repr(entry)} must have exactly one of "
                        f"{', '.join(ENTRY_KEYS)}{hint}")
    key = keys[0]
    value = entry[key]
    unknown = [k for k in entry if k not in ENTRY_KEYS and k not in ENTRY_EXTRA_KEYS]
    if unknown:
        raise StepError(f"{where}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], ENTRY_EXTRA_KEYS)} "
                        f"in pipeline entry (known besides `{key}:`: "
                        f"{', '.join(ENTRY_EXTRA_KEYS)})")
    if entry.get("selected_by") is not None and not isinstance(entry["selected_by"], str):
        raise StepError(f"{where}: `selected_by:` must be a string, got {short_repr(entry['selected_by'])}")
    run_line = entry.get("run_line")
    if run_line is not None:
        if key != "pass":
            raise StepError(f"{where}: `run_line:` on a `{key}:` entry (only a `pass:` entry comes from a RUN line)")
        if isinstance(run_line, bool) or not isinstance(run_line, int) or run_line < 1:
            raise StepError(f"{where}: `run_line:` must be a RUN line number (1, 2, ...), got {short_repr(run_line)}")
    variables = variables or {}
    if entry.get("params") is not None and not isinstance(entry.get("params"), dict):
        raise StepError(f"{where}: `params:` must be a mapping of names to values, got "
                        f"{type(entry['params']).__name__} {short_repr(entry['params'])}")
    # `params:` beside the entry (what `save` writes for schedules and pipelines) wins over the reference's
    # {k=v}: a hand edit of it was ignored for `pipeline:` / `rewrite:` entries, and dropped without a word
    # for `pass:` and `bench:`, which take none there
    given = {k: _subst_value(v, variables, where) for k, v in (entry.get("params") or {}).items()}
    if given and key in ("pass", "bench"):
        where_instead = ("its options go in the pass text: `cse{...}`" if key == "pass"
                         else "its parameters are the `bench:` mapping")
        raise StepError(f"{where}: `params:` on a `{key}:` entry, which takes none there ({where_instead})")
    if key == "bench":
        if value is not None and not isinstance(value, dict):
            raise StepError(f"{where}: `bench:` expects a mapping of its parameters (entry, warmup, iterations, "
                            f"outputs), got {short_repr(value)}")
        return Step("bench", "bench", S.check_params(dict(value or {}), f"{where} (bench)"), {}, base_dir)
    if not isinstance(value, str):
        raise StepError(f"{where}: `{key}:` expects a string, got {value!r}")
    if key == "pass":
        pipeline = S.substitute(value, variables, where).strip()
        if not pipeline:   # replayed as a step that runs nothing (`pass ""` typed is refused)
            raise StepError(f"{where}: `pass:` needs a pass pipeline, got {value!r}")
        return Step("pass", pipeline, {}, {}, base_dir, run_line=run_line)
    if key in ("pipeline", "bundle", "rewrite"):
        name, opts, ptext = S.split_ref(S.substitute(value, variables, where))
        S.check_params(given, f"{where} ({name})")
        return Step("pipeline" if key != "rewrite" else "rewrite", name,
                    _merge_params(S.parse_params(ptext, variables, where, step=name), given, key, where, notes),
                    opts, base_dir)
    path, opts, ptext = S.split_ref(value)
    S.check_params(given, f"{where} ({Path(path).name})")   # before a generator or a transform parser sees them
    params = _merge_params(S.parse_params(ptext, variables, where, step=Path(path).name), given, key, where, notes)
    kind = {"include": "include", "schedule": "schedule", "edit": "edit"}.get(key)
    if key == "transform":
        kind = "schedule" if path.endswith(".py") else "transform"
    if kind == "schedule" and "gen" not in opts:
        raise StepError(f"{where}: Python schedule {path} needs [gen=function]")
    selected_by = entry.get("selected_by")
    return Step(kind, path, params, opts, base_dir,
                selected_by=str(selected_by) if selected_by else None)


def short_repr(value: Any, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters (for one-line errors)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _subst_value(v: Any, variables: dict[str, Any], where: str) -> Any:
    if isinstance(v, str) and "$" in v:
        return S.parse_value(S.substitute(v, variables, where))
    return v


class IncludeKind(StepKind):
    name = yaml_key = "include"
    help = "another pipeline YAML file {var=value ...}; its stages run as one step"

    def _file(self, step: Step) -> Path:
        return step.require_file("pipeline")

    def schema(self, step, ctx=None):
        _, defaults = load_pipeline_yaml(self._file(step))
        used = _variables_used(self._file(step))
        params = {name: ParamSpec(name, _type_of(defaults.get(name)), defaults.get(name)) for name in used}
        for name, d in defaults.items():
            params.setdefault(name, ParamSpec(name, _type_of(d), d))
        # closed: a variable the file never names did nothing (`cpu-lower{x=1}`, `split-leftovers.yaml
        # {threadz=4}` were applied and saved without a word); variables do not flow into nested includes
        # (an include entry passes its own `{var=$var}`), so the file's own `$names` and `Variables:` are all
        return Schema(params=params, open=False)

    def stages(self, step, ctx, depth):
        path = self._file(step)
        chain = _INCLUDE_CHAIN.get()
        resolved = path.resolve()
        if resolved in chain:   # named by the files, the way round (`a.yaml -> b.yaml -> a.yaml`)
            cycle = chain[chain.index(resolved):] + (resolved,)
            raise StepError(f"a cycle of includes: {' -> '.join(_relpath(p, cycle[0].parent) for p in cycle)}")
        if depth > MAX_INCLUDE_DEPTH:
            raise StepError(f"include nesting deeper than {MAX_INCLUDE_DEPTH} at {step.spec}")
        entries, defaults = load_pipeline_yaml(path)
        variables = dict(defaults)
        variables.update(step.params)
        out: list[dict] = []
        token = _INCLUDE_CHAIN.set(chain + (resolved,))
        try:
            for i, entry in enumerate(entries):
                sub = step_from_entry(entry, path.parent, variables, where=f"{path}: entry {i + 1}")
                out.extend(sub.kind_impl.stages(sub, ctx, depth + 1))
        finally:
            _INCLUDE_CHAIN.reset(token)
        return out

    def to_entry(self, step, rel_to):
        entry: dict[str, Any] = {"include": S.format_ref(_relpath(step.resolve(), rel_to), step.options,
                                                          step.params, space_before_params=True)}
        if step.params:
            entry["params"] = dict(step.params)
        return entry


class NamedPipelineKind(IncludeKind):
    name = yaml_key = "pipeline"
    help = "a target's named pipeline, e.g. `cpu-lower`"

    def _file(self, step):
        try:
            return find_named_pipeline(step.spec)
        except TargetError as e:
            raise StepError(str(e))

    def label(self, step):
        return "pipeline " + S.format_ref(step.spec, step.options, step.params)

    def to_entry(self, step, rel_to):
        entry: dict[str, Any] = {"pipeline": S.format_ref(step.spec, step.options, step.params)}
        if step.params:
            entry["params"] = dict(step.params)
        return entry


class EditKind(StepKind):
    """A hand edit: the whole module replaced by a verified file, valid only on the IR it was made on."""
    name = yaml_key = "edit"
    help = "a hand edit of the IR (recorded by `edit` / `edit-apply FILE`); replays on the same input only"

    def stages(self, step, ctx, depth):
        path = step.resolve()
        try:
            text = read_regular_text(path)
        except OSError as e:
            raise StepError(f"cannot read edited module {step.spec}: {e.strerror}")
        return [{"kind": "replace", "text": text, "path": str(path), "base_sha256": step.options.get("base", "")}]

    def label(self, step):
        return "edit " + Path(step.spec).name

    def to_entry(self, step, rel_to):
        return {"edit": S.format_ref(_relpath(step.resolve(), rel_to), step.options, {})}

    def portable(self, step: Step, session_file: Path) -> Step:
        """Copy the edited module next to the session file so the saved session travels with it."""
        import shutil

        src = step.resolve()
        dest_dir = session_file.parent / f"{session_file.stem}.edits"
        dest = dest_dir / src.name
        if src != dest.resolve():
            dest_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        new = copy.copy(step)
        new.spec = str(dest.resolve())
        return new


def _type_of(v: Any) -> str:
    from workbench.steps.params import _infer_type

    return _infer_type(v) if v is not None else "any"


def _variables_used(path: Path) -> list[str]:
    import re

    seen: list[str] = []
    for m in re.finditer(r"\$([A-Za-z_][A-Za-z0-9_]*)", path.read_text()):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


KINDS: dict[str, StepKind] = {k.name: k for k in (PassKind(), TransformKind(), ScheduleKind(), IncludeKind(),
                                                   BenchKind(), NamedPipelineKind(), EditKind(), RewriteKind())}
ENTRY_KEYS = ("pass", "transform", "schedule", "include", "bench", "pipeline", "bundle", "edit", "rewrite")
#: what an entry may hold besides its one ENTRY_KEYS key (what `save` writes)
ENTRY_EXTRA_KEYS = ("params", "selected_by", "run_line")


def _merge_params(in_ref: dict[str, Any], given: dict[str, Any], key: str, where: str,
                  notes: list[str] | None) -> dict[str, Any]:
    """The reference's {k=v} updated by the entry's `params:` mapping, which `save` writes with the same values.
    Where the two disagree one was edited by hand; `params:` wins (an edit of it is used), and `notes` says so:
    an edit of the reference's {k=v} was dropped without a word (the replay said `reproduced: true`)."""
    for name, value in given.items():
        if notes is not None and name in in_ref and S.format_value(in_ref[name]) != S.format_value(value):
            notes.append(f"{where}: {name} is {S.format_value(in_ref[name])} in the `{key}:` reference's {{...}} and "
                         f"{S.format_value(value)} in `params:`; `params:` is used")
    return {**in_ref, **given}


def step_from_command(text: str, base_dir: Path) -> Step:
    """What `apply X` means: guess the kind from the reference."""
    text = text.strip()
    if not text:
        raise StepError("nothing to apply: give a .mlir transform, a file.py[gen=fn], a pipeline .yaml, "
                        "or a named pipeline")
    for key in ENTRY_KEYS:
        if text == key or text.startswith(key + ":") or text.startswith(key + " "):
            rest = text[len(key) + 1:].strip()
            if key == "bench":
                if rest.startswith("{") and rest.endswith("}"):
                    rest = rest[1:-1]
                return Step("bench", "bench", S.parse_params(rest, where="apply", step="bench"), {}, base_dir)
            return step_from_entry({key: rest}, base_dir, where="command")
    path, opts, _ = S.split_ref(text)
    if path.endswith(".py"):
        return step_from_entry({"schedule": text}, base_dir, where="command")
    if path.endswith((".yaml", ".yml")):
        return step_from_entry({"include": text}, base_dir, where="command")
    if path.endswith(".mlir"):
        return step_from_entry({"transform": text}, base_dir, where="command")
    try:
        find_named_pipeline(path)
        return step_from_entry({"pipeline": text}, base_dir, where="command")
    except TargetError:
        pass
    named = [n for t in all_targets() for n in t.named_pipelines]
    raise StepError(f"don't know how to apply {text!r}{did_you_mean(path, named)}: expected file.mlir, "
                    "file.py[gen=fn]{...}, file.yaml {...}, a named pipeline, or `pass <pipeline>`")


# The functions other layers use to describe kinds (help, completion).
def kind_help() -> dict[str, str]:
    return {k: v.help for k, v in KINDS.items()}

