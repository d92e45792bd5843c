"""sm_90 tensor-core matmul kernels: TMA loads + wgmma, generated as nvgpu-dialect IR.

No transform op produces `wgmma` (upstream has `rewrite_matmul_as_mma_sync` for the Ampere
`mma.sync` path only), so the Hopper path follows IREE's microkernel model: the schedule
(`pipelines/cuda/matmul.py[gen=matmul_wgmma]`) decides at configuration time and marks the
`linalg.matmul` with `lh.wgmma = {block_m, block_n, stages, consumers, specialize}`; after
bufferization the `wgmma-kernels` rewrite (first stages of `pipeline: cuda-lower`) replaces each
marked op by a call to a generated kernel function built from upstream nvgpu ops:

  host:   two TMA descriptors (`nvgpu.tma.create.descriptor`, 128-byte swizzle: boxes of
          block_m x 64 of A and 64 x 64 of B), cached per buffer address in a host global (making
          one is a driver call + cudaMalloc + a synchronous copy), then one `gpu.launch` of
          (N/block_n, M/block_m) blocks with dynamic shared memory: `stages` slots of (A tile,
          B tile) + 1 KiB for aligning the slots to the 1024-byte swizzle period.
  device: mbarriers `full[s]` (TMA bytes arrived) and `empty[s]` (every consumer warpgroup's
          wgmma on slot s finished). The producer (thread 0 of the first consumer warpgroup, or
          with specialize=1 an extra warpgroup of its own) issues K step j into slot j mod stages
          once `empty` says step j - stages is consumed: `mbarrier.arrive.expect_tx` + TMA loads.
          Each consumer warpgroup owns block_m / consumers rows of C: per K step it waits for
          `full[s]`, builds wgmma descriptors for its rows of A and for B (transposed: B is K x N
          row-major) and issues `nvgpu.warpgroup.mma` with waitGroup = 1, so step k's wgmma runs
          while step k-1's completes; then releases slot (k-1) mod stages.
  epilogue: accumulators (f32) -> shared memory (`nvgpu.warpgroup.mma.store`, rows padded),
          barrier, every consumer thread adds C and writes D, 8 elements at a time, the C loads
          of 4 steps issued before their stores: D = C + A x B with f32 accumulation
          (linalg.matmul's semantics, rounded once). D is C itself, or, where bufferization
          wrote the result in place into C and copied it into an out parameter, that out
          parameter (the copy is dropped).

A and B f16 or bf16, C f16, bf16 or f32 (f32 accumulation either way; f16 operands may opt into f16
accumulation, acc = "f16" in the mark: wgmma .f16.f16.f16 on half the registers, see kernel_text); shapes static, any M, N and
K that are multiples of 8 (N and K: TMA row strides of 16 bytes): edge tiles read zeros past the
operands (TMA out-of-bounds fill), clamp their C loads and predicate their stores; sm_90a (wgmma).
K-major B (a matmul whose B indexing map is transposed: x @ w^T, B stored N x K): fp8 (f8E4M3FN,
f8E5M2) and tf32 (f32 buffers, `tf32 = 1` in the mark) besides f16/bf16; wgmma reads fp8 and tf32 only
this way. One TMA box of block_n x 128 bytes of B per K step; each consumer issues 4 wgmma of 32 bytes
of K, the descriptors advanced by 32 bytes inside the 128-byte swizzled rows (the upstream lowering
would advance a K-major B by whole rows); 64 rows per consumer warpgroup. fp8 TMA descriptors are
made for ui8 (the MLIR 22 lowering of nvgpu.tma.create.descriptor has no fp8 element type).

Fused epilogue: the elementwise linalg.generic right after the marked matmul that reads its result
last (row-vector bias, M x N residual, add/sub/mul/div/max/min/neg and constants: bias + relu is
addf + maximumf with 0; float conversions) is computed in the write-back in f32 on the matmul's result
rounded to C's type, each op's result rounded to its own type (an f16 op's to f16), and the kernel
writes the generic's output buffer, whose element type may differ from C's (torch's f16 matmul:
an f32 accumulation rounded to f16); batched too; anything else stays a separate kernel.

This module only builds text; `rewrite_marked` (MLIR import) does the replacement.
"""
from __future__ import annotations

import contextlib
import hashlib

MARK = "lh.wgmma"
BLOCK_K = 64  # one 128-byte swizzle row of 16-bit elements
SWIZZLE_BYTES = 1024  # 128-byte swizzle repeats every 8 rows: slots must be 1024-byte aligned
WARPGROUP = 128
MAX_SHARED = 227 * 1024  # sm_90 opt-in shared memory per block
GROUP_M = 16  # tile rows per rasterization group (see the block-id mapping in kernel_text)
ACC_PAD = 8  # elements of padding per accumulator row in the epilogue's shared-memory tile
# Accumulator types: f32 (any operands) or, opt-in, f16 (wgmma .f16.f16.f16, f16 operands only): half the
# registers (N/4 .f16x2 registers per m64 piece and thread instead of N/2 .f32), so tiles of twice the
# area fit; the sums are rounded to f16 (at least once per k16 wgmma), so the error grows with K
ACC_TYPES = ("f32", "f16")
ACC_BYTES = {"f32": 4, "f16": 2}
DEFAULTS = {"block_m": 128, "block_n": 128, "stages": 4, "consumers": 1, "specialize": 0, "tf32": 0, "acc": "f32"}
EDGE_MULTIPLE = 8  # K and N: multiples of 8 elements (16-byte TMA strides, 8-column epilogue steps)
AB_TYPES = ("f16", "bf16")  # wgmma m64nNk16 operand types with f32 accumulation (B K x N, N-major)
# K-major B (B stored N x K, the payload's x @ w^T): wgmma reads fp8 and tf32 only K-major. Per K step
# each row of an A or B tile is one 128-byte swizzle row (128 fp8, 64 f16/bf16, 32 tf32 elements);
# each wgmma takes 32 bytes of it (k32 fp8, k16 f16, k8 tf32): 4 wgmma per step, descriptors
# advanced by 32 bytes inside the swizzled rows.
KMAJOR_TYPES = ("f16", "bf16", "f8E4M3FN", "f8E5M2", "tf32")
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f8E4M3FN": 1, "f8E5M2": 1, "tf32": 4}
SWIZZLE_ROW = 128  # bytes per swizzled row: one K step of an operand row
WGMMA_K_BYTES = 32  # bytes of K per wgmma instruction (m64nNk16 f16, k32 fp8, k8 tf32)


def memory_type(ab_type: str) -> str:
    """The operands' memref element type: tf32 operands are f32 buffers read as tf32 by wgmma."""
    return "f32" if ab_type == "tf32" else ab_type


def tma_type(ab_type: str) -> str:
    """The element type the TMA descriptors are made for: the MLIR 22 lowering of
    nvgpu.tma.create.descriptor knows no fp8 types (its CUDA driver enum stops at bf16/f32), so
    fp8 tiles travel as ui8 (the same bytes)."""
    return "ui8" if ELEMENT_BYTES[ab_type] == 1 else memory_type(ab_type)


class KernelConfigError(ValueError):
    pass


def f16_accumulation_error_bound(k: int) -> float:
    """A bound on max |D - exact| / max |exact| of an acc=f16 matmul over K (checks, bench): at worst one
    f16 rounding (2^-11 of the running sum, whatever its direction) per k16 wgmma, plus the roundings of
    C + acc and of the result. Random operands stay far below it (the errors mostly cancel); a misplaced
    fragment or a wrong descriptor gives errors of the order of the result itself."""
    return 2.0 ** -11 * (4 + -(-k // 16))


def check_config(m: int, n: int, k: int, block_m: int, block_n: int, stages: int, consumers: int,
                 specialize: int, elem_bytes: int = 2, b_kmajor: int = 0, acc: str = "f32") -> dict:
    """The derived sizes of a configuration, or KernelConfigError saying what is wrong. acc: the
    accumulator type (ACC_TYPES): f16 accumulators take half the registers and half the epilogue's
    shared memory, and are stored by the kernel itself, so a consumer warpgroup may take 128 rows
    with consumers=2 (block_m=256)."""
    block_k = SWIZZLE_ROW // elem_bytes
    if acc not in ACC_TYPES:
        raise KernelConfigError(f"acc={acc}: {' or '.join(ACC_TYPES)}")
    acc_bytes = ACC_BYTES[acc]
    if consumers not in (1, 2):
        raise KernelConfigError(f"consumers={consumers}: 1 or 2 warpgroups")
    rows = block_m // consumers
    if block_m % consumers or rows % 64:
        raise KernelConfigError(f"block_m={block_m}: each of the {consumers} consumer warpgroup(s) needs a "
                                "multiple of 64 rows (wgmma m64)")
    if block_n % 64 or not 128 <= block_n <= 256:
        # block_n=64 lowers but computes wrong results (measured on the H100: a 2x128x64x64 f16 batch
        # matmul off by 1.4 relative); 128-column tiles cover N = 64 with TMA zero fill
        raise KernelConfigError(f"block_n={block_n}: 128, 192 or 256 (wgmma n <= 256, 64-column B boxes; "
                                "64 computes wrong results)")
    if block_m > 256:
        raise KernelConfigError(f"block_m={block_m}: at most 256 (TMA box)")
    if consumers == 2 and rows != 64 and acc == "f32":
        raise KernelConfigError(f"block_m={block_m} with consumers=2: each consumer warpgroup takes 64 rows "
                                "(block_m = 128; 256 with acc=f16); nvgpu.warpgroup.mma.store places warps by "
                                "thread id")
    if b_kmajor and rows != 64:
        raise KernelConfigError(f"block_m={block_m} with consumers={consumers}: K-major B (fp8, tf32 or x @ w^T) "
                                "needs 64 rows per consumer warpgroup (block_m=64, or block_m=128 consumers=2)")
    acc_regs = rows * block_n * acc_bytes // (WARPGROUP * 4)  # 32-bit registers (f16: two per register)
    if acc_regs > 128:
        hint = "" if acc == "f16" else " (or acc=f16 with f16 operands: half the registers)"
        raise KernelConfigError(f"{rows}x{block_n} {acc} accumulator rows per warpgroup need {acc_regs} registers "
                                f"per thread (at most 128): use consumers=2 or smaller blocks{hint}")
    # Edges: the grid covers ceil(M / block_m) x ceil(N / block_n) tiles and ceil(K / 64) K steps; TMA
    # fills the parts of a box outside the operand with zeros (they add nothing), the epilogue clamps
    # its C loads into the matrix and predicates its stores. What TMA itself needs: row strides that
    # are multiples of 16 bytes (K and N multiples of 8 halves); the epilogue moves 8 columns at once.
    for dim, size, multiple in (("K", k, max(16 // elem_bytes, 1) if b_kmajor else EDGE_MULTIPLE),
                                ("N", n, EDGE_MULTIPLE)):
        if size % multiple:
            raise KernelConfigError(f"{dim}={size} is not a multiple of {multiple} (TMA row strides are "
                                    "multiples of 16 bytes; the epilogue writes 8 columns at once)")
    if min(m, n, k) < 1:
        raise KernelConfigError(f"empty matmul {m}x{n}x{k}")
    if stages < 2:
        raise KernelConfigError("stages must be at least 2")
    a_bytes, b_bytes = block_m * SWIZZLE_ROW, block_n * SWIZZLE_ROW
    pipeline = stages * (a_bytes + b_bytes)
    epilogue = block_m * (block_n + ACC_PAD) * acc_bytes
    shared = max(pipeline, epilogue) + SWIZZLE_BYTES
    if shared > MAX_SHARED:
        raise KernelConfigError(f"{stages} stages of {block_m}x{block_n} tiles need {shared // 1024} KiB of shared "
                                f"memory (at most {MAX_SHARED // 1024})")
    threads = WARPGROUP * (consumers + (1 if specialize else 0))
    return {"rows": rows, "a_bytes": a_bytes, "b_bytes": b_bytes, "shared": shared, "threads": threads,
            "block_k": block_k, "k_steps": -(-k // block_k), "grid_m": -(-m // block_m), "grid_n": -(-n // block_n),
            "edge_m": m % block_m != 0, "edge_n": n % block_n != 0}


def kernel_name(m, n, k, cfg: dict) -> str:
    key = hashlib.sha256(repr((m, n, k, sorted(cfg.items()))).encode()).hexdigest()[:8]
    return f"lh_wgmma_matmul_{m}x{n}x{k}_{key}"


class _Text:
    """Numbered SSA values and index constants for generated MLIR text."""

    def __init__(self, indent: str = "  "):
        self.lines: list[str] = []
        self.indent = indent
        self._n = 0
        self._consts: dict[tuple, str] = {}

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def val(self, expr: str, hint: str = "v") -> str:
        self._n += 1
        name = f"%{hint}{self._n}"
        self.emit(f"{name} = {expr}")
        return name

    def const(self, value: int, ty: str = "index") -> str:
        key = (value, ty)
        if key not in self._consts:
            self._n += 1
            name = f"%c{value if value >= 0 else 'm' + str(-value)}_{ty}_{self._n}"
            self.emit(f"{name} = arith.constant {value} : {ty}")
            self._consts[key] = name
        return self._consts[key]

    def fresh(self, hint: str) -> str:
        """A new SSA name (for values an op's region yields)."""
        self._n += 1
        return f"%{hint}{self._n}"

    def in_bounds(self, i: str, limit_i: int, j: str, limit_j: int, valid: str | None = None) -> str:
        """The i1 `i < limit_i and j < limit_j` (and `valid`, where given) of index values i, j."""
        a = self.val(f"arith.cmpi ult, {i}, {self.const(limit_i)} : index", "ok")
        c = self.val(f"arith.cmpi ult, {j}, {self.const(limit_j)} : index", "ok")
        ok = self.val(f"arith.andi {a}, {c} : i1", "ok")
        return ok if valid is None else self.val(f"arith.andi {ok}, {valid} : i1", "ok")

    def value_if(self, cond: str, expr: str, ty: str, otherwise: str, hint: str = "v") -> str:
        """`scf.if cond -> (ty)`: `expr` (one op's result) when cond holds, else `otherwise`."""
        name = self.fresh(hint)
        with self.region(f"{name} = scf.if {cond} -> ({ty})", close=False):
            self.emit(f"scf.yield {self.val(expr, hint)} : {ty}")
        with self.region("} else"):
            self.emit(f"scf.yield {otherwise} : {ty}")
        return name

    @contextlib.contextmanager
    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int,
               dyn_type: str = "memref<?xi8, #gpu.address_space<workgroup>>"):
        """A gpu.launch of `grid` blocks of `block` threads (%bx.. / %tx..) with `shared_bytes` of dynamic
        shared memory; yields the dynamic shared memory (a memref of dyn_type)."""
        gx, gy, gz = (self.const(g) for g in grid)
        sx, sy, sz = (self.const(s) for s in block)
        with self.region(f"gpu.launch blocks(%bx, %by, %bz) in (%gx = {gx}, %gy = {gy}, %gz = {gz}) "
                         f"threads(%tx, %ty, %tz) in (%sx = {sx}, %sy = {sy}, %sz = {sz}) "
                         f"dynamic_shared_memory_size {self.const(shared_bytes, 'i32')}"):
            yield self.val(f"gpu.dynamic_shared_memory : {dyn_type}", "dyn")
            self.emit("gpu.terminator")

    @contextlib.contextmanager
    def region(self, header: str | None, close: bool = True):
        """`header {` ... `}` (close=False: the next region continues it, e.g. `} else`); header None:
        no region at all (a conditional wrapper that is off). Constants defined inside a region are not
        visible after it: they are forgotten on exit."""
        if header is None:
            yield
            return
        self.emit(header + " {")
        saved = dict(self._consts)
        self.indent += "  "
        try:
            yield
        finally:
            self._consts = saved
            self.indent = self.indent[:-2]
            if close:
                self.emit("}")


C_TYPES = ("f16", "bf16", "f32")
MARKABLE = ("linalg.matmul", "linalg.batch_matmul")


def kernel_text(name: str, m: int, n: int, k: int, block_m: int = 128, block_n: int = 128, stages: int = 4,
                consumers: int = 1, specialize: int = 0, c_type: str = "f16", ab_type: str = "f16",
                batch: int = 0, b_kmajor: int = 0, epilogue: dict | None = None, zero_c: int = 0,
                d_type: str = "", acc: str = "f32") -> str:
    """`func.func private @name(%A: memref<MxKx{ab_type}>, %B: memref<KxNx{ab_type}>, %C: memref<MxNx{c_type}>,
    %D: memref<MxNx{c_type}>)`: D = C + A x B (D may be C itself), f32 accumulation (acc="f16": f16).

    batch > 0: the operands are memref<batch x ...> (linalg.batch_matmul); the kernel works on their
    row-collapsed 2-D views ((batch M) x K, (batch K) x N, (batch M) x N) with the batch as the grid's
    z: A boxes past row M of a batch read the next batch's rows, which reach only C rows past M (not
    stored); B boxes past row K would read the next batch's rows, so K must be a multiple of 64.

    epilogue: the elementwise op that followed the matmul, fused (see EPILOGUE_OPS and
    `_epilogue_of`): {"args": [("row" | "full", element type), ...], "ops": [(op name, [operand refs])],
    "result": ref}; refs are "acc" (the matmul's result, rounded to C's type), "arg<i>" (extra operand
    i: a row vector memref<N> or a memref<MxN>, memref<batch x M x N> when batched), "op<j>" (op j's
    result) and "const:<float>"; the ops are computed in f32, a "round:<type>" op rounds to <type>. The
    function then takes those operands after %D, and writes the op's result into %D, whose element
    type is d_type (default C's: torch's f16 matmul accumulates into f32 and rounds in an epilogue).

    b_kmajor=1: %B is memref<N x K> (the payload's x @ w^T), read K-major: the only B layout wgmma
    takes for fp8 (f8E4M3FN, f8E5M2) and tf32 (ab_type "tf32": f32 buffers); f16/bf16 work either way.

    zero_c=1: C holds zeros (the payload filled it with 0 right before: torch's `A @ B` is a fill and
    a matmul), so the kernel never reads it: D = A x B, one pass over D instead of a fill kernel, a
    read of C and a write of D.

    acc="f16": the wgmma accumulate in f16 (`wgmma.mma_async ... .f16.f16.f16`, f16 operands only),
    issued as nvvm.wgmma.mma_async on structs of N/4 i32 (.f16x2) registers per m64 piece: MLIR 22's
    nvgpu ops cannot (nvgpu.warpgroup.mma lowers an f16 accumulator to a struct of f16 members, which
    the inline-PTX builder refuses, and nvgpu.warpgroup.mma.store takes f32 only). The kernel stores the
    fragments itself: register r of m64 piece p holds the two columns 8 (r / 2) + 2 (lane % 4) + {0, 1}
    of row 64 p + 16 warp + lane / 4 + 8 (r % 2) (the f32 fragment layout, two elements per register),
    one 32-bit shared store each; the write-back reads f16 and widens to f32 (D = C + acc as above)."""
    if acc not in ACC_TYPES:
        raise KernelConfigError(f"acc={acc}: {' or '.join(ACC_TYPES)}")
    if acc == "f16" and ab_type != "f16":
        raise KernelConfigError(f"acc=f16 needs f16 operands (wgmma accumulates in f16 only for f16 x f16): "
                                f"A and B are {ab_type}")
    if c_type not in C_TYPES:
        raise KernelConfigError(f"C of {c_type}: the wgmma kernel writes {' or '.join(C_TYPES)}")
    allowed = KMAJOR_TYPES if b_kmajor else AB_TYPES
    if ab_type not in allowed:
        extra = " (fp8 and tf32 need B transposed, K-major: the payload's x @ w^T)" if ab_type in KMAJOR_TYPES else ""
        raise KernelConfigError(f"A and B of {ab_type}: the wgmma kernel reads {' or '.join(allowed)}{extra}")
    eb = ELEMENT_BYTES[ab_type]
    d = check_config(m, n, k, block_m, block_n, stages, consumers, specialize, eb, b_kmajor, acc)
    rows, a_bytes, b_bytes, k_steps = d["rows"], d["a_bytes"], d["b_bytes"], d["k_steps"]
    bk = d["block_k"]
    smem = "#gpu.address_space<workgroup>"
    mem = memory_type(ab_type)  # the operands' element type
    ab = tma_type(ab_type)  # the TMA descriptors' and shared tiles' element type
    wk = WGMMA_K_BYTES // eb  # K elements per wgmma instruction
    d_type = d_type or c_type
    if d_type not in C_TYPES:
        raise KernelConfigError(f"D of {d_type}: the wgmma kernel writes {' or '.join(C_TYPES)}")
    if d_type != c_type and not epilogue:
        raise KernelConfigError("D's element type differs from C's: only a fused epilogue converts")
    if batch and not b_kmajor and k % BLOCK_K:
        raise KernelConfigError(f"batched K={k} is not a multiple of {BLOCK_K} (a B box past K would read the "
                                "next batch's rows)")
    rows_a, rows_b = max(batch, 1) * m, max(batch, 1) * (n if b_kmajor else k)
    b_cols = k if b_kmajor else n
    ta, tb, tc = f"memref<{rows_a}x{k}x{mem}>", f"memref<{rows_b}x{b_cols}x{mem}>", f"memref<{rows_a}x{n}x{c_type}>"
    td = f"memref<{rows_a}x{n}x{d_type}>"
    bar_t = f"!nvgpu.mbarrier.group<memorySpace = {smem}, num_barriers = {stages}>"
    b_box = f"{block_n}x{bk}" if b_kmajor else f"{BLOCK_K}x64"
    map_a = (f"!nvgpu.tensormap.descriptor<tensor = memref<{block_m}x{bk}x{ab}, 3>, swizzle = swizzle_128b, "
             "l2promo = none, oob = zero, interleave = none>")
    map_b = (f"!nvgpu.tensormap.descriptor<tensor = memref<{b_box}x{ab}, 3>, swizzle = swizzle_128b, "
             "l2promo = none, oob = zero, interleave = none>")
    acc_t = f"!nvgpu.warpgroup.accumulator<fragmented = vector<{rows}x{block_n}xf32>>"
    pieces = rows // 64  # m64 wgmma pieces per consumer warpgroup
    f16acc = acc == "f16"
    # acc=f16: one LLVM struct of N/4 .f16x2 registers per m64 piece (see the docstring)
    acc16_t = "!llvm.struct<(" + ", ".join(["i32"] * (block_n // 4)) + ")>"
    if b_kmajor:  # one wgmma instruction's operands: the K extent is wk, the descriptors are advanced by hand
        wa_t = f"!nvgpu.warpgroup.descriptor<tensor = memref<{rows}x{wk}x{ab_type}, {smem}>>"
        wb_t = f"!nvgpu.warpgroup.descriptor<tensor = memref<{wk}x{block_n}x{ab_type}, {smem}>>"
    else:
        wa_t = f"!nvgpu.warpgroup.descriptor<tensor = memref<{rows}x{BLOCK_K}x{ab}, {smem}>>"
        wb_t = f"!nvgpu.warpgroup.descriptor<tensor = memref<{BLOCK_K}x{block_n}x{ab}, {smem}>>"
    dyn_t = f"memref<?xi8, {smem}>"
    b_base = stages * a_bytes  # byte offset of the B slots after the A slots
    stride = block_n + ACC_PAD  # elements per row of the accumulator tile in shared memory
    tx = a_bytes + b_bytes

    t = _Text()
    cache = f"{name}_tma_cache"
    epi_args = [(f"%E{i}", f"memref<{n}x{ety}>" if kind == "row" else f"memref<{rows_a}x{n}x{ety}>", kind, ety)
                for i, (kind, ety) in enumerate((epilogue or {}).get("args", []))]
    extra = "".join(f", {v}: {ty}" for v, ty, _, _ in epi_args)
    out = [f'memref.global "private" @{cache} : memref<4xi64> = dense<0>',
           f"func.func private @{name}(%A: {ta}, %B: {tb}, %C: {tc}, %D: {td}{extra}) {{"]
    if batch:  # the 3-D operands, collapsed to the 2-D views the kernel works on
        ta3 = f"memref<{batch}x{m}x{k}x{mem}>"
        tb3 = f"memref<{batch}x{n}x{k}x{mem}>" if b_kmajor else f"memref<{batch}x{k}x{n}x{mem}>"
        tc3, td3 = f"memref<{batch}x{m}x{n}x{c_type}>", f"memref<{batch}x{m}x{n}x{d_type}>"
        full, extra3 = [], ""  # the epilogue's M x N operands are batched too: collapsed like C
        for v, ty, kind, ety in epi_args:
            if kind == "full":
                t3 = f"memref<{batch}x{m}x{n}x{ety}>"
                full.append((v[1:], t3, ty))
                extra3 += f", {v}3: {t3}"
            else:
                extra3 += f", {v}: {ty}"
        out[-1] = f"func.func private @{name}(%A3: {ta3}, %B3: {tb3}, %C3: {tc3}, %D3: {td3}{extra3}) {{"
        for v, t3, t2 in [("A", ta3, ta), ("B", tb3, tb), ("C", tc3, tc), ("D", td3, td)] + full:
            out.append(f"  %{v} = memref.collapse_shape %{v}3 [[0, 1], [2]] : {t3} into {t2}")
    # host: TMA descriptors, cached per buffer address (creating one is a driver call, a device
    # allocation and a synchronous copy: tens of microseconds per call otherwise)
    cache_ref = t.val(f"memref.get_global @{cache} : memref<4xi64>", "cache")

    def descriptor(operand: str, ty: str, box: str, map_t: str, slot: int, hint: str) -> str:
        if ab != mem:  # fp8 buffers: the same bytes as ui8 (see tma_type); folded away by the LLVM lowering
            as_bytes = ty.replace(f"x{mem}>", f"x{ab}>")
            operand = t.val(f"builtin.unrealized_conversion_cast {operand} : {ty} to {as_bytes}", "bytes")
            ty = as_bytes
        ptr = t.val(f"memref.extract_aligned_pointer_as_index {operand} : {ty} -> index", "ptr")
        ptr64 = t.val(f"arith.index_cast {ptr} : index to i64", "ptr64")
        old = t.val(f"memref.load {cache_ref}[{t.const(slot)}] : memref<4xi64>", "cached")
        hit = t.val(f"arith.cmpi eq, {old}, {ptr64} : i64", "hit")
        with t.region(f"%{hint}_i64 = scf.if {hit} -> (i64)", close=False):
            known = t.val(f"memref.load {cache_ref}[{t.const(slot + 1)}] : memref<4xi64>", "known")
            t.emit(f"scf.yield {known} : i64")
        with t.region("} else"):
            unranked = t.val(f"memref.cast {operand} : {ty} to memref<*x{ab}>", "unranked")
            made = t.val(f"nvgpu.tma.create.descriptor {unranked} box[{box}] : memref<*x{ab}> -> {map_t}", "made")
            as_ptr = t.val(f"builtin.unrealized_conversion_cast {made} : {map_t} to !llvm.ptr", "madeptr")
            as_int = t.val(f"llvm.ptrtoint {as_ptr} : !llvm.ptr to i64", "madeint")
            t.emit(f"memref.store {ptr64}, {cache_ref}[{t.const(slot)}] : memref<4xi64>")
            t.emit(f"memref.store {as_int}, {cache_ref}[{t.const(slot + 1)}] : memref<4xi64>")
            t.emit(f"scf.yield {as_int} : i64")
        back = t.val(f"llvm.inttoptr %{hint}_i64 : i64 to !llvm.ptr", "descptr")
        return t.val(f"builtin.unrealized_conversion_cast {back} : !llvm.ptr to {map_t}", hint)

    c64 = t.const(64)
    cbk = t.const(bk)
    desc_a = descriptor("%A", ta, f"{t.const(block_m)}, {cbk}", map_a, 0, "descA")
    desc_b = descriptor("%B", tb, f"{t.const(block_n)}, {cbk}" if b_kmajor else f"{c64}, {c64}", map_b, 2, "descB")
    shm = t.const(d["shared"], "i32")
    tiles = d["grid_m"] * d["grid_n"]
    gx, gy, one, nthreads = t.const(tiles), t.const(1), t.const(1), t.const(d["threads"])
    gz = t.const(batch) if batch else one
    with t.region(f"gpu.launch blocks(%bx, %by, %bz) in (%gx = {gx}, %gy = {gy}, %gz = {gz}) "
                  f"threads(%tx, %ty, %tz) in (%sx = {nthreads}, %sy = {one}, %sz = {one}) "
                  f"dynamic_shared_memory_size {shm}"):
        t.emit(f"memref.assume_alignment %C, 16 : {tc}")
        t.emit(f"memref.assume_alignment %D, 16 : {td}")
        tid = "%tx"
        # Grouped rasterization: block ids walk GROUP_M tile rows down one tile column, then the next
        # column, so the blocks resident together share A rows and B columns in L2 (in row order, at
        # 8192^3 each wave of 132 blocks spans 4 tile rows and all 32 columns: B streamed from DRAM
        # once per 4 tile rows).
        group = min(GROUP_M, d["grid_m"])
        per_group = group * d["grid_n"]
        gid = t.val(f"arith.divui %bx, {t.const(per_group)} : index", "gid")
        first_m = t.val(f"arith.muli {gid}, {t.const(group)} : index", "firstm")
        left = t.val(f"arith.subi {t.const(d['grid_m'])}, {first_m} : index", "leftm")
        rows_here = t.val(f"arith.minui {left}, {t.const(group)} : index", "groupm")
        within = t.val(f"arith.remui %bx, {t.const(per_group)} : index", "within")
        tm_off = t.val(f"arith.remui {within}, {rows_here} : index", "tmoff")
        tile_m = t.val(f"arith.addi {first_m}, {tm_off} : index", "tilem")
        tile_n = t.val(f"arith.divui {within}, {rows_here} : index", "tilen")
        m0 = t.val(f"arith.muli {tile_m}, {t.const(block_m)} : index", "m0")
        # the batch's first rows of A / C and of B in the collapsed views
        a_row0 = t.val(f"arith.muli %bz, {t.const(m)} : index", "arow0") if batch else None
        b_row0 = t.val(f"arith.muli %bz, {t.const(n if b_kmajor else k)} : index", "brow0") if batch else None
        am0 = t.val(f"arith.addi {m0}, {a_row0} : index", "am0") if batch else m0
        n0 = t.val(f"arith.muli {tile_n}, {t.const(block_n)} : index", "n0")
        dyn = t.val(f"gpu.dynamic_shared_memory : {dyn_t}", "dyn")
        # The slots start at shared-window address 1024: 1024-byte aligned for the swizzle, and past
        # the static shared memory (the mbarriers, and the symbol MLIR lowers dynamic shared memory
        # to: an internal zero-size array that NVPTX demotes to a 1-byte static variable, so the
        # dynamic region is not necessarily at its address). `shared` includes these 1024 bytes.
        addr = t.val(f"memref.extract_aligned_pointer_as_index {dyn} : {dyn_t} -> index", "addr")
        rem = t.val(f"arith.remui {addr}, {t.const(SWIZZLE_BYTES)} : index", "rem")
        base = t.val(f"arith.subi {t.const(SWIZZLE_BYTES)}, {rem} : index", "base")
        full = t.val(f"nvgpu.mbarrier.create -> {bar_t}", "full")
        empty = t.val(f"nvgpu.mbarrier.create -> {bar_t}", "empty")
        first = t.val(f"arith.cmpi eq, {tid}, {t.const(0)} : index", "first")
        for s in range(stages):
            t.emit(f"nvgpu.mbarrier.init {full}[{t.const(s)}], {t.const(1)}, predicate = {first} : {bar_t}")
            t.emit(f"nvgpu.mbarrier.init {empty}[{t.const(s)}], {t.const(consumers)}, predicate = {first} : {bar_t}")
        t.emit(f"nvgpu.tma.prefetch.descriptor {desc_a}, predicate = {first} : {map_a}")
        t.emit(f"nvgpu.tma.prefetch.descriptor {desc_b}, predicate = {first} : {map_b}")
        t.emit("gpu.barrier")
        ticks = t.const(10000000)
        wg = t.val(f"arith.divui {tid}, {t.const(WARPGROUP)} : index", "wg")
        lane = t.val(f"arith.remui {tid}, {t.const(WARPGROUP)} : index", "lane")

        def slot_view(byte_offset: str, shape: str, hint: str) -> str:
            return t.val(f"memref.view {dyn}[{byte_offset}][] : {dyn_t} to memref<{shape}x{ab}, {smem}>", hint)

        def a_slot(s: str) -> str:
            """Byte offset of slot s's A tile in the dynamic shared memory."""
            off = t.val(f"arith.muli {s}, {t.const(a_bytes)} : index", "aoff")
            return t.val(f"arith.addi {off}, {base} : index", "aoff")

        def b_slot(s: str) -> str:
            """Byte offset of slot s's B tile (the B tiles follow all the A tiles)."""
            off = t.val(f"arith.muli {s}, {t.const(b_bytes)} : index", "boff")
            off = t.val(f"arith.addi {off}, {t.const(b_base)} : index", "boff")
            return t.val(f"arith.addi {off}, {base} : index", "boff")

        def parity(round_: str) -> str:
            """The i1 phase parity of mbarrier round `round_` (index)."""
            r64 = t.val(f"arith.index_cast {round_} : index to i64", "r64")
            return t.val(f"arith.trunci {r64} : i64 to i1", "parity")

        def issue(j: str, first_round: bool = False) -> None:
            """Producer thread: K step j into slot j mod stages, after the slot's previous step (j - stages)
            was consumed (not waited for in the prologue, where j < stages)."""
            s = t.val(f"arith.remui {j}, {t.const(stages)} : index", "s")
            if not first_round:
                rnd = t.val(f"arith.divui {j}, {t.const(stages)} : index", "round")
                again = t.val(f"arith.cmpi uge, {j}, {t.const(stages)} : index", "again")
                with t.region(f"scf.if {again}"):
                    prev = t.val(f"arith.subi {rnd}, {t.const(1)} : index", "prev")
                    t.emit(f"nvgpu.mbarrier.try_wait.parity {empty}[{s}], {parity(prev)}, {ticks} : {bar_t}")
            t.emit(f"nvgpu.mbarrier.arrive.expect_tx {full}[{s}], {t.const(tx)} : {bar_t}")
            kc = t.val(f"arith.muli {j}, {t.const(bk)} : index", "kc")
            a_dst = slot_view(a_slot(s), f"{block_m}x{bk}", "adst")
            t.emit(f"nvgpu.tma.async.load {desc_a}[{kc}, {am0}], {full}[{s}] to {a_dst} : {map_a}, {bar_t} -> "
                   f"memref<{block_m}x{bk}x{ab}, {smem}>")
            b_off = b_slot(s)
            if b_kmajor:  # one box of block_n rows (N) x one swizzle row of K
                dst = slot_view(b_off, b_box, "bdst")
                brow = t.val(f"arith.addi {n0}, {b_row0} : index", "bn0") if batch else n0
                t.emit(f"nvgpu.tma.async.load {desc_b}[{kc}, {brow}], {full}[{s}] to {dst} : {map_b}, {bar_t} -> "
                       f"memref<{b_box}x{ab}, {smem}>")
                return
            b_k0 = t.val(f"arith.addi {kc}, {b_row0} : index", "bk") if batch else kc
            for piece in range(block_n // 64):
                off = t.val(f"arith.addi {b_off}, {t.const(piece * BLOCK_K * 64 * 2)} : index", "bpoff")
                dst = slot_view(off, f"{BLOCK_K}x64", "bdst")
                col = t.val(f"arith.addi {n0}, {t.const(piece * 64)} : index", "ncol")
                t.emit(f"nvgpu.tma.async.load {desc_b}[{col}, {b_k0}], {full}[{s}] to {dst} : {map_b}, {bar_t} -> "
                       f"memref<{BLOCK_K}x64x{ab}, {smem}>")

        def consume(ksteps: str) -> None:
            """A consumer warpgroup's main loop, then its accumulators into shared memory."""
            if f16acc:  # one struct of .f16x2 registers per m64 piece, carried by the loop
                zero = t.val(f"llvm.mlir.zero : {acc16_t}", "acc")
                carried = [(f"%acc_in{p}", zero, acc16_t) for p in range(pieces)]
            else:
                carried = [("%acc_in", t.val(f"nvgpu.warpgroup.mma.init.accumulator -> {acc_t}", "acc"), acc_t)]
            results = "%accf" + (f":{len(carried)}" if len(carried) > 1 else "")
            wg_first = t.val(f"arith.cmpi eq, {lane}, {t.const(0)} : index", "wgfirst")
            a_rows_off = t.val(f"arith.muli {wg}, {t.const(rows * SWIZZLE_ROW)} : index", "arows")
            with t.region(f"{results} = scf.for %k = {t.const(0)} to {ksteps} step {t.const(1)} "
                          f"iter_args({', '.join(f'{v} = {init}' for v, init, _ in carried)}) -> "
                          f"({', '.join(ty for _, _, ty in carried)})"):
                s = t.val(f"arith.remui %k, {t.const(stages)} : index", "s")
                rnd = t.val(f"arith.divui %k, {t.const(stages)} : index", "round")
                t.emit(f"nvgpu.mbarrier.try_wait.parity {full}[{s}], {parity(rnd)}, {ticks} : {bar_t}")
                a_off = t.val(f"arith.addi {a_slot(s)}, {a_rows_off} : index", "aoff")
                def wgmma(a_at: str, b_at, b_shape: str, a_k: int, acc_in: str, transpose: str) -> str:
                    """Descriptors of the A tile at `a_at` and the B tile at `b_at` (an offset, or a function
                    emitting it after the A view), then their wgmma."""
                    a_tile = slot_view(a_at, f"{rows}x{a_k}", "atile")
                    b_tile = slot_view(b_at() if callable(b_at) else b_at, b_shape, "btile")
                    da = t.val(f"nvgpu.warpgroup.generate.descriptor {a_tile}, {desc_a} : "
                               f"memref<{rows}x{a_k}x{ab}, {smem}>, {map_a} -> {wa_t}", "da")
                    db = t.val(f"nvgpu.warpgroup.generate.descriptor {b_tile}, {desc_b} : "
                               f"memref<{b_shape}x{ab}, {smem}>, {map_b} -> {wb_t}", "db")
                    if f16acc:
                        return wgmma16(da, db, acc_in, 1 if b_kmajor else a_k // wk)
                    return t.val(f"nvgpu.warpgroup.mma {da}, {db}, {acc_in} {{{transpose}waitGroup = 1 : i64}} : "
                                 f"{wa_t}, {wb_t}, {acc_t} -> {acc_t}", "accn")

                def wgmma16(da: str, db: str, accs: list[str], k_parts: int) -> list[str]:
                    """acc=f16: the nvvm.wgmma.mma_async that nvgpu.warpgroup.mma lowers to, on i32 structs:
                    per m64 piece p and k16 part, the descriptors advanced as its lowering advances them
                    (A: 64 rows of 128 bytes per piece, 32 bytes per part; B, K x N: 16 rows of 128 bytes)."""
                    da64 = t.val(f"builtin.unrealized_conversion_cast {da} : {wa_t} to i64", "da64")
                    db64 = t.val(f"builtin.unrealized_conversion_cast {db} : {wb_t} to i64", "db64")
                    out = []
                    for p, acc_p in enumerate(accs):
                        for kk in range(k_parts):
                            a_inc = (p * 64 * SWIZZLE_ROW + kk * WGMMA_K_BYTES) >> 4  # 16-byte units
                            b_inc = (kk * 16 * SWIZZLE_ROW) >> 4
                            a_d = t.val(f"arith.addi {da64}, {t.const(a_inc, 'i64')} : i64", "dak") if a_inc else da64
                            b_d = t.val(f"arith.addi {db64}, {t.const(b_inc, 'i64')} : i64", "dbk") if b_inc else db64
                            acc_p = t.val(f"nvvm.wgmma.mma_async {a_d}, {b_d}, {acc_p}, <m = 64, n = {block_n}, k = 16>, "
                                          "D[<f16>, <one>, <wrapped>], A[<f16>, <one>, <row>], "
                                          f"B[<f16>, <one>, <{'col' if b_kmajor else 'row'}>] : {acc16_t} -> {acc16_t}",
                                          "acc16")
                        out.append(acc_p)
                    return out

                acc_in = [v for v, _, _ in carried] if f16acc else carried[0][0]
                if f16acc:  # one wgmma group per K step (nvgpu.warpgroup.mma: one per op)
                    t.emit("nvvm.wgmma.fence.aligned")
                if b_kmajor:
                    # 4 wgmma per step, each on the next 32 bytes of the swizzled rows of A and B (the
                    # upstream lowering advances a K-major B descriptor by whole rows: not usable here)
                    acc, b_off = acc_in, b_slot(s)
                    for part in range(SWIZZLE_ROW // WGMMA_K_BYTES):
                        shift = t.const(part * WGMMA_K_BYTES)
                        a_part = t.val(f"arith.addi {a_off}, {shift} : index", "apart") if part else a_off
                        b_part = t.val(f"arith.addi {b_off}, {shift} : index", "bpart") if part else b_off
                        acc = wgmma(a_part, b_part, b_box, bk, acc, "")
                else:
                    acc = wgmma(a_off, lambda: b_slot(s), f"{BLOCK_K}x{block_n}", BLOCK_K, acc_in, "transposeB, ")
                if f16acc:  # at most one group in flight, as nvgpu.warpgroup.mma's waitGroup = 1
                    t.emit("nvvm.wgmma.commit.group.sync.aligned")
                    t.emit("nvvm.wgmma.wait.group.sync.aligned 1")
                # step k-1's wgmma is complete (at most one group in flight): release its slot
                has_prev = t.val(f"arith.cmpi uge, %k, {t.const(1)} : index", "hasprev")
                rel = t.val(f"arith.andi {has_prev}, {wg_first} : i1", "release")
                with t.region(f"scf.if {rel}"):
                    km1 = t.val(f"arith.subi %k, {t.const(1)} : index", "km1")
                    ps = t.val(f"arith.remui {km1}, {t.const(stages)} : index", "ps")
                    t.val(f"nvgpu.mbarrier.arrive {empty}[{ps}] : {bar_t} -> !nvgpu.mbarrier.token", "tok")
                if not specialize:  # thread 0 refills the slot just released with step k + stages - 1
                    j = t.val(f"arith.addi %k, {t.const(stages - 1)} : index", "next")
                    more = t.val(f"arith.cmpi ult, {j}, {ksteps} : index", "more")
                    go = t.val(f"arith.andi {more}, {first} : i1", "issue")
                    with t.region(f"scf.if {go}"):
                        issue(j)
                if f16acc:
                    t.emit(f"scf.yield {', '.join(acc)} : {', '.join([acc16_t] * pieces)}")
                else:
                    t.emit(f"scf.yield {acc} : {acc_t}")
            t.emit("nvvm.wgmma.wait.group.sync.aligned 0")
            # every consumer is done reading the slots before any accumulator overwrites them
            t.emit(f"nvvm.barrier id = {t.const(1, 'i32')} number_of_threads = {t.const(WARPGROUP * consumers, 'i32')}")
            if f16acc:
                store_f16_fragments()
                return
            # The store's lowering places warp w of the *block* (tid.x / 32, not the warp within the
            # warpgroup) at rows 16w.. of the destination, so every consumer passes a view starting at
            # the block's accumulator region (the verifier wants the warpgroup's own shape); warpgroup
            # 1's rows land at 64.. (block_m = 128, consumers = 2) by its thread ids. Rows are padded by
            # ACC_PAD floats: unpadded, the 8 rows a warp stores at once all hit the same banks.
            padded = t.val(f"memref.view {dyn}[{base}][] : {dyn_t} to memref<{rows}x{stride}xf32, {smem}>", "accpad")
            acc_t_mem = f"memref<{rows}x{block_n}xf32, strided<[{stride}, 1]>, {smem}>"
            acc_smem = t.val(f"memref.subview {padded}[0, 0] [{rows}, {block_n}] [1, 1] : "
                             f"memref<{rows}x{stride}xf32, {smem}> to {acc_t_mem}", "accsmem")
            t.emit(f"nvgpu.warpgroup.mma.store %accf, {acc_smem} : {acc_t} to {acc_t_mem}")

        def store_f16_fragments() -> None:
            """acc=f16: each thread's .f16x2 registers into the block's accumulator tile (rows of `stride`
            halves), one 32-bit store each: register r of m64 piece p at row wg rows + 64 p + 16 warp +
            lane / 4 + 8 (r % 2), columns 8 (r / 2) + 2 (lane % 4) + {0, 1} (the PTX ISA's wgmma D
            fragment layout; warp and lane within the warpgroup). With ACC_PAD halves of padding a warp's
            8 rows x 4 words hit 32 different banks."""
            words = stride // 2
            tile_t = f"memref<{block_m}x{words}xi32, {smem}>"
            tile = t.val(f"memref.view {dyn}[{base}][] : {dyn_t} to {tile_t}", "acc32")
            warp = t.val(f"arith.divui {lane}, {t.const(32)} : index", "warp")
            l32 = t.val(f"arith.remui {lane}, {t.const(32)} : index", "l32")
            row0 = t.val(f"arith.muli {wg}, {t.const(rows)} : index", "frow")
            row0 = t.val(f"arith.addi {row0}, {t.val(f'arith.muli {warp}, {t.const(16)} : index', 'frow')} : index",
                         "frow")
            row0 = t.val(f"arith.addi {row0}, {t.val(f'arith.divui {l32}, {t.const(4)} : index', 'frow')} : index",
                         "frow")
            col0 = t.val(f"arith.remui {l32}, {t.const(4)} : index", "fcol")
            cols = [t.val(f"arith.addi {col0}, {t.const(4 * j)} : index", "fcol") if j else col0
                    for j in range(block_n // 8)]
            for p in range(pieces):
                acc_p = "%accf" if pieces == 1 else f"%accf#{p}"
                rows_p = [t.val(f"arith.addi {row0}, {t.const(64 * p + 8 * h)} : index", "frow") if p or h else row0
                          for h in range(2)]
                for r in range(block_n // 4):
                    v = t.val(f"llvm.extractvalue {acc_p}[{r}] : {acc16_t}", "frag")
                    t.emit(f"memref.store {v}, {tile}[{rows_p[r % 2]}, {cols[r // 2]}] : {tile_t}")

        def fused(cv: str, av: str, sr: str, gc: str) -> str:
            """C + acc rounded to C's type (the matmul's result), then the fused elementwise op in f32."""
            v8 = "vector<8xf32>"

            def widen(x: str, ety: str) -> str:
                return x if ety == "f32" else t.val(f"arith.extf {x} : vector<8x{ety}> to {v8}", "w")

            vals = {"acc": av if zero_c else t.val(f"arith.addf {widen(cv, c_type)}, {av} : {v8}", "sum")}
            if c_type != "f32":  # the matmul's result as stored (rounded once), then widened again
                rounded = t.val(f"arith.truncf {vals['acc']} : {v8} to vector<8x{c_type}>", "rnd")
                vals["acc"] = widen(rounded, c_type)
            for i, (v, ty, kind, ety) in enumerate(epi_args):
                where = f"{gc}" if kind == "row" else f"{sr}, {gc}"
                vals[f"arg{i}"] = widen(t.val(f"vector.load {v}[{where}] : {ty}, vector<8x{ety}>", "ev"), ety)
            for j, (opname, refs) in enumerate(epilogue["ops"]):
                if opname.startswith("round:"):  # a conversion in the body: the value rounded to its type
                    narrow = t.val(f"arith.truncf {vals[refs[0]]} : {v8} to vector<8x{opname[6:]}>", "nr")
                    vals[f"op{j}"] = widen(narrow, opname[6:])
                    continue
                args = []
                for ref in refs:
                    if ref.startswith("const:"):
                        args.append(t.val(f"arith.constant dense<{float(ref[6:])!r}> : {v8}", "k"))
                    else:
                        args.append(vals[ref])
                vals[f"op{j}"] = t.val(f"{opname} {', '.join(args)} : {v8}", "ep")
            res = vals[epilogue["result"]]
            return res if d_type == "f32" else t.val(f"arith.truncf {res} : {v8} to vector<8x{d_type}>", "o")

        def write_back() -> None:
            """The consumer threads: C[m0 + r, n0 + c .. c+7] += acc[r, c .. c+7], 8 halves (16 bytes) per
            thread and step; `unroll` steps issue their C loads before any store, so the global-memory
            latency is paid once per group rather than once per step."""
            whole_t = f"memref<{block_m}x{stride}x{acc}, {smem}>"
            whole = t.val(f"memref.view {dyn}[{base}][] : {dyn_t} to {whole_t}", "accall")
            per_row = block_n // 8
            total = block_m * per_row
            epi_threads = WARPGROUP * consumers
            per_thread = total // epi_threads
            unroll = next(u for u in (4, 2, 1) if per_thread % u == 0)
            is_cons = t.val(f"arith.cmpi ult, {tid}, {t.const(epi_threads)} : index", "iscons") if specialize else ""
            with t.region(f"scf.if {is_cons}" if specialize else None), \
                    t.region(f"scf.for %e0 = {tid} to {t.const(total)} step {t.const(epi_threads * unroll)}"):
                steps = []
                for u in range(unroll):
                    e = t.val(f"arith.addi %e0, {t.const(u * epi_threads)} : index", "e") if u else "%e0"
                    r = t.val(f"arith.divui {e}, {t.const(per_row)} : index", "r")
                    cc = t.val(f"arith.remui {e}, {t.const(per_row)} : index", "cc")
                    c = t.val(f"arith.muli {cc}, {t.const(8)} : index", "col")
                    gr = t.val(f"arith.addi {m0}, {r} : index", "gr")
                    gc = t.val(f"arith.addi {n0}, {c} : index", "gc")
                    # at an edge tile, loads are clamped into C (always valid) and stores predicated
                    cv = ""  # (zero_c: C holds zeros, never loaded)
                    if not zero_c:
                        lr = t.val(f"arith.minui {gr}, {t.const(m - 1)} : index", "lr") if d["edge_m"] else gr
                        lc = t.val(f"arith.minui {gc}, {t.const(n - 8)} : index", "lc") if d["edge_n"] else gc
                        if batch:
                            lr = t.val(f"arith.addi {lr}, {a_row0} : index", "lr")
                        cv = t.val(f"vector.load %C[{lr}, {lc}] {{alignment = 16 : i64}} : {tc}, vector<8x{c_type}>",
                                   "cv")
                    steps.append((r, c, gr, gc, cv))
                for r, c, gr, gc, cv in steps:
                    inside = []
                    if d["edge_m"]:
                        inside.append(t.val(f"arith.cmpi ult, {gr}, {t.const(m)} : index", "inm"))
                    if d["edge_n"]:
                        inside.append(t.val(f"arith.cmpi ult, {gc}, {t.const(n)} : index", "inn"))
                    if len(inside) == 2:
                        inside = [t.val(f"arith.andi {inside[0]}, {inside[1]} : i1", "inside")]
                    guard = t.region(f"scf.if {inside[0]}") if inside else contextlib.nullcontext()
                    guard.__enter__()
                    av = t.val(f"vector.load {whole}[{r}, {c}] : {whole_t}, vector<8x{acc}>", "av")
                    if acc != "f32":
                        av = t.val(f"arith.extf {av} : vector<8x{acc}> to vector<8xf32>", "av")
                    sr = t.val(f"arith.addi {gr}, {a_row0} : index", "sr") if batch else gr
                    if epilogue:
                        o = fused(cv, av, sr, gc)
                    elif zero_c:
                        o = av if c_type == "f32" else t.val(
                            f"arith.truncf {av} : vector<8xf32> to vector<8x{c_type}>", "o")
                    elif c_type == "f32":
                        o = t.val(f"arith.addf {cv}, {av} : vector<8xf32>", "sum")
                    else:
                        cw = t.val(f"arith.extf {cv} : vector<8x{c_type}> to vector<8xf32>", "cw")
                        sm = t.val(f"arith.addf {cw}, {av} : vector<8xf32>", "sum")
                        o = t.val(f"arith.truncf {sm} : vector<8xf32> to vector<8x{c_type}>", "o")
                    t.emit(f"vector.store {o}, %D[{sr}, {gc}] {{alignment = 16 : i64}} : {td}, vector<8x{d_type}>")
                    guard.__exit__(None, None, None)

        ksteps = t.const(k_steps)
        if specialize:
            # the producer warpgroup (the last one): only its first thread issues TMA
            is_prod = t.val(f"arith.cmpi eq, {wg}, {t.const(consumers)} : index", "isprod")
            with t.region(f"scf.if {is_prod}", close=False):
                t.emit("nvvm.setmaxregister decrease 40")
                prod = t.val(f"arith.cmpi eq, {lane}, {t.const(0)} : index", "prodthread")
                with t.region(f"scf.if {prod}"), t.region(f"scf.for %j = {t.const(0)} to {ksteps} step {t.const(1)}"):
                    issue("%j")
        else:
            # prologue: steps 0 .. stages-2 in flight before the first wgmma
            with t.region(f"scf.if {first}"), \
                    t.region(f"scf.for %j = {t.const(0)} to {t.const(min(stages - 1, k_steps))} step {t.const(1)}"):
                issue("%j", first_round=True)
        # consumers: warpgroup wg owns rows [wg * rows, (wg + 1) * rows) of the block
        with t.region("} else" if specialize else None):
            if specialize:
                t.emit("nvvm.setmaxregister increase 232")
            consume(ksteps)
        t.emit("gpu.barrier")
        write_back()
        t.emit("gpu.terminator")
    t.emit("return")
    return "\n".join(out + t.lines + ["}"])


def mark_config(attr, defaults: dict) -> dict:
    """A schedule's mark (`lh.wgmma = {block_m = 128 : i64, acc = "f16", ...}`) as a dict over `defaults`'
    keys (integers; strings where the default is one)."""
    from mlir import ir

    cfg = dict(defaults)
    if isinstance(attr, ir.DictAttr):
        for key in list(cfg):
            if key in attr:
                if isinstance(cfg[key], str):
                    if not isinstance(attr[key], ir.StringAttr):
                        raise KernelConfigError(f"{key} = {attr[key]} in the mark: a string expected")
                    cfg[key] = ir.StringAttr(attr[key]).value
                else:
                    cfg[key] = ir.IntegerAttr(attr[key]).value
    return cfg


def _config(attr) -> dict:
    return mark_config(attr, DEFAULTS)


def rewrite_marked(module) -> int:
    """Replace each `linalg.matmul` / `linalg.batch_matmul` marked `lh.wgmma` (on memrefs) by a call to
    its generated kernel.

    Returns how many were replaced; raises KernelConfigError naming what does not fit."""
    from mlir import ir
    from mlir.dialects import func

    from workbench.worker.ir_walk import append_parsed, has_custom_indexing_maps, ops_where, symbol_names

    marked = ops_where(module, lambda op: op.name in MARKABLE and MARK in op.attributes)
    existing = symbol_names(module)
    for op in marked:
        if len(op.results):
            raise KernelConfigError("the marked matmul has tensor results: the rewrite runs after bufferization")
        rank = 3 if op.name == "linalg.batch_matmul" else 2
        b_kmajor = 0
        if has_custom_indexing_maps(op):
            if _indexing_maps(op) != TRANSPOSED_B_MAPS[rank]:
                raise KernelConfigError("the marked matmul has custom indexing maps other than a transposed B "
                                        f"(x @ w^T): {_indexing_maps(op)}")
            b_kmajor = 1
        types = [v.type for v in op.operands]
        shapes = []
        for what, ty in zip("ABC", types):
            allowed = C_TYPES if what == "C" else (AB_TYPES + ("f32",) + KMAJOR_TYPES[2:4])
            if not isinstance(ty, ir.MemRefType) or str(ty.element_type) not in allowed or ty.rank != rank:
                raise KernelConfigError(f"operand {what} is {ty}: the wgmma kernel takes rank-{rank} memrefs of "
                                        f"{' or '.join(allowed)}")
            if not ty.has_static_shape or "strided" in str(ty) or "affine_map" in str(ty):
                raise KernelConfigError(f"operand {what} is {ty}: static shape and identity layout needed "
                                        "(TMA descriptors are made from the whole buffer)")
            shapes.append(list(ty.shape))
        batch = 0
        if rank == 3:
            batches = {sh.pop(0) for sh in shapes}
            if len(batches) != 1:
                raise KernelConfigError(f"operand batch sizes {sorted(batches)} differ")
            batch = batches.pop()
        (m, k), (k2, n), (m2, n2) = shapes
        if b_kmajor:
            k2, n = n, k2
        if (k, m, n) != (k2, m2, n2):
            raise KernelConfigError(f"operand shapes {shapes} do not form a matmul")
        cfg = _config(op.attributes[MARK])
        if batch:
            cfg["batch"] = batch
        cfg["c_type"] = str(types[2].element_type)
        cfg["ab_type"] = str(types[0].element_type)
        if cfg["ab_type"] == "f32":
            if not cfg["tf32"]:
                raise KernelConfigError("f32 operands: the wgmma kernel reads them as tf32 only when asked "
                                        "(matmul_wgmma tf32=1)")
            cfg["ab_type"] = "tf32"
        del cfg["tf32"]
        if cfg["acc"] == "f32":  # (absent: the kernel names of earlier sessions stay the same)
            del cfg["acc"]
        elif cfg["acc"] == "f16" and cfg["ab_type"] != "f16":
            raise KernelConfigError(f"acc=f16 needs f16 operands (wgmma accumulates in f16 only for f16 x f16): "
                                    f"A and B are {cfg['ab_type']}")
        if str(types[1].element_type) != str(types[0].element_type):
            raise KernelConfigError(f"A is {types[0]} but B is {types[1]}: the wgmma kernel takes one operand type")
        a, b, c = list(op.operands)
        if not b_kmajor and cfg["ab_type"] in KMAJOR_ONLY:
            b = _transposed_copy(op, b)   # wgmma reads these types K-major only
            b_kmajor = 1
        if b_kmajor:  # (absent otherwise: the kernel names of earlier sessions stay the same)
            cfg["b_kmajor"] = b_kmajor
        zero_fill = _zero_fill_of(op, c)
        if zero_fill is not None:
            cfg["zero_c"] = 1
        fusion = _epilogue_of(op, c, m, n, cfg["c_type"], batch)
        if fusion is not None:
            cfg["epilogue"] = fusion[1]
            d_type = str(fusion[3].type.element_type)
            if d_type != cfg["c_type"]:
                cfg["d_type"] = d_type
        name = kernel_name(m, n, k, cfg)
        if zero_fill is not None:
            zero_fill.erase()
        if name not in existing:
            try:
                append_parsed(module, kernel_text(name, m, n, k, **cfg))
            except ir.MLIRError as e:
                raise KernelConfigError(f"generated kernel does not parse: {e}")
            existing.add(name)
        if fusion is not None:
            generic, _, extra, dest = fusion
            with ir.InsertionPoint(generic), generic.location:
                func.CallOp([], ir.FlatSymbolRefAttr.get(name), [a, b, c, dest] + extra)
            generic.erase()
            op.erase()
            continue
        replace_by_kernel_call(op, name, a, b, c)
    return len(marked)


def replace_by_kernel_call(op, name: str, a, b, c) -> None:
    """The marked matmul `op` -> `func.call @name(A, B, C, D)`: D is C, or the buffer of the memref.copy
    of C right after it (bufferization's out-parameter copy, then dropped: one pass over C fewer)."""
    from mlir import ir
    from mlir.dialects import func

    copy = _copy_of_result(op, c)
    with ir.InsertionPoint(op), op.location:
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), [a, b, c, copy.operands[1] if copy else c])
    if copy is not None:
        copy.erase()
    op.erase()


#: operand types wgmma reads with B K-major only: a B stored K x N is transposed into a new buffer first
KMAJOR_ONLY = ("f8E4M3FN", "f8E5M2", "tf32")


def _transposed_copy(op, b):
    """B (K x N, or batch x K x N) copied transposed into a new buffer before `op`: a linalg.transpose,
    which the `gpu-transposes` rewrite after this one turns into the shared-memory transpose kernel
    (the buffer is freed by lh-gpu-device-memory at the end of its block). The copy costs a pass over
    B: x @ w^T payloads (torch's linear layers) need none."""
    from mlir import ir
    from mlir.dialects import linalg, memref

    ty = ir.MemRefType(b.type)
    shape = list(ty.shape)
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    with ir.InsertionPoint(op), op.location:
        buf = memref.AllocOp(ir.MemRefType.get([shape[i] for i in perm], ty.element_type), [], []).result
        linalg.transpose(b, outs=[buf], permutation=perm)
    return buf


TRANSPOSED_B_MAPS = {
    2: ["affine_map<(d0, d1, d2) -> (d0, d2)>", "affine_map<(d0, d1, d2) -> (d1, d2)>",
        "affine_map<(d0, d1, d2) -> (d0, d1)>"],
    3: ["affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>", "affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>",
        "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>"],
}


def _indexing_maps(op) -> list[str]:
    from mlir import ir

    return [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


#: elementwise body ops a fused epilogue may hold (their vector<8xf32> forms are emitted as they are)
EPILOGUE_OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf", "arith.minimumf",
                "arith.negf", "math.tanh", "math.erf", "math.exp")


def _identity_map(rank: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({dims})>"


def _row_map(rank: int) -> str:
    return f"affine_map<({', '.join(f'd{i}' for i in range(rank))}) -> (d{rank - 1})>"


def _epilogue_of(matmul, c, m: int, n: int, c_type: str, batch: int = 0):
    """The elementwise linalg.generic right after the matmul that reads its result (C) and is C's
    last reader: (generic, epilogue spec for kernel_text, its other operands, its output buffer), or
    None when there is none that fits (bias row vectors, residual matrices and the EPILOGUE_OPS,
    e.g. bias add + relu as maximumf with 0; float conversions, e.g. torch's rounding of an f32
    accumulation to f16, whose output buffer then has another element type than C)."""
    from mlir import ir

    rank = 3 if batch else 2
    ident, row_map = _identity_map(rank), _row_map(rank)
    full_shape = ([batch] if batch else []) + [m, n]

    ops = list(matmul.block.operations)
    i = next(j for j, o in enumerate(ops) if o == matmul) + 1
    while i < len(ops) and ops[i].name in _NO_MEMORY_EFFECT:  # the buffer the generic writes, say
        i += 1
    if i >= len(ops) or ops[i].name != "linalg.generic":
        return None
    generic = ops[i]
    later = [u.owner for u in c.uses if u.owner not in (matmul, generic) and _after(u.owner, generic, ops)]
    if later and (any(o not in ops for o in later) or not _overwrites(min(later, key=ops.index), c)):
        return None  # the matmul's result is read after the generic (C is not written by the fused kernel)
    if len(generic.results) or "reduction" in str(generic.attributes["iterator_types"]):
        return None
    maps = [str(a) for a in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    operands = list(generic.operands)
    n_in = len(operands) - 1
    dest = operands[-1]
    if (maps[-1] != ident or not isinstance(dest.type, ir.MemRefType) or list(dest.type.shape) != full_shape
            or str(dest.type.element_type) not in C_TYPES or "strided" in str(dest.type)
            or "affine_map" in str(dest.type)):
        return None
    body = generic.regions[0].blocks[0]
    refs, args, extra = {}, [], []
    for idx in range(n_in):
        v, mp, ty = operands[idx], maps[idx], operands[idx].type
        ety = str(ir.MemRefType(ty).element_type) if isinstance(ty, ir.MemRefType) else ""
        if ety not in ("f16", "bf16", "f32") or "strided" in str(ty) or not ir.MemRefType(ty).has_static_shape:
            return None
        if v == c and mp == ident:
            refs[idx] = "acc"
            continue
        if mp == row_map and list(ir.MemRefType(ty).shape) == [n]:
            kind = "row"
        elif mp == ident and list(ir.MemRefType(ty).shape) == full_shape:
            kind = "full"
        else:
            return None
        refs[idx] = f"arg{len(args)}"
        args.append((kind, ety))
        extra.append(v)
    if "acc" not in refs.values():
        return None
    names = {}
    for idx, barg in enumerate(body.arguments):
        if idx < n_in:
            names[barg.get_name()] = refs[idx]
    spec_ops, result = [], None
    for bop in body.operations:
        if bop.name == "arith.constant":
            try:
                value = ir.FloatAttr(bop.attributes["value"]).value
            except (ValueError, TypeError):
                return None
            names[bop.results[0].get_name()] = f"const:{value}"
        elif bop.name in EPILOGUE_OPS:
            opnd = [names.get(x.get_name()) or _outer_constant(x) for x in bop.operands]
            if None in opnd or "fastmath" in str(bop).split(":")[0]:
                return None
            names[bop.results[0].get_name()] = f"op{len(spec_ops)}"
            spec_ops.append((bop.name, opnd))
            narrow = str(bop.results[0].type)
            if narrow in ("f16", "bf16"):  # computed in f32, rounded to its type as the body says
                spec_ops.append((f"round:{narrow}", [names[bop.results[0].get_name()]]))
                names[bop.results[0].get_name()] = f"op{len(spec_ops) - 1}"
        elif bop.name in ("arith.extf", "arith.truncf"):  # computed in f32: widening is exact
            src = names.get(bop.operands[0].get_name())
            to = str(bop.results[0].type)
            if src is None or to not in ("f16", "bf16", "f32") or "fastmath" in str(bop).split(":")[0]:
                return None
            if bop.name == "arith.extf" or to == "f32":
                names[bop.results[0].get_name()] = src
            else:
                names[bop.results[0].get_name()] = f"op{len(spec_ops)}"
                spec_ops.append((f"round:{to}", [src]))
        elif bop.name == "linalg.yield":
            result = names.get(bop.operands[0].get_name())
        else:
            return None
    if result is None or result.startswith("const:"):
        return None
    return generic, {"args": args, "ops": spec_ops, "result": result}, extra, dest


def _overwrites(op, buffer) -> bool:
    """Whether `op` writes all of `buffer` without reading it (a fill, or an all-parallel generic whose
    output it is through the identity map with the output's value unused): bufferization reusing a
    buffer for a later result; what it held before does not matter then."""
    from mlir import ir

    if op.name == "linalg.fill":
        return op.operands[-1] == buffer
    if op.name != "linalg.generic" or len(op.results) or "reduction" in str(op.attributes["iterator_types"]):
        return False
    operands = list(op.operands)
    maps = [str(a) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    n_in = len(operands) - 1
    if operands[-1] != buffer or any(v == buffer for v in operands[:n_in]):
        return False
    rank = ir.MemRefType(buffer.type).rank
    return maps[-1] == _identity_map(rank) and not list(op.regions[0].blocks[0].arguments[n_in].uses)


def _outer_constant(value) -> str | None:
    """"const:<float>" for a value an arith.constant outside the body defines (canonicalize hoists them)."""
    from mlir import ir

    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    try:
        return f"const:{ir.FloatAttr(owner.attributes['value']).value}"
    except (ValueError, TypeError):
        return None


def _after(op, anchor, ops) -> bool:
    """Whether `op` (in the same block) comes after `anchor`; ops elsewhere count as after."""
    try:
        return ops.index(op) > ops.index(anchor)
    except ValueError:
        return True


#: ops that may stand between a fill of C and the matmul, or between the matmul and its epilogue: they
#: touch no buffer they do not take
_NO_MEMORY_EFFECT = ("arith.constant", "memref.alloc", "memref.alloca", "memref.get_global")


def _zero_fill_of(matmul, c):
    """The `linalg.fill` of zero into C that the matmul's result builds on (torch's A @ B: a fill of 0
    and a matmul), or None. It is the nearest earlier op of the block that writes C, nothing in between
    reads C or a view of it, and C is a whole buffer of its own (an alloc, or a function argument with
    only allocs and constants in between, since another argument may alias it)."""
    from mlir import ir

    ops = list(matmul.block.operations)
    i = next(j for j, o in enumerate(ops) if o == matmul)
    users = [u.owner for u in c.uses]
    if any(u.name.startswith("memref.") and u.name not in ("memref.copy", "memref.dealloc") for u in users):
        return None  # a view of C: its readers are not C's users
    own_buffer = not isinstance(c.owner, ir.Block) and c.owner.name in ("memref.alloc", "memref.alloca")
    for o in reversed(ops[:i]):
        if any(o == u for u in users):
            if o.name != "linalg.fill" or len(o.operands) != 2 or o.operands[1] != c:
                return None
            value = o.operands[0]
            if isinstance(value.owner, ir.Block) or value.owner.name != "arith.constant":
                return None
            attr = value.owner.attributes["value"]
            try:
                zero = (ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value) == 0
            except (ValueError, TypeError):
                return None
            return o if zero else None
        if not own_buffer and o.name not in _NO_MEMORY_EFFECT:
            return None
    return None


def _copy_of_result(matmul, c):
    """The `memref.copy %C, %D` right after the matmul when nothing else reads %C: bufferization
    wrote the result in place into C and copies it out (a public entry's result becomes an out
    parameter). The kernel then reads C and writes D directly, saving a full pass over C."""
    ops = list(matmul.block.operations)
    i = next(j for j, o in enumerate(ops) if o == matmul)
    if i + 1 >= len(ops):
        return None
    nxt = ops[i + 1]
    if nxt.name != "memref.copy" or nxt.operands[0] != c or nxt.operands[1].type != c.type:
        return None
    if any(u.owner not in (matmul, nxt) for u in c.uses):
        return None
    return nxt
