"""The compile worker: the only process that holds MLIR objects for compilation.

Started by `WorkerClient` as `python -m workbench.worker.compile_worker FD`; it
reads request dicts from the connection on FD and answers each with a dict.
The MLIR wheels are built with assertions, so a bad pass option or an invalid
conversion can abort this process: the client notices, restarts it, and reports
the step as failed with the tail of our stderr.

Requests (all answers carry "ok" and, on failure, "error" and "diagnostics"):
  {"op": "parse", "text", "filename"}            -> {"ir", "sha"}
  {"op": "apply", IR, "stages": [..]}             -> {"ir", "sha", "seconds", "stage_seconds"}
  {"op": "apply", IR, "stages", "lazy": True}     -> {"key", "seconds", "stage_seconds", "follow_up"},
                                                    then {"key", "bytecode"} (or {"key", "ir", "sha"})
  {"op": "print", IR}                             -> {"ir", "sha"}
  {"op": "inspect", IR}                           -> {"info"}
  {"op": "inspect", IR, "loops": False}           -> {"info"} without each op's "loops" (cheaper)
  {"op": "inspect", IR, "only": ID}               -> {"info": {"ops": [the op with id ID, no loops]}}
  {"op": "knobs", "text", "path"}                 -> {"knobs": [{"name", "options", "selected", ...}]}
  {"op": "nest_pipeline", "pipeline"}             -> {"pipeline"}: mlir-opt's implicit nesting of pass flags
  {"op": "pass_options", "pass"}                  -> {"options"}: the option names of a pass or pipeline
  {"op": "ping"}
IR names a module: "key" (the sha256 of its text, or the key a lazy apply answered), plus its
"text" or "bytecode" when this worker may not hold it (a fresh worker, an evicted entry); a
request naming a module we do not hold and carrying neither is answered {"ok": False, "missing": key},
and the client sends it again with the content. ("sha" is the old name of "key".)
A request carrying "compact_ir" gets every printed IR as "ir_parts" + "ir_blobs" in place of "ir": its long
string literals (weights) by sha256, each blob sent once per worker (workbench/common/compact_text.py); the
client puts "ir" back together as a CompactText.
A lazy apply does not print its result (printing costs about half as much as the transform
interpreter): the module stays in our cache under a new key, and the answer goes out at once; its
bytecode follows in a second message (protocol.FOLLOW_UP: written while the front end goes on), which
the session keeps so that a worker crash loses nothing; the text is printed when the session asks
("print").
Stage dicts: {"kind": "pass", "pipeline"} | {"kind": "transform", "text", "path", "entry"}
  | {"kind": "schedule", "path", "gen", "params", "entry", "wants_payload"}
  | {"kind": "rewrite", "name", "params"} | {"kind": "bench", "params"} | {"kind": "strip_sharding"}.
prepare_run also takes "prelude": stages applied before the wrapper is inserted, and "lowered_bytecode": the
lowered module as bytecode too (not "bytecode": that field carries a module to a worker that does not hold it).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import os
import re
import sys
import tempfile
import time
import traceback
import weakref
from collections import OrderedDict
from pathlib import Path

from mlir import ir, passmanager
from mlir.dialects.transform import interpreter

from workbench.common.compact_text import BlobSender
from workbench.common.pass_names import pass_names
from workbench.common.suggest import close_matches, did_you_mean
from workbench.worker import (bench_wrapper, knobs, payload_inspect, payload_schedules, print_flags, py_passes,
                              resource_print, rewrites)
from workbench.worker.mlir_context import new_context
from workbench.worker.mpi import sharding
from workbench.worker.protocol import FOLLOW_UP, serve_requests
from workbench.worker.stderr_capture import captured_output, captured_stderr

CACHE_SIZE = 24
#: the last payloads parsed stay held beyond the cache's LRU order: `run --check`'s reference and a
#: `select` that added more than CACHE_SIZE steps need the payload, which would be sent again (a model's
#: weights) once evicted
PINNED_PAYLOADS = 2
#: a lazy result's backup is its bytecode up to this size; a bigger one (a model's weights) goes as compact
#: text, whose blobs the front end holds already when the step left the weights alone
BYTECODE_BACKUP_MAX = 1 << 20
#: prepare_run's "artifact" -> the module and function that produce it, imported when first asked for
#: (the default "llvm" is an LLVM-dialect module, below)
ARTIFACT_PREPARERS = {"spirv-kernels": ("workbench.worker.sycl.spirv_kernels", "prepare")}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class StageError(Exception):
    def __init__(self, message: str, diagnostics: str = ""):
        super().__init__(message)
        self.diagnostics = diagnostics


def _unknown_pass_hint(line: str) -> str:
    """The pass parser's first line, without its `MLIR Textual PassPipeline Parser:1:1: error:` prefix,
    with the close pass names when it names one it does not know."""
    line = re.sub(r"^MLIR Textual PassPipeline Parser:\d+:\d+: error: ", "", line)
    m = re.search(r"'([^']+)' does not refer to a registered pass", line)
    if m:
        line += did_you_mean(m.group(1), [*pass_names(), *py_passes.PASSES])
    return line


#: MLIR's option parser on a key the pass does not have (`canonicalize{max-iteration=3}`); its next line names the pass
_NO_SUCH_OPTION = re.compile(r"no such option (\S+)")
_ADDING = re.compile(r"failed to add `([^`]+)` with options `([^`]*)`")
#: the anchors a pass is tried under when it is parsed alone
_ANCHORS = ("any({})", "builtin.module({})", "builtin.module(func.func({}))")
_OPTION_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-"


def _clean_option_reason(line: str) -> str:
    """LLVM's option parser's words as ours: `<Pass-Options-Parser>: no such option x` -> `no such option x`,
    `: for the --vl option: 'x' value invalid for integer argument!` -> `option vl: 'x' value invalid ...`."""
    line = re.sub(r"^<Pass-Options-Parser>:\s*", "", line.strip())
    line = re.sub(r"^:?\s*for the -+([\w-]+) option:\s*", r"option \1: ", line)
    return line.rstrip("!").strip()


def parse_pipeline(text: str) -> passmanager.PassManager:
    """PassManager.parse, whose error also carries what the option parser wrote to stderr (the reason an option
    was refused), first, in our words."""
    with captured_stderr() as written:
        try:
            return passmanager.PassManager.parse(text)
        except (ValueError, ir.MLIRError) as e:
            error = e
    said = [*written[0].splitlines(), *str(error).strip().splitlines()]
    is_reason = re.compile(r"^(<Pass-Options-Parser>:|:?\s*for the -+[\w-]+ option:)").match
    reasons = list(dict.fromkeys(_clean_option_reason(line) for line in said if is_reason(line.strip())))
    raised = [line for line in str(error).strip().splitlines() if not is_reason(line.strip())]
    if not reasons:
        raise error
    added = next((m for m in map(_ADDING.search, raised) if m), None)
    first = f"{added.group(1)}: {reasons[0]}" if added else reasons[0]
    raise ValueError("\n".join([first, *reasons[1:], *raised]))


def _parses(text: str) -> str:
    """'' where `text` parses as a pass pipeline, else the parser's words (stderr's included)."""
    try:
        parse_pipeline(text)
        return ""
    except (ValueError, ir.MLIRError) as e:
        return str(e) or "error"


@functools.lru_cache(maxsize=None)
def _anchor(name: str) -> str | None:
    """The first of _ANCHORS under which the pass (or pipeline) `name` parses alone, as a format string."""
    return next((a for a in _ANCHORS if not _parses(a.format(name))), None)


@functools.lru_cache(maxsize=None)
def _printed_alone(name: str) -> str | None:
    """The textual pipeline of the pass (or pipeline) `name` parsed alone under its anchor; None without one."""
    anchored = _anchor(name)
    return None if anchored is None else str(passmanager.PassManager.parse(anchored.format(name)))


def pass_options(name: str) -> list[str] | None:
    """The options MLIR knows for the pass `name`: those its textual pipeline prints (with their values) once
    parsed alone; list options without a default are not printed. None where no anchor takes the pass alone
    or it prints as other passes (a pipeline such as `sparsifier`)."""
    printed = _printed_alone(name)
    if printed is None:
        return None
    m = re.search(r"(?<![\w-])" + re.escape(name) + r"(\{|(?![\w-]))", printed)
    if not m:
        return None
    if m.group(1) != "{":
        return []
    depth, end = 1, m.end()
    while end < len(printed) and depth:
        depth += {"{": 1, "}": -1}.get(printed[end], 0)
        end += 1
    body = printed[m.end():end - 1]
    while True:   # option values that are pipelines or lists of their own: not options of this pass
        inner = re.sub(r"\{[^{}]*\}|\([^()]*\)|\[[^\[\]]*\]", "", body)
        if inner == body:
            break
        body = inner
    return list(dict.fromkeys(re.findall(r"(?:^|\s)([A-Za-z][\w-]*)=", body)))


@functools.lru_cache(maxsize=None)
def _expansion_option_names(name: str) -> tuple[str, ...]:
    """The option names in what the pass or pipeline `name` prints as, parsed alone (a pipeline prints as its
    passes, with their options: `sparsifier` -> `sparsification-and-bufferization{parallelization-strategy=..}`)."""
    printed = _printed_alone(name)
    if printed is None:
        return ()
    return tuple(dict.fromkeys(re.findall(r"(?<=[{\s])([A-Za-z][\w-]*)=", printed)))


@functools.lru_cache(maxsize=1)
def _known_option_names() -> tuple[str, ...]:
    """Every option name the passes known here print (a lexicon of likely names: a pipeline's options are
    mostly its passes' options)."""
    names: dict[str, None] = {}
    for p in pass_names():
        try:
            for option in pass_options(p) or ():
                names[option] = None
        except (ValueError, ir.MLIRError):
            continue
    return tuple(names)


def has_option(name: str, option: str) -> bool:
    """Whether the pass or pipeline `name` takes `option`: parsed with it (no value), the option parser says
    anything but `no such option`; MLIR cannot list the options it does not print (list options without a
    default, a pipeline's)."""
    anchored = _anchor(name)
    if anchored is None or not re.fullmatch(r"[A-Za-z][\w-]*", option):
        return False
    said = _parses(anchored.format(f"{name}{{{option}}}"))
    return f"no such option {option}" not in said


#: longer than any name MLIR gives a pass option or an op (the longest are about 45 characters): a word this long
#: is no typo of one, and its edits (2 x alphabet per character, each as long as the word) took minutes to try
#: on the parser for a 20 kB option string
_LONGEST_NAME = 64


def _one_edit_away(word: str, alphabet: str) -> set[str]:
    """The words one edit from `word`: a letter too many, missing, wrong, or two letters swapped (none for a
    word longer than a name can be)."""
    near = set()
    if len(word) > _LONGEST_NAME:
        return near
    for i in range(len(word) + 1):
        left, right = word[:i], word[i:]
        if right:
            near.add(left + right[1:])
            if len(right) > 1:
                near.add(left + right[1] + right[0] + right[2:])
        for c in alphabet:
            near.add(left + c + right)
            if right:
                near.add(left + c + right[1:])
    near.discard(word)
    return near


def close_options(name: str, typed: str) -> list[str]:
    """The options of `name` close to the mistyped `typed`, found by asking the parser about the names one edit
    away and the option names other passes print that look like it."""
    typed = typed.lower()
    near = {typed.replace("_", "-"), *_one_edit_away(typed, _OPTION_ALPHABET)}
    from workbench.common.suggest import close_matches
    near.update(close_matches(typed, (*_expansion_option_names(name), *_known_option_names()), n=8))
    return [o for o in sorted(near) if o and o[0].isalpha() and has_option(name, o)]


def options_of(name: str) -> list[str]:
    """The options of the pass or pipeline `name` as far as MLIR tells (completion of `pass NAME{`): the ones it
    prints, and the option names other passes print that it takes (a pipeline's are mostly its passes')."""
    if name in py_passes.OPTIONS:
        return list(py_passes.OPTIONS[name])
    if _anchor(name) is None:
        return []
    printed = pass_options(name) or []
    lexicon = dict.fromkeys((*_expansion_option_names(name), *_known_option_names()))
    probed = [o for o in lexicon if o not in printed and has_option(name, o)]
    return sorted({*printed, *probed})


def _unknown_option_hint(first: str, detail: str) -> str:
    """` (did you mean max-iterations?)` for MLIR's "no such option max-iteration" of the pass the detail names,
    or the pass's options when none is close."""
    m, added = _NO_SUCH_OPTION.search(first), _ADDING.search(detail) or _ADDING.search(first)
    if not m or not added:
        return ""
    name, typed = added.group(1), m.group(1)
    printed = pass_options(name)
    options = list(dict.fromkeys([*(printed or []), *close_options(name, typed)]))
    hint = did_you_mean(typed, options)
    if hint:
        return hint
    if printed is None:
        return ""
    if not printed:
        return f" ({name} has no options)"
    return f" ({name}'s options: {', '.join(sorted(printed))})"


#: MLIR's parser on a pass restricted to other ops than the pass manager's (`affine-loop-tile` on a module)
_RESTRICTED = re.compile(r"restricted to '([^']+)' on a PassManager intended to run on 'builtin\.module'")


def _top_level_passes(text: str) -> list[str]:
    """`a,func.func(b,c),d{x=1,y=2}` -> ['a', 'func.func(b,c)', 'd{x=1,y=2}']: split at the commas outside
    brackets and quotes."""
    from workbench.common.bracket_scan import unquoted

    out, start = [], 0
    for i, c, depth in unquoted(text):
        if c == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [p for p in out if p]


def implicitly_nested(pipeline: str) -> str:
    """A pipeline of mlir-opt pass flags (`-affine-loop-tile="tile-size=32" -cse`, read as
    `affine-loop-tile{tile-size=32},cse`) as mlir-opt runs it on a module: mlir-opt adds each flag's pass with
    implicit nesting, so a pass restricted to `func.func` runs on every function
    (`func.func(affine-loop-tile{tile-size=32}),cse`). Text that already names its anchor, and passes MLIR does
    not know (ours, typos: their step says so), are left as they are."""
    text = pipeline.strip()
    if text.startswith("builtin.module(") or _unbalanced_bracket(text):
        return text
    out = []
    for element in _top_level_passes(text):
        try:
            parse_pipeline(f"builtin.module({element})")
        except (ValueError, ir.MLIRError) as e:
            m = _RESTRICTED.search(str(e))
            if m:
                element = f"{m.group(1)}({element})"
        out.append(element)
    return ",".join(out)


def _python_pass_segments(pipeline: str) -> list[str]:
    """A top-level pipeline that names workbench passes among MLIR's (`canonicalize,lh-erase-transform-schedules,
    cse`) as the pipelines to run one after the other: each workbench pass alone, the MLIR passes between them
    together (`['canonicalize', 'lh-erase-transform-schedules', 'cse']`); [pipeline] when it names none."""
    text = pipeline.strip()
    if text.startswith("builtin.module(") and text.endswith(")") and not _unbalanced_bracket(text):
        text = text[len("builtin.module("):-1]
    if _unbalanced_bracket(text):
        return [pipeline]
    elements = _top_level_passes(text)
    if len(elements) < 2 or not any(py_passes.is_python_pass(e) for e in elements):
        return [pipeline]
    segments: list[list[str]] = []
    for element in elements:
        if py_passes.is_python_pass(element) or not segments or py_passes.is_python_pass(segments[-1][-1]):
            segments.append([element])
        else:
            segments[-1].append(element)
    return [",".join(seg) for seg in segments]


def _unbalanced_bracket(text: str) -> str:
    """Why the brackets of a pass pipeline text do not pair up ("" when they do): `(` of nesting, `{` of
    options, quotes in option values skipped."""
    pairs = {")": "(", "}": "{", "]": "["}
    stack: list[tuple[str, int]] = []
    quote = ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "({[":
            stack.append((c, i))
        elif c in pairs:
            if not stack:
                return f"unbalanced {c!r} at column {i + 1} of {text!r}"
            if stack[-1][0] != pairs[c]:
                return f"{c!r} at column {i + 1} closes {stack[-1][0]!r} at column {stack[-1][1] + 1} in {text!r}"
            stack.pop()
    if stack:
        c, i = stack[-1]
        return f"{c!r} at column {i + 1} is never closed in {text!r}"
    return ""


_UNKNOWN_OP = re.compile(r"custom op '([A-Za-z_]\w*)\.([\w.$]+)' is unknown")


#: ops MLIR renamed (or moved to another dialect) before 22: an older file's op, and the op MLIR 22 has for it
RENAMED_OPS = {
    "transform.structured.tile": "transform.structured.tile_using_for",
    "transform.structured.tile_to_scf_for": "transform.structured.tile_using_for",
    "transform.structured.tile_to_forall_op": "transform.structured.tile_using_forall",
    "transform.structured.masked_vectorize": "transform.structured.vectorize",
    "tensor.pack": "linalg.pack",
    "tensor.unpack": "linalg.unpack",
}


def _unknown_op_hint(first: str) -> str:
    """` (MLIR 22.1.8's vector dialect has no such op: ...)` where the parser did not know an op of a dialect it
    has: a file written for another MLIR version (upstream test files from a newer tree)."""
    m = _UNKNOWN_OP.search(first)
    if not m:
        return ""
    try:
        context = ir.Context.current
        context.get_dialect_descriptor(m.group(1))
    except Exception:   # no such dialect here, or no context: MLIR's own message says enough
        return ""
    from workbench.common.mlir_libs import mlir_version

    renamed = RENAMED_OPS.get(f"{m.group(1)}.{m.group(2)}")
    if renamed and context.is_registered_operation(renamed):
        # `transform.structured.tile` (an LLVM 17 file): the edit-distance search below finds nothing
        return (f" (did you mean {renamed}? MLIR {mlir_version()} has the op under that name, its syntax may differ "
                "too: a file written for an older MLIR version?)")
    # a typo (`transform.structured.vectorise`): the registered ops one edit away (MLIR cannot list a dialect's ops)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_."
    close = sorted(f"{m.group(1)}.{c}" for c in _one_edit_away(m.group(2), alphabet)
                   if c and context.is_registered_operation(f"{m.group(1)}.{c}"))
    if close:
        return f" (did you mean {', '.join(close[:3])}?)"
    return (f" (MLIR {mlir_version()}'s {m.group(1)} dialect has no such op: a file written for another MLIR "
            "version?)")


_UNKNOWN_DIALECT = re.compile(r"Dialect `([\w.]+)' not found for custom op '[\w.]+?\.([\w.$]+)'")
#: dialect names MLIR has had (`mlir-opt --show-dialects` of 22.1.8): the candidates of a did-you-mean for a
#: dialect the parser does not know; only those this MLIR loads are offered (MLIR cannot list its dialects)
DIALECT_NAMES = ("acc", "affine", "amdgpu", "amx", "arith", "arm_neon", "arm_sme", "arm_sve", "async",
                 "bufferization", "builtin", "cf", "complex", "dlti", "emitc", "func", "gpu", "index", "irdl",
                 "linalg", "llvm", "math", "memref", "ml_program", "mpi", "nvgpu", "nvvm", "omp", "pdl",
                 "pdl_interp", "ptr", "quant", "rocdl", "scf", "shape", "shard", "smt", "sparse_tensor", "spirv",
                 "tensor", "tosa", "transform", "ub", "vector", "wasmssa", "x86vector", "xegpu", "xevm")


def _unknown_dialect_hint(first: str) -> str:
    """` (did you mean x86vector.avx512.vp2intersect? ...)` where the parser knew no dialect of that name: a
    dialect this MLIR has under another name holds the op (upstream renamed x86vector to x86 after 22), or the
    name is a typo of one; else that this MLIR has no such dialect."""
    m = _UNKNOWN_DIALECT.search(first)
    if not m:
        return ""
    try:
        context = ir.Context.current
    except Exception:
        return ""
    name, rest = m.group(1), m.group(2)

    def loads(dialect: str) -> bool:
        try:
            context.get_dialect_descriptor(dialect)
            return True
        except Exception:
            return False

    from workbench.common.mlir_libs import mlir_version

    holders = [d for d in DIALECT_NAMES if d != name and loads(d) and context.is_registered_operation(f"{d}.{rest}")]
    inner = rest.split(".", 1)[0]
    if not holders and "." in rest and inner != name and loads(inner) and context.is_registered_operation(rest):
        # `x86.amx.tile_load`: upstream folded the amx dialect into x86 after 22 (as x86vector); MLIR 22's op is
        # `amx.tile_load`, which the search above (`x86vector.amx.tile_load`) missed: it offered `x86vector?`
        return (f" (did you mean {rest}? MLIR {mlir_version()} has it in its {inner} dialect: a file written for "
                "another MLIR version?)")
    typos = close_matches(name, holders)
    if typos:   # `aritt.addf`
        return f" (did you mean {typos[0]}.{rest}?)"
    if holders:   # `x86.avx.rsqrt`: the dialect was renamed
        return (f" (did you mean {holders[0]}.{rest}? MLIR {mlir_version()} has it in its {holders[0]} dialect: "
                "a file written for another MLIR version?)")
    close = did_you_mean(name, [d for d in DIALECT_NAMES if loads(d)])
    return close or (f" (MLIR {mlir_version()} has no {name} dialect: a file written for another MLIR version? "
                     "`load --allow-unregistered FILE` takes ops of dialects MLIR does not know)")


def _non_ascii_hint(text: str) -> str:
    """` (a non-ASCII character 'ѕ' (U+0455 CYRILLIC SMALL LETTER DZE) at column 2)` for a pipeline that did not
    parse: a look-alike letter or an invisible one (a zero-width space pasted with the text) in a pass name reads
    as the name it imitates in the message ('cѕe' does not refer to a registered pass; did you mean cse?)."""
    import unicodedata

    at = next(((i, c) for i, c in enumerate(text) if not c.isascii()), None)
    if at is None:
        return ""
    i, c = at
    return f" (a non-ASCII character {c!r} (U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}) at column {i + 1})"


#: ops whose custom syntax or verifier changed between recent MLIR releases: a file written for another version
#: fails to parse or verify at one of them (upstream test files from a newer tree, scripts from an older one).
#: An error at such an op while a file is read gets the same "another MLIR version?" hint as an unknown op.
CHANGED_OPS = {
    "transform.structured.tile_using_for": "tile sizes follow `tile_sizes` since LLVM 19, `%op [8, 16]` before",
    "transform.structured.tile_using_forall": "`num_threads` / `tile_sizes` operands, was tile_to_forall_op",
    "transform.structured.vectorize": "`vector_sizes`, was masked_vectorize",
    "transform.structured.pad": "`nofold_flags` was `pack_paddings`, `copy_back_op`, `pad_to_multiple_of`",
    "transform.structured.fuse": "`tile_sizes` / `interchange` operands, attributes before",
    "transform.structured.fuse_into_containing_op": "two results, the fused op and the new containing op",
    "transform.structured.tile_reduction_using_for": "results and the `by tile_sizes` syntax",
    "transform.structured.tile_reduction_using_forall": "results and the `by num_threads` syntax",
    "transform.structured.split_reduction": "attributes",
    "transform.structured.multitile_sizes": "result types",
    "transform.structured.pack": "`packed_sizes`",
    "transform.structured.pack_greedily": "`matmul_packed_sizes`",
    "transform.structured.lower_pack": "linalg.pack, was tensor.pack",
    "transform.structured.lower_unpack": "linalg.unpack, was tensor.unpack",
    "transform.structured.promote": "attributes",
    "transform.bufferization.one_shot_bufferize": "its attribute names",
    "transform.foreach": "several operands and a yield since LLVM 19",
    "transform.sequence": "`failures(...)`, replaced by transform.named_sequence",
    "memref.subview": "which result layouts a rank-reducing subview may have, `strided<[1]>` without `offset: ?`",
    "memref.expand_shape": "`output_shape` since LLVM 19",
    "tensor.expand_shape": "`output_shape` since LLVM 19",
    "vector.transfer_read": "`in_bounds` required, padding optional",
    "vector.transfer_write": "`in_bounds` required",
    "vector.extract": "dynamic positions and `from` type syntax",
    "vector.insert": "dynamic positions syntax",
    "vector.contract": "attributes",
    "bufferization.to_tensor": "`restrict writable` and its type syntax",
    "linalg.matmul": "`indexing_maps`, `cast`",
    "linalg.batch_matmul": "`indexing_maps`",
    "scf.forall": "`shared_outs` and mapping",
    "llvm.call": "callee type and attribute syntax",
    "llvm.func": "attribute syntax",
}
_CUSTOM_OP = re.compile(r"custom op '([\w.$]+)'")
_VERIFIED_OP = re.compile(r"^(?:\S+:\d+:\d+: )?'([\w.$]+)' op ")
_CURRENT_OP = re.compile(r"see current operation: (?:[^=\n]*= )?\"([\w.$]+)\"")


def _failing_op(first: str, detail: str) -> str:
    """The op an MLIR error is about: `custom op 'X'` (a parse error), `'X' op ...` (a verifier error), or the
    verifier's `see current operation: ... "X"(...)` note; '' when none is named."""
    for pattern, text in ((_CUSTOM_OP, first), (_VERIFIED_OP, first), (_CURRENT_OP, detail)):
        m = pattern.search(text)
        if m:
            return m.group(1)
    return ""


def _changed_op_hint(first: str, detail: str) -> str:
    """` (transform.structured.tile_using_for changed between MLIR versions: ...)` for an error, while a file is
    read, at an op of CHANGED_OPS: its text may be another version's syntax (`tile_using_for %op [8, [16], 1]`,
    before `tile_sizes`) or hold what another version's verifier accepts (a rank-reducing subview's layout)."""
    op = _failing_op(first, detail)
    if op not in CHANGED_OPS:
        return ""
    from workbench.common.mlir_libs import mlir_version

    return (f" ({op} changed between MLIR versions: {CHANGED_OPS[op]}; this is MLIR {mlir_version()}, a file "
            "written for another MLIR version?)")


def _split_mlir_error(exc: BaseException, label: str, reading: bool = False) -> tuple[str, str]:
    """One-line message + detail from an MLIR exception, naming `label` for '-' locations. `reading`: the error
    came while a file was parsed and verified (not from a step), where another MLIR version's text is likely."""
    first, detail = _split_mlir_error_lines(exc, label)
    hint = _unknown_op_hint(first) or _unknown_dialect_hint(first) or (_changed_op_hint(first, detail)
                                                                       if reading else "")
    return (first.rstrip() + hint if hint else first), detail


def _split_mlir_error_lines(exc: BaseException, label: str) -> tuple[str, str]:
    text = str(exc).replace('"-":', f"{label}:").replace("loc(\"-\":", f"loc({label}:")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    diags = getattr(exc, "error_diagnostics", None)
    if diags:
        d = diags[0]
        loc = _format_location(str(d.location), label)
        first = f"{loc}: {d.message}" if loc else d.message
        return first.splitlines()[0], "\n".join(lines)
    # ValueError from the interpreter: "Failed to apply ...\nDiagnostic message at loc(...): msg"
    for ln in lines:
        if "Diagnostic message at" in ln or ": error:" in ln:
            first = ln.replace("Diagnostic message at ", "").strip()
            m = re.match(r"^(loc\(.*?\)): (.*)$", first)
            if m:  # loc("f.mlir":3:5): msg -> f.mlir:3:5: msg
                loc = _format_location(m.group(1), label)
                # the bindings glue the diagnostic's notes on without a separator ("failed to coalesceat
                # loc(...): failed to coalesce"): the message ends where they start
                message = re.split(r"(?<=\S)at loc\(", m.group(2), maxsplit=1)[0]
                first = f"{loc}: {message}" if loc else message
            return first, "\n".join(lines)
    return (lines[0] if lines else type(exc).__name__), "\n".join(lines)


def _raised(what: str, e: BaseException) -> str:
    """`WHAT raised ValueError: bad n` (its first line), or `WHAT called sys.exit(3)`."""
    if isinstance(e, SystemExit):
        return f"{what} called sys.exit({e.code!r})"
    return f"{what} raised {type(e).__name__}: {e}".splitlines()[0]


#: how much of what a schedule generator prints comes back with the step (its end)
GENERATOR_OUTPUT_MAX = 4000


def _printed_by(name: str, text: str) -> str:
    """`NAME printed:` and the text (its last GENERATOR_OUTPUT_MAX characters), or '' when it printed nothing."""
    if not text:
        return ""
    cut = text[-GENERATOR_OUTPUT_MAX:]
    return f"{name} printed{' (the end of it)' if len(cut) < len(text) else ''}:\n{cut.rstrip()}\n"


#: the schedule library shipped with the workbench (`pipelines/` beside the package in a checkout, inside it in
#: a wheel): a ValueError raised there is a generator refusing its parameters, said in full by its message
_LIBRARY_DIRS = tuple(str(p / "pipelines") + os.sep for p in (Path(__file__).resolve().parents[2],
                                                                Path(__file__).resolve().parents[1]))


def _generator_traceback(e: BaseException) -> str:
    """The traceback of an exception from a schedule file, from the file's own frames on (not the worker's);
    none for a ValueError raised by the shipped library (`block_m must be a positive int, got -1` from a
    saved session's or a `params` edit's value: the one line says it, a traceback through the library's
    helpers added ten lines of noise)."""
    tb = e.__traceback__
    if isinstance(e, ValueError) and tb is not None:
        last = traceback.extract_tb(tb)[-1].filename
        if os.path.realpath(last).startswith(_LIBRARY_DIRS):
            return ""
    return "".join(traceback.format_exception(type(e), e, tb.tb_next if tb is not None and tb.tb_next else tb))


def _not_utf8(text: str) -> tuple[int, str] | None:
    """(position, character) of the first character UTF-8 cannot encode (a lone surrogate), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start, text[e.start]
    return None


#: a name location around a file location, as `tag-ops` leaves on a payload op (`"generic_0"("f.mlir":3:5)`)
_NAMED_FILE_LOCATION = re.compile(r'"[^"()]*"\(("[^"]*":\d+:\d+)\)')


def _format_location(loc: str, label: str) -> str:
    # loc("file.mlir":3:5) -> file.mlir:3:5 (also under the name tag-ops gives a payload op)
    s = _NAMED_FILE_LOCATION.sub(r"\1", loc)
    if s.startswith("loc(") and s.endswith(")"):
        s = s[4:-1]
    s = s.replace('"-"', label).replace('"', "")
    return "" if s == "unknown" else s


class MissingIR(Exception):
    """A request named a module this worker does not hold and did not send its content."""


class CompileWorker:
    #: requests that name a module (see the module docstring)
    IR_REQUESTS = frozenset({"apply", "prepare_run", "print", "inspect"})

    def __init__(self) -> None:
        self.ctx = new_context()
        self.ctx.allow_unregistered_dialects = False
        self.cache: "OrderedDict[str, ir.Module]" = OrderedDict()
        self._payload_keys: list[str] = []     # the last PINNED_PAYLOADS parsed, never evicted
        self.generators: dict[tuple[str, float], object] = {}
        self._input_sha = ""
        self._aliases: dict[str, str] = {}  # temp file of a generated schedule -> its label
        self._script_text: tuple[str | None, str] = (None, "")   # the last transform script parsed: (label, text)
        # the file a module parsed from text stands for (a `--chunk K` of it): its locations are "-":LINE:COL
        # with the file's own line numbers, and so are those of every module derived from it (same context)
        self._text_sources: "weakref.WeakKeyDictionary[ir.Context, str]" = weakref.WeakKeyDictionary()
        self._worker_id = f"{os.getpid()}-{os.urandom(4).hex()}"   # keys of lazy results: unique per worker
        self._lazy_results = 0
        self.blob_sender = BlobSender()      # the blobs the front end holds (see "compact_ir")
        #: the weights' part of printed modules, kept (workbench/worker/resource_print.py)
        self.sections = resource_print.SectionCache()
        self._compact_ir = False             # this request's "compact_ir"
        self._generator_output: list[str] = []   # what the schedule generators of this request printed
        #: the contexts whose lazy results' bytecode went over BYTECODE_BACKUP_MAX (see `_backup`)
        self._large_bytecode: "weakref.WeakKeyDictionary[ir.Context, bool]" = weakref.WeakKeyDictionary()
        self.bytecode_writes = 0              # bytecode written for backups (tests count them)

    # -- module cache --------------------------------------------------------
    def _remember(self, sha: str, module: ir.Module) -> None:
        self.cache[sha] = module
        self.cache.move_to_end(sha)
        while len(self.cache) > CACHE_SIZE + len(self._payload_keys):
            oldest = next(key for key in self.cache if key not in self._payload_keys)
            del self.cache[oldest]

    def _pin_payload(self, key: str) -> None:
        if key in self._payload_keys:
            self._payload_keys.remove(key)
        self._payload_keys.append(key)
        del self._payload_keys[:-PINNED_PAYLOADS]

    def _module_for(self, req: dict, label: str) -> ir.Module:
        """The module a request names (see the module docstring: "key", "text", "bytecode"), parsed in
        the current context when we do not hold it (a fresh one: see `_context_for`), and kept."""
        text, bytecode = req.get("text"), req.get("bytecode")
        key = self._key(req)
        mod = self.cache.get(key) if key else None
        if mod is not None:
            self.cache.move_to_end(key)
            return mod
        if text is None and bytecode is None:
            raise MissingIR(key)
        try:
            mod = ir.Module.parse(bytecode if bytecode is not None else text)
        except ir.MLIRError as e:
            raise StageError(*_split_mlir_error(e, label))
        self._remember(key, mod)
        return mod

    # -- requests --------------------------------------------------------------
    def _context_for(self, req: dict) -> ir.Context:
        """The context a request works in: the one of the module it names when we hold it, a fresh one
        for a module we parse (a payload, IR sent again). One context per parsed module, because a
        context keeps every `dense_resource` blob it ever parsed: a second parse of the same text into
        it would rename the blobs (`w` -> `w_1`), and the module would print as other text."""
        op = req.get("op")
        if op == "parse":
            return new_context()
        if op in self.IR_REQUESTS:
            key = self._key(req)
            held = self.cache.get(key) if key else None
            if held is not None:
                return held.context
            if req.get("text") is not None or req.get("bytecode") is not None:
                return new_context()
        return self.ctx

    @staticmethod
    def _key(req: dict) -> str | None:
        text = req.get("text")
        return req.get("key") or req.get("sha") or (sha256(text) if text is not None else None)

    def handle(self, req: dict) -> dict:
        op = req.get("op")
        ctx = self._context_for(req)
        self._compact_ir = bool(req.get("compact_ir"))
        # a session option (`load --allow-unregistered`): ops of dialects MLIR does not know parse as
        # generic ops (upstream's test-dialect payloads); sent with every request of that session
        ctx.allow_unregistered_dialects = bool(req.get("allow_unregistered"))
        with ctx, ir.Location.unknown():
            try:
                if op == "ping":
                    return {"ok": True, "pid": os.getpid()}
                if op == "parse":
                    return self.parse(req)
                if op == "apply":
                    return self.apply(req)
                if op == "prepare_run":
                    return self.prepare_run(req)
                if op == "knobs":
                    return self.knobs(req)
                if op == "nest_pipeline":
                    return {"ok": True, "pipeline": implicitly_nested(req["pipeline"])}
                if op == "pass_options":
                    return {"ok": True, "options": options_of(str(req["pass"]))}
                if op == "print":
                    return self._printed(self._module_for(req, req.get("label", "<ir>")))
                if op == "inspect":
                    mod = self._module_for(req, req.get("label", "<ir>"))
                    return {"ok": True, "info": payload_inspect.inspect_module(
                        mod, loops=req.get("loops", True), only=req.get("only"))}
                return {"ok": False, "error": f"unknown worker request {op!r}"}
            except MissingIR as e:
                return {"ok": False, "missing": e.args[0], "error": "the compile worker does not hold this IR"}
            except StageError as e:
                return {"ok": False, "error": str(e), "diagnostics": e.diagnostics}
            except Exception as e:  # a bug or an unexpected binding error: report, stay alive
                return {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0],
                        "diagnostics": traceback.format_exc()}

    def parse(self, req: dict) -> dict:
        filename = req.get("filename")
        label = filename or "<input>"
        try:
            if filename and req.get("text") is None:
                mod = ir.Module.parseFile(filename)
            else:
                mod = ir.Module.parse(req["text"])
        except ir.MLIRError as e:
            msg, detail = _split_mlir_error(e, label, reading=True)
            return {"ok": False, "error": msg, "diagnostics": detail}
        try:
            mod.operation.verify()
        except ir.MLIRError as e:
            msg, detail = _split_mlir_error(e, label)
            return {"ok": False, "error": msg, "diagnostics": detail}
        if filename and req.get("text") is not None:
            self._text_sources[mod.context] = filename
        answer = self._printed(mod)
        self._pin_payload(answer["sha"])
        return answer

    def _location_label(self, module: ir.Module, label: str) -> str:
        """What a "-" location of `module` names: the file it was parsed from (a chunk), else `label`."""
        return self._text_sources.get(module.context, label)

    def _printed(self, module: ir.Module) -> dict:
        """The answer carrying a module's text and sha256; the module stays cached under that sha256."""
        printed = self.sections.print(module)
        self._remember(printed.sha, module)
        return {"ok": True, **self._printed_fields(printed), "sha": printed.sha}

    def _printed_fields(self, printed: resource_print.PrintedModule) -> dict:
        """A printed module as the answer carries it: whole, or compact (see "compact_ir"); a compact one
        is split from its parts (the weights' section, kept, is split once)."""
        if not self._compact_ir:
            return {"ir": printed.text()}
        parts, new_blobs = printed.compact(self.blob_sender)
        return {"ir_parts": parts, "ir_blobs": new_blobs}

    def _backup(self, key: str, module: ir.Module) -> dict:
        """What the session keeps of a lazy result: its bytecode (its text when bytecode cannot be written).
        Where an earlier result in the same context had bytecode over BYTECODE_BACKUP_MAX (a model's weights,
        which the steps leave alone), the text at once: its bytecode, the weights copied whole (GPT-2 small:
        500 MB), would be written only to be dropped, each step."""
        with module.context, ir.Location.unknown():
            if not (self._compact_ir and module.context in self._large_bytecode):
                bytecode = _bytecode(module)
                self.bytecode_writes += 1
                if bytecode is not None and (len(bytecode) <= BYTECODE_BACKUP_MAX or not self._compact_ir):
                    return {"ok": True, "key": key, "bytecode": bytecode}
                if bytecode is not None:
                    self._large_bytecode[module.context] = True
            printed = self.sections.print(module)
            return {"ok": True, "key": key, **self._printed_fields(printed), "sha": printed.sha}

    def apply(self, req: dict) -> dict:
        self._generator_output = []
        answer = self._apply(req)
        printed = "".join(self._generator_output)
        if printed and answer.get("ok"):
            answer["printed"] = printed
        return answer

    def _apply(self, req: dict) -> dict:
        label = req.get("label", "<step input>")
        src = self._module_for(req, label)
        label = self._location_label(src, label)
        # the input's text sha256 (a hand edit checks it): sent when the session knows it
        self._input_sha = req.get("input_sha") or req.get("sha") or (sha256(req["text"]) if req.get("text") else "")
        work = _clone_module(src)
        stage_seconds = []
        t_all = time.perf_counter()
        for i, stage in enumerate(req["stages"]):
            t0 = time.perf_counter()
            try:
                work = self._apply_verified(work, stage, label)
            except StageError as e:
                return {"ok": False, "error": str(e), "diagnostics": e.diagnostics, "stage_index": i}
            except ir.MLIRError as e:
                msg, detail = _split_mlir_error(e, label)
                return {"ok": False, "error": f"verifier failed after the step: {msg}",
                        "diagnostics": detail, "stage_index": i}
            stage_seconds.append(time.perf_counter() - t0)
        if req.get("lazy"):
            self._lazy_results += 1
            key = f"ir-{self._worker_id}-{self._lazy_results}"
            self._remember(key, work)
            return {"ok": True, "key": key, "seconds": time.perf_counter() - t_all, "stage_seconds": stage_seconds,
                    FOLLOW_UP: lambda: self._backup(key, work)}
        return {**self._printed(work), "seconds": time.perf_counter() - t_all, "stage_seconds": stage_seconds}

    def prepare_run(self, req: dict) -> dict:
        """Wrapper (if missing) + lowering (if not lowered yet) -> LLVM-dialect text and wrapper metadata."""
        label = req.get("label", "<current IR>")
        src = self._module_for(req, label)
        label = self._location_label(src, label)
        work = _clone_module(src)
        # stages a target needs before the wrapper goes in (e.g. mpi: strip sharding for the reference)
        for stage in req.get("prelude") or []:
            try:
                work = self._apply_verified(work, stage, label)
            except StageError as e:
                return {"ok": False, "error": str(e), "diagnostics": e.diagnostics}
        inserted = False
        if req.get("wrapper") == "optional" and bench_wrapper.is_lowered(work) \
                and bench_wrapper.find_wrapper(work) is None:   # (asm of a module lowered by hand)
            return {"ok": True, "llvm": _print(work), "bench": None, "inserted_wrapper": False, "was_lowered": True}
        if not bench_wrapper.defined_functions(work):
            return {"ok": False, "error": "the module defines no function to run (an empty payload?)"}
        if bench_wrapper.find_wrapper(work) is None:
            fully_lowered = bench_wrapper.is_lowered(work)
            if fully_lowered or bench_wrapper.only_lowered_programs(work):
                # a program lowered by hand (`run-line`: an upstream test's own mlir-opt passes) runs as it is;
                # one lowered in part (arith / cf left by an older RUN line) goes through the target's lowering
                try:
                    bench_wrapper.insert_lowered_program_wrapper(work, req.get("bench_params") or {})
                    if fully_lowered:
                        passmanager.PassManager.parse(bench_wrapper.LOWERED_WRAPPER_PIPELINE).run(work.operation)
                except (bench_wrapper.BenchError, ir.MLIRError) as e:
                    return {"ok": False, "error": "the module is already in the LLVM dialect and has no benchmark "
                                                  f"wrapper ({str(e).splitlines()[0]}): apply a `bench` step "
                                                  "before the lowering steps"}
            else:
                try:
                    bench_wrapper.insert_wrapper(work, req.get("bench_params") or {})
                except bench_wrapper.BenchError as e:
                    return {"ok": False, "error": f"bench: {e}"}
            inserted = True
        meta = bench_wrapper.wrapper_metadata(work)
        if meta is None:
            return {"ok": False, "error": "the benchmark wrapper was lowered past recognition: apply `bench` "
                                          "before the final lowering, or let `run` insert it"}
        where = ARTIFACT_PREPARERS.get(req.get("artifact") or "llvm")
        if where is not None:
            preparer = getattr(importlib.import_module(where[0]), where[1])  # a target whose run artifact is not an LLVM-dialect module
            return preparer(work, lambda: self._lower_for_run(work, req.get("lowering") or [], label), meta, inserted)
        lowered = bench_wrapper.is_lowered(work)
        if not lowered:
            failure = self._lower_for_run(work, req.get("lowering") or [], label)
            if failure is not None:
                return failure
            if not bench_wrapper.is_lowered(work):
                left = sorted(bench_wrapper.unlowered_ops(work))[:8]
                first = bench_wrapper.first_unlowered_op(work)   # where the first of them came from, when known
                where = _format_location(str(first.location), self._location_label(work, label)) if first else ""
                arm = sorted({op.split(".")[0] for op in left if op.startswith(("arm_sve.", "arm_neon.", "arm_sme."))})
                return {"ok": False, "error": "after lowering, ops remain outside the LLVM dialect: "
                                              + ", ".join(left) + (f" (the first at {where})" if where else "")
                                              + (f"; {', '.join(arm)} ops are AArch64 intrinsics, which this host does "
                                                 "not run (upstream runs such a test on AArch64 or under an emulator: "
                                                 "its `%mcr_aarch64_cmd ... --march=aarch64`)" if arm else "")}
        return {"ok": True, **_lowered_module(work, req.get("lowered_bytecode", False)), "bench": meta,
                "inserted_wrapper": inserted, "was_lowered": lowered}

    def _lower_for_run(self, work: ir.Module, stages: list[dict], label: str) -> dict | None:
        """Apply a run lowering in place; None on success, else the failure answer."""
        for stage in stages:
            try:
                if self._apply_verified(work, stage, label) is not work:
                    return {"ok": False, "error": f"lowering failed: a {stage['kind']} stage cannot be part of a run lowering"}
            except StageError as e:
                return {"ok": False, "error": f"lowering failed: {e}", "diagnostics": e.diagnostics}
            except ir.MLIRError as e:
                msg, detail = _split_mlir_error(e, label)
                return {"ok": False, "error": f"lowering failed: {msg}", "diagnostics": detail}
        return None

    # -- stage kinds -------------------------------------------------------------
    def _apply_verified(self, module: ir.Module, stage: dict, label: str) -> ir.Module:
        """Apply one stage and make sure the result verifies (ir.MLIRError if not); the result is
        `module`, changed in place, or the module a stage put in its place (a hand edit)."""
        handler = self.STAGE_KINDS.get(stage["kind"])
        if handler is None:
            raise StageError(f"unknown stage kind {stage['kind']!r} (known: {', '.join(sorted(self.STAGE_KINDS))})")
        with module.context, ir.Location.unknown():   # a module replaced by an earlier stage has its own
            outcome = handler(self, module, stage, label)
            if isinstance(outcome, ir.Module):
                return outcome   # verified by the stage
            if outcome is not True:   # True: verified already (the pass manager verifies after every pass)
                module.operation.verify()
        return module

    def _stage_pass(self, module: ir.Module, stage: dict, label: str) -> bool:
        return self._run_passes(module, stage["pipeline"], label)

    def _stage_transform(self, module: ir.Module, stage: dict, label: str) -> None:
        sched = self._parse_schedule(stage["text"], stage.get("path") or "<transform>")
        if stage.get("knobs"):
            knobs.select(sched, stage["knobs"], stage.get("path") or "<transform>", StageError)
        self._run_transform(module, sched, stage.get("entry") or "__transform_main", label,
                            entry_given=(stage.get("entry") or "__transform_main") != "__transform_main")

    def _stage_schedule(self, module: ir.Module, stage: dict, label: str) -> None:
        sched = self._generate_schedule(module, stage)
        # (a fusion prints its ops into a remark it drops on success: not verifying the function first each
        # time; workbench/worker/print_flags.py)
        with print_flags.unverified_diagnostic_ops():
            self._run_transform(module, sched, stage.get("entry") or "__transform_main", label)

    def _stage_rewrite(self, module: ir.Module, stage: dict, label: str) -> None:
        try:
            rewrites.run(module, stage["name"], stage.get("params") or {})
        except rewrites.RewriteError as e:
            raise StageError(f"rewrite {stage['name']}: {e}")

    def _stage_strip_sharding(self, module: ir.Module, stage: dict, label: str) -> None:
        try:
            sharding.strip_sharding(module)
        except sharding.ShardingError as e:
            raise StageError(str(e))

    def _stage_bench(self, module: ir.Module, stage: dict, label: str) -> None:
        try:
            if bench_wrapper.only_lowered_programs(module):   # (lowered by a RUN line: the lowering takes the wrapper)
                bench_wrapper.insert_lowered_program_wrapper(module, stage.get("params") or {})
            else:
                bench_wrapper.insert_wrapper(module, stage.get("params") or {})
        except bench_wrapper.BenchError as e:
            raise StageError(f"bench: {e}")

    def knobs(self, req: dict) -> dict:
        """The transform.tune.knob ops of a transform module: name, options, selected."""
        sched = self._parse_schedule(req["text"], req.get("path") or "<transform>")
        return {"ok": True, "knobs": knobs.read(sched)}

    def _replace_module(self, module: ir.Module, stage: dict, label: str) -> ir.Module:
        """A hand edit: only valid on the IR it was made on (same sha256); the edited text, parsed in a
        context of its own (so that its `dense_resource` names stay its own), takes the module's place."""
        base = stage.get("base_sha256") or ""
        if base and self._input_sha and not self._input_sha.startswith(base):
            raise StageError(f"the hand edit {os.path.basename(stage['path'])} was made on different IR "
                             f"(sha256 {base[:12]}..., this input is {self._input_sha[:12]}...): redo the edit")
        own = new_context()
        own.allow_unregistered_dialects = module.context.allow_unregistered_dialects
        with own, ir.Location.unknown():
            try:
                edited = ir.Module.parse(stage["text"])
                edited.operation.verify()
            except ir.MLIRError as e:
                raise StageError(*_split_mlir_error(e, stage["path"], reading=True))
        return edited

    def _run_passes(self, module: ir.Module, pipeline: str, label: str) -> bool:
        segments = _python_pass_segments(pipeline)
        if len(segments) > 1:   # `canonicalize,lh-erase-transform-schedules`: MLIR's parser knows only its own
            verified = True
            for segment in segments:
                verified = self._run_passes(module, segment, label) and verified
            return verified
        try:
            python_pass = py_passes.lookup(pipeline)
        except py_passes.PyPassError as e:
            raise StageError(str(e))
        if python_pass is not None:
            try:
                python_pass(module)
            except py_passes.PyPassError as e:   # the pass refused its input or options: one line says why
                raise StageError(f"{pipeline.strip()}: {e}".splitlines()[0])
            except ir.MLIRError as e:            # an upstream pipeline it runs failed: MLIR's own diagnostic
                msg, detail = _split_mlir_error(e, label)
                raise StageError(f"{pipeline.strip()}: {msg}", detail)
            except Exception as e:
                if "Diagnostic message at" in str(e):   # the transform interpreter's ValueError: its located diagnostic
                    msg, detail = _split_mlir_error(e, label)
                    raise StageError(f"{pipeline.strip()}: {msg}", detail)
                raise StageError(f"{pipeline.strip()}: {e}".splitlines()[0], traceback.format_exc())
            return False
        text = pipeline.strip()
        control = next(((i, c) for i, c in enumerate(text) if (c < " " and c != "\t") or c == "\x7f"), None)
        if control:   # MLIR's parser reads a C string: a NUL ended the text, and the message with it
            raise StageError(f"bad pass pipeline: a control character {control[1]!r} at column {control[0] + 1} "
                             f"of {text!r}")
        unbalanced = _unbalanced_bracket(text)
        if unbalanced:   # MLIR's parser said "expected pass pipeline to be wrapped with the anchor operation type"
            raise StageError(f"bad pass pipeline: {unbalanced}")
        if not text.startswith("builtin.module("):
            text = f"builtin.module({text})"
        try:
            pm = parse_pipeline(text)
        except (ValueError, ir.MLIRError) as e:
            msg = str(e).strip().splitlines()
            detail = "\n".join(line for line in msg[1:] if line.strip() not in ("", "^"))   # not the caret
            first = _unknown_pass_hint(msg[0]) if msg else str(e)
            first += _unknown_option_hint(first, detail) + _non_ascii_hint(pipeline.strip())
            nested = implicitly_nested(pipeline) if _RESTRICTED.search(first) else ""
            if nested and nested != text:
                first += f" (as mlir-opt's pass flags nest it: `pass {nested}`)"
            raise StageError(f"bad pass pipeline: {first}", detail)
        written: list[str] = []
        try:
            # what a pass prints (print-op-stats, print-ir{label=...}, view-op-graph) comes back with the step, as
            # a generator's prints do (with its failure's detail when it fails): it went to the worker's own
            # output, which nobody reads
            with captured_output() as written:
                pm.run(module.operation)
        except ir.MLIRError as e:
            msg, detail = _split_mlir_error(e, label)
            if "could not find a nested named sequence" in msg:   # transform-interpreter on a payload without one
                msg += ("; the payload carries no transform script with that entry (`apply FILE.mlir` applies "
                        "one from a file, `pass lh-apply-payload-schedule` runs and erases the payload's own)")
                detail = ""    # MLIR's note prints the whole module
            elif "unable to schedule pass" in msg and "intended to run on 'builtin.module'" in msg:
                # a pass on an op interface (FunctionOpInterface: affine-loop-unroll), which mlir-opt's flags
                # do not nest either
                msg += " (a pass that runs on functions nests in them: `func.func(...)`, as upstream's RUN lines write it)"
            printed = _printed_by(f"pass {pipeline.strip()}", written[0] if written else "")
            raise StageError(f"pass pipeline failed: {msg}", printed + detail)
        self._generator_output.append(_printed_by(f"pass {pipeline.strip()}", written[0]))
        return True

    def _parse_schedule(self, text: str, path: str) -> ir.Module:
        """Parse a transform module so that its locations name `path` (not "-", which is the
        step input): from the file itself when it holds `text`, else from a short-lived temp
        file whose directory is stripped from messages (see `_clean`)."""
        self._script_text = (path, text)   # the comment at a failing line (`_run_transform`)
        try:
            if os.path.isfile(path) and _read(path) == text:
                return ir.Module.parseFile(path)
            fd, tmp = tempfile.mkstemp(prefix="lh-", suffix="-" + os.path.basename(path).replace(os.sep, "_"))
            self._aliases[tmp] = path
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(text)
                return ir.Module.parseFile(tmp)
            finally:
                os.unlink(tmp)
        except ir.MLIRError as e:
            msg, detail = _split_mlir_error(e, path, reading=True)
            raise StageError(self._clean(f"transform module does not parse: {msg}"), self._clean(detail))

    def _clean(self, text: str) -> str:
        for tmp, label in self._aliases.items():
            text = text.replace(tmp, label)
        return text

    def _run_transform(self, module: ir.Module, sched: ir.Module, entry: str, label: str,
                       entry_given: bool = True) -> None:
        seq = _find_named_sequence(sched, entry)
        # an older upstream file's script: top-level `transform.sequence` ops, no named sequence (LLVM <= 17's
        # -test-transform-dialect-interpreter ran them in order, as `lh-apply-payload-schedule` does)
        legacy = payload_schedules.legacy_sequences(sched) if seq is None and not entry_given else []
        if seq is None and not legacy:
            # where transform-interpreter looks: the top level and nested `transform.with_named_sequence`
            # modules (an upstream test file's script next to its payload functions)
            names = payload_schedules.named_sequences(sched)
            if names or payload_schedules.legacy_sequences(sched):
                have = ", ".join("@" + n for n in names) or "only top-level `transform.sequence` ops"
                raise StageError(f"transform module has no named sequence @{entry} (has: {have})")
            raise StageError(f"transform module holds no transform script (no `transform.named_sequence "
                             f"@{entry}`, no `transform.sequence`): a payload? (`load` opens one)")
        written: list[str] = []
        try:
            with captured_output() as written:   # transform.print writes to llvm::outs(): shown with the step
                for sequence in legacy or [seq]:
                    interpreter.apply_named_sequence(module.operation, sequence, sched.operation)
        except (ValueError, ir.MLIRError) as e:
            msg, detail = _split_mlir_error(e, label)
            msg = self._clean(msg)
            printed = _printed_by(f"transform {self._script_text[0]}", self._clean(written[0] if written else ""))
            raise StageError(f"transform failed: {msg}{self._script_comment(msg)}",
                             printed + self._clean(detail))
        self._generator_output.append(_printed_by(f"transform {self._script_text[0]}", self._clean(written[0])))

    def _script_comment(self, msg: str) -> str:
        """` (the script says there: op generic_54 must exist ...)`: the comment line(s) right above the line of
        the script that a transform failure names (`generic.py[gen=tile_vectorize]:76:5: expected parameter to be
        equal to 1, got 0` is a generated check whose comment says what it checks); "" where there is none."""
        path, text = self._script_text
        m = re.match(r"(.+?):(\d+):\d+: ", msg)
        if not m or m.group(1) != path:
            return ""
        lines, number = text.splitlines(), int(m.group(2))
        said = []
        while 2 <= number <= len(lines) + 1 and lines[number - 2].lstrip().startswith("//"):
            said.insert(0, lines[number - 2].lstrip()[2:].strip())
            number -= 1
        said = " ".join(s for s in said if s)
        return f" (the script says there: {said[:300]})" if said else ""

    def _generate_schedule(self, module: ir.Module, stage: dict) -> ir.Module:
        path, gen = stage["path"], stage["gen"]
        fn = self._load_generator(path, gen)
        kwargs = dict(stage.get("params") or {})
        if stage.get("wants_payload"):
            kwargs["payload"] = payload_inspect.inspect_module(module)
        name = f"schedule generator {os.path.basename(path)}:{gen}"
        printed = io.StringIO()   # what it prints (its reasoning, a debug print): shown with the step, not lost
        try:
            with contextlib.redirect_stdout(printed):
                out = fn(**kwargs)
        except (Exception, SystemExit) as e:   # sys.exit() in a generator ended the compile worker
            raise StageError(_raised(name, e), _printed_by(name, printed.getvalue()) + _generator_traceback(e))
        finally:
            self._generator_output.append(_printed_by(name, printed.getvalue()))
        if isinstance(out, str):
            bad = _not_utf8(out)
            if bad is not None:
                raise StageError(f"{name} returned text that is not UTF-8 (a lone surrogate {bad[1]!r} at "
                                 f"character {bad[0]})")
            return self._parse_schedule(out, f"{os.path.basename(path)}[gen={gen}]")
        if isinstance(out, ir.Module):
            return out
        if hasattr(out, "operation") and out.operation.name == "builtin.module":
            return ir.Module.parse(str(out.operation))
        raise StageError(f"schedule generator {gen} returned {type(out).__name__}; "
                         "expected MLIR text or an ir.Module")

    def _load_generator(self, path: str, gen: str):
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            raise StageError(f"schedule file not found: {path}")
        key = (path, mtime)
        mod = self.generators.get(key)
        if mod is None:
            spec = importlib.util.spec_from_file_location(
                f"lh_schedule_{abs(hash(key))}", path)
            mod = importlib.util.module_from_spec(spec)
            sys.path.insert(0, os.path.dirname(path))
            try:
                spec.loader.exec_module(mod)
            except (Exception, SystemExit) as e:
                raise StageError(_raised(f"cannot import schedule file {path}:", e).replace(": raised ", " ", 1),
                                 _generator_traceback(e))
            finally:
                sys.path.pop(0)
            self.generators[key] = mod
        declared = getattr(mod, "GENERATORS", None)
        if not isinstance(declared, (list, tuple, set, frozenset)) or gen not in declared:
            raise StageError(f"{os.path.basename(path)}: {gen!r} is not a declared generator (GENERATORS)")
        fn = getattr(mod, gen, None)
        if not callable(fn):
            raise StageError(f"{path} has no generator function {gen!r}")
        return fn


#: stage kind (what the session's step kinds send) -> how the worker applies it
CompileWorker.STAGE_KINDS = {
    "pass": CompileWorker._stage_pass,
    "transform": CompileWorker._stage_transform,
    "schedule": CompileWorker._stage_schedule,
    "rewrite": CompileWorker._stage_rewrite,
    "replace": CompileWorker._replace_module,
    "strip_sharding": CompileWorker._stage_strip_sharding,
    "bench": CompileWorker._stage_bench,
}


def _print(module) -> str:
    """The module's text, byte-identical to str(); the caller has just verified it, so the
    printer's own verification is skipped, and bytes avoid a UTF-8 round trip (~30% faster)."""
    return module.operation.get_asm(binary=True, assume_verified=True).decode()


def _lowered_module(module, bytecode: bool) -> dict:
    """{"llvm": text} of a lowered module; with `bytecode`, {"llvm": its text without the resource blobs
    (the ops' lines are the same: the blobs come last), "llvm_bytecode": the whole module as bytecode}."""
    data = _bytecode(module) if bytecode else None
    if data is None:
        return {"llvm": _print(module)}
    text = module.operation.get_asm(binary=True, assume_verified=True, large_resource_limit=0).decode()
    return {"llvm": text, "llvm_bytecode": data}


def _bytecode(module) -> bytes | None:
    """The module as MLIR bytecode (a few ms where printing takes tens), None if it cannot be written.
    Parsing it back prints the same text as the module."""
    buffer = io.BytesIO()
    try:
        module.operation.write_bytecode(buffer)
    except Exception:
        return None
    return buffer.getvalue()


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _clone_module(module) -> ir.Module:
    """A deep copy of a module (steps never touch the cached input).

    Built as a fresh `ir.Module` holding clones of the top-level ops: a detached clone of the
    module op itself is emptied by the transform interpreter (seen with MLIR 22.1.8).
    """
    fresh = ir.Module.create()
    attrs = module.operation.attributes
    for i in range(len(attrs)):
        named = attrs[i]
        fresh.operation.attributes[named.name] = named.attr
    for op in module.body.operations:
        fresh.body.append(op.clone())
    return fresh


def _sym_name(op) -> str:
    try:
        return ir.StringAttr(op.attributes["sym_name"]).value
    except Exception:
        return "?"


def _find_named_sequence(sched: ir.Module, name: str):
    found = []

    def visit(op):
        if op.name == "transform.named_sequence" and _sym_name(op) == name:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    sched.operation.walk(visit)
    return found[0] if found else None


def serve(fd: int) -> None:
    worker = CompileWorker()
    warmed = []

    def handle(req: dict) -> dict:
        try:
            return worker.handle(req)
        finally:
            if not warmed:   # after the first answer (the payload's parse): what later requests need
                warmed.append(True)
                import threading

                threading.Thread(target=payload_inspect.warm_up, daemon=True).start()

    serve_requests(fd, handle)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
