"""Targets: `target` (alias `targets`). Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations


from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry
from workbench.commands.step_results import fail
from workbench.result import Result
from workbench.session import SessionError
from workbench.targets import all_targets


def target_listing(cpu: str = "") -> list[dict]:
    """Every target: can it run here, and why; targets that compile for a CPU add its machine model."""
    listing = []
    for t in all_targets():
        t = t.for_cpu(cpu)
        ok, why = t.can_run()
        entry = {"name": t.name, "can_run": ok, "reason": why}
        if t.uses_cpu_model:
            entry["machine"] = t.machine.to_json()
            entry["parallel_runtime"] = parallel_runtime_name()
        listing.append(entry)
    return listing


def parallel_runtime_name() -> str:
    """What runs the CPU code's parallel loops here: `libgomp` or `async runtime` (MLIR's)."""
    from workbench.common.parallel_runtime import parallel_runtime

    return "libgomp" if parallel_runtime() == "gomp" else "async runtime"


def machine_summary(machine: dict) -> str:
    """One line about a CPU machine model (its JSON form)."""
    return (f"{machine['name']} ({machine['llvm_cpu']}{', host' if machine['is_host'] else ''}): "
            f"{machine['vector_bits']}-bit SIMD x {machine['vector_registers']} registers"
            f"{', FMA' if machine['fma'] else ''}{', AMX' if machine['amx'] else ''}"
            f"{', AVX512-BF16' if machine['avx512_bf16'] else ''}{', AVX512-VNNI' if machine['avx512_vnni'] else ''}; "
            f"{machine['physical_cores']} cores / {machine['logical_cpus']} CPUs ({machine['usable_cpus']} usable); "
            f"L1d {machine['l1d_bytes'] >> 10} KiB, L2 {machine['l2_bytes'] >> 10} KiB, L3 {machine['l3_bytes'] >> 20} MiB")


def cmd_target(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if a.get("name") or a.get("cpu") is not None or a.get("threads") is not None:
        before = (s.target_name, s.cpu_name, s.cpu_threads)
        try:
            if a.get("name"):
                s.select_target(a["name"])
            if a.get("cpu") is not None:
                s.select_cpu(a["cpu"])
            if a.get("threads") is not None:
                s.select_cpu_threads(a["threads"])
        except SessionError as e:
            s.target_name, s.cpu_name, s.cpu_threads = before
            return fail(e)
        data = {"target": s.target_name, "cpu": s.cpu_name or "host", "threads": s.cpu_threads or "all"}
        target = s.target
        if target.uses_cpu_model:
            data["machine"] = target.machine.to_json()
            data["parallel_runtime"] = parallel_runtime_name()
            return Result(True, f"target: {s.target_name}, cpu {machine_summary(data['machine'])}; parallel loops "
                                f"on {data['parallel_runtime']}", data=data)
        return Result(True, f"target: {s.target_name}", data=data)
    rows = []
    listing = target_listing(s.cpu_name)
    for entry in listing:
        why = entry["reason"] + (f" [{machine_summary(entry['machine'])}]" if "machine" in entry else "")
        rows.append([("* " if entry["name"] == s.target_name else "  ") + entry["name"],
                     "yes" if entry["can_run"] else "no", why])
    return Result(True, f"target: {s.target_name}", kind="table",
                  data={"target": s.target_name, "cpu": s.cpu_name or "host", "targets": listing,
                        "table": {"columns": ["target", "can run", "why"], "rows": rows}})


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("target", "show targets or select one", cmd_target,
                [Arg("name", "target name", optional=True, complete="target")],
                [Flag("--cpu", "the CPU machine to select parameters and compile for: host, avx2, avx512, "
                               "an LLVM or archspec name (skylake-avx512, znver3, haswell, ...), with its cores and caches "
                               "where they are not this host's: sapphirerapids:cores=16,l2=2M,l1d=48K,l3=300M", True,
                      complete="choice:host,avx2,avx512,haswell,skylake-avx512,icelake-server,"
                               "sapphirerapids,znver3,znver4"),
                 Flag("--threads", "the cores the CPU schedules are planned for (0: all usable; 1 for code "
                                   "timed with `run --threads 1`); saved in the session", True, type="int",
                      metavar="N")],
                category="5-run",
                aliases=("targets",)))
