"""XeGPU matmul schedule (f16 x f16 -> f32, DPAS): tensors -> work-group-level XeGPU in a gpu.module.

`xegpu_matmul{wg_m wg_n sg_m sg_n k_tile ...}` tiles the matmul into work-group tiles (scf.forall
-> gpu.launch, one work-group per tile) and a K loop, vectorizes, bufferizes, outlines the kernel,
turns vector transfers into XeGPU ops (convert-vector-to-xegpu) and sets the XeGPU layouts with
the upstream transform.xegpu.* ops: subgroup layout (wg tile / sg tile), per-subgroup data, the
instruction tiles of the 2D block loads and of DPAS (8x16x16), plus cooperative prefetches of the
A and B tiles. Loads, stores and DPAS carry anchor layouts (`layout = ...`, layout_a/b/cd), the
accumulator's load before the K loop included: xegpu-wg-to-sg-distribute types the loop's iter_arg
from it. `pipelines/xegpu/distribute.yaml` (xegpu-distribute) distributes to subgroups and lanes;
`pipelines/xegpu/lower.yaml` (xegpu-lower) goes on to XeVM/LLVM kernels; gpu-module-to-binary then
needs LLVM's SPIR-V backend (see docs/xegpu/notes.md).

Constraints (checked here): the work-group tile is a multiple of the subgroup tile; the prefetch
tiles split the A (wg_m x k_tile) and B (k_tile x wg_n) tiles into exactly as many pieces as there
are subgroups; a work-group has (wg_m/sg_m)*(wg_n/sg_n) subgroups of 16 work-items.
"""
from __future__ import annotations

DPAS_M, DPAS_N, DPAS_K = 8, 16, 16
PREFETCH_INST = [8, 16]
SUBGROUP_SIZE = 16

DEFAULTS = {"wg_m": 128, "wg_n": 128, "sg_m": 32, "sg_n": 32, "k_tile": 32,
          "load_a_m": 32, "load_a_k": 16, "load_b_k": 32, "load_b_n": 16,
          "prefetch_a_m": 16, "prefetch_a_k": 16, "prefetch_b_k": 8, "prefetch_b_n": 32, "nb_prefetch": 1}


#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["xegpu_matmul"]

def check(p: dict) -> list[str]:
    errs = []
    if p["wg_m"] % p["sg_m"] or p["wg_n"] % p["sg_n"]:
        errs.append("the work-group tile must be a multiple of the subgroup tile")
    nsg = (p["wg_m"] // p["sg_m"]) * (p["wg_n"] // p["sg_n"])
    if p["k_tile"] % DPAS_K or p["sg_m"] % DPAS_M or p["sg_n"] % DPAS_N:
        errs.append(f"subgroup tile and k_tile must be multiples of DPAS {DPAS_M}x{DPAS_N}x{DPAS_K}")
    pa = (p["wg_m"] // p["prefetch_a_m"]) * (p["k_tile"] // p["prefetch_a_k"])
    pb = (p["k_tile"] // p["prefetch_b_k"]) * (p["wg_n"] // p["prefetch_b_n"])
    if pa != nsg or pb != nsg:
        errs.append(f"prefetch tiles must split A and B into {nsg} pieces (one per subgroup); got {pa} and {pb}")
    return errs


def xegpu_matmul(wg_m: int = 128, wg_n: int = 128, sg_m: int = 32, sg_n: int = 32, k_tile: int = 32,
                 load_a_m: int = 32, load_a_k: int = 16, load_b_k: int = 32, load_b_n: int = 16,
                 prefetch_a_m: int = 16, prefetch_a_k: int = 16, prefetch_b_k: int = 8, prefetch_b_n: int = 32,
                 nb_prefetch: int = 1, chip: str = "bmg", stop_before_layouts: bool = False):
    from mlir import ir
    from mlir.dialects import transform
    from mlir.dialects.bufferization import LayoutMapOption
    from mlir.dialects.transform import bufferization, loop, structured, xegpu

    p = dict(locals())
    p = {k: p[k] for k in DEFAULTS}
    errs = check(p)
    if errs:
        raise ValueError("; ".join(errs))
    sg_layout = [wg_m // sg_m, wg_n // sg_n]
    threads = sg_layout[0] * sg_layout[1] * SUBGROUP_SIZE

    mod = ir.Module.create()
    mod.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    any_op = transform.AnyOpType.get()
    any_value = transform.AnyValueType.get()
    with ir.InsertionPoint(mod.body):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
        with ir.InsertionPoint(seq.body):
            root = seq.bodyTarget

            def match(target, name):
                return structured.MatchOp.match_op_names(target, [name]).result

            def cleanup(target):
                with ir.InsertionPoint(transform.ApplyPatternsOp(target).patterns):
                    transform.apply_patterns_canonicalization()
                transform.apply_cse(target)

            def run_pass(target, name, options=None):
                return transform.apply_registered_pass(any_op, target, name, options=options)

            matmul = match(root, "linalg.matmul")
            # work-group tiles (scf.forall), then the K loop
            tiled = structured.TileUsingForallOp(any_op, any_op, matmul, tile_sizes=[wg_m, wg_n])
            wg_matmul = tiled.results[0]
            structured.TileUsingForOp(wg_matmul, sizes=[0, 0, k_tile])
            func = match(root, "func.func")
            cleanup(func)
            func = structured.VectorizeChildrenAndApplyPatternsOp(
                func, fold_type_extensions_into_contract=True).result
            k_loop = match(func, "scf.for")
            loop.HoistLoopInvariantSubsetsOp(k_loop)
            cleanup(func)
            root2 = run_pass(root, "eliminate-empty-tensors")
            root2 = bufferization.OneShotBufferizeOp(
                root2, allow_return_allocs_from_loops=True, bufferize_function_boundaries=True,
                function_boundary_type_conversion=LayoutMapOption.IdentityLayoutMap).result
            root2 = run_pass(root2, "fold-memref-alias-ops")
            cleanup(root2)
            # the work-group loop becomes the launch grid
            forall = match(root2, "scf.forall")
            loop.loop_forall_to_parallel([any_op], forall)
            func = match(root2, "func.func")
            func = run_pass(func, "gpu-map-parallel-loops")
            func = run_pass(func, "convert-parallel-loops-to-gpu")
            func = run_pass(func, "lower-affine")
            cleanup(func)
            launch = match(func, "gpu.launch")
            xegpu.set_gpu_launch_threads(launch, threads=[threads, 1, 1])
            func = run_pass(func, "gpu-launch-sink-index-computations")
            root3 = run_pass(root2, "gpu-kernel-outlining")
            transform.apply_cse(root3)
            # the Xe target (block loads/DPAS need a chip that has them)
            root3 = run_pass(root3, "xevm-attach-target", options={"O": "3", "chip": chip})
            gpu_mod = match(root3, "gpu.module")
            gpu_func = match(gpu_mod, "gpu.func")
            gpu_func = run_pass(gpu_func, "convert-vector-to-xegpu")
            transform.apply_cse(gpu_func)
            if stop_before_layouts:  # to look at the work-group-level XeGPU ops the layouts apply to
                transform.yield_([])
                return mod
            # layouts: A/B loads, their DPAS operand tiles, C and the DPAS result
            k_loop = match(gpu_func, "scf.for")
            dpas = match(k_loop, "xegpu.dpas")
            tile_a = transform.get_operand(any_value, dpas, [0])
            tile_b = transform.get_operand(any_value, dpas, [1])
            tile_c = transform.get_operand(any_value, dpas, [2])
            pf_a = xegpu.insert_prefetch(tile_a, nb_prefetch=nb_prefetch)
            xegpu.set_desc_layout(pf_a, sg_layout=[wg_m // prefetch_a_m, k_tile // prefetch_a_k],
                                  sg_data=[prefetch_a_m, prefetch_a_k], inst_data=PREFETCH_INST)
            pf_b = xegpu.insert_prefetch(tile_b, nb_prefetch=nb_prefetch)
            xegpu.set_desc_layout(pf_b, sg_layout=[k_tile // prefetch_b_k, wg_n // prefetch_b_n],
                                  sg_data=[prefetch_b_k, prefetch_b_n], inst_data=PREFETCH_INST)
            # Loads, stores and DPAS get anchor layouts (`layout = ...` on load_nd/store_nd,
            # layout_a/b/cd on dpas), not only their tensor_descs: xegpu-wg-to-sg-distribute types
            # the scf.for iter_args by the layout of their producers, so the accumulator's load
            # (before the K loop) needs one (see docs/xegpu/notes.md).
            for index, tile, data, load_inst, dpas_inst in (
                    (0, tile_a, [sg_m, k_tile], [load_a_m, load_a_k], [DPAS_M, DPAS_K]),
                    (1, tile_b, [k_tile, sg_n], [load_b_k, load_b_n], [DPAS_K, DPAS_N])):
                load_layout = dict(sg_layout=sg_layout, sg_data=data, inst_data=load_inst)
                xegpu.set_desc_layout(xegpu.get_desc_op(tile), **load_layout)
                xegpu.set_op_layout_attr(transform.get_producer_of_operand(any_op, dpas, index),
                                         result=True, index=0, **load_layout)
                xegpu.convert_layout(tile, input_sg_layout=sg_layout, input_sg_data=data, input_inst_data=load_inst,
                                     target_sg_layout=sg_layout, target_sg_data=data, target_inst_data=dpas_inst)
                xegpu.set_op_layout_attr(dpas, index=index, sg_layout=sg_layout, sg_data=data, inst_data=dpas_inst)
            c_layout = dict(sg_layout=sg_layout, sg_data=[sg_m, sg_n], inst_data=[DPAS_M, DPAS_N])
            xegpu.set_desc_layout(xegpu.get_desc_op(tile_c), **c_layout)
            # the accumulator: its load before the loop (the K loop's iter_arg init, operand 3) ...
            xegpu.set_op_layout_attr(transform.get_producer_of_operand(any_op, k_loop, 3),
                                     result=True, index=0, **c_layout)
            # ... the DPAS result, and the store of the loop's result
            xegpu.set_op_layout_attr(dpas, result=True, index=0, **c_layout)
            xegpu.set_op_layout_attr(match(gpu_func, "xegpu.store_nd"), index=0, **c_layout)
            cleanup(gpu_func)
            transform.apply_licm(k_loop)
            cleanup(gpu_func)
            transform.yield_([])
    return mod


def default_params(m: int, n: int, k: int) -> dict:
    p = dict(DEFAULTS)
    while p["wg_m"] > 32 and m % p["wg_m"]:
        p["wg_m"] //= 2
    while p["wg_n"] > 32 and n % p["wg_n"]:
        p["wg_n"] //= 2
    return p
