"""The run worker: JIT-compiles an LLVM-dialect module with ExecutionEngine and calls it.

Started fresh for every run (`RunClient`), so generated code that segfaults, aborts or
loops forever takes only this process down. Requests:

  {"op": "run", "llvm": text, "llvm_bytecode": bytes | None, "libs": [paths], "opt_level": 3,
   "llvm_target": {"cpu", "features"} | None, "object_file": path | None,
   "inputs": [ndarray, ...], "outputs": [{"shape", "dtype"}, ...], "times_len": N,
   "call": "_lh_call" | None, "bench": "_lh_bench" | None, "preload": [paths]}
  -> {"ok", "args_after": [ndarray], "outputs": [ndarray], "times": [float], "compile_s"}

`call` runs the entry once on copies of the inputs (for the correctness check);
`bench` runs the timed wrapper on other copies and returns its per-iteration times.
`llvm_target` (the CPU machine model of a session for another machine, `--cpu`) sets `target_cpu` and
`target_features` on every function, which LLVM's code generator uses instead of the host's CPU and
features (ExecutionEngine's target machine is the host's); without it the code is for this host.
`object_file` writes the JIT-compiled object code there (to read the instructions it chose).
The JIT's code generation is forced (a lookup of the entry) before the first call, and `protocol.compiled()`
reported: the client's run limit starts then, the compile has its own (worker_client.WorkerProcess.request).
`llvm_bytecode`: the module as MLIR bytecode, parsed instead of `llvm` (then its text without the weights'
blobs); where the JIT fails on it, the run is tried again on the module's whole text, so that the error quotes
the lines of that text as it does for a module sent as text.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
import traceback
from typing import Any, NamedTuple

import numpy as np

from workbench.common.dtypes import dtype_by_name, raw_view
from workbench.common.parallel_runtime import OTHER_LOAD_ENV
from workbench.worker.protocol import compiled, serve_requests


def _descriptor_ptr(arr: np.ndarray):
    from mlir.runtime import get_ranked_memref_descriptor

    # bf16/fp8 arrays go in as raw bytes of their itemsize (ctypes has no type for them)
    desc = get_ranked_memref_descriptor(raw_view(arr))
    return ctypes.pointer(ctypes.pointer(desc)), desc


def output_buffers(out_specs: list[dict]) -> list[np.ndarray]:
    """Zeroed output buffers from the request's `{"shape", "dtype"}` specs (dtype by name: `bfloat16`...)."""
    return [np.zeros(o["shape"], dtype=dtype_by_name(o["dtype"])) for o in out_specs]


def _invoke(engine, name: str, arrays: list[np.ndarray]) -> None:
    ptrs = []
    keep = []
    for a in arrays:
        p, d = _descriptor_ptr(a)
        ptrs.append(p)
        keep.append(d)
    engine.invoke(name, *ptrs)


def unresolved_functions(module, libs: list[str]) -> list[str]:
    """External functions the lowered module declares (an `llvm.func` without a body) that neither this
    process (libc, libm) nor the runtime libraries (or the libraries they load) define."""
    from mlir import ir

    handles = [ctypes.CDLL(None)] + [ctypes.CDLL(lib) for lib in libs]
    missing = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.func" or len(op.regions[0].blocks):
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if not any(hasattr(handle, name) for handle in handles):
            missing.append(name)
    return missing


def _profile_labels(module) -> list[str]:
    """The slot labels of a module instrumented by lh-profile-regions (`run --profile`), else []."""
    from mlir import ir

    from workbench.worker.profile_regions import LABELS_ATTR

    if LABELS_ATTR not in module.operation.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(module.operation.attributes[LABELS_ATTR])]


def _read_profile(engine, labels: list[str]) -> dict:
    """Seconds per call of each profiled op (the globals lh-profile-regions accumulates into), one row per label."""
    from workbench.worker.profile_regions import ADDRESS_OF, CALLS, SECONDS

    def address(name: str) -> int:
        result = ctypes.c_int64()
        engine.invoke(ADDRESS_OF[name], ctypes.pointer(result))   # (packed call: the result's address last)
        return result.value

    seconds = (ctypes.c_double * len(labels)).from_address(address(SECONDS))
    calls = ctypes.c_double.from_address(address(CALLS)).value
    # one row per label: the nests of one payload op (a matmul's packing, main rows and tail rows on AVX2) summed
    per_label: dict[str, float] = {}
    for lab, s in zip(labels, seconds):
        per_label[lab] = per_label.get(lab, 0.0) + (s / calls if calls else 0.0)
    return {"calls": int(calls), "regions": [{"label": lab, "seconds": t} for lab, t in per_label.items()]}


#: characters of the lowered module's line quoted in a JIT failure's one line
QUOTE_LIMIT = 160


def _kept(diagnostic) -> tuple[str, str, str]:
    """(severity, location, message) of a diagnostic: the object is valid only inside the handler."""
    from mlir import ir

    kind = {ir.DiagnosticSeverity.ERROR: "error", ir.DiagnosticSeverity.WARNING: "warning"}.get(
        diagnostic.severity, "note")
    return kind, str(diagnostic.location), str(diagnostic.message)


def _quoted_line(location: str, text: str) -> str:
    """The line of the lowered module (parsed from `text`, locations `"-":LINE:COL`) a diagnostic points at,
    stripped and clipped: the op that failed (`llvm.mlir.global ... @__constant_4x8xf32(dense_resource<w>`)."""
    import re

    m = re.search(r'^loc\("-":(\d+):\d+\)$', location)
    lines = text.splitlines()
    if not m or not 0 < int(m.group(1)) <= len(lines):
        return ""
    line = " ".join(lines[int(m.group(1)) - 1].split())
    return line if len(line) <= QUOTE_LIMIT else line[:QUOTE_LIMIT - 3] + "..."


def _diagnostic_lines(diagnostics: list, text: str) -> list[str]:
    out = []
    for kind, location, message in diagnostics:
        quoted = _quoted_line(location, text)
        out.append(f"{kind}: {message}" + (f" (lowered IR: {quoted})" if quoted else ""))
    return out


def jit_failure_reason(diagnostics: list, text: str) -> str:
    """One line from the first error the translation to LLVM IR reported: its message and the lowered op
    it concerns, else ""."""
    import re

    for kind, location, message in diagnostics:
        if kind == "error":
            quoted = _quoted_line(location, text)
            message = " ".join(message.split())
            resource = re.search(r"dense_resource<([^>]*)>", quoted)
            if resource and message == "resource does not exist":   # a blob the payload's text does not carry
                message = (f"dense_resource<{resource.group(1)}> has no data (the payload's `{{-# dialect_resources "
                           f"#-}}` section has no blob of that name: elided weights cannot run)")
            elif resource and "size does not match" in message:
                message = f"dense_resource<{resource.group(1)}>: its blob's {message}"
            return f"{message}: {quoted}" if quoted else message
    return ""


#: a `dense_resource` global of fewer bytes stays in the code (a small table LLVM may fold into it)
MIN_EXTERNAL_BYTES = 4096
#: set (to anything): the weights stay constants of the code, as before (bench/weights_as_data.py compares)
WEIGHTS_AS_CODE_ENV = "LH_WORKBENCH_WEIGHTS_AS_CODE"


def external_weights(module, bytecode: bytes) -> list[tuple[str, int, np.ndarray]]:
    """The LLVM-dialect module's constant globals initialised from a `dense_resource` blob of MIN_EXTERNAL_BYTES or
    more made external declarations, each to be bound to its blob's bytes in `bytecode` (read in place where
    aligned as the global says, else copied): [(symbol, address, the array that holds the bytes)], to register
    with the ExecutionEngine before its first lookup and keep alive as long as it. Translating GPT-2 small's
    500 MB of weights to LLVM constants and emitting them into the object took ~16 s of its 39 s `run`.
    A global whose blob is missing or of another size than its type is left alone: the translation reports it."""
    from mlir import ir

    from workbench.worker.bytecode_resources import builtin_blobs
    # (ir_walk also registers the bindings' caster of dense attributes with complex elements: reading such a
    # global's `value` raised TypeError without it)
    from workbench.worker.ir_walk import is_dense_resource

    candidates = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.mlir.global" or "value" not in op.attributes or "constant" not in op.attributes:
            continue
        value = op.attributes["value"]
        if is_dense_resource(value):
            candidates.append((op, value))
    if not candidates:
        return []
    blobs = builtin_blobs(bytecode)
    bound = []
    for op, value in candidates:
        name = str(value)[len("dense_resource<"):].split(">", 1)[0]
        blob = blobs.get(name)
        try:
            shaped = ir.ShapedType(value.type)
            width = shaped.element_type.width
            elements = int(np.prod(shaped.shape)) if shaped.has_static_shape else -1
        except (ValueError, AttributeError, TypeError):
            continue
        if blob is None or width % 8 or blob.nbytes != elements * width // 8 or blob.nbytes < MIN_EXTERNAL_BYTES:
            continue
        alignment = max(ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else 1,
                        width // 8)
        data = np.frombuffer(blob, dtype=np.uint8)
        if data.ctypes.data % alignment:
            raw = np.empty(data.nbytes + alignment, dtype=np.uint8)
            skip = -raw.ctypes.data % alignment
            data = raw[skip:skip + blob.nbytes]
            data[:] = np.frombuffer(blob, dtype=np.uint8)
        # a declaration (external, no value): references to it go through the GOT, wherever the bytes are
        del op.attributes["value"]
        op.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")
        for attr in ("dso_local", "unnamed_addr"):
            if attr in op.attributes:
                del op.attributes[attr]
        bound.append((ir.StringAttr(op.attributes["sym_name"]).value, data.ctypes.data, data))
    return bound


def _text_of_bytecode(data: bytes) -> str:
    """The text of a module sent as bytecode, parsed in a context of its own (in the run's context its
    resource names are taken: a second parse renames them)."""
    from mlir import ir

    from workbench.worker.mlir_context import new_context

    with new_context():
        return str(ir.Module.parse(data))


class Jit(NamedTuple):
    """A module the JIT has compiled (jit_compile): call it inside `context`; `weights` (the arrays the external
    globals are bound to) must live as long as `engine`."""
    context: Any
    module: Any
    engine: Any
    weights: list
    compile_s: float
    profile_labels: list


def jit_compile(req: dict) -> Jit | dict:
    """The run request's module (`llvm_bytecode`, else `llvm`) parsed and JIT-compiled in a context of its own,
    its machine code generated (a lookup of the entry), its big weights bound as data: a `Jit`, or the failure
    answer. Used by the run worker (handle_run) and by each MPI rank (worker/mpi/rank.py)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    from workbench.worker.mlir_context import new_context

    ctx = new_context()
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(req["llvm_bytecode"] if req.get("llvm_bytecode") else req["llvm"])
        except ir.MLIRError as e:
            return {"ok": False, "error": f"lowered module does not parse: {str(e).splitlines()[0]}",
                    "diagnostics": str(e)}
        if req.get("llvm_target"):
            set_llvm_target(module, req["llvm_target"]["cpu"], req["llvm_target"]["features"])
        profile_labels = _profile_labels(module)
        t0 = time.perf_counter()
        # a model's weights bound as data: the JIT no longer emits them as constants of the object code
        weights = external_weights(module, req["llvm_bytecode"]) \
            if req.get("llvm_bytecode") and not os.environ.get(WEIGHTS_AS_CODE_ENV) else []
        # the translation to LLVM IR reports why it fails (a `dense_resource` without its blob or of the wrong
        # size, an op it cannot translate) as MLIR diagnostics; the exception says only "Failure while
        # creating the ExecutionEngine"
        diagnostics: list = []
        handler = ctx.attach_diagnostic_handler(lambda d: diagnostics.append(_kept(d)) or True)
        failed_on_bytecode = False
        try:
            engine = ExecutionEngine(module, opt_level=int(req.get("opt_level", 3)), shared_libs=list(req["libs"]),
                                     enable_object_dump=bool(req.get("object_file")))
            for name, address, _ in weights:
                engine.raw_register_runtime(name, ctypes.c_void_p(address))
            if req.get("initialize"):
                engine.initialize()
        except Exception as e:
            failed_on_bytecode = bool(req.get("llvm_bytecode"))
            if not failed_on_bytecode:
                reason = jit_failure_reason(diagnostics, req["llvm"])
                return {"ok": False, "error": "JIT compilation failed: " + (reason or (str(e).splitlines()[0] if str(e)
                                                                                      else type(e).__name__)),
                        "diagnostics": "\n".join(_diagnostic_lines(diagnostics, req["llvm"])) or traceback.format_exc()}
        finally:
            handler.detach()
        if failed_on_bytecode:   # again on the whole text, as sent without bytecode: the diagnostics quote its lines
            return jit_compile({**req, "llvm": _text_of_bytecode(req["llvm_bytecode"]), "llvm_bytecode": None})
        # the JIT generates the machine code at the first lookup: done here, so that the run's time limit
        # (protocol.compiled) starts after the compile, and a program the JIT cannot link fails as a compile
        entry = req.get("call") or req.get("bench")
        if entry:
            try:
                engine.lookup(entry)
            except RuntimeError as e:
                return _link_failure(e, module, list(req["libs"]))
        return Jit(ctx, module, engine, weights, time.perf_counter() - t0, profile_labels)


def handle_run(req: dict) -> dict:
    for lib in req.get("preload") or []:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    from mlir import ir

    jit = jit_compile(req)
    if not isinstance(jit, Jit):
        return jit
    with jit.context, ir.Location.unknown():
        engine = jit.engine
        compiled(compile_s=jit.compile_s)
        inputs = [np.ascontiguousarray(a) for a in req["inputs"]]
        answer: dict = {"ok": True, "compile_s": jit.compile_s}
        if jit.weights:
            answer["external_weights"] = weights_bound(jit.weights)
        if os.environ.get(OTHER_LOAD_ENV):   # the target saw other load: the OpenMP team waits briefly
            answer["other_load"] = os.environ[OTHER_LOAD_ENV]
        t_wait = time.perf_counter()
        with measurement_lock():
            answer["lock_wait_s"] = time.perf_counter() - t_wait
            _call_and_time(engine, req, inputs, answer)
        if jit.profile_labels:
            answer["profile"] = _read_profile(engine, jit.profile_labels)
        if req.get("object_file"):
            engine.dump_to_object_file(req["object_file"])
        return answer


def weights_bound(weights: list) -> dict:
    """What an answer says of the weights bound as data (external_weights)."""
    return {"globals": len(weights), "bytes": sum(w[2].nbytes for w in weights)}


def _link_failure(e: RuntimeError, module, libs: list[str]) -> dict:
    """The answer when the JIT could not link the program (its lookup failed): what it lacks, by name."""
    missing = unresolved_functions(module, libs) if "Unknown function" in str(e) else []
    if not missing:
        raise e
    names = ", ".join(os.path.basename(lib) for lib in libs) or "none"
    return {"ok": False, "error": f"missing runtime function{'s' if len(missing) > 1 else ''} "
            f"{', '.join('@' + m for m in missing)}: defined by none of the runtime libraries loaded "
            f"({names}) nor by the process", "diagnostics": str(e)}


@contextlib.contextmanager
def measurement_lock():
    """Hold the lock named by $LH_WORKBENCH_MEASURE_LOCK (set by `tune`) while the generated code runs:
    compilations of parallel trials overlap, their timed runs do not share a core. With measurement
    slots ($LH_WORKBENCH_MEASURE_SLOTS: "cpus;cpus;...", one lock file per slot) the first free slot is
    taken and this thread runs on its CPUs until the run is over; else one machine-wide lock."""
    path = os.environ.get("LH_WORKBENCH_MEASURE_LOCK")
    if not path:
        yield
        return
    import fcntl

    slots = [[int(c) for c in s.split(",") if c] for s in os.environ.get("LH_WORKBENCH_MEASURE_SLOTS", "").split(";")
             if s] if hasattr(os, "sched_setaffinity") else []
    if not slots:
        with open(path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes (or this process dies)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        return
    files = [open(f"{path}.slot{i}", "a") for i in range(len(slots))]
    try:
        taken = None
        while taken is None:
            for i, f in enumerate(files):
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                taken = i
                break
            else:
                time.sleep(0.002)
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, slots[taken])   # this thread: the one that calls the generated code
        try:
            yield
        finally:
            os.sched_setaffinity(0, before)
            fcntl.flock(files[taken], fcntl.LOCK_UN)
    finally:
        for f in files:
            f.close()


#: bytes of what the plain call prints that the answer carries (printMemrefF32 of a test program)
STDOUT_LIMIT = 64 * 1024


@contextlib.contextmanager
def _stdout_to(path: str):
    """The process's file descriptor 1 (where the generated code's printf / printMemref write) sent to
    `path` for the duration; C stdio flushed before it is given back."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.dup2(target, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(target)


def _call_and_time(engine, req: dict, inputs: list, answer: dict) -> None:
    """The plain call (outputs for the check, and what it prints: `stdout`) and the timed wrapper (its
    prints discarded), on copies of the inputs."""
    import tempfile

    out_specs = req.get("outputs") or []
    if req.get("call"):
        args = [a.copy() for a in inputs]
        outs = output_buffers(out_specs)
        with tempfile.NamedTemporaryFile(prefix="lh-stdout-") as captured:
            with _stdout_to(captured.name):
                _invoke(engine, req["call"], args + outs)
            data = open(captured.name, "rb").read(STDOUT_LIMIT + 1)
        answer["stdout"] = data[:STDOUT_LIMIT].decode(errors="replace") + (
            "\n... (more than 64 KiB printed)" if len(data) > STDOUT_LIMIT else "")
        answer["args_after"] = args
        answer["outputs"] = outs
    if req.get("bench"):
        args = [a.copy() for a in inputs]
        outs = output_buffers(out_specs)
        times = np.zeros(int(req["times_len"]), dtype=np.float64)
        t1 = time.perf_counter()
        with _stdout_to(os.devnull):
            _invoke(engine, req["bench"], args + outs + [times])
        answer["bench_wall_s"] = time.perf_counter() - t1
        answer["times"] = times.tolist()


def set_llvm_target(module, cpu: str, features: list[str]) -> None:
    """Compile every function of `module` for `cpu` with exactly `features` (`+avx2`, `-avx512f`, ...).

    ExecutionEngine calls a module's public functions through wrappers it adds to the LLVM module
    (`_mlir_NAME`, arguments packed in one pointer) with no target attributes: the host's CPU and
    features. LLVM's inliner may put a callee whose features are a subset of the caller's into it, so
    a public function small enough to inline (the benchmark wrapper with the payload under it) was
    compiled again inside its wrapper for the host: AVX-512 code in a session for an AVX2 machine.
    Public functions are therefore kept out of line (`no_inline`); what they call inlines as before,
    within the machine's features."""
    from mlir import ir

    cpu_attr = ir.StringAttr.get(cpu)
    features_attr = ir.Attribute.parse("#llvm.target_features<[" + ", ".join(f'"{f}"' for f in features) + "]>")
    for op in module.body.operations:
        if op.operation.name == "llvm.func":
            op.attributes["target_cpu"] = cpu_attr
            op.attributes["target_features"] = features_attr
            if _packed_by_the_engine(op):
                op.attributes["no_inline"] = ir.UnitAttr.get()


def _packed_by_the_engine(func) -> bool:
    """Whether ExecutionEngine adds a packed-arguments wrapper for this llvm.func: a definition whose
    linkage is not local (its packFunctionArguments skips declarations and internal/private ones)."""
    if not func.regions[0].blocks:
        return False
    linkage = str(func.attributes["linkage"]) if "linkage" in func.attributes else "#llvm.linkage<external>"
    return linkage not in ("#llvm.linkage<internal>", "#llvm.linkage<private>")


def limit_cores() -> None:
    """`run --threads N`: pin this process to N cores, which bounds every runtime's thread pool
    (OpenMP, MLIR's async runtime, BLAS) since they size themselves from the CPU affinity."""
    import os

    n = int(os.environ.get("LH_WORKBENCH_THREADS", "0") or 0)
    if n > 0 and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:n])


#: Linux x86-64: arch_prctl's syscall number, ARCH_REQ_XCOMP_PERM, and the XTILEDATA state component
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18


def request_amx_state() -> bool:
    """Ask Linux for the AMX tile data state (once per process, before any AMX instruction: without it the
    first tile load raises SIGILL); whether it was granted (False off Linux x86-64 or without AMX)."""
    import platform

    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    if " amx_tile" not in flags:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0


def serve(fd: int) -> None:
    limit_cores()
    request_amx_state()    # (AMX code from pipelines/cpu/matmul_amx.py; nothing on other hosts)
    serve_requests(fd, handle_run)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
