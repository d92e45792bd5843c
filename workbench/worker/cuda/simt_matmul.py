"""A generated f32 matmul kernel on the CUDA cores, tiled through shared memory, for any shape and for
one op of many (the `simt-kernels` rewrite of cuda-lower, after bufferization).

`pipelines/cuda/matmul.py[gen=matmul_simt_tiles]` only marks the op (`lh.simt_tiles = {block_m, block_n,
block_k, thread_m, thread_n}`, `op=` picks one op of several); the rewrite replaces each marked
`linalg.matmul` / `linalg.batch_matmul` on memrefs by a call of a kernel generated here. Unlike the
transform-dialect schedules (matmul_simt_smem pads and bufferizes the whole module, so it takes a
module of one matmul), it needs nothing of the rest of the module, and edges are guarded: any M, N, K.

Each block computes a block_m x block_n tile of C with (block_m / thread_m) x (block_n / thread_n)
threads, each a thread_m x thread_n register tile (vectors of thread_n accumulators, vector.fma of a
broadcast A element and a B row). K is walked in steps of block_k: the A tile (block_m x block_k,
stored transposed, k-major, so that a thread reads its thread_m rows with one vector load) and the B
tile (block_k x block_n) go to shared memory as 4-wide vector loads where K (A) or N (B) is a multiple
of 4 (else element by element), zeros past the edges; per K step the next step's global loads are
issued first, then thread_m + thread_n shared-memory vector loads and thread_m x thread_n FMAs per k,
a barrier, the loaded pieces stored to shared memory, a barrier. With `stages = 2` there are two shared
tile pairs and each loop trip takes two K steps, one from each pair: the next step's pieces go to the
other pair and one barrier per step both publishes them and frees the pair just read (H200, f32 2048^3:
0.458 -> 0.439 ms). `a_pad` pads A's transposed rows: the four threads that load a row of A store its
columns block_m + a_pad apart, all in one bank without it (4-way conflicts; 4 floats: 2-way; 0.485 ->
0.458 ms). The write-back is guarded per vector of 4
(per element where N is no multiple of 4) and adds C (D = C + A B; a zero fill of C right before is
dropped and not read, as in the wgmma kernel).
"""
from __future__ import annotations

from workbench.worker.cuda.wgmma_matmul import KernelConfigError, _Text, _zero_fill_of, mark_config, replace_by_kernel_call

MARK = "lh.simt_tiles"
DEFAULTS = {"block_m": 128, "block_n": 128, "block_k": 8, "thread_m": 8, "thread_n": 8, "a_pad": 0, "stages": 1}
MAX_SHARED = 48 * 1024   # static-size limit without the opt-in


def check_config(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int, a_pad: int = 0,
                 stages: int = 1) -> dict:
    """Threads and shared bytes of a configuration, or KernelConfigError saying what does not fit. `a_pad`:
    floats of padding per K row of the transposed A tile in shared memory (a multiple of 4: the
    threads' vector loads stay aligned), which spreads its column-wise stores over the banks. `stages`: 1,
    one shared tile pair (two barriers per K step), or 2, two (one barrier per K step: the next step's
    tiles go to the other pair while this one is read)."""
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k), ("thread_m", thread_m),
                    ("thread_n", thread_n)):
        if v < 1:
            raise KernelConfigError(f"{name}={v}: at least 1")
    if block_m % thread_m or block_n % thread_n:
        raise KernelConfigError(f"thread tile {thread_m}x{thread_n} does not divide block {block_m}x{block_n}")
    threads = (block_m // thread_m) * (block_n // thread_n)
    if not 32 <= threads <= 1024:
        raise KernelConfigError(f"{threads} threads per block (32 to 1024)")
    if block_k % 4 or thread_n % 4 or thread_m % 4:
        raise KernelConfigError("block_k, thread_m and thread_n must be multiples of 4 (4-wide vectors)")
    if a_pad < 0 or a_pad % 4 or a_pad > 32:
        raise KernelConfigError(f"a_pad={a_pad}: a multiple of 4 from 0 to 32")
    if stages not in (1, 2):
        raise KernelConfigError(f"stages={stages}: 1 or 2 shared tile pairs")
    shared = (block_m + a_pad + block_n) * block_k * 4 * stages
    if shared > MAX_SHARED:
        raise KernelConfigError(f"{shared} bytes of shared memory (at most {MAX_SHARED})")
    return {"threads": threads, "shared": shared}


def kernel_name(m: int, n: int, k: int, batch: int, cfg: dict, zero_c: int) -> str:
    tiles = "x".join(str(cfg[key]) for key in ("block_m", "block_n", "block_k", "thread_m", "thread_n"))
    pad = (f"_p{cfg['a_pad']}" if cfg.get("a_pad") else "") + ("_s2" if cfg.get("stages", 1) == 2 else "")
    return f"lh_simt_matmul_{f'{batch}x' if batch else ''}{m}x{n}x{k}_{tiles}{pad}{'_z' if zero_c else ''}"


def kernel_text(name: str, m: int, n: int, k: int, block_m: int, block_n: int, block_k: int, thread_m: int,
                thread_n: int, batch: int = 0, zero_c: int = 0, a_pad: int = 0, stages: int = 1) -> str:
    """`func.func private @name(%A, %B, %C, %D)`: D = C + A x B (D may be C; zero_c: C is not read),
    f32 memrefs [batch x] MxK, KxN, MxN."""
    d = check_config(block_m, block_n, block_k, thread_m, thread_n, a_pad, stages)
    threads = d["threads"]
    lead = f"{batch}x" if batch else ""
    ta, tb, tc = (f"memref<{lead}{m}x{k}xf32>", f"memref<{lead}{k}x{n}xf32>", f"memref<{lead}{m}x{n}xf32>")
    smem = "#gpu.address_space<workgroup>"
    as_t, bs_t = f"memref<{block_k}x{block_m + a_pad}xf32, {smem}>", f"memref<{block_k}x{block_n}xf32, {smem}>"
    dyn_t = f"memref<?xi8, {smem}>"
    v4, vn, vm = "vector<4xf32>", f"vector<{thread_n}xf32>", f"vector<{thread_m}xf32>"
    t = _Text("    ")
    b = "%bz, " if batch else ""
    with t.launch((-(-n // block_n), -(-m // block_m), max(batch, 1)), (threads, 1, 1), d["shared"], dyn_t) as dyn:
        # the shared tile pairs, one after the other: A's tile, then B's (one pair: the second is the first)
        a_bytes, pair_bytes = block_k * (block_m + a_pad) * 4, d["shared"] // stages
        views = [(t.val(f"memref.view {dyn}[{t.const(p * pair_bytes)}][] : {dyn_t} to {as_t}", "as"),
                  t.val(f"memref.view {dyn}[{t.const(p * pair_bytes + a_bytes)}][] : {dyn_t} to {bs_t}", "bs"))
                 for p in range(stages)]
        (a_s, b_s), (a_s2, b_s2) = views[0], views[-1]
        cols = block_n // thread_n
        tcol = t.val(f"arith.remui %tx, {t.const(cols)} : index", "tcol")
        trow = t.val(f"arith.divui %tx, {t.const(cols)} : index", "trow")
        m0 = t.val(f"arith.muli %by, {t.const(block_m)} : index", "m0")
        n0 = t.val(f"arith.muli %bx, {t.const(block_n)} : index", "n0")
        zero4 = t.val(f"arith.constant dense<0.0> : {v4}", "z4")
        zero_n = t.val(f"arith.constant dense<0.0> : {vn}", "zn")
        f0 = t.val("arith.constant 0.0 : f32", "f0")

        def pieces(total: int) -> list[tuple[str, str | None]]:
            """The thread's 4-wide pieces of a tile of `total` pieces: (index, valid) with index = tid +
            p * threads for p = 0, 1, ...; valid: None, or the i1 `index < total` of a last partial round."""
            out = []
            for p in range(-(-total // threads)):
                idx = t.val(f"arith.addi %tx, {t.const(p * threads)} : index", "idx")
                out.append((idx, None if (p + 1) * threads <= total else
                            t.val(f"arith.cmpi ult, {idx}, {t.const(total)} : index", "some")))
            return out

        def guarded_vector(ref, mem_t, i, limit_i, j, limit_j, whole: bool, valid) -> str:
            """4 elements at ref[.., i, j..j+3]: one vector load where a row holds whole vectors (then
            j < limit_j covers all 4), else element by element; zeros outside (or for an invalid piece)."""
            if whole:
                return t.value_if(t.in_bounds(i, limit_i, j, limit_j, valid),
                                  f"vector.load {ref}[{b}{i}, {j}] {{alignment = 16 : i64}} : {mem_t}, {v4}", v4,
                                  zero4, ref[1:] + "v")
            v = zero4
            for e in range(4):
                je = t.val(f"arith.addi {j}, {t.const(e)} : index", "j")
                x = t.value_if(t.in_bounds(i, limit_i, je, limit_j, valid), f"memref.load {ref}[{b}{i}, {je}] : {mem_t}",
                               "f32", f0, ref[1:] + "s")
                v = t.val(f"vector.insert {x}, {v} [{e}] : f32 into {v4}", "v")
            return v

        def placed(rows: int, cols: int) -> list[tuple[str, str, str | None]]:
            """(row, column, valid) of each of the thread's 4-wide pieces of a rows x cols tile, row by row."""
            out = []
            for idx, valid in pieces(rows * cols // 4):
                row = t.val(f"arith.divui {idx}, {t.const(cols // 4)} : index", "row")
                col = t.val(f"arith.muli {t.val(f'arith.remui {idx}, {t.const(cols // 4)} : index', 'cq')}, "
                            f"{t.const(4)} : index", "col")
                out.append((row, col, valid))
            return out

        # where each piece of the A tile (block_m x block_k, stored transposed) and of the B tile
        # (block_k x block_n) lies, with its global row of A / column of B: loop-invariant
        a_pieces = [(row, kc, t.val(f"arith.addi {m0}, {row} : index", "gm"), valid)
                    for row, kc, valid in placed(block_m, block_k)]
        b_pieces = [(krow, nc, t.val(f"arith.addi {n0}, {nc} : index", "gn"), valid)
                    for krow, nc, valid in placed(block_k, block_n)]

        def load_tiles(k0: str) -> list[str]:
            """The thread's pieces of the A and B tiles at K offset k0 (global loads, zeros past the edges)."""
            out = []
            for row, kc, gm, valid in a_pieces:
                gk = t.val(f"arith.addi {k0}, {kc} : index", "gk")
                out.append(guarded_vector("%A", ta, gm, m, gk, k, k % 4 == 0, valid))
            for krow, nc, gn, valid in b_pieces:
                gk = t.val(f"arith.addi {k0}, {krow} : index", "gk")
                out.append(guarded_vector("%B", tb, gk, k, gn, n, n % 4 == 0, valid))
            return out

        def store_tiles(values: list[str], a_s: str = a_s, b_s: str = b_s) -> None:
            for (row, kc, _, valid), v in zip(a_pieces, values):
                with t.region(None if valid is None else f"scf.if {valid}"):
                    for e in range(4):
                        x = t.val(f"vector.extract {v}[{e}] : f32 from {v4}", "x")
                        ke = t.val(f"arith.addi {kc}, {t.const(e)} : index", "ke")
                        t.emit(f"memref.store {x}, {a_s}[{ke}, {row}] : {as_t}")
            for (krow, nc, _, valid), v in zip(b_pieces, values[len(a_pieces):]):
                with t.region(None if valid is None else f"scf.if {valid}"):
                    t.emit(f"vector.store {v}, {b_s}[{krow}, {nc}] {{alignment = 16 : i64}} : {bs_t}, {v4}")

        # the first tiles; then per step the next step's global loads are issued before the FMAs of this
        # one (their latency hidden behind them) and stored to shared memory after
        store_tiles(load_tiles(t.const(0)))
        t.emit("gpu.barrier")
        am = t.val(f"arith.muli {trow}, {t.const(thread_m)} : index", "am")
        bn = t.val(f"arith.muli {tcol}, {t.const(thread_n)} : index", "bn")
        accs = ", ".join(f"%acc{i} = {zero_n}" for i in range(thread_m))

        def step(acc: list[str], a_s: str, b_s: str) -> list[str]:
            """The FMAs of one K step from the shared tiles a_s, b_s."""
            acc = list(acc)
            for kk in range(block_k):
                av = t.val(f"vector.load {a_s}[{t.const(kk)}, {am}] {{alignment = 16 : i64}} : {as_t}, {vm}", "a")
                bv = t.val(f"vector.load {b_s}[{t.const(kk)}, {bn}] {{alignment = 16 : i64}} : {bs_t}, {vn}", "b")
                for i in range(thread_m):
                    ai = t.val(f"vector.extract {av}[{i}] : f32 from {vm}", "ai")
                    sp = t.val(f"vector.broadcast {ai} : f32 to {vn}", "sp")
                    acc[i] = t.val(f"vector.fma {sp}, {bv}, {acc[i]} : {vn}", "acc")
            return acc

        types = ", ".join([vn] * thread_m)
        if stages == 1:
            with t.region(f"%res:{thread_m} = scf.for %kt = {t.const(0)} to {t.const(k)} step {t.const(block_k)} "
                          f"iter_args({accs}) -> ({types})"):
                following = load_tiles(t.val(f"arith.addi %kt, {t.const(block_k)} : index", "knext"))
                acc = step([f"%acc{i}" for i in range(thread_m)], a_s, b_s)
                t.emit("gpu.barrier")
                store_tiles(following)
                t.emit("gpu.barrier")
                t.emit(f"scf.yield {', '.join(acc)} : {types}")
        else:
            # two K steps per trip, one from each tile pair: the next step's tiles go to the other pair, and
            # one barrier both publishes them and frees this pair (a last step past K reads zeros)
            pairs = -(-k // (2 * block_k))
            with t.region(f"%res:{thread_m} = scf.for %kt = {t.const(0)} to {t.const(pairs * 2 * block_k)} "
                          f"step {t.const(2 * block_k)} iter_args({accs}) -> ({types})"):
                acc = [f"%acc{i}" for i in range(thread_m)]
                for half, (now_a, now_b, next_a, next_b) in enumerate(((a_s, b_s, a_s2, b_s2), (a_s2, b_s2, a_s, b_s))):
                    following = load_tiles(t.val(f"arith.addi %kt, {t.const((half + 1) * block_k)} : index", "knext"))
                    acc = step(acc, now_a, now_b)
                    store_tiles(following, next_a, next_b)
                    t.emit("gpu.barrier")
                t.emit(f"scf.yield {', '.join(acc)} : {types}")
        # write-back: D = C + acc, guarded per vector of 4 (per element where N is no multiple of 4)
        row0 = t.val(f"arith.addi {m0}, {am} : index", "row0")
        col0 = t.val(f"arith.addi {n0}, {bn} : index", "col0")
        for i in range(thread_m):
            row = t.val(f"arith.addi {row0}, {t.const(i)} : index", "row")
            for j in range(0, thread_n, 4):
                part = t.val(f"vector.shuffle %res#{i}, %res#{i} [{j}, {j + 1}, {j + 2}, {j + 3}] : {vn}, {vn}", "part")
                col = t.val(f"arith.addi {col0}, {t.const(j)} : index", "col")
                if n % 4 == 0:
                    with t.region(f"scf.if {t.in_bounds(row, m, col, n)}"):
                        out = part if zero_c else t.val(
                            f"arith.addf {part}, {t.val(f'vector.load %C[{b}{row}, {col}] {{alignment = 16 : i64}} : {tc}, {v4}', 'c')} : {v4}", "o")
                        t.emit(f"vector.store {out}, %D[{b}{row}, {col}] {{alignment = 16 : i64}} : {tc}, {v4}")
                    continue
                for e in range(4):
                    ce = t.val(f"arith.addi {col}, {t.const(e)} : index", "ce")
                    with t.region(f"scf.if {t.in_bounds(row, m, ce, n)}"):
                        x = t.val(f"vector.extract {part}[{e}] : f32 from {v4}", "x")
                        out = x if zero_c else t.val(f"arith.addf {x}, {t.val(f'memref.load %C[{b}{row}, {ce}] : {tc}', 'c')} : f32", "o")
                        t.emit(f"memref.store {out}, %D[{b}{row}, {ce}] : {tc}")
    body = "\n".join(t.lines)
    return f"""func.func private @{name}(%A: {ta}, %B: {tb}, %C: {tc}, %D: {tc}) {{
{body}
    return
}}"""


def rewrite_marked(module) -> int:
    """Replace each f32 `linalg.matmul` / `linalg.batch_matmul` marked `lh.simt_tiles` (on memrefs, plain
    maps) by a call of its generated kernel. Returns how many; KernelConfigError names what does not fit."""
    from mlir import ir

    from workbench.worker.ir_walk import append_parsed, has_custom_indexing_maps, ops_where, symbol_names

    marked = ops_where(module, lambda op: op.name in ("linalg.matmul", "linalg.batch_matmul") and MARK in op.attributes)
    existing = symbol_names(module)
    for op in marked:
        if len(op.results):
            raise KernelConfigError("the marked matmul has tensor results: the rewrite runs after bufferization")
        if has_custom_indexing_maps(op):
            raise KernelConfigError("the marked matmul has custom indexing maps: matmul_simt_tiles takes A [m][k] "
                                    "and B [k][n] (a transposed operand: linalg.transpose first)")
        rank = 3 if op.name == "linalg.batch_matmul" else 2
        shapes = []
        for what, v in zip("ABC", op.operands):
            ty = v.type
            if (not isinstance(ty, ir.MemRefType) or str(ty.element_type) != "f32" or ty.rank != rank
                    or not ty.has_static_shape or "strided" in str(ty) or "affine_map" in str(ty)):
                raise KernelConfigError(f"operand {what} is {ty}: the kernel takes static, identity-layout f32 "
                                        f"memrefs of rank {rank}")
            shapes.append(list(ty.shape))
        batch = shapes[0][0] if rank == 3 else 0
        (m, k), (k2, n), (m2, n2) = (s[-2:] for s in shapes)
        if (k, m, n) != (k2, m2, n2) or (rank == 3 and len({s[0] for s in shapes}) != 1):
            raise KernelConfigError(f"operand shapes {shapes} do not form a matmul")
        cfg = mark_config(op.attributes[MARK], DEFAULTS)
        check_config(**cfg)
        a, bop, c = list(op.operands)
        zero_fill = _zero_fill_of(op, c)
        name = kernel_name(m, n, k, batch, cfg, int(zero_fill is not None))
        if name not in existing:
            append_parsed(module, kernel_text(name, m, n, k, **cfg, batch=batch, zero_c=int(zero_fill is not None)))
            existing.add(name)
        if zero_fill is not None:
            zero_fill.erase()
        replace_by_kernel_call(op, name, a, bop, c)
    return len(marked)
