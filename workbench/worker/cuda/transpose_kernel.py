"""A transposing copy on the GPU through shared memory: `func.func private @name(%src, %dst)` with
%src memref<[B x] R x C x T> and %dst memref<[B x] C x R x T>, dst[b][c][r] = src[b][r][c].

Blocks of 32 x 8 threads move 32 x 32 tiles: each thread reads 4 elements of a tile row by row
(consecutive threads, consecutive columns of src: coalesced) into a 32 x 33 shared tile (the extra
column keeps the column reads free of bank conflicts), and after a barrier writes 4 of its columns
(consecutive threads, consecutive columns of dst: coalesced). Edge tiles are guarded element by
element. A transpose mapped naively (a thread per output element) reads src with a stride of a row:
2048^2 f32 took 0.037 ms on the H200, about 0.9 TB/s.

Used where wgmma needs B K-major and the payload stores it K x N (fp8, tf32): wgmma_matmul.rewrite_marked."""
from __future__ import annotations

from workbench.worker.cuda.wgmma_matmul import _Text

TILE = 32
ROWS_PER_STEP = 8   # threads per block: TILE x ROWS_PER_STEP
ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f8E4M3FN": 1, "f8E5M2": 1}


def kernel_name(rows: int, cols: int, elem: str, batch: int = 0) -> str:
    return f"lh_transpose_{f'{batch}x' if batch else ''}{rows}x{cols}_{elem}"


def kernel_text(name: str, rows: int, cols: int, elem: str, batch: int = 0) -> str:
    if elem not in ELEMENT_BYTES:
        raise ValueError(f"transpose kernel: no element type {elem}")
    lead = f"{batch}x" if batch else ""
    src_t, dst_t = f"memref<{lead}{rows}x{cols}x{elem}>", f"memref<{lead}{cols}x{rows}x{elem}>"
    smem = "#gpu.address_space<workgroup>"
    tile_t = f"memref<{TILE}x{TILE + 1}x{elem}, {smem}>"
    dyn_t = f"memref<?xi8, {smem}>"
    t = _Text("    ")
    with t.launch((-(-cols // TILE), -(-rows // TILE), max(batch, 1)), (TILE, ROWS_PER_STEP, 1),
                  TILE * (TILE + 1) * ELEMENT_BYTES[elem], dyn_t) as dyn:
        tile = t.val(f"memref.view {dyn}[{t.const(0)}][] : {dyn_t} to {tile_t}", "tile")
        r0 = t.val(f"arith.muli %by, {t.const(TILE)} : index", "r0")
        c0 = t.val(f"arith.muli %bx, {t.const(TILE)} : index", "c0")
        b = "%bz, " if batch else ""

        # src rows r0 + ty + 8 step, columns c0 + tx -> tile[ty + 8 step][tx]; after a barrier,
        # tile[tx][ty + 8 step] -> dst rows c0 + ty + 8 step, columns r0 + tx
        global_src = lambda i, j, ty: (f"%src[{b}{i}, {j}]", src_t)     # noqa: E731
        global_dst = lambda i, j, ty: (f"%dst[{b}{i}, {j}]", dst_t)     # noqa: E731
        tile_row = lambda i, j, ty: (f"{tile}[{ty}, %tx]", tile_t)     # noqa: E731
        tile_col = lambda i, j, ty: (f"{tile}[%tx, {ty}]", tile_t)     # noqa: E731
        moves = ((r0, c0, rows, cols, global_src, tile_row), (c0, r0, cols, rows, tile_col, global_dst))
        for phase, (row0, col0, limit_row, limit_col, source, target) in enumerate(moves):
            if phase:
                t.emit("gpu.barrier")
            for step in range(TILE // ROWS_PER_STEP):
                ty = t.val(f"arith.addi %ty, {t.const(step * ROWS_PER_STEP)} : index", "ty")
                i = t.val(f"arith.addi {row0}, {ty} : index", "i")
                j = t.val(f"arith.addi {col0}, %tx : index", "j")
                (src_ref, src_ty), (dst_ref, dst_ty) = source(i, j, ty), target(i, j, ty)
                with t.region(f"scf.if {t.in_bounds(i, limit_row, j, limit_col)}"):
                    v = t.val(f"memref.load {src_ref} : {src_ty}", "v")
                    t.emit(f"memref.store {v}, {dst_ref} : {dst_ty}")
    body = "\n".join(t.lines)
    return f"""func.func private @{name}(%src: {src_t}, %dst: {dst_t}) {{
{body}
    return
}}"""


def _swaps_last_two(perm: list[int]) -> bool:
    r = len(perm)
    return r >= 2 and perm == list(range(r - 2)) + [r - 1, r - 2]


def rewrite_transposes(module) -> int:
    """The `gpu-transposes` rewrite (cuda-lower, after bufferization): each linalg.transpose in host code
    that swaps the last two dims (a matrix transpose, the leading dims a batch: torch's weight.t(),
    x.transpose(-1, -2)) of a static, identity-layout memref of a supported element type -> a call of
    the shared-memory kernel (leading dims collapsed into one batch dim). Others keep the naive
    mapping, which reads the innermost dim contiguously where the last dim stays last. Returns how many
    it replaced."""
    from mlir import ir
    from mlir.dialects import func, memref

    from workbench.worker.cuda.gpu_wrapper import _inside_device_code
    from workbench.worker.ir_walk import append_parsed, ops_where, symbol_names

    def eligible(op) -> bool:
        if op.name != "linalg.transpose" or _inside_device_code(op) or len(op.results):
            return False
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        types = [v.type for v in op.operands]
        return (_swaps_last_two(perm) and all(isinstance(t, ir.MemRefType) and t.has_static_shape
                                              and "strided" not in str(t) and "affine_map" not in str(t)
                                              for t in types)
                and str(ir.MemRefType(types[0]).element_type) in ELEMENT_BYTES)

    existing = symbol_names(module)
    found = ops_where(module, eligible)
    for op in found:
        src, dst = op.operands[0], op.operands[1]
        ty = ir.MemRefType(src.type)
        shape, elem = list(ty.shape), str(ty.element_type)
        rows, cols = shape[-2:]
        batch = 1
        for d in shape[:-2]:
            batch *= d
        with ir.InsertionPoint(op), op.location:
            if len(shape) > 3:   # leading dims -> one batch dim (static identity layouts collapse)
                groups = [list(range(len(shape) - 2)), [len(shape) - 2], [len(shape) - 1]]
                src = memref.CollapseShapeOp(ir.MemRefType.get([batch, rows, cols], ty.element_type), src,
                                             groups).result
                dst = memref.CollapseShapeOp(ir.MemRefType.get([batch, cols, rows], ty.element_type), dst,
                                             groups).result
            b = batch if len(shape) > 2 else 0
            name = kernel_name(rows, cols, elem, b)
            if name not in existing:
                append_parsed(module, kernel_text(name, rows, cols, elem, b))
                existing.add(name)
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), [src, dst])
        op.erase()
    return len(found)
