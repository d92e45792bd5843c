"""The CPU machine model (workbench/targets/cpu_host.py), `--cpu`, and what it drives: the matmul
selector's parameters and the ISA of the JIT-compiled code (issue 13, item 2)."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import do, matmul_payload, ok, run_cli
from workbench.targets import get_target
from workbench.targets.cpu_host import MachineError, host_machine, machine_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pipelines" / "cpu"))
import matmul  # noqa: E402  (pipelines/cpu/matmul.py)


def _cpuinfo_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def test_host_model_reads_this_host():
    if os.environ.get("LH_WORKBENCH_HOST_CPU"):
        pytest.skip("LH_WORKBENCH_HOST_CPU models another machine's ISA")
    host = host_machine()
    flags = _cpuinfo_flags()
    assert host.is_host and host.llvm_target() is None  # the host itself: LLVM's own host detection
    assert host.vector_bits == (512 if "avx512f" in flags else 256 if "avx" in flags else 128)
    assert host.vector_registers == (32 if "avx512f" in flags else 16)
    assert host.fma == ("fma" in flags) and host.amx == ("amx_tile" in flags)
    assert host.usable_cpus == len(os.sched_getaffinity(0)) and 1 <= host.physical_cores <= host.logical_cpus
    l1 = Path("/sys/devices/system/cpu/cpu0/cache/index0/size")
    if l1.exists() and Path("/sys/devices/system/cpu/cpu0/cache/index0/type").read_text().strip() == "Data":
        assert host.l1d_bytes == int(l1.read_text().strip().rstrip("K")) * 1024
    assert host.l2_bytes > host.l1d_bytes > 0


def test_named_machines_and_unknown_names():
    avx2 = machine_for("avx2")
    assert (avx2.llvm_cpu, avx2.vector_bits, avx2.vector_registers, avx2.is_host) == ("x86-64-v3", 256, 16, False)
    features = avx2.llvm_target()["features"]
    assert "+avx2" in features and "+fma" in features and "-avx512f" in features and "-amx-tile" in features
    skx = machine_for("skylake-avx512")
    assert (skx.llvm_cpu, skx.vector_bits, skx.vector_registers) == ("skylake-avx512", 512, 32)
    assert "+avx512f" in skx.llvm_target()["features"]
    spr = machine_for("sapphirerapids")
    assert spr.amx and "avx512_bf16" in spr.features and "+amx-tile" in spr.llvm_target()["features"]
    assert machine_for("host") is host_machine() and machine_for("") is host_machine()
    with pytest.raises(MachineError, match="unknown cpu 'pentium-9000'"):
        machine_for("pentium-9000")


def test_targets_json_shows_the_machine_model():
    out = run_cli(["targets", "--json"])
    assert out.returncode == 0, out.stderr
    cpu = next(t for t in json.loads(out.stdout) if t["name"] == "cpu")
    assert cpu["machine"]["name"] == host_machine().name and cpu["machine"]["is_host"] is True
    assert cpu["machine"]["vector_registers"] == host_machine().vector_registers
    out = run_cli(["targets", "--json", "--cpu", "avx2"])
    cpu = next(t for t in json.loads(out.stdout) if t["name"] == "cpu")
    assert cpu["machine"]["llvm_cpu"] == "x86-64-v3" and cpu["machine"]["llvm_target"]["cpu"] == "x86-64-v3"
    out = run_cli(["targets", "--cpu", "nonsense-cpu"])
    assert out.returncode == 2 and "unknown cpu 'nonsense-cpu'" in out.stderr
    out = run_cli(["targets"])
    assert "machine: " + host_machine().name in out.stdout


def test_default_params_follow_the_registers():
    # AVX-512 (32 zmm): the 8x32 tile measured on the AVX-512 host, unchanged
    p512 = matmul.default_params(1024, 1024, 1024, vector_bits=512, vector_registers=32, l2_bytes=1 << 20)
    assert (p512["reg_m"], p512["reg_n"], p512["reg_k"]) == (8, 32, 4)
    assert matmul.default_params(1024, 1024, 1024) == p512  # the defaults are the AVX-512 machine
    # AVX2 (16 ymm): 4x16 = 8 accumulators + 2 B vectors + 1 broadcast <= 16 registers
    p256 = matmul.default_params(1024, 1024, 1024, vector_bits=256, vector_registers=16, l2_bytes=512 << 10)
    assert (p256["reg_m"], p256["reg_n"]) == (4, 16) and p256["reg_k"] == 8
    for p, lanes, regs in ((p512, 16, 32), (p256, 8, 16)):
        vectors = p["reg_n"] // lanes
        assert p["reg_m"] * vectors + vectors + 1 <= regs
        assert p["block_n"] * p["block_k"] * 4 <= 1 << 20


def test_cpu_override_drives_the_selector(ctx, tmp_path):
    payload = matmul_payload(tmp_path / "mm.mlir", 64, 128, 64)
    ok(ctx, f"load {payload}")
    try:
        # one thread: the 512 K multiply-adds would be split over two cores' 32-row chunks (MIN_TASK_MACS)
        res = ok(ctx, "target cpu --cpu avx2 --threads 1")
        assert res.data["machine"]["llvm_cpu"] == "x86-64-v3" and ctx.session.cpu_name == "avx2"
        (_, params), = ctx.session.target.select_params(ctx.session.inspect())
        # 6 x 2 ymm (12 accumulators of 16 registers): 64 rows split into 60 in 6-row tiles, 4 in a 4-row one
        assert (params["reg_m"], params["reg_n"]) == (6, 16)
        assert (params["main_m"], params["tail_m"], params["tail_reg_m"]) == (60, 4, 4)
        ok(ctx, "target cpu --cpu skylake-avx512")
        (_, params), = ctx.session.target.select_params(ctx.session.inspect())
        assert (params["reg_m"], params["reg_n"]) == (8, 32)
        res = do(ctx, "target cpu --cpu no-such-cpu")
        assert not res.ok and "unknown cpu 'no-such-cpu'" in res.error
        assert ctx.session.cpu_name == "skylake-avx512"  # a failing command changes nothing
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    assert ctx.session.cpu_name == ""


def _foreign_machine():
    """A named machine with ISA features this host lacks (None if the host has them all)."""
    for name in ("skylake-avx512", "sapphirerapids", "zen5"):
        try:
            m = machine_for(name)
        except MachineError:
            continue
        if m.missing_here():
            return name
    return None


def test_code_for_another_machine_compiles_but_does_not_run_here(ctx, tmp_path):
    name = _foreign_machine()
    if name is None:
        pytest.skip("this host has every ISA feature of the machines tried")
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 64, 128, 64)}")
    try:
        ok(ctx, f"target cpu --cpu {name}")
        ok(ctx, "select --apply")
        ok(ctx, "bench warmup=0 iterations=2")
        ok(ctx, "apply cpu-matmul-lower")
        res = do(ctx, "run --check")
        assert not res.ok
        assert f"cannot run here: code for cpu {machine_for(name).name}" in res.error and "lacks" in res.error
        out = run_cli(["targets", "--cpu", name])
        assert "select and compile only" in out.stdout
    finally:
        ok(ctx, "target cpu --cpu host")


def _object_code(ctx, cpu: str, tmp_path: Path) -> str:
    """Disassembly of the JIT-compiled lowered matmul when compiled for `cpu` (the run worker's path)."""
    from workbench.execution.runner import RunClient

    target = get_target("cpu").for_cpu(cpu)
    obj = tmp_path / f"{cpu}.o"
    req = {"llvm": ctx.session.current_ir, "libs": target.shared_libs(), "opt_level": 3, "inputs": [],
           "outputs": [], "times_len": 0, "call": None, "bench": None, "object_file": str(obj),
           **target.extra_run_request()}
    ans = RunClient(env=target.run_env(None)).run(req, timeout=120)
    assert ans["ok"], ans
    return subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(obj)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_llvm_target_features_reach_the_jit(ctx, tmp_path):
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 64, 128, 64)}")
    ok(ctx, "apply pipelines/cpu/matmul.py[gen=matmul_tiling]{block_m=32 block_n=64 block_k=64 reg_m=4 reg_n=16 "
            "reg_k=4 pack_tile_a=16 pack_tile_b=8}")
    ok(ctx, "bench warmup=0 iterations=2")
    ok(ctx, "apply cpu-matmul-lower")
    baseline = _object_code(ctx, "x86-64", tmp_path)  # SSE2 only
    avx2 = _object_code(ctx, "avx2", tmp_path)
    assert "vfmadd" not in baseline and "zmm" not in baseline
    assert "vfmadd231ps" in avx2 and "ymm" in avx2 and "zmm" not in avx2
    skx = _object_code(ctx, "skylake-avx512", tmp_path)  # compiles anywhere, runs only on AVX-512
    assert "zmm" in skx
    # and code for AVX2 runs and is right (on an AVX2 or AVX-512 host)
    if not machine_for("avx2").missing_here():
        ok(ctx, "target cpu --cpu avx2")
        try:
            res = ok(ctx, "run --check")
            assert res.data["run"]["check"]["passed"]
        finally:
            ok(ctx, "target cpu --cpu host")


def test_saved_session_keeps_the_machine(ctx, tmp_path):
    ok(ctx, f"load {matmul_payload(tmp_path / 'mm.mlir', 64, 128, 64)}")
    ok(ctx, "target cpu --cpu skylake-avx512")
    try:
        ok(ctx, "select --apply")
        ok(ctx, f"save {tmp_path / 's.yaml'}")
    finally:
        ok(ctx, "target cpu --cpu host")
    import yaml

    doc = yaml.safe_load((tmp_path / "s.yaml").read_text())
    assert doc["Workbench"]["cpu"] == "skylake-avx512"
    from workbench.session import Session, read_session_file, replay_into

    replayed = Session()
    try:
        loaded = read_session_file(tmp_path / "s.yaml")
        replayed.load(loaded.payload)
        assert all(r.ok for r in replay_into(replayed, loaded))
        # replay selects the recorded machine: runs and selections are for it
        assert replayed.cpu_name == "skylake-avx512" and replayed.target.machine.vector_registers == 32
    finally:
        replayed.close()


def test_without_archspec_the_host_comes_from_cpuinfo():
    """The GPU machine's bundle may lack archspec: /proc/cpuinfo and the generic x86-64 levels still work."""
    from workbench.targets.cpu_host import _real_host

    code = ("import sys; sys.modules['archspec'] = None; sys.modules['archspec.cpu'] = None\n"
            "from workbench.targets.cpu_host import host_machine, machine_for, MachineError\n"
            "h = host_machine(); print(h.source, h.vector_bits, machine_for('avx2').llvm_cpu)\n"
            "try:\n    machine_for('skylake-avx512')\nexcept MachineError as e:\n    print('refused', e)\n")
    env = {k: v for k, v in os.environ.items() if k != "LH_WORKBENCH_HOST_CPU"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(env, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert first == f"/proc/cpuinfo {_real_host().vector_bits} x86-64-v3"
    assert second.startswith("refused unknown cpu 'skylake-avx512': without the archspec package only")
    assert "znver3" not in second and "x86_64_v3" in second


def _host_in_subprocess(override: str) -> subprocess.CompletedProcess:
    code = ("from workbench.targets.cpu_host import host_machine\n"
            "h = host_machine(); t = h.llvm_target()\n"
            "print(h.name, h.is_host, h.vector_bits, h.vector_registers, t and t['cpu'], h.physical_cores)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), LH_WORKBENCH_HOST_CPU=override))


def test_host_override_models_another_machine_on_this_hosts_cores():
    """LH_WORKBENCH_HOST_CPU=zen3: the host model takes zen3's ISA (AVX2, 16 registers) and keeps this host's
    cores; the JIT compiles for znver3 (an explicit target, not LLVM's host detection). A name that needs
    features this host lacks, or no known name, is refused in one line."""
    if "avx2" not in host_machine().features:
        pytest.skip("the host has no AVX2")
    out = _host_in_subprocess("zen3")
    assert out.returncode == 0, out.stderr
    name, is_host, bits, regs, llvm_cpu, cores = out.stdout.split()
    assert (name, is_host, bits, regs, llvm_cpu) == ("zen3", "True", "256", "16", "znver3")
    assert int(cores) == host_machine().physical_cores
    assert _host_in_subprocess("host").stdout.split()[4] == "None"   # the real host: LLVM's own detection
    bad = _host_in_subprocess("znver9")
    assert bad.returncode != 0 and "unknown cpu 'znver9'" in bad.stderr.strip().splitlines()[-1]
    from workbench.targets.cpu_host import _real_host

    if "avx512f" not in _real_host().features:
        lacking = _host_in_subprocess("skylake-avx512")
        assert lacking.returncode != 0 and "lacks" in lacking.stderr.strip().splitlines()[-1]


def test_code_for_an_amd_machine_runs_on_a_host_without_its_vendor_extensions(ctx):
    """`--cpu zen3` code held SSE4A's `insertq` (LLVM's znver3 uses it in torch's cumsum): SIGILL on an Intel
    host whose tracked ISA covers zen3's. Vendor extensions this host lacks are turned off in the code."""
    from workbench.targets.cpu_host import _cpuinfo_flags

    zen3 = machine_for("zen3")
    if zen3.missing_here():
        pytest.skip("the host lacks zen3's ISA")
    has_sse4a = "sse4a" in _cpuinfo_flags()[0]
    assert ("-sse4a" in zen3.llvm_target_features()) == (not has_sse4a)
    ok(ctx, f"load {ROOT / 'tests' / 'fixtures' / 'torch' / 'cumsum.mlir'}")
    ok(ctx, "target cpu --cpu zen3 --threads 1")
    try:
        assert ok(ctx, "run --check").data["run"]["check"]["passed"]
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")


def test_a_machine_name_may_say_its_cores_and_caches():
    """`NAME:cores=16,l2=2M,l1d=48K,l3=300MiB`: another machine's cores and caches besides its ISA (the host's
    otherwise); bad items fail in one line naming the item."""
    from workbench.targets.cpu_host import split_machine_name

    assert split_machine_name("sapphirerapids:cores=16, l2=2M,l1d=48KiB,l3=300MB") == (
        "sapphirerapids", {"cores": 16, "l2": 2 << 20, "l1d": 48 << 10, "l3": 300 << 20})
    assert split_machine_name("avx2") == ("avx2", {})
    m = machine_for("avx512:cores=16,l2=2M")
    here = host_machine()
    assert m.vector_registers == 32 and (m.physical_cores, m.usable_cpus, m.l2_bytes) == (16, 16, 2 << 20)
    assert (m.l1d_bytes, m.l3_bytes) == (here.l1d_bytes, here.l3_bytes)
    assert any("given: cores=16, l2=2 MiB" in n for n in m.notes)
    h = machine_for("host:l2=1M")
    assert h.is_host and h.l2_bytes == 1 << 20 and h.features == here.features
    for bad, said in [("avx2:l2=2X", "l2='2X' is not a size"), ("avx2:cors=3", "did you mean cores?"),
                      ("avx2:cores=0", "out of range"), ("avx2:cores", "cores needs a value"),
                      ("avx2:l2=1M,l2=2M", "l2 given twice"), ("avx2:l3=9999999999999G", "l3="),
                      ("nosuchcpu:cores=2", "unknown cpu 'nosuchcpu'")]:
        with pytest.raises(MachineError, match=re.escape(said)):
            machine_for(bad)


def test_the_given_l2_and_cores_drive_the_selector_and_the_saved_session(ctx, tmp_path):
    """The L2 a machine name gives decides plane_blocks (a strided convolution's input plane of 270 KB: blocks
    of positions under a 256 KiB L2, the whole plane under 2 MiB), its cores the threads a schedule plans for;
    the session saves the whole name and replays for it."""
    from conftest import selected_step_labels

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from _common import conv_payload

    conv = conv_payload(2, 64, 64, 64, 32, 3, 3, 2, 1, bias=True, cast_unpadded=True)
    try:
        small = selected_step_labels(ctx, tmp_path, conv, 1, "avx2:l2=256K")
        assert any("cache_tile=[1,0," in label for label in small), small
        large = selected_step_labels(ctx, tmp_path, conv, 1, "avx2:l2=2M")
        assert not any("cache_tile=[1," in label for label in large), large
        ok(ctx, "undo")   # the selection taken back; the machine with 16 cores plans 16 threads
        ok(ctx, "target cpu --threads 0 --cpu avx2:cores=16,l2=2M")
        assert ctx.session.cpu_name == "avx2:cores=16,l2=2M"
        ok(ctx, "select --apply")
        labels = [a.step.label() for a in ctx.session.active_steps]
        assert any("threads=16" in label or "threads=8" in label for label in labels), labels
        ok(ctx, f"save {tmp_path / 's.yaml'}")
        ir = ctx.session.current_ir
    finally:
        ok(ctx, "target cpu --cpu host --threads 0")
    import yaml

    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["Workbench"]["cpu"] == "avx2:cores=16,l2=2M"
    from workbench.session import Session, read_session_file, replay_into

    replayed = Session()
    try:
        loaded = read_session_file(tmp_path / "s.yaml")
        replayed.load(loaded.payload)
        assert all(r.ok for r in replay_into(replayed, loaded))
        assert replayed.target.machine.physical_cores == 16 and replayed.current_ir == ir
    finally:
        replayed.close()
