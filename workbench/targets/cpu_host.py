"""The CPU machine model: what the CPU selector tunes for and what the JIT compiles for.

One `CpuMachine` describes a machine: its ISA (vector width and register count, FMA, AVX-512
BF16/VNNI, AMX), its cores (physical, logical, and those this process may use) and its data
caches. `host_machine()` reads this host; `machine_for(name)` builds the model of another
machine (`--cpu NAME`, `target cpu --cpu NAME`), so that a session selects parameters and
compiles code for it: `run` refuses to execute code for ISA features this host lacks.

Sources, and why:
- ISA and microarchitecture names: `archspec` (Spack's CPU database, pure Python, no build step):
  it detects the host from /proc/cpuinfo, knows the feature sets of named microarchitectures
  (haswell, zen3, skylake_avx512, sapphirerapids, x86_64_v3, ...) and the matching LLVM/clang
  `-march` name. Where archspec is not installed (the GPU machine's bundle: numpy + MLIR only),
  the host's flags come from /proc/cpuinfo directly and only the generic x86-64 levels and the
  aliases below can be named.
- Caches: sysfs (/sys/devices/system/cpu/cpu0/cache), the kernel's own reading of CPUID.
- Cores: sysfs topology (core_id per package) for physical cores, `os.sched_getaffinity` for the
  CPUs this process may run on (a container or `taskset` may allow fewer than the machine has).
A named machine other than the host keeps the host's cores and caches (a name says nothing about them),
unless the name says them: `NAME:cores=16,l1d=48K,l2=2M,l3=300M` (any of the four, `host:` too), e.g. the
16-core Xeon of another machine (`lh-workbench targets --json` there prints its numbers): the session records
the whole string, so a saved session replays for that machine.

`LH_WORKBENCH_HOST_CPU=NAME` makes the host model that machine's ISA (this host's cores and caches), for the
whole process and its workers: what the workbench (and its tests) would do on such a host, e.g. an AVX2-only
AMD (`zen3`) on an AVX-512 Xeon; the JIT compiles for that machine, and code for features it lacks is refused
as on a real one.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from workbench.common.suggest import did_you_mean

#: ISA features the model tracks: /proc/cpuinfo (archspec) spelling -> LLVM target feature
ISA_FEATURES = {
    "sse2": "sse2", "sse4_2": "sse4.2", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw", "avx512dq": "avx512dq",
    "avx512vl": "avx512vl", "avx512_vnni": "avx512vnni", "avx512_bf16": "avx512bf16",
    "avx512_fp16": "avx512fp16", "amx_tile": "amx-tile", "amx_bf16": "amx-bf16", "amx_int8": "amx-int8",
}

#: one vendor's extensions (AMD's), which LLVM's target CPUs of that vendor use (znver3 code held `insertq`, SSE4A,
#: in a cumsum: SIGILL on an Intel host): turned off in the code for such a machine where this host lacks them, so
#: that what `--cpu zen3` compiles runs here too (they are no part of the model: its vector width and registers)
VENDOR_EXTENSIONS = {"sse4a": "sse4a", "fma4": "fma4", "xop": "xop", "tbm": "tbm"}

_V2 = {"sse2", "sse4_2"}
_V3 = _V2 | {"avx", "avx2", "fma", "f16c"}
_V4 = _V3 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
#: the generic x86-64 levels, known without archspec: name -> (LLVM cpu, ISA features)
GENERIC_LEVELS = {
    "x86_64": ("x86-64", frozenset({"sse2"})),
    "x86_64_v2": ("x86-64-v2", frozenset(_V2)),
    "x86_64_v3": ("x86-64-v3", frozenset(_V3)),
    "x86_64_v4": ("x86-64-v4", frozenset(_V4)),
}
#: short names users type -> archspec / generic names
ALIASES = {"avx2": "x86_64_v3", "avx512": "x86_64_v4", "sse": "x86_64", "x86-64": "x86_64",
           "x86-64-v2": "x86_64_v2", "x86-64-v3": "x86_64_v3", "x86-64-v4": "x86_64_v4",
           "znver1": "zen", "znver2": "zen2", "znver3": "zen3", "znver4": "zen4", "znver5": "zen5",
           "icelake-client": "icelake", "icelake-server": "icelake"}
HOST_NAMES = ("", "host", "native")
#: names another machine whose ISA the host model takes (see the module's docstring)
HOST_OVERRIDE_ENV = "LH_WORKBENCH_HOST_CPU"


class MachineError(ValueError):
    pass


@dataclass(frozen=True)
class CpuMachine:
    name: str                       # archspec / generic name ("zen3", "x86_64_v3", ...)
    llvm_cpu: str                   # the LLVM target-cpu ("znver3", "x86-64-v3", ...)
    features: frozenset[str]        # ISA features, cpuinfo spelling (only those of ISA_FEATURES)
    is_host: bool
    physical_cores: int
    logical_cpus: int
    usable_cpus: int                # os.sched_getaffinity: what this process may run on
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    vendor: str = ""
    source: str = ""                # where the ISA came from ("archspec", "/proc/cpuinfo", "generic level")
    notes: tuple[str, ...] = field(default=())

    @property
    def vector_bits(self) -> int:
        return 512 if "avx512f" in self.features else 256 if "avx" in self.features else 128

    @property
    def vector_registers(self) -> int:
        """Architectural SIMD registers: 32 zmm with AVX-512, else 16 (ymm/xmm)."""
        return 32 if "avx512f" in self.features else 16

    @property
    def f32_lanes(self) -> int:
        return self.vector_bits // 32

    @property
    def fma(self) -> bool:
        return "fma" in self.features

    @property
    def bf16_dot_product(self) -> bool:
        """vdpbf16ps on 512-, 256- and 128-bit vectors (AVX512-BF16 with AVX512VL): bf16 pair products
        accumulated in f32 (pipelines/cpu/matmul_vnni.py)."""
        return {"avx512_bf16", "avx512vl"} <= self.features

    @property
    def amx(self) -> bool:
        return "amx_tile" in self.features

    def llvm_target_features(self) -> list[str]:
        """`+f` / `-f` for every tracked feature: the JIT's function attributes for a named machine."""
        here = _cpuinfo_flags()[0]
        return ([("+" if f in self.features else "-") + llvm for f, llvm in ISA_FEATURES.items()]
                + [f"-{llvm}" for f, llvm in VENDOR_EXTENSIONS.items() if f not in here])

    def llvm_target(self) -> dict | None:
        """What the run worker sets on every function (target_cpu, target_features); None for the
        host itself: LLVM's own host detection (which also sees features a hypervisor masks off)."""
        if self.is_host and self.source != HOST_OVERRIDE_ENV:
            return None
        return {"cpu": self.llvm_cpu, "features": self.llvm_target_features()}

    def missing_here(self) -> list[str]:
        """ISA features this machine's code may use that the host lacks (empty: it runs here)."""
        return sorted(self.features - host_machine().features)

    def runnable_here(self) -> tuple[bool, str]:
        missing = self.missing_here()
        if missing:
            return False, (f"code for cpu {self.name} ({self.llvm_cpu}) needs {', '.join(missing)}, which this "
                           f"host ({host_machine().name}) lacks: select and compile only")
        return True, f"{'host CPU' if self.is_host else 'cpu ' + self.name + ' on the host CPU'} " \
                     f"({self.llvm_cpu}, {self.vector_bits}-bit SIMD x {self.vector_registers} registers)"

    def to_json(self) -> dict:
        d = asdict(self)
        d["features"] = sorted(self.features)
        d["notes"] = list(self.notes)
        d.update(vector_bits=self.vector_bits, vector_registers=self.vector_registers, fma=self.fma,
                 amx=self.amx, avx512_bf16="avx512_bf16" in self.features,
                 avx512_vnni="avx512_vnni" in self.features, llvm_target=self.llvm_target())
        return d


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


#: a size's unit letter (sysfs' "32K", a machine name's "l2=2M") -> bytes
SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    text = text.strip()
    if not text:
        return 0
    mult = SIZE_UNITS.get(text[-1:].upper(), 1)
    return int(text.rstrip("KMGkmg")) * mult


def read_caches(cpu_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> dict[str, int]:
    """Data/unified cache sizes per level of CPU 0 (sysfs); defaults where sysfs has none."""
    caches: dict[str, int] = {}
    for d in sorted(cpu_dir.glob("index*")):
        if _read(d / "type") == "Instruction":
            continue
        level, size = _read(d / "level"), _size(_read(d / "size"))
        if level and size:
            caches[f"l{level}"] = size
    return {"l1d_bytes": caches.get("l1", 32 << 10), "l2_bytes": caches.get("l2", 1 << 20),
            "l3_bytes": caches.get("l3", 0)}


def read_cores(cpu_root: Path = Path("/sys/devices/system/cpu")) -> dict[str, int]:
    logical = os.cpu_count() or 1
    cores = set()
    for topo in cpu_root.glob("cpu[0-9]*/topology"):
        package, core = _read(topo / "physical_package_id"), _read(topo / "core_id")
        if core:
            cores.add((package, core))
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else logical
    return {"physical_cores": len(cores) or logical, "logical_cpus": logical, "usable_cpus": usable}


@lru_cache(maxsize=1)
def _cpuinfo_flags() -> tuple[frozenset[str], str]:
    """This host's /proc/cpuinfo flags and vendor (read once: every compile for a named machine asks)."""
    flags: set[str] = set()
    vendor = ""
    for line in _read(Path("/proc/cpuinfo")).splitlines():
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
        elif line.startswith("vendor_id") and not vendor:
            vendor = line.split(":", 1)[1].strip()
    return frozenset(flags), vendor


def _archspec():
    try:
        import archspec.cpu
        return archspec.cpu
    except ImportError:
        return None


def _llvm_name(target) -> str:
    """The clang -march name archspec knows for a microarchitecture ("" when none)."""
    for compiler, version in (("clang", "20"), ("gcc", "14")):
        try:
            flags = target.optimization_flags(compiler, version)
        except Exception:
            continue
        for word in flags.split():
            if word.startswith("-march="):
                return word.split("=", 1)[1]
    return ""


@lru_cache(maxsize=1)
def host_machine() -> CpuMachine:
    """This host's model, or (with LH_WORKBENCH_HOST_CPU set) the named machine's ISA on this host's cores."""
    real = _real_host()
    override = os.environ.get(HOST_OVERRIDE_ENV, "").strip()
    if not override or override.lower() in HOST_NAMES:
        return real
    named = _named_machine(override, real)
    if named.features - real.features:
        raise MachineError(f"{HOST_OVERRIDE_ENV}={override}: needs {', '.join(sorted(named.features - real.features))}, "
                           f"which this host ({real.name}) lacks")
    return replace(named, is_host=True, source=HOST_OVERRIDE_ENV)


@lru_cache(maxsize=1)
def _real_host() -> CpuMachine:
    topology = {**read_cores(), **read_caches()}
    flags, vendor = _cpuinfo_flags()
    spec = _archspec()
    name, llvm_cpu, source = "", "", "/proc/cpuinfo"
    if spec is not None:
        try:
            host = spec.host()
            name, llvm_cpu, source = host.name, _llvm_name(host), "archspec"
            flags = flags | set(host.features)
        except Exception:
            pass
    features = frozenset(f for f in flags if f in ISA_FEATURES)
    if not name:  # the best generic level the flags allow
        name = next((n for n, (_, fs) in reversed(GENERIC_LEVELS.items()) if fs <= features), "x86_64")
    return CpuMachine(name=name, llvm_cpu=llvm_cpu or GENERIC_LEVELS.get(name, ("x86-64",))[0], features=features,
                      is_host=True, vendor=vendor, source=source, **topology)


#: what `NAME:key=value,...` may say of a machine besides its ISA: its cores and its data caches
MACHINE_OVERRIDES = {"cores": "physical cores (the threads its schedules plan for)", "l1d": "L1 data cache a core",
                     "l2": "L2 cache a core", "l3": "L3 cache"}
_MAX_CORES = 4096


def split_machine_name(name: str | None) -> tuple[str, dict[str, int]]:
    """`NAME:cores=16,l2=2M` -> ("NAME", {"cores": 16, "l2": 2097152}); sizes take K/M/G (or KiB/MiB/GiB)
    and mean bytes without one. Raises MachineError naming the bad item."""
    key = (name or "").strip()
    base, sep, rest = key.partition(":")
    if not sep:
        return key, {}
    overrides: dict[str, int] = {}
    for item in rest.split(","):
        item = item.strip()
        field_name, eq, value = item.partition("=")
        field_name, value = field_name.strip().lower(), value.strip()
        if field_name not in MACHINE_OVERRIDES:
            hint = did_you_mean(field_name, list(MACHINE_OVERRIDES))
            raise MachineError(f"cpu {key!r}: unknown item {item!r}{hint} (a machine may say "
                               f"{', '.join(k + '=N' for k in MACHINE_OVERRIDES)}, e.g. {base or 'host'}:cores=16,l2=2M)")
        if not eq or not value:
            raise MachineError(f"cpu {key!r}: {field_name} needs a value ({field_name}=N)")
        if field_name in overrides:
            raise MachineError(f"cpu {key!r}: {field_name} given twice")
        overrides[field_name] = _override_value(key, field_name, value)
    return base.strip(), overrides


def _override_value(key: str, field_name: str, value: str) -> int:
    """A core count (`cores`) or a cache size in bytes (K/M/G or KiB/MiB/GiB: SIZE_UNITS) in its range."""
    if field_name == "cores":
        digits, mult, unit, low, high, span = value, 1, "a whole number", 1, _MAX_CORES, f"1 to {_MAX_CORES}"
    else:
        text = value.upper().removesuffix("IB").removesuffix("B")
        mult = SIZE_UNITS.get(text[-1:], 1)
        digits = text[:-1] if mult > 1 else text
        unit, low, high, span = "a size in bytes, or with K/M/G (48K, 2M, 300MiB)", 1 << 10, 1 << 40, "1K to 1T"
    if not digits.isdigit() or len(digits) > 12:
        raise MachineError(f"cpu {key!r}: {field_name}={value!r} is not {unit}")
    number = int(digits) * mult
    if not low <= number <= high:
        raise MachineError(f"cpu {key!r}: {field_name}={value} is out of range ({span})")
    return number


def machine_for(name: str | None) -> CpuMachine:
    """The model of the machine called `name` (host/native/empty: this host), with the cores and caches its
    `:key=value` items say (split_machine_name). Raises MachineError for a name neither the generic levels,
    the aliases nor archspec know, or an item it cannot read."""
    key, overrides = split_machine_name(name)
    machine = host_machine() if key.lower() in HOST_NAMES else _named_machine(key, host_machine())
    if not overrides:
        return machine
    cores = overrides.get("cores")
    said = ", ".join(f"{k}={v if k == 'cores' else _size_text(v)}" for k, v in overrides.items())
    kept = [k for k in MACHINE_OVERRIDES if k not in overrides]
    note = f"given: {said}" + (f"; {', '.join(kept)} this host's" if kept else "")
    return replace(machine,
                   physical_cores=cores or machine.physical_cores, logical_cpus=cores or machine.logical_cpus,
                   usable_cpus=cores or machine.usable_cpus,
                   l1d_bytes=overrides.get("l1d", machine.l1d_bytes), l2_bytes=overrides.get("l2", machine.l2_bytes),
                   l3_bytes=overrides.get("l3", machine.l3_bytes),
                   notes=tuple(n for n in machine.notes if "this host's" not in n) + (note,))


def _size_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _named_machine(key: str, host: CpuMachine) -> CpuMachine:
    canonical = ALIASES.get(key, ALIASES.get(key.lower(), key.replace("-", "_").lower()))
    keep = dict(physical_cores=host.physical_cores, logical_cpus=host.logical_cpus, usable_cpus=host.usable_cpus,
                l1d_bytes=host.l1d_bytes, l2_bytes=host.l2_bytes, l3_bytes=host.l3_bytes,
                notes=("cores and caches are this host's",))
    if canonical in GENERIC_LEVELS:
        llvm_cpu, features = GENERIC_LEVELS[canonical]
        return CpuMachine(name=canonical, llvm_cpu=llvm_cpu, features=features, is_host=False,
                          source="generic level", **keep)
    spec = _archspec()
    if spec is None:
        generic = sorted(set(GENERIC_LEVELS) | {a for a, n in ALIASES.items() if n in GENERIC_LEVELS})
        raise MachineError(f"unknown cpu {key!r}: without the archspec package only "
                           f"{', '.join(generic)} and host are known")
    target = spec.TARGETS.get(canonical)
    if target is None:
        known = sorted(n for n, t in spec.TARGETS.items() if t.family.name == "x86_64")
        hint = did_you_mean(key, ["host", "avx2", "avx512", *known, *ALIASES])   # znver9: znver4 (LLVM's names too)
        raise MachineError(f"unknown cpu {key!r}{hint} (known: host, avx2, avx512, {', '.join(known)})")
    family = getattr(target.family, "name", "")
    if family != "x86_64":   # aarch64 (neoverse_v1 was "on the host CPU", can_run, llvm_cpu an -march string)
        raise MachineError(f"cpu {key!r} is {'an' if family[:1] in 'aeiou' else 'a'} {family or 'non-x86'} CPU: the cpu target generates x86-64 code "
                           f"(its CPUs: host, avx2, avx512, the x86-64 levels and names such as znver4, "
                           f"sapphirerapids; `lh-workbench targets --cpu NAME` says what one has)")
    llvm_cpu = _llvm_name(target)
    if not llvm_cpu:
        raise MachineError(f"cpu {key!r}: archspec knows no LLVM name for it")
    features = frozenset(f for f in target.features if f in ISA_FEATURES)
    return CpuMachine(name=target.name, llvm_cpu=llvm_cpu, features=features, is_host=False,
                      vendor=target.vendor, source="archspec", **keep)
