"""Passes the workbench implements in Python (no upstream MLIR pass does the job, or the pass
needs a fact about this machine, such as the GPU's compute capability).

A `pass:` stage whose pipeline is one of these names, optionally with `{key=value ...}` options,
runs the Python function on the module in the compile worker, e.g. `pass: "lh-gpu-device-wrapper"`
in pipelines/cuda/lower.yaml.
"""
from __future__ import annotations

import re
from typing import Callable

from workbench.common.cuda_probe import DEFAULT_CHIP, detected_chip
from workbench.common.suggest import did_you_mean


class PyPassError(Exception):
    pass


def _int_option(options: dict, key: str, default: int, minimum: int | None = None) -> int:
    """An integer pass option (`{key=N}`), `default` when absent; one clear line (PyPassError) when it is
    not one, or below `minimum`."""
    value = options.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PyPassError(f"option {key}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise PyPassError(f"option {key}={number} must be >= {minimum}")
    return number


def _device_wrapper(module, options: dict) -> None:
    from workbench.worker.cuda import gpu_wrapper

    gpu_wrapper.to_device_wrapper(module)


def _device_memory(module, options: dict) -> None:
    from workbench.worker.cuda import gpu_wrapper

    gpu_wrapper.device_memory(module)


def _serial_kernels(module, options: dict) -> None:
    from workbench.worker.cuda import gpu_wrapper

    gpu_wrapper.serial_kernels(module)


def _parallel_dims_first(module, options: dict) -> None:
    from workbench.worker.cuda import parallel_first

    parallel_first.parallel_dims_first(module)


def _linear_map(module, options: dict) -> None:
    from workbench.worker.cuda import linear_map

    linear_map.linear_map(module, _int_option(options, "threads", 256))


def _bf16_compute_f32(module, options: dict) -> None:
    from workbench.worker.cpu import bf16_compute

    bf16_compute.widen(module)


def _bf16_memory_as_bits(module, options: dict) -> None:
    from workbench.worker.cpu import bf16_compute

    bf16_compute.memory_as_bits(module)


def _exp_approx(module, options: dict) -> None:
    from workbench.worker.cpu import math_approx

    math_approx.approximate_exp(module)


def _math_approx(module, options: dict) -> None:
    from workbench.worker.cpu import math_approx

    ops = options.get("ops")
    math_approx.approximate(module, tuple(f"math.{name}" for name in ops.split(",")) if ops else
                            tuple(math_approx.APPROXIMATED))


def _flat_vector_math(module, options: dict) -> None:
    from workbench.worker.cpu import flat_vector_math

    flat_vector_math.flatten_vector_math(module)


def _contiguous_gather_sources(module, options: dict) -> None:
    from workbench.worker.cpu import contiguous_gathers

    contiguous_gathers.contiguous_gather_sources(module)


def _outline_loops(module, options: dict) -> None:
    from workbench.worker.cpu import outline_loops

    outline_loops.outline_loops(module, _int_option(options, "min-loops", outline_loops.DEFAULT_MIN_LOOPS))


def _outline_repeated_steps(module, options: dict) -> None:
    from workbench.worker import repeated_steps

    repeated_steps.outline_repeated_steps(
        module, _int_option(options, "min-repeats", repeated_steps.DEFAULT_MIN_REPEATS),
        _int_option(options, "min-ops", repeated_steps.DEFAULT_MIN_OPS))


def _contiguous_copies(module, options: dict) -> None:
    from workbench.worker.cpu import contiguous_copies

    contiguous_copies.contiguous_copies_as_memcpy(module)


def _task_buffers_on_stack(module, options: dict) -> None:
    from workbench.worker.cpu import task_buffers

    task_buffers.promote_task_buffers(module)


def _defer_accumulator_loads(module, options: dict) -> None:
    from workbench.worker.cpu import accumulator_loads

    accumulator_loads.defer_accumulator_loads(module)


def _parallel_to_gomp(module, options: dict) -> None:
    from workbench.common.parallel_runtime import parallel_runtime
    from workbench.worker.cpu import gomp_parallel

    runtime = options.get("runtime", "auto")
    if runtime not in ("auto", "gomp", "async"):
        raise ValueError(f"lh-parallel-to-gomp: runtime={runtime!r}: expected auto, gomp or async")
    gomp_parallel.serialize_nested_parallel_loops(module)
    if runtime == "gomp" or (runtime == "auto" and parallel_runtime() == "gomp"):
        gomp_parallel.outline_parallel_loops(module)


def _gomp_dispatch(module, options: dict) -> None:
    from workbench.worker.cpu import gomp_parallel

    gomp_parallel.dispatch_on_gomp(module)


def _flush_denormals(module, options: dict) -> None:
    from workbench.worker.cpu import denormals

    denormals.flush_denormals(module, force=bool(_int_option(options, "force", 0)))


def _split_leftover_ops(module, options: dict) -> None:
    from workbench.worker.cpu import leftover_splits

    leftover_splits.split_leftover_ops(module, _int_option(options, "threads", 1),
                                       _int_option(options, "min-elements", leftover_splits.DEFAULT_MIN_ELEMENTS))


def _split_long_reductions(module, options: dict) -> None:
    from workbench.worker.cpu import reference_sums

    reference_sums.split_long_reductions(module)


def _drop_body_asserts(module, options: dict) -> None:
    """cf.assert ops inside linalg op bodies are erased (torch-mlir's per-element checks, such as a
    reciprocal of zero: torch itself returns inf there). A body with an assert is not vectorized."""
    from workbench.worker.ir_walk import ops_where

    for op in ops_where(module, lambda o: o.name == "cf.assert" and o.parent is not None
                        and o.parent.name.startswith("linalg.")):
        op.erase()


def _fold_slices_of_concat(module, options: dict) -> None:
    from workbench.worker.cpu import slices

    slices.fold_slices_of_concat(module)


def _gather_indices(module, options: dict) -> None:
    from workbench.worker.cpu import gathers

    gathers.gather_indices(module)


def _dilated_input_convs(module, options: dict) -> None:
    from workbench.worker.cpu import transposed_convs

    transposed_convs.dilated_input_convs(module)


def _merge_sibling_reductions(module, options: dict) -> None:
    from workbench.worker.cpu import sibling_reductions

    sibling_reductions.merge_sibling_reductions(module, _int_option(options, "min-row", 0, 0))


def _drop_dead_results(module, options: dict) -> None:
    from workbench.worker.cpu import dead_results

    dead_results.drop_dead_results(module)


def _unshare_fills(module, options: dict) -> None:
    from workbench.worker.cpu import shared_fills

    shared_fills.unshare_fills(module)


def _fold_all_neg_inf_checks(module, options: dict) -> None:
    from workbench.worker.cpu import softmax_guards

    softmax_guards.fold_all_neg_inf_checks(module)


def _scale_after_contractions(module, options: dict) -> None:
    from workbench.worker.cpu import scaled_contractions

    scaled_contractions.scale_after_contractions(module)


def _unmask_fp_reductions(module, options: dict) -> None:
    from workbench.worker.cpu import masked_reductions

    masked_reductions.unmask_fp_reductions(module)


def _merge_contraction_batches(module, options: dict) -> None:
    from workbench.worker.cpu import attention_batches

    attention_batches.merge_contraction_batches(module)


def _flash_attention(module, options: dict) -> None:
    from workbench.worker.cpu import flash_attention

    parallel = _int_option(options, "parallel", 0, minimum=0)
    if parallel > 1:
        raise PyPassError(f"option parallel={parallel} must be 0 or 1")
    flash_attention.flash_attention(module, _int_option(options, "rows", 64, minimum=1),
                                    _int_option(options, "keys", 256, minimum=1), bool(parallel))


def _softmax_reciprocals(module, options: dict) -> None:
    from workbench.worker.cpu import softmax_reciprocals

    softmax_reciprocals.softmax_reciprocals(module)


def _collapse_expanded_elementwise(module, options: dict) -> None:
    from workbench.worker.cpu import collapsed_elementwise

    collapsed_elementwise.collapse_expanded_elementwise(module)
    collapsed_elementwise.collapse_filled_inits(module)


def _reshape_gathers(module, options: dict) -> None:
    from workbench.worker.cpu import reshape_gathers

    reshape_gathers.reshape_gathers(module)


def _collapse_planes(module, options: dict) -> None:
    from workbench.worker.cpu import collapsed_planes

    collapsed_planes.collapse_planes(module, _int_option(options, "lanes", 16, minimum=1))


def _fuse_into_gathers(module, options: dict) -> None:
    from workbench.worker.cpu import gather_fusion

    gather_fusion.fuse_into_gathers(module)


def _widen_bool_reductions(module, options: dict) -> None:
    from workbench.worker.cpu import bool_reductions

    bool_reductions.widen_bool_reductions(module)


def _fuse_elementwise(module, options: dict) -> None:
    from workbench.worker.cpu import fusion

    fusion.fuse_elementwise(module)


def _widen_contraction_inputs(module, options: dict) -> None:
    from workbench.worker.cpu import widen_contractions

    widen_contractions.widen_contraction_inputs(module)


def _flatten_contiguous_transfers(module, options: dict) -> None:
    from workbench.worker.cpu import flatten_transfers

    flatten_transfers.flatten_contiguous_reads(module)
    flatten_transfers.shuffle_transposes(module)
    if _int_option(options, "writes", 1, minimum=0):
        flatten_transfers.flatten_contiguous_writes(module)


def _vnni_contractions(module, options: dict) -> None:
    from workbench.worker.cpu import vnni_contractions

    vnni_contractions.vnni_contractions(module, amx=bool(_int_option(options, "amx", 0)))


def _pad_conv_rows(module, options: dict) -> None:
    from workbench.worker.cpu import padded_conv_rows

    padded_conv_rows.pad_conv_rows(module, _int_option(options, "split-max-plane-bytes", 0, minimum=0))


def _conv_planes(module, options: dict) -> None:
    from workbench.worker.cpu import conv_planes

    conv_planes.conv_planes(module, _int_option(options, "lanes", 16, minimum=1))


def _pad_contraction_dims(module, options: dict) -> None:
    from workbench.worker.cpu import padded_contractions

    padded_contractions.pad_contraction_dims(module, _int_option(options, "lanes", 16, minimum=1),
                                             _int_option(options, "k-multiple", 0, minimum=0))


def _amx_tile_accumulators(module, options: dict) -> None:
    from workbench.worker.cpu import amx_accumulators

    amx_accumulators.carry_tile_accumulators(module)


def _row_matmuls_as_matvecs(module, options: dict) -> None:
    from workbench.worker.cpu import row_matvecs

    row_matvecs.row_matmuls_as_matvecs(module)


def _fold_constant_weights(module, options: dict) -> None:
    from workbench.worker.cpu import constant_folds

    constant_folds.fold_constant_weights(module)


def _tap_matmuls(module, options: dict) -> None:
    from workbench.worker.cpu import tap_matmuls

    tap_matmuls.tap_matmuls(module, _int_option(options, "min-bytes", 0, minimum=0))


def _strided_conv_planes(module, options: dict) -> None:
    from workbench.worker.cpu import strided_conv_planes

    strided_conv_planes.strided_conv_planes(module, _int_option(options, "lanes", 16, minimum=1),
                                            bool(_int_option(options, "all-borders", 0, minimum=0)))


def _fold_splat_extracts(module, options: dict) -> None:
    from workbench.worker.cpu import splat_extracts

    splat_extracts.fold_splat_extracts(module)


def _pad_copies(module, options: dict) -> None:
    from workbench.worker.cpu import pad_copies

    pad_copies.pad_copies(module, _int_option(options, "lanes", 16, minimum=1), _int_option(options, "threads", 1, minimum=1),
                          _int_option(options, "min-work", 0, minimum=0))


def _constant_pad_rows(module, options: dict) -> None:
    from workbench.worker.cpu import pad_copies

    pad_copies.constant_pad_rows(module, _int_option(options, "lanes", 16, minimum=1),
                                 _int_option(options, "threads", 1, minimum=1), _int_option(options, "min-work", 0, minimum=0),
                                 _int_option(options, "min-elements", pad_copies.MIN_CONSTANT_PAD_ELEMENTS, minimum=0))


def _row_networks(module, options: dict) -> None:
    from workbench.worker.cpu import row_networks

    row_networks.row_networks(module, _int_option(options, "threads", 1, minimum=1),
                              _int_option(options, "min-work", 0, minimum=0))


def _strided_convs(module, options: dict) -> None:
    from workbench.worker.cpu import strided_convs

    strided_convs.strided_convs(module, _int_option(options, "max-rank", 3, minimum=1))


def _pointwise_convs(module, options: dict) -> None:
    from workbench.worker.cpu import pointwise_convs

    pointwise_convs.pointwise_convs(module)


def _vnni_convs(module, options: dict) -> None:
    from workbench.worker.cpu import vnni_convs

    vnni_convs.vnni_convs(module, amx=bool(_int_option(options, "amx", 0)))


def _shared_rhs_matmuls(module, options: dict) -> None:
    from workbench.worker.cpu import shared_rhs

    shared_rhs.collapse_shared_rhs(module)


def _shared_lhs_matmuls(module, options: dict) -> None:
    from workbench.worker.cpu import shared_lhs

    shared_lhs.merge_shared_lhs(module, _int_option(options, "max-columns", 0), _int_option(options, "min-lhs-bytes", 0))


def _plain_matmul_layout(module, options: dict) -> None:
    from workbench.worker.cpu import matmul_layout

    matmul_layout.plain_matmul_layout(module)


def _transposed_b_matmuls(module, options: dict) -> None:
    from workbench.worker.cuda import kmajor_operands

    kmajor_operands.fold_transposed_b(module)


def _drop_redundant_stream_syncs(module, options: dict) -> None:
    from workbench.worker.cuda import stream_syncs

    stream_syncs.drop_redundant_syncs(module)


def _fuse_elementwise_keeping_contractions(module, options: dict) -> None:
    from workbench.worker.cuda import fusion

    batch_operands = options.get("batch-operands")
    fusion.fuse_elementwise(module, tuple(batch_operands.split(",")) if batch_operands else None)


def _narrow_contraction_inputs(module, options: dict) -> None:
    from workbench.worker.cuda import narrow_contractions

    narrow_contractions.narrow_contraction_inputs(module)


def _narrow_widened_results(module, options: dict) -> None:
    from workbench.worker.cuda import narrow_results

    narrow_results.narrow_widened_results(module)


def _report_failed_asserts(module, options: dict) -> None:
    from workbench.worker import report_asserts

    report_asserts.report_failed_asserts(module)


def _widen_i1(module, options: dict) -> None:
    from workbench.worker import widen_i1

    widen_i1.widen_i1_memrefs(module)


def _widen_i1_vector_args(module, options: dict) -> None:
    from workbench.worker import widen_i1

    widen_i1.widen_i1_vector_args(module)


def _mpi_buffer_deallocation(module, options: dict) -> None:
    from workbench.worker.mpi import dealloc

    dealloc.deallocate(module)


def _mpi_reuse_comm(module, options: dict) -> None:
    from workbench.worker.mpi import comm_reuse

    comm_reuse.reuse_communicators(module)


def _shard_collectives(module, options: dict) -> None:
    from workbench.worker.mpi import collectives

    try:
        collectives.lower_collectives(module, options.get("method", "p2p"))
    except collectives.CollectiveError as e:
        raise PyPassError(str(e))


def _blas_matmuls(module, options: dict) -> None:
    from workbench.worker.cpu import ukernel_rewrite

    ukernel_rewrite.blas_for_every_matmul(module)


BARRIER_MARK = "lh.barrier_after"


def _barrier_after_async_wait(module, options: dict) -> None:
    """A gpu.barrier right after each nvgpu.device_async_wait marked `lh.barrier_after` (the mark is dropped).

    A schedule marks the waits of a cp.async pipeline it built without the barriers of
    map_nested_forall_to_threads (they make transform.nvgpu.pipeline_shared_memory_copies assert in
    MLIR 22.1.8 when they precede a copy); no upstream transform op inserts a barrier.
    """
    from mlir import ir

    from workbench.worker.ir_walk import ops_where

    marked = ops_where(module, lambda op: op.name == "nvgpu.device_async_wait" and BARRIER_MARK in op.attributes)
    for wait in marked:
        ops = list(wait.block.operations)
        nxt = next(o for i, o in enumerate(ops) if i > 0 and ops[i - 1] == wait)
        with ir.InsertionPoint(nxt), wait.location:
            ir.Operation.create("gpu.barrier")
        del wait.attributes[BARRIER_MARK]


def nvvm_pipeline_text(options: dict) -> str:
    chip = options.get("chip", "auto")
    if chip in ("", "auto"):
        chip = detected_chip() or DEFAULT_CHIP
    if not re.fullmatch(r"sm_\d+a?", chip):
        raise PyPassError(f"chip={chip!r}: expected sm_NN (e.g. sm_90) or auto")
    features = options.get("features", "+ptx80")
    fmt = options.get("format", "isa")
    if fmt not in ("isa", "bin", "fatbin", "llvm", "offload"):
        raise PyPassError(f"format={fmt!r}: expected isa (PTX, JIT-compiled by the driver), bin or fatbin (need ptxas)")
    opt = _int_option(options, "opt-level", 3)
    return (f"builtin.module(gpu-lower-to-nvvm-pipeline{{cubin-chip={chip} cubin-features={features} "
            f"cubin-format={fmt} opt-level={opt}}})")


_TIMING_PROPERTY = re.compile(r"\b\w+TimeInMs = \d+ : i64(, )?")


def _nvvm_lower(module, options: dict) -> None:
    """gpu-lower-to-nvvm-pipeline for `chip` (auto: the compute capability the driver reports, as its
    arch-specific target where there is one, else sm_90a).

    Serialization records how long it took (`LLVMIRToISATimeInMs` in each gpu.object's properties):
    dropped, so that lowering the same IR twice gives the same text (byte-identical replay)."""
    from mlir import ir, passmanager

    from workbench.worker.ir_walk import ops_where

    passmanager.PassManager.parse(nvvm_pipeline_text(options)).run(module.operation)
    for binary in ops_where(module, lambda op: op.name == "gpu.binary"):
        text = str(binary.attributes["objects"])
        cleaned = _TIMING_PROPERTY.sub("", text).replace("properties = {}, ", "")
        if cleaned != text:
            binary.attributes["objects"] = ir.Attribute.parse(cleaned)


def _frontend_to_linalg(module, options: dict) -> None:
    from workbench.worker.frontend_dialects import lower_frontend_dialects

    lower_frontend_dialects(module)


def _lift_tensor_cf(module, options: dict) -> None:
    from workbench.worker.tensor_cf import lift_tensor_cf

    lift_tensor_cf(module)


def _erase_transform_schedules(module, options: dict) -> None:
    from workbench.worker.payload_schedules import erase_schedules

    erase_schedules(module)


def _apply_payload_schedule(module, options: dict) -> None:
    from workbench.worker.payload_schedules import NoPayloadSchedule, apply_payload_schedule

    try:
        apply_payload_schedule(module, str(options.get("entry") or "__transform_main"))
    except NoPayloadSchedule as e:
        raise PyPassError(str(e))


def _buffer_deallocation(module, options: dict) -> None:
    from mlir.passmanager import PassManager

    from workbench.worker.ir_walk import ops_where

    if ops_where(module, lambda op: op.name == "memref.dealloc"):
        return   # the payload frees its own buffers (upstream's memref test programs): the pipeline refuses them
    PassManager.parse("builtin.module(buffer-deallocation-pipeline)").run(module.operation)


def _profile_regions(module, options: dict) -> None:
    from workbench.worker.profile_regions import ProfileError, instrument

    try:
        instrument(module)
    except ProfileError as e:
        raise PyPassError(f"lh-profile-regions: {e}")


def _specialize_shapes(module, options: dict) -> None:
    from workbench.worker.specialize_shapes import SpecializeError, parse_shapes, specialize

    try:
        specialize(module, parse_shapes(options.get("shapes", "")), options.get("function", ""))
    except SpecializeError as e:
        raise PyPassError(f"lh-specialize-shapes: {e}")


def _xegpu_spirv_binary(module, options: dict) -> None:
    from workbench.worker.xegpu import spirv_binary

    try:
        spirv_binary.serialize_gpu_modules(module, options)
    except spirv_binary.SpirvBinaryError as e:
        raise PyPassError(str(e))


STREAM_GETTER = "lh_reused_gpu_stream"


def _reuse_gpu_stream(module, options: dict) -> None:
    """One CUDA stream per process instead of one per host function call.

    gpu-async-region gives every host function that launches work its own stream: after lowering,
    `mgpuStreamCreate()` ... `mgpuStreamSynchronize` + `mgpuStreamDestroy` around each call, i.e.
    a driver stream created and destroyed inside every timed call of a kernel (microseconds, a
    visible share of a 20 us matmul). Here each `mgpuStreamCreate()` calls a getter that creates
    the stream once and keeps it in a global; the destroys are dropped. The synchronizations stay,
    so every function still returns with its work finished (one stream serializes no more than the
    synchronous wrapper already does)."""
    from mlir import ir

    from workbench.worker.ir_walk import llvm_calls, symbol_names

    creates = llvm_calls(module, "mgpuStreamCreate")
    if not creates:
        return
    if STREAM_GETTER not in symbol_names(module):
        # parsed with a declaration of mgpuStreamCreate (the module has it already: not appended)
        extra = ir.Module.parse(f"""llvm.func @mgpuStreamCreate() -> !llvm.ptr
llvm.mlir.global internal @{STREAM_GETTER}_slot() {{addr_space = 0 : i32}} : !llvm.ptr {{
  %0 = llvm.mlir.zero : !llvm.ptr
  llvm.return %0 : !llvm.ptr
}}
llvm.func @{STREAM_GETTER}() -> !llvm.ptr {{
  %slot = llvm.mlir.addressof @{STREAM_GETTER}_slot : !llvm.ptr
  %old = llvm.load %slot : !llvm.ptr -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %none = llvm.icmp "eq" %old, %null : !llvm.ptr
  llvm.cond_br %none, ^make, ^done(%old : !llvm.ptr)
^make:
  %made = llvm.call @mgpuStreamCreate() : () -> !llvm.ptr
  llvm.store %made, %slot : !llvm.ptr, !llvm.ptr
  llvm.br ^done(%made : !llvm.ptr)
^done(%s: !llvm.ptr):
  llvm.return %s : !llvm.ptr
}}""")
        for op in list(extra.body.operations)[1:]:
            module.body.append(op.clone())
    for op in creates:
        op.attributes["callee"] = ir.FlatSymbolRefAttr.get(STREAM_GETTER)
    for op in llvm_calls(module, "mgpuStreamDestroy"):
        op.erase()


def _cache_gpu_temporaries(module, options: dict) -> None:
    from workbench.worker.cuda.cached_allocs import DEFAULT_MAX_MIB, cache_temporaries

    cache_temporaries(module, _int_option(options, "max-mib", DEFAULT_MAX_MIB))


#: name -> (function(module, options), help)
PASSES: dict[str, tuple[Callable, str]] = {
    "lh-frontend-to-linalg": (_frontend_to_linalg, "front-end dialects lowered to linalg by upstream's pipelines, only where the module holds their ops (TOSA: tosa-to-linalg-pipeline; workbench/worker/frontend_dialects.py); a transform script the payload carries is erased (lh-apply-payload-schedule runs it)"),
    "lh-apply-payload-schedule": (_apply_payload_schedule, "the payload's own transform script (upstream test files: a `module attributes {transform.with_named_sequence}` next to the code) run as one step {entry=__transform_main}, then erased (transform-interpreter + -test-transform-dialect-erase-schedule; workbench/worker/payload_schedules.py)"),
    "lh-erase-transform-schedules": (_erase_transform_schedules, "the payload's own transform scripts erased without running them (mlir-opt's -test-transform-dialect-erase-schedule; lh-frontend-to-linalg does it first)"),
    "lh-lift-tensor-cf": (_lift_tensor_cf, "unstructured control flow over tensors (cf branches whose block arguments are tensors: upstream's detensorize_while) lifted to scf, its poison tensors (values no path reads) made tensor.empty, only in the functions that have such branches (lift-cf-to-scf; workbench/worker/tensor_cf.py): bufferization's deallocation takes structured loops only"),
    "lh-buffer-deallocation": (_buffer_deallocation, "upstream's buffer-deallocation-pipeline, except on a module that frees its own buffers (memref.dealloc: upstream's memref test programs; the pipeline refuses existing frees)"),
    "lh-profile-regions": (_profile_regions, "each top-level op of the public functions timed with rtclock into the global __lh_profile_seconds, its label in lh.profile_regions (`run --profile`; workbench/worker/profile_regions.py)"),
    "lh-specialize-shapes": (_specialize_shapes, "on tensors: dynamic dims of a function's arguments made static {shapes=0:64x32,1:32x48 function=NAME}: casts folded by canonicalization, static results returned as such (run and the selectors need static shapes; workbench/worker/specialize_shapes.py)"),
    "lh-gpu-device-wrapper": (_device_wrapper, "benchmark wrapper -> GPU form (device buffers, copies outside the timed region)"),
    "lh-gpu-device-memory": (_device_memory, "host-side memref.alloc/dealloc/copy of the payload -> gpu.alloc/dealloc/memcpy"),
    "lh-gpu-serial-kernels": (_serial_kernels, "host-code linalg ops with no parallel loop (rank-0 fills and elementwise ops, whole-tensor reductions) -> one-thread gpu.launch kernels (the naive mapping makes none of them)"),
    "lh-parallel-dims-first": (_parallel_dims_first, "host linalg.generic ops that reduce a dim outside a parallel one get their parallel dims first (interchange): one kernel with the reduction inside each thread, not a host loop of kernel launches (amin / argmin / sums over dim 0 on cuda)"),
    "lh-gpu-linear-map": (_linear_map, "static top-level scf.parallel loops of host code -> one gpu.launch each over the linearized iteration space {threads=256}: innermost loop on consecutive threads (coalesced), bounds-checked last block"),
    "lh-barrier-after-async-wait": (_barrier_after_async_wait, "gpu.barrier after each nvgpu.device_async_wait marked lh.barrier_after (pipelined cp.async schedules)"),
    "lh-bf16-memory-as-bits": (_bf16_memory_as_bits, "on the LLVM dialect: loads and stores of bf16 vectors as loads and stores of i16 vectors, bitcast (LLVM's x86 backend aborts on bf16 vectors of 8k+1 elements: 'Do not know how to soft promote this operator's operand!'; workbench/worker/cpu/bf16_compute.py)"),
    "lh-bf16-compute-f32": (_bf16_compute_f32, "arith/math ops on bf16 and f16 (scalars, vectors) -> the same ops on f32, extended at the inputs and rounded once where a value leaves the chain (a chain of pointwise bf16 ops is rounded once, as torch's f32 opmath; math functions then get lh-math-approx's f32 polynomials; bf16 conversions as integer vector ops; workbench/worker/cpu/bf16_compute.py)"),
    "lh-unmask-fp-reductions": (_unmask_fp_reductions, "a masked float max / min vector.reduction -> the unmasked reduction of select(mask, x, -inf / +inf) (convert-vector-to-llvm counted a masked maximumf's lanes as -0.0; workbench/worker/cpu/masked_reductions.py)"),
    "lh-flat-vector-math": (_flat_vector_math, "math.absi/ctlz/cttz on n-D vectors -> the op on the flat 1-D vector between vector.shape_casts (convert-math-to-llvm lowers them on scalars and 1-D vectors only; workbench/worker/cpu/flat_vector_math.py)"),
    "lh-contiguous-gather-sources": (_contiguous_gather_sources, "on memrefs: a vector.gather from a non-contiguous view (its linear positions assume row-major strides) reads a contiguous copy of the view, made before the outermost op around the gathers and freed after it (workbench/worker/cpu/contiguous_gathers.py)"),
    "lh-math-approx": (_math_approx, "math.exp/tanh/erf/log/log1p on f32 / vector<..xf32> -> arith + math.fma polynomials {ops=exp,tanh,...: only those} (no libm calls per element; workbench/worker/cpu/math_approx.py)"),
    "lh-math-exp-approx": (_exp_approx, "math.exp on f32 / vector<..xf32> -> arith + math.fma polynomial (no libm expf; workbench/worker/cpu/math_approx.py)"),
    "lh-outline-loops": (_outline_loops, "functions with many top-level loop nests (an unrolled model) -> each nest in a noinline function of its own {min-loops=64}: LLVM compiles many small functions in linear time, one giant function in superlinear time; and in any function whose AMX tile ops lie in two or more top-level ops, each such loop nest in a noinline function of its own (LLVM gives each tmm register one tile shape per function: AMX kernels of other shapes in one function ran out of tile registers; workbench/worker/cpu/outline_loops.py)"),
    "lh-outline-repeated-steps": (_outline_repeated_steps, "on tensors: a run of ops that repeats (an unrolled RNN's time steps, a stack of identical layers) -> one private function called once per repeat {min-repeats=4 min-ops=64}: every later stage compiles one step, not one per repeat (workbench/worker/repeated_steps.py)"),
    "lh-contiguous-copies-as-memcpy": (_contiguous_copies, "linalg.copy between row-major contiguous buffers of one static shape -> memref.copy (one llvm.memcpy, no loop nest to compile: an unrolled RNN's copies into its output; workbench/worker/cpu/contiguous_copies.py)"),
    "lh-parallel-to-gomp": (_parallel_to_gomp, "on buffers, after scf-forall-to-parallel: each outermost scf.parallel -> a call of an outlined function running a range of its linearized iterations {runtime=auto|gomp|async: auto uses libgomp where the machine has it}; lh-gomp-dispatch then runs the range on libgomp's thread team (async-parallel-for lowers what is left; workbench/worker/cpu/gomp_parallel.py)"),
    "lh-gomp-dispatch": (_gomp_dispatch, "on the LLVM dialect: calls of lh-parallel-to-gomp's outlined loops -> GOMP_parallel over the threads' shares of the iterations (workbench/worker/cpu/gomp_parallel.py)"),
    "lh-flush-denormals": (_flush_denormals, "on the LLVM dialect, x86, a module marked lh.flush_denormals (pipelines/cpu/finish.py: the selector's tail) or {force=1}: the functions entered from outside (public ones, those whose address is taken: libgomp's thread functions) set MXCSR's flush-to-zero and denormals-are-zero bits on entry and restore the caller's MXCSR at return (an FMA with a subnormal operand takes a ~100-cycle microcode assist: a softmax of -100-masked scores gave subnormal probabilities, a batch matmul of them ran 5-7x slower; workbench/worker/cpu/denormals.py)"),
    "lh-defer-accumulator-loads": (_defer_accumulator_loads, "on buffers: a loop whose vector accumulators are read from memory before it and written back after it (register-blocked matmul and conv kernels) starts them at zero, prefetches the tile and adds the read after the loop, where the next tile's work overlaps a cache miss; only where that is the same sum (workbench/worker/cpu/accumulator_loads.py)"),
    "lh-task-buffers-on-stack": (_task_buffers_on_stack, "on buffers: static scratch buffers a forall chunk allocates once (packing buffers of the multi-threaded schedules, at most 1 MiB each, 4 MiB a chunk) on the stack of the task that runs the chunk, not a malloc per chunk and call (workbench/worker/cpu/task_buffers.py)"),
    "lh-split-leftover-ops": (_split_leftover_ops, "on buffers: large all-parallel linalg ops no schedule touched (what bufferization adds: a tensor.pad's fill and copy, a padded tile's copies in and out) -> scf.forall of {threads=N} chunks of their first loop with N iterations (min-elements=131072: smaller ones stay): run on every core like the scheduled ops, not on one after them (workbench/worker/cpu/leftover_splits.py)"),
    "lh-split-long-reductions": (_split_long_reductions, "on tensors: floating-point reductions of 32k+ elements per output summed into 4096 interleaved partials, then combined (the check's reference: one running sum drifts by percents at 16M elements)"),
    "lh-drop-body-asserts": (_drop_body_asserts, "cf.assert in linalg op bodies erased (torch-mlir's per-element runtime checks, e.g. a reciprocal of zero, where torch gives inf; they keep an op scalar)"),
    "lh-fold-slices-of-concat": (_fold_slices_of_concat, "on tensors: a tensor.extract_slice of a tensor.concat that lies within one operand -> a slice of that operand (no copy of every operand into the whole concatenation; workbench/worker/cpu/slices.py)"),
    "lh-unshare-fills": (_unshare_fills, "on tensors: a linalg.fill of a tensor.empty that several linalg ops write into (their outs init: torch-mlir's CSE shares one zero fill between same-shaped matmuls) cloned, with its empty, per op after the first, so that each bufferizes in place or fuses into its op (no whole-output fill + copy; workbench/worker/cpu/shared_fills.py)"),
    "lh-drop-dead-results": (_drop_dead_results, "on tensors: linalg.generic results nothing reads dropped with the body ops that compute only them (the unread index of an amin / max(dim): a plain reduction for the vectorizer), and fills of inits the body never reads (torch.gather's zero fill) replaced by the fill's init (workbench/worker/cpu/dead_results.py)"),
    "lh-fuse-into-gathers": (_fuse_into_gathers, "on tensors: a tensor.extract in a linalg body reading a few elements of an elementwise generic's result -> that generic's body on the extracts of its inputs (chains followed; a log-softmax written in full for nll_loss's one element per row is no longer written; workbench/worker/cpu/gather_fusion.py)"),
    "lh-fold-all-neg-inf-checks": (_fold_all_neg_inf_checks, "on tensors: a row's all -inf check (torch's _safe_softmax guard: an and-reduction of x oeq -inf) read off a maximumf reduction from -inf of the same scores over the same loops (max oeq -inf), no pass over the scores (workbench/worker/cpu/softmax_guards.py)"),
    "lh-scale-after-contractions": (_scale_after_contractions, "on tensors: a contraction (a generic of mulf/addf from a zero fill) of an elementwise op linear in one full input E and scaled by values free of the contraction's reduction dims (softmax's division by the row sum before attention's P @ V) reads E, and the elementwise op runs on its result (workbench/worker/cpu/scaled_contractions.py)"),
    "lh-merge-contraction-batches": (_merge_contraction_batches, "on tensors: a contraction over several leading batch loops whose result is read only through a collapse_shape merging them, or that reads an expand_shape splitting them (not where its left operand is an op's result over the split loops: nn.MultiheadAttention's P V), runs over the merged batch (grouped-query attention's Q K^T and P V around the softmax's 3-D scores; workbench/worker/cpu/attention_batches.py)"),
    "lh-flash-attention": (_flash_attention, "on tensors: attention (Q K^T [+ mask], its softmax's max, exp and sum, P V) computed `rows` query rows and `keys` keys at a time with a running max and sum, the division after P V (flash attention; `parallel=1`: the blocks of query rows one scf.forall, split over the cores; workbench/worker/cpu/flash_attention.py)"),
    "lh-softmax-reciprocals": (_softmax_reciprocals, "on tensors: a softmax's division by its row sums (an addf reduction of exponentials, read constant along the row) as a multiplication by their reciprocals, computed once per row (workbench/worker/cpu/softmax_reciprocals.py)"),
    "lh-widen-bool-reductions": (_widen_bool_reductions, "on tensors: reductions into i1 combined by andi/ori/xori (torch.all / any, attention's all -inf row check) accumulate in i8, truncated after: vectorized like any integer reduction (a multi_reduction over i1 is not lowered; workbench/worker/cpu/bool_reductions.py)"),
    "lh-fuse-elementwise": (_fuse_elementwise, "upstream's elementwise fusion (fpowi expanded, producers fused, unit dims folded, canonicalized) except into consumers that read a producer broadcast or through a window, where the fused body would recompute it per use (workbench/worker/cpu/fusion.py)"),
    "lh-gather-indices": (_gather_indices, "on tensors: all-parallel gathers (tensor.extract in a linalg body: pads, index_select, embeddings) with indices the vectorizer sees as contiguous: index tables computed in the body, ids read outside the vector loop loaded in it, indices of one loop evaluated and written as loop + constant, a last index of unit stride over a long run split off as an op of its own (workbench/worker/cpu/gathers.py)"),
    "lh-dilated-input-convs": (_dilated_input_convs, "on tensors: a stride-1 named convolution of a zero tensor into which the input was inserted with strides s (torch-mlir's transposed convolutions) -> one dense convolution per output phase (s^d of them: a slice of the input, a strided slice of the filter, into a dense copy of the phase's init, inserted back with strides s): no multiply-adds of zeros (workbench/worker/cpu/transposed_convs.py)"),
    "lh-widen-contraction-inputs": (_widen_contraction_inputs, "on tensors: named linalg contractions (matmul, batch_matmul, ...) reading bf16/f16 inputs into f32 -> the same op on f32 inputs, each extended once by an elementwise extf generic (the packed f32 schedules take it; workbench/worker/cpu/widen_contractions.py)"),
    "lh-vnni-contractions": (_vnni_contractions, "on tensors: bf16 matmuls / batch matmuls into f32 (bf16 inputs, or f32 extensions of bf16 tensors, also one fused into the op computing the bf16 value, which then writes that tensor) -> a contraction over B packed in K pairs (linalg.pack, N/16 x K/2 x 16 x 2; from W for x @ W.T), A and C viewed in pairs / panels without copies, tagged lh.vnni (pipelines/cpu/matmul_vnni.py lowers it to vdpbf16ps; workbench/worker/cpu/vnni_contractions.py); {amx=1}: those with N a multiple of 16 tagged lh.amx instead (the same layout, 16-column panels: each AMX B tile 1 KiB contiguous; pipelines/cpu/matmul_amx.py)"),
    "lh-pad-contraction-dims": (_pad_contraction_dims, "on tensors: f32 contractions (matmuls in any layout, batch matmuls, their generic forms) computed over padded rows where M has no wide register tile (197 tokens -> 200) and over padded columns where whole vectors of {lanes=16} use the lanes better than the tiles that divide N (1000 -> 1008), and where rows are padded, over K padded to a multiple of {k-multiple=0: off} (a prime K, 49 -> 52: whole steps of the kernel's K unrolling); the operands padded with zeros, the result sliced (workbench/worker/cpu/padded_contractions.py)"),

    "lh-amx-tile-accumulators": (_amx_tile_accumulators, "on buffers, after the AMX conversion: loops whose only stores are AMX result tiles loaded and stored at the same loop-invariant place carry those tiles instead (loaded before, stored after: no 1 KiB load and store per tile product), then the repeated A / B tile loads are merged (cse) (workbench/worker/cpu/amx_accumulators.py)"),
    "lh-row-matmuls-as-matvecs": (_row_matmuls_as_matvecs, "on tensors: a one-row f32 matmul reading a transposed weight (x @ W.T of a batch-1 linear layer: linalg.transpose of W, linalg.matmul) -> linalg.matvec of W itself (no pass over the weight to transpose it on every call; W's rows read contiguously) (workbench/worker/cpu/row_matvecs.py)"),
    "lh-conv-planes": (_conv_planes, "on tensors: channels-first f32 2-D/3-D convolutions (and grouped 2-D ones: conv_2d_ngchw_gfchw) with unit strides whose output rows are no whole number of {lanes=16} (56, 28, 14, 7; not those lh-pad-conv-rows pads: 60, 30) -> a convolution over the input's flattened plane (taps at kh*W + kw; the output computed over whole input rows, the extra columns sliced off, at most half as many extra positions): whole vectors, two per register tile (workbench/worker/cpu/conv_planes.py)"),
    "lh-fold-constant-weights": (_fold_constant_weights, "on tensors: transposes (linalg.transpose, permuting copy generics) and constant-valued pads of constants, through the reshapes between, computed at compile time into constants of their own (x @ W.T's transpose of W no longer a pass over the weight on every call; workbench/worker/cpu/constant_folds.py)"),
    "lh-strided-conv-planes": (_strided_conv_planes, "on tensors: f32 2-D channels-first convolutions with strides sh, sw > 1 along h and w (every phase with taps) -> sh * sw unit-stride convolutions, one per input phase, each over a contiguous phase plane (each phase's taps a strided slice of the filter), accumulated one after another; phases whose output rows are no whole number of {lanes=16} (those lh-conv-planes would flatten) as plane generics over one zero-bordered buffer that the unpadded input is transposed into once (no pad; the border zeroed only in the planes whose phases read it, every plane's whole border with {all-borders=0} 1), the others as named convolutions over the input padded and transposed once to sh x sw x n x c x Hq x Wq; strided f32 depthwise convolutions as one unit-stride depthwise convolution per phase over 4-D views of the zero-bordered buffer; strided grouped ones (conv_2d_ngchw_gfchw) whose rows are no whole vectors as grouped plane generics over the same buffer (workbench/worker/cpu/strided_conv_planes.py)"),
    "lh-fold-splat-extracts": (_fold_splat_extracts, "tensor.extract of a tensor whose elements are known (a splat constant: dense<0.01>, zeros, ones; a tensor.splat; a dense constant at constant indices) -> that value (the extracts MLIR's folder removes: inspect's generalized copy and the IR the selector schedules then agree; a splat weight's filter flip is a broadcast, not a gather; workbench/worker/cpu/splat_extracts.py)"),
    "lh-constant-pad-rows": (_constant_pad_rows, "on tensors: a tensor.pad with one value (static shapes and widths, a convolution's layout: rank 3+, batch and channels unpadded, at least {min-elements=4096} elements) -> one loop over the padded output's rows (an scf.forall where {threads=1} is more than 1 and the output has at least {min-work=0} elements, else scf.for loops), a border row written as vectors of the value, an interior row as the value's vectors around the source row's vector copies of {lanes=16} x 32 bits: one pass, where bufferization fills the whole padded buffer and then copies the source into it (workbench/worker/cpu/pad_copies.py)"),
    "lh-pad-copies": (_pad_copies, "on tensors: reflection, replication and circular pads written by torch-mlir as gathers (loads at index arithmetic of index tables, a gather per padded dim), recognized from the values their indices take (the pad map of widths p, q of each dim), -> one loop over the output's rows (an scf.forall where {threads=1} is more than 1 and the output has at least {min-work=0} elements, else scf.for loops), each row's runs of unit stride copied as vector transfers of {lanes=16} x 32 bits and its border elements as scalar loads and stores: one pass over the output, no gathers (workbench/worker/cpu/pad_copies.py)"),
    "lh-merge-sibling-reductions": (_merge_sibling_reductions, "on tensors: two one-result reductions (linalg.generic) of the same inputs with the same maps and iterators, in one block, the second depending on nothing from the first on (a group norm's f64 and f32 sums of its input) -> one two-result generic at the first's place: one read of each input element for both accumulators, the same values; only where the innermost loop is a reduction of at least {min-row=0} iterations (workbench/worker/cpu/sibling_reductions.py)"),
    "lh-row-networks": (_row_networks, "on tensors: a network of many small ops over the same independent rows (torch-mlir's sort / argsort / topk: a compare-and-swap stage per expand_shape, half slices, generic and collapse_shape) -> one scf.forall over chunks of rows around the whole network, each chunk's values in L1 across every stage and one parallel region instead of one per stage; at least {threads=1} chunks where the network has {min-work=0} elements or more, else one (workbench/worker/cpu/row_networks.py)"),
    "lh-pad-conv-rows": (_pad_conv_rows, "on tensors: channels-first convolutions (unit stride along w) whose output rows are a little short of a multiple of 16 (at most 1/8 extra: 60, 30) computed over padded rows (input and init padded with zeros, the result sliced): whole vectors along every row, no remainder tile; option split-max-plane-bytes=B: rows of at least 256 whose image's input channels x output positions take at most B bytes are split at the last whole tile into two convolutions writing slices of the result instead (no result copy) (workbench/worker/cpu/padded_conv_rows.py)"),
    "lh-strided-convs": (_strided_convs, "on tensors: channels-first convolutions with a stride s > 1 along w -> s unit-stride convolutions, one per input phase (the input's rows transposed once to s rows of every s-th element; each phase's taps a strided slice of the filter), accumulated one after another: vectors along w with contiguous loads (workbench/worker/cpu/strided_convs.py) {max-rank=3}: only convolutions of at most that many spatial dims (the selector: 1)"),
    "lh-tap-matmuls": (_tap_matmuls, "on tensors: f32 1-D convolutions of one image with at least 32 input and output channels, at most 8 taps and an input of at least {min-bytes=0} -> one linalg.matmul per tap (W[:, :, t] x the input shifted by the tap, every s-th column for a stride s: slices), accumulated one into the next: the matmul schedule's cache blocking, where the window schedule streamed the whole input once per block of output channels (workbench/worker/cpu/tap_matmuls.py)"),
    "lh-pointwise-convs": (_pointwise_convs, "on tensors: channels-first 2-D/3-D convolutions with a 1x1(x1) window and unit strides -> linalg.conv_1d_ncw_fcw over the spatial dims collapsed (collapse_shape views, the result expanded back): vectors along the whole plane, not along rows with a remainder (workbench/worker/cpu/pointwise_convs.py)"),
    "lh-vnni-convs": (_vnni_convs, "on tensors: 2-D NCHW/FCHW convolutions reading bf16 (or f32 extensions of bf16) into f32 -> a convolution over input and filter packed in input-channel pairs (linalg.pack along C by 2, zero-padded), tagged lh.vnni_conv (pipelines/cpu/conv_vnni.py lowers it to vdpbf16ps; workbench/worker/cpu/vnni_convs.py); {amx=1}: those with output channels a multiple of 16 in the AMX layout instead (the filter F x KH x KW x C/2 x 2, rows padded to 16: an lh.amx_conv generic, pipelines/cpu/conv_amx.py)"),
    "lh-flatten-contiguous-transfers": (_flatten_contiguous_transfers, "on tensors or identity-layout memrefs: n-D vector transfers over whole contiguous trailing rows whose value is flat on the other side (a read used only through shape_casts to 1-D, a write of a shape_cast of a 1-D vector) -> one 1-D transfer of a collapse_shape view (the VNNI micro-kernel's B panel rows and its pack's writes: one 64-byte access instead of 16 of 4 bytes; workbench/worker/cpu/flatten_transfers.py). Option writes=0: the reads only (a vectorized transpose's tile of input rows: its writes go into slices of a larger buffer, which a flattened write on tensors would copy)"),
    "lh-shared-rhs-matmuls": (_shared_rhs_matmuls, "on tensors: a batch_matmul of a matrix broadcast over the batch, or a generic A[m0, m1, k] W[k, n] (a linear layer on a 3-D input) -> one linalg.matmul over the collapsed rows (no broadcast copies; the packed matmul schedules take it; workbench/worker/cpu/shared_rhs.py)"),
    "lh-shared-lhs-matmuls": (_shared_lhs_matmuls, "on tensors: sibling matmuls reading the same left-hand matrix (plain, B transposed, or generics of those maps) -> one matmul of the concatenated right-hand matrices and a column slice per sibling (A read and packed once); options max-columns=N: only siblings of at most N columns, min-lhs-bytes=B: only an A of at least B bytes (workbench/worker/cpu/shared_lhs.py)"),
    "lh-transposed-b-matmuls": (_transposed_b_matmuls, "on tensors: a (batch) matmul whose B is a linalg.transpose of its last two dims (q @ k.transpose(-1, -2), x @ w.t()) reads the transpose's input with transposed-B maps (the wgmma kernel reads B K-major: no transpose kernel; workbench/worker/cuda/kmajor_operands.py)"),
    "lh-drop-redundant-stream-syncs": (_drop_redundant_stream_syncs, "after lh-reuse-gpu-stream: host synchronizations of the one stream followed only by launches and host-only work up to another synchronization are dropped (no idle GPU between the kernels of a chain; workbench/worker/cuda/stream_syncs.py)"),
    "lh-fuse-elementwise-keep-contractions": (_fuse_elementwise_keeping_contractions, "upstream's elementwise fusion (fpowi expanded, producers fused, unit dims folded, canonicalized) with the operands and results of named matmuls / batch matmuls guarded {batch-operands=f16,bf16: only batch matmuls of these operand types}: fusion by expansion through the reshapes around them would turn them into generics, which the cuda selector schedules no matmul for (workbench/worker/cuda/fusion.py)"),
    "lh-narrow-contraction-inputs": (_narrow_contraction_inputs, "on tensors: a named matmul / batch matmul into f32 whose operands are f32 extensions (extf generics) of f16 / bf16 tensors reads the narrow tensors (its body extends them: the same values; the wgmma kernel takes f16 / bf16 operands; workbench/worker/cuda/narrow_contractions.py)"),
    "lh-narrow-widened-results": (_narrow_widened_results, "on tensors: an elementwise op yielding the extf of an f16/bf16 value that several ops read is written narrow, each reader widens as it reads (half the bytes where it is materialized; workbench/worker/cuda/narrow_results.py)"),
    "lh-reshape-gathers": (_reshape_gathers, "on tensors: a gather over constant index tables that reads its source in row-major order (torch-mlir's broadcast of a group norm's per-group statistics to its channels) -> a tensor.collapse_shape / expand_shape of the source (workbench/worker/cpu/reshape_gathers.py)"),
    "lh-collapse-planes": (_collapse_planes, "on tensors: an elementwise linalg.generic over images whose rows are no whole number of {lanes=16} vectors (N x C x 56 x 56) runs over the flattened trailing dims (N x C x 3136: whole vectors, 64-byte aligned planes), its result expanded (workbench/worker/cpu/collapsed_planes.py)"),
    "lh-collapse-expanded-elementwise": (_collapse_expanded_elementwise, "on tensors: an elementwise linalg.generic reading a matmul's result through a tensor.expand_shape (a linear layer on a 3-D input as one matmul over the collapsed rows, its bias add after it) runs over the collapsed shape, its result expanded: the matmul's epilogue then; a matmul's init that is a collapsed fill becomes a fill of the collapsed shape (workbench/worker/cpu/collapsed_elementwise.py)"),
    "lh-plain-matmul-layout": (_plain_matmul_layout, "on tensors: a matmul with a transposed operand (x @ w.T: named with transposed maps, or a multiply-add generic) -> linalg.transpose of that operand + a plain linalg.matmul, and a plain matmul written as a multiply-add generic -> linalg.matmul (the packed schedule's micro-kernel reads B as [k][n]; workbench/worker/cpu/matmul_layout.py)"),
    "lh-report-failed-asserts": (_report_failed_asserts, "every cf.assert prints its message (puts) when it fails and the program goes on, as mlir-opt's -test-cf-assert lowers it (upstream's runtime-verification tests; the default lowering aborts at the first)"),
    "lh-widen-i1-memrefs": (_widen_i1, "memref<..xi1> -> memref<..xi8> (one byte per bool, as numpy stores them; MemRefToLLVM refuses sub-byte memrefs), loads/stores keep i1 values"),
    "lh-widen-i1-vector-args": (_widen_i1_vector_args, "every function defined in the module takes and returns vectors of i1 as vectors of i8 (truncated where it starts, extended at returns and call sites): LLVM 22's x86 backend aborts on a call passing <1 x i1> with AVX-512 (\"Cannot emit physreg copy instruction\"; the masks lh-outline-loops passes to an outlined loop nest; workbench/worker/widen_i1.py)"),
    "lh-mpi-buffer-deallocation": (_mpi_buffer_deallocation, "buffer-deallocation-pipeline on code with MPI ops (they take buffers but declare no memory effects: hidden behind calls while it runs; workbench/worker/mpi/dealloc.py)"),
    "lh-mpi-reuse-comm": (_mpi_reuse_comm, "after the LLVM lowering: each MPI_Comm_split call site makes its communicator once per process and hands it out on later calls (convert-shard-to-mpi splits one per collective per call; workbench/worker/mpi/comm_reuse.py)"),
    "lh-shard-collectives": (_shard_collectives, "before convert-shard-to-mpi: shard.all_gather / all_slice / all_to_all / reduce_scatter (not lowered by MLIR 22's convert-shard-to-mpi) -> helpers: {method=p2p} pairwise mpi.send/recv for gathers and all-to-alls (power-of-two groups), {method=allreduce} zero-filled blocks summed by shard.all_reduce (workbench/worker/mpi/collectives.py)"),
    "lh-blas-matmuls": (_blas_matmuls, "every plain f32 linalg.matmul on contiguous memrefs -> cblas_sgemm (the check's reference; no-op without a BLAS)"),
    "lh-xegpu-spirv-binary": (_xegpu_spirv_binary, "gpu.module of XeVM kernels -> gpu.binary of SPIR-V via llvm-as + the llvm-spirv translator {spirv-ext=+SPV_INTEL_...} (no SPIR-V backend in the wheels)"),
    "lh-reuse-gpu-stream": (_reuse_gpu_stream, "after the NVVM lowering: one CUDA stream per process (created once, kept in a global) instead of a stream created and destroyed in every host call"),
    "lh-cache-gpu-temporaries": (_cache_gpu_temporaries, "after the NVVM lowering: device buffers a host block allocates and frees (mgpuMemAlloc/mgpuMemFree) are allocated once per alloc site and kept {max-mib=4096: kept bytes, all sites}: no cuMemAlloc, and no cuMemFree that waits for the device, in each call (workbench/worker/cuda/cached_allocs.py)"),
    "lh-nvvm-lower": (_nvvm_lower, "gpu-lower-to-nvvm-pipeline for {chip=auto|sm_NN features=+ptx80 format=isa opt-level=3}"),
}

#: name -> the `{key=value}` options the pass reads (a pass not listed takes none); a key it does not read is
#: refused with the close ones (`lh-specialize-shapes{shape=0:4}`, `lh-fuse-elementwise{foo=1}` were applied
#: as if the option were not there). tests/test_qa_round6.py checks this against what each function reads.
OPTIONS: dict[str, tuple[str, ...]] = {
    "lh-apply-payload-schedule": ("entry",),
    "lh-specialize-shapes": ("shapes", "function"),
    "lh-gpu-linear-map": ("threads",),
    "lh-math-approx": ("ops",),
    "lh-outline-loops": ("min-loops",),
    "lh-flush-denormals": ("force",),
    "lh-outline-repeated-steps": ("min-repeats", "min-ops"),
    "lh-parallel-to-gomp": ("runtime",),
    "lh-split-leftover-ops": ("threads", "min-elements"),
    "lh-vnni-contractions": ("amx",),
    "lh-vnni-convs": ("amx",),
    "lh-pad-contraction-dims": ("lanes", "k-multiple"),
    "lh-conv-planes": ("lanes",),
    "lh-strided-conv-planes": ("lanes", "all-borders"),
    "lh-tap-matmuls": ("min-bytes",),
    "lh-pad-copies": ("threads", "min-work", "lanes"),
    "lh-constant-pad-rows": ("threads", "min-work", "lanes", "min-elements"),
    "lh-flash-attention": ("rows", "keys", "parallel"),
    "lh-row-networks": ("threads", "min-work"),
    "lh-merge-sibling-reductions": ("min-row",),
    "lh-collapse-planes": ("lanes",),
    "lh-strided-convs": ("max-rank",),
    "lh-shared-lhs-matmuls": ("max-columns", "min-lhs-bytes"),
    "lh-pad-conv-rows": ("split-max-plane-bytes",),
    "lh-flatten-contiguous-transfers": ("writes",),
    "lh-fuse-elementwise-keep-contractions": ("batch-operands",),
    "lh-shard-collectives": ("method",),
    "lh-xegpu-spirv-binary": ("spirv-ext",),
    "lh-cache-gpu-temporaries": ("max-mib",),
    "lh-nvvm-lower": ("chip", "features", "format", "opt-level"),
}

_REF = re.compile(r"^([A-Za-z0-9_.-]+)\s*(?:\{(.*)\})?$", re.S)


def parse(pipeline: str) -> tuple[str, dict] | None:
    text = pipeline.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1].strip()
    m = _REF.match(text)
    if not m or m.group(1) not in PASSES:
        return None
    options = {}
    for item in (m.group(2) or "").split():
        key, eq, value = item.partition("=")
        if not eq:
            raise PyPassError(f"{m.group(1)}: option {item!r} is not key=value")
        known = OPTIONS.get(m.group(1), ())
        if key not in known:
            raise PyPassError(f"{m.group(1)}: no such option {key}" + (
                did_you_mean(key, known) or f" ({m.group(1)}'s options: {', '.join(known)})" if known
                else f" ({m.group(1)} has no options)"))
        options[key] = value
    return m.group(1), options


def is_python_pass(text: str) -> bool:
    """Whether a pass text (`lh-widen-i1-memrefs`, `lh-specialize-shapes{shapes=0:4}`) names one of ours."""
    m = _REF.match(text.strip())
    return bool(m) and m.group(1) in PASSES


def lookup(pipeline: str):
    """A callable(module) for a pass-stage text naming a Python pass, else None."""
    parsed = parse(pipeline)
    if parsed is None:
        return None
    name, options = parsed
    fn = PASSES[name][0]
    return lambda module: fn(module, options)
