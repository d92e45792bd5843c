"""Files split into chunks by `// -----` lines, as `mlir-opt --split-input-file` reads them (upstream's
test files), and their `// RUN:` lines. Text only: no MLIR here, both sides may import it.

A chunk is loaded as the whole file's text with every line outside the chunk blanked, so that line
numbers in MLIR's messages are the file's own (`file.mlir:57:3`, as in an editor), not the chunk's.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from workbench.common.bracket_scan import unquoted

#: upstream's split marker (mlir/lib/Support/ToolUtilities.cpp): a line that starts with it
SPLIT_MARKER = "// -----"
_SYMBOL = re.compile(r"^\s*(?:func\.func|func|gpu\.func|llvm\.func)\s+(?:(?:private|public|nested)\s+)?@([\w$.-]+)",
                     re.M)


class ChunkError(ValueError):
    """A chunk that does not exist; the message is one line for the user."""


@dataclass(frozen=True)
class Chunk:
    index: int          # 1-based, as the user names it
    first_line: int     # 1-based, inclusive
    last_line: int      # inclusive
    symbols: tuple[str, ...]

    def describe(self) -> str:
        names = ", ".join("@" + s for s in self.symbols[:3]) + (", ..." if len(self.symbols) > 3 else "")
        return f"{self.index}: lines {self.first_line}-{self.last_line}" + (f" ({names})" if names else "")


def find_chunks(text: str) -> list[Chunk]:
    """The chunks of `text` (one chunk when there is no marker line)."""
    lines = text.splitlines()
    chunks: list[Chunk] = []
    start = 1
    for number, line in enumerate(lines + [SPLIT_MARKER], start=1):
        if line.startswith(SPLIT_MARKER):
            body = "\n".join(lines[start - 1: number - 1])
            chunks.append(Chunk(len(chunks) + 1, start, max(start, number - 1), tuple(_SYMBOL.findall(body))))
            start = number + 1
    return chunks


def chunk_text(text: str, index: int, label: str = "the file") -> str:
    """Chunk `index` (1-based) of `text`, every other line blanked (line numbers kept)."""
    chunks = find_chunks(text)
    if not 1 <= index <= len(chunks):
        listing = "; ".join(c.describe() for c in chunks)
        raise ChunkError(f"{label} has {len(chunks)} chunk{'s' if len(chunks) != 1 else ''} separated by "
                         f"`{SPLIT_MARKER}` lines, no chunk {index} ({listing})")
    chunk = chunks[index - 1]
    lines = text.splitlines()
    kept = [line if chunk.first_line <= n <= chunk.last_line else "" for n, line in enumerate(lines, start=1)]
    return "\n".join(kept) + "\n"


# -- RUN lines --------------------------------------------------------------------------------
#: mlir-opt options that are not passes: what they mean for the workbench (None: nothing to do)
_NOT_PASSES = {
    "split-input-file": None, "verify-diagnostics": None, "allow-unregistered-dialect": None,
    "mlir-print-local-scope": None, "mlir-print-debuginfo": None, "mlir-print-ir-after-all": None,
    "mlir-print-ir-before-all": None, "mlir-print-ir-after-failure": None, "mlir-disable-threading": None,
    "mlir-print-op-generic": None, "mlir-print-value-users": None, "mlir-elide-elementsattrs-if-larger": None,
    "mlir-elide-resource-strings-if-larger": None, "mlir-pretty-debuginfo": None, "mlir-timing": None,
    "debug-only": None, "debug": None, "o": None, "mlir-print-stacktrace-on-diagnostic": None,
    "verify-each": None, "emit-bytecode": None, "no-implicit-module": None, "dump-pass-pipeline": None,
    "mlir-print-assume-verified": None, "show-dialects": None, "verify-roundtrip": None,
}


SEGMENT_BREAK = "\0"
#: the partial bufferization passes MLIR removed (older RUN lines chain them: linalg-, tensor-, func-,
#: finalizing-bufferize): the first becomes one-shot bufferization of the whole module, the others nothing
PARTIAL_BUFFERIZATION_PASSES = frozenset({"linalg-bufferize", "arith-bufferize", "tensor-bufferize", "func-bufferize",
                                          "scf-bufferize", "finalizing-bufferize", "bufferization-bufferize",
                                          "vector-bufferize", "shape-bufferize"})
ONE_SHOT_BUFFERIZE = "one-shot-bufferize{bufferize-function-boundaries}"
#: passes of mlir-opt's test library (not in the MLIR wheels) and passes MLIR has removed that upstream RUN
#: lines use, and what the workbench runs for them ("": nothing)
TEST_PASS_EQUIVALENTS = {
    "convert-linalg-to-llvm": "",   # removed (linalg ops reach LLVM through loops; its RUN lines lower them first)
    "buffer-deallocation": "buffer-deallocation-pipeline",   # removed: the pipeline replaced it
    "convert-memref-to-llvm": "finalize-memref-to-llvm",     # renamed (LLVM 17)
    "test-cf-assert": "lh-report-failed-asserts",   # a failed cf.assert prints its message and the program goes on
    "test-transform-dialect-erase-schedule": "lh-erase-transform-schedules",
    # removed (LLVM 18): it ran the file's own script, a top-level transform.sequence in the files that use it
    "test-transform-dialect-interpreter": "lh-apply-payload-schedule",
    # mlir/test/lib/Dialect/LLVM/TestLowerToLLVM.cpp, pass for pass
    "test-lower-to-llvm": ("func.func(convert-vector-to-scf,convert-linalg-to-loops),lower-affine,convert-scf-to-cf,"
                           "canonicalize,cse,convert-vector-to-llvm{reassociate-fp-reductions},"
                           "func.func(convert-math-to-llvm),convert-math-to-libm,expand-strided-metadata,lower-affine,"
                           "convert-arith-to-llvm,convert-index-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,"
                           "convert-cf-to-llvm,reconcile-unrealized-casts"),
}


#: passes named otherwise in upstream trees other than the wheels' (options kept): upstream RUN lines of late 2025
#: (Arith/CPU/test-arith-expand-ceildivsi.mlir, Linalg/CPU/test-one-shot-bufferize.mlir, Vector/CPU/X86Vector/*)
#: call the vector conversion `naive-convert-vector-to-llvm`, where earlier and later versions of the same files
#: call it `convert-vector-to-llvm` with the same options
RENAMED_PASSES = {"naive-convert-vector-to-llvm": "convert-vector-to-llvm"}


#: pass options MLIR has removed that older RUN lines still pass: what they asked for is what the pass does now
#: (one-shot-bufferize returns new allocations since LLVM 18; deallocation is a pipeline of its own;
#: buffer-deallocation-pipeline's `allow-cloning`, which its RUN lines of late 2023 pass as
#: `-buffer-deallocation-pipeline=allow-cloning=true` (Linalg/CPU/test-collapse-tensor.mlir), went with the
#: function-boundary ABI it relaxed: the pipeline inserts the clones it needs)
REMOVED_PASS_OPTIONS = {
    "one-shot-bufferize": frozenset({"allow-return-allocs", "create-deallocs"}),
    "buffer-deallocation-pipeline": frozenset({"allow-cloning"}),
}


def _without_removed_options(name: str, value: str) -> str:
    """A RUN line's option string for pass `name` less the options MLIR removed (`allow-return-allocs`)."""
    removed = REMOVED_PASS_OPTIONS.get(name)
    if not removed or not value:
        return value
    return " ".join(word for word in value.split() if word.partition("=")[0] not in removed)


#: MemRefToLLVM aborts on memrefs of i1 in the wheels (an assertion: `integralElementType.getWidth() >= 8`;
#: buffer-deallocation-pipeline's ownership buffers and bool tensors are such memrefs): a RUN line's memref
#: lowering is preceded by lh-widen-i1-memrefs (one byte per bool, a step of its own; nothing else changes)
#: (`convert-to-llvm` lowers memrefs too, through the dialect's ConvertToLLVM interface: the same patterns)
MEMREF_TO_LLVM_PASSES = ("finalize-memref-to-llvm", "convert-memref-to-llvm", "convert-to-llvm")
WIDEN_I1_MEMREFS = "lh-widen-i1-memrefs"


def _lowers_memrefs(name: str, equivalent: str | None) -> bool:
    """Whether RUN-line pass `name` (or the pipeline that stands for it) lowers memrefs to LLVM."""
    return name in MEMREF_TO_LLVM_PASSES or bool(equivalent) and (
        equivalent.startswith(MEMREF_TO_LLVM_PASSES) or ",finalize-memref-to-llvm," in equivalent)


def _widened_before_memref_lowering(pipeline: str) -> list[str]:
    """A `--pass-pipeline` value (the module's pass list) split where its first top-level memref lowering
    starts, with lh-widen-i1-memrefs between the parts; the pipeline as it is when it lowers no memrefs."""
    start = 0
    for i, ch, depth in unquoted(pipeline + ","):
        if depth or ch != ",":
            continue
        name = re.split(r"[{(]", pipeline[start:i].strip(), maxsplit=1)[0]
        if name in MEMREF_TO_LLVM_PASSES:
            return [SEGMENT_BREAK, pipeline[:start].rstrip(","), SEGMENT_BREAK, WIDEN_I1_MEMREFS, SEGMENT_BREAK,
                    pipeline[start:], SEGMENT_BREAK]
        start = i + 1
    return [pipeline]


def _is_tool(words: list[str], names: str | tuple[str, ...]) -> bool:
    """Whether the command `words` of a RUN line's chain runs the tool `names`: its first word ends in
    the name (`mlir-opt`, a path such as `/usr/bin/FileCheck`, lit's `%mlir-runner`)."""
    return bool(words) and words[0].endswith(names)


#: what separates the shell's commands in a RUN line (`a && b`, `a; b`, `a || b`): each is a `|` chain of its own
_SHELL_LIST = re.compile(r"&&|\|\||;")


@dataclass(frozen=True)
class RunLine:
    number: int          # 1-based line of the file where the RUN command starts
    command: str         # the whole command (continuation lines joined)

    def chains(self) -> list[list[str]]:
        """The command's `|` chains in the order the shell runs them: `rm -f %t && %{compile} && %{run} | FileCheck %s`
        (upstream's integration tests) is three chains, each a list of the commands piped into each other."""
        return [chain.split("|") for chain in _SHELL_LIST.split(self.command) if chain.strip()]

    def mlir_opt_pipelines(self) -> list[str]:
        """One pass pipeline (textual, `a,b{opt=1}` or `builtin.module(...)`) per `mlir-opt` of the chains that
        start with mlir-opt, up to the first tool of each that is not mlir-opt (the runner, FileCheck);
        chains of other tools (`rm -f %t`, the runner on `%t`) are skipped."""
        out = []
        for chain in self.chains():
            for part in chain:
                try:
                    words = shlex.split(part)
                except ValueError as e:
                    raise ChunkError(f"RUN line {self.number}: cannot split it into words: {e}")
                if not _is_tool(words, "mlir-opt"):
                    break
                out.extend(_pipelines_of(words[1:], self.number))
        return out

    def tools(self) -> list[list[str]]:
        """The words of each command of every chain (lit substitutions such as %mlir_runner_utils kept)."""
        out = []
        for part in (part for chain in self.chains() for part in chain):
            try:
                out.append(shlex.split(part))
            except ValueError:
                out.append(part.split())
        return [words for words in out if words]

    def runner(self) -> RunnerOptions | None:
        """What the chain's mlir-runner (mlir-cpu-runner: its old name) is told: entry, result, libraries."""
        for words in self.tools():
            if _is_tool(words, RUNNER_NAMES):
                return RunnerOptions.parse(words[1:])
        return None

    def runs_program(self) -> bool:
        """Whether the command runs the compiled program (mlir-runner, or lli after mlir-translate): what its
        FileCheck reads is the program's output; otherwise it reads what mlir-opt printed (the IR)."""
        return any(_is_tool(words, RUNNER_NAMES + ("lli",)) for words in self.tools())

    def filecheck(self) -> FileCheckOptions | None:
        """The chain's FileCheck options (None: the command runs no FileCheck)."""
        for words in self.tools():
            if _is_tool(words, "FileCheck"):
                return FileCheckOptions.parse(words[1:])
        return None


@dataclass(frozen=True)
class FileCheckOptions:
    prefixes: tuple[str, ...] = ("CHECK",)     # --check-prefix / --check-prefixes (default CHECK)
    match_full_lines: bool = False
    strict_whitespace: bool = False
    variables: tuple[tuple[str, str], ...] = ()   # -DNAME=VALUE

    @classmethod
    def parse(cls, words: list[str]) -> "FileCheckOptions":
        prefixes: list[str] = []
        flags = {"match-full-lines": False, "strict-whitespace": False}
        variables = []
        for i, word in enumerate(words):
            if word.startswith("-D") and "=" in word:
                variables.append(tuple(word[2:].split("=", 1)))
                continue
            name, eq, value = word.lstrip("-").partition("=")
            if name in ("check-prefix", "check-prefixes"):
                if not eq and i + 1 < len(words):
                    value = words[i + 1]
                prefixes.extend(p for p in value.split(",") if p)
            elif name in flags:
                flags[name] = True
        return cls(tuple(prefixes) or ("CHECK",), flags["match-full-lines"], flags["strict-whitespace"],
                   tuple(variables))


#: the JIT runner's names in RUN lines (mlir-cpu-runner was renamed mlir-runner in LLVM 20; the Arm integration
#: tests (Linalg/CPU/ArmNeon, ArmSVE, ArmSME, Vector/CPU/ArmSVE ...) run it as lit's `%mcr_aarch64_cmd`: mlir-runner,
#: under an emulator where the host is not AArch64)
RUNNER_NAMES = ("mlir-runner", "mlir-cpu-runner", "mcr_aarch64_cmd")
#: lit substitutions of the runtime libraries upstream RUN lines pass to -shared-libs (`%native_mlir_runner_utils`:
#: the host's build of the library, next to the cross-compiled one, in the Arm tests' `%mcr_aarch64_cmd` lines)
_LIB_SUBSTITUTION = re.compile(r"%(?:mlir_lib_dir/lib|mlir_|native_)?(mlir_\w+?)(?:%shlibext|\.so)?$")


@dataclass(frozen=True)
class RunnerOptions:
    entry: str = "main"                  # -e NAME (mlir-runner's default: main)
    result: str = "void"                 # -entry-point-result=void|i32|i64|f32
    shared_libs: tuple[str, ...] = ()    # library names: mlir_c_runner_utils, ... (or paths as written)

    @classmethod
    def parse(cls, words: list[str]) -> "RunnerOptions":
        entry, result, libs = "main", "void", []
        i = 0
        while i < len(words):
            name, eq, value = words[i].lstrip("-").partition("=")
            i += 1
            if name in ("e", "entry-point-result", "shared-libs") and not eq and i < len(words):
                value, i = words[i], i + 1
            if name == "e":
                entry = value
            elif name == "entry-point-result":
                result = value
            elif name == "shared-libs":
                for lib in value.split(","):
                    m = _LIB_SUBSTITUTION.search(lib.strip())
                    libs.append(m.group(1) if m else lib.strip())
        return cls(entry, result, tuple(libs))


def compiling_run_line(runs: list[RunLine], run: RunLine) -> RunLine:
    """The RUN line whose mlir-opt compiles what `run` runs: `run` itself, or, where its chain starts with
    the runner on a file (`RUN: mlir-runner %t -e ...` after `RUN: mlir-opt %s ... -o %t`, as upstream's
    `%{compile}` / `%{run}` pairs write it), the last earlier RUN line whose mlir-opt writes that file."""
    tools = run.tools()
    if not tools or _is_tool(tools[0], "mlir-opt"):
        return run
    if not _is_tool(tools[0], RUNNER_NAMES):
        return run
    inputs = [w for w in tools[0][1:] if not w.startswith("-")][:1]
    for earlier in reversed([r for r in runs if r.number < run.number]):
        words = earlier.tools()[-1] if earlier.tools() else []
        if _is_tool(words, "mlir-opt") and _output_file(words) in inputs:
            return earlier
    return run


def _output_file(words: list[str]) -> str | None:
    """The file an mlir-opt command writes (`-o FILE`, `-o=FILE`)."""
    for i, word in enumerate(words):
        if word in ("-o", "--o") and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(("-o=", "--o=")):
            return word.split("=", 1)[1]
    return None


def find_run_lines(text: str) -> list[RunLine]:
    """The `// RUN:` commands of a file (a trailing backslash continues on the next RUN line), with lit's
    `// DEFINE: %{name} = value` / `// REDEFINE:` substitutions expanded as they stand at each RUN line
    (upstream's integration tests write `RUN: %{compile} | %{run}`)."""
    runs: list[RunLine] = []
    defines: dict[str, str] = {}
    pending: tuple[str, int, str] | None = None     # (directive, first line, text so far)
    for number, line in enumerate(text.splitlines(), start=1):
        m = re.match(r"\s*//\s*(RUN|DEFINE|REDEFINE):\s?(.*)$", line)
        if not m:
            continue
        body = m.group(2).rstrip()
        cont = body.endswith("\\")
        body = body[:-1].rstrip() if cont else body
        kind, start, before = pending if pending and pending[0] == m.group(1) else (m.group(1), number, "")
        joined = f"{before} {body}".strip()
        if cont:
            pending = (kind, start, joined)
            continue
        pending = None
        if kind == "RUN":
            runs.append(RunLine(start, _expand(joined, defines)))
        else:
            d = re.match(r"(%\{[\w.:-]+\})\s*=\s*(.*)$", joined)
            if d:
                defines[d.group(1)] = d.group(2).strip()
    if pending and pending[0] == "RUN":
        runs.append(RunLine(pending[1], _expand(pending[2], defines)))
    return runs


def _expand(command: str, defines: dict[str, str]) -> str:
    """`%{name}` substitutions of `defines` applied until none is left (a definition may use another;
    a cycle stops after 16 rounds)."""
    for _ in range(16):
        expanded = re.sub(r"%\{[\w.:-]+\}", lambda m: defines.get(m.group(0), m.group(0)), command)
        if expanded == command:
            break
        command = expanded
    return command


def tidy_pipeline(text: str) -> str:
    """A pass pipeline or option list with the RUN line's layout dropped: runs of spaces (the
    continuation lines' indentation, kept inside the shell's quotes) become one, none is left after
    `(`, `{`, `,`, `=` or before `)`, `}`, `,`, `=`; quoted option values stay as they are. mlir-opt reads both
    the same; the step's spec, its history row and the saved session read as the pipeline does."""
    out: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            out.append(ch)
            quote = "" if ch == quote else quote
            continue
        if ch in "\"'":
            quote = ch
        if ch.isspace():
            if out and out[-1] not in " ({,=":
                out.append(" ")
            continue
        if ch in ")},=" and out and out[-1] == " ":
            out.pop()
        out.append(ch)
    return "".join(out).strip()


def _pipelines_of(args: list[str], line: int) -> list[str]:
    """The pass pipeline of one mlir-opt's arguments; split where a test pass's equivalent is a Python
    pass (a pass step of its own: those do not mix with upstream passes in one pipeline)."""
    passes: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word in ("%s", "-") or not word.startswith("-"):
            continue
        name, _, value = word.lstrip("-").partition("=")
        if name == "pass-pipeline":
            if not value and i < len(args):
                value, i = args[i], i + 1
            value = tidy_pipeline(value.strip("'\""))
            if value.startswith("builtin.module(") and value.endswith(")"):
                value = value[len("builtin.module("):-1]   # the session's pass steps run on the module
            for old_name, new_name in RENAMED_PASSES.items():
                value = re.sub(rf"(?<![\w-]){re.escape(old_name)}(?![\w-])", new_name, value)
            passes.extend(_widened_before_memref_lowering(value) if WIDEN_I1_MEMREFS not in passes else [value])
            continue
        if name in _NOT_PASSES or name.startswith("mlir-"):
            if name == "o" and not value:
                i += 1
            continue
        if name in PARTIAL_BUFFERIZATION_PASSES:   # removed: one-shot bufferization does what they did together
            if ONE_SHOT_BUFFERIZE not in passes:
                passes.append(ONE_SHOT_BUFFERIZE)
            continue
        name = RENAMED_PASSES.get(name, name)
        # mlir-opt's test passes (not in the wheels) and renamed ones: their equivalents
        equivalent = TEST_PASS_EQUIVALENTS.get(name) if not value else None
        if _lowers_memrefs(name, equivalent) and WIDEN_I1_MEMREFS not in passes:
            passes.extend([SEGMENT_BREAK, WIDEN_I1_MEMREFS, SEGMENT_BREAK])
        if equivalent is not None:
            passes.extend([] if not equivalent else [SEGMENT_BREAK, equivalent, SEGMENT_BREAK]
                          if equivalent.startswith("lh-") else [equivalent])
            continue
        if name.startswith("test-"):
            raise ChunkError(f"RUN line {line}: -{name} is a pass of mlir-opt's test library (mlir/test/lib), "
                             "not in the MLIR wheels, and the workbench has no equivalent of it")
        value = _without_removed_options(name, tidy_pipeline(value.strip("'\"")))
        passes.append(f"{name}{{{value}}}" if value else name)
    if not passes:
        raise ChunkError(f"RUN line {line}: its mlir-opt runs no pass")
    segments = ",".join(passes).split(SEGMENT_BREAK)
    return [seg.strip(",") for seg in segments if seg.strip(",")]


#: nesting (regions, attributes, types) past which a crash of MLIR's recursive parser is blamed on it
DEEP_NESTING = 1000
_BRACKETS = re.compile(rb"[{}\[\]()<>]")
_OPENING = frozenset(b"{[(<")


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of brackets ({[(< ... >)]}) in a file's bytes (`->` arrows aside; strings and
    comments are not told apart: an estimate, for the message when the parser crashes)."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(data.replace(b"->", b"  ")):
        if m.group()[0] in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def count_chunks(data: bytes) -> int:
    """How many chunks a file's bytes hold (1 without marker lines), counted without decoding them."""
    marker = SPLIT_MARKER.encode()
    return 1 + data.count(b"\n" + marker) + data.startswith(marker)
