"""GPU flavour of the benchmark wrapper and device memory (runs in the compile worker).

The ordinary wrapper (`bench_wrapper.py`) is target-neutral: `@_lh_call` calls the entry on
host buffers, `@_lh_bench` times calls with rtclock. A GPU target's lowering pipeline turns it
into the device form with the Python pass `lh-gpu-device-wrapper` (first stage of e.g.
`cuda-lower`), so a `bench` step placed anywhere, and the one `run` inserts, both work:

  @_lh_device_call(device buffers...)   the old @_lh_call, unchanged: the payload on device memory
  @_lh_call(host inputs..., host outputs...)
        gpu.alloc every buffer, gpu.memcpy host->device, call, gpu.memcpy device->host, gpu.dealloc
  @_lh_bench(host..., times)
        gpu.alloc + host->device copies (untimed), `warmup` calls, then per iteration
        rtclock / call / rtclock, then device->host copies and gpu.dealloc (untimed)
  @_lh_device_call_timed                with calls_per_sample = B > 1 only: a copy of @_lh_device_call that
        the timed loop calls B times between its clock readings, then `@_lh_stream_sync()`, a marker
        that lh-drop-redundant-stream-syncs turns into the synchronization of the one stream; the
        copies' own synchronizations (and the entry's, in a copy of it) are dropped as redundant, so
        the B calls' kernels run back to back as CUDA events around B launches time them

Synchronisation: the wrapper is lowered with `gpu-async-region`, which makes the device
functions' GPU ops asynchronous on one stream and inserts a blocking `gpu.wait` (stream
synchronize) before each function returns and before any host side effect such as the call of
rtclock; so the second rtclock reads the clock after the kernels of that call finished. The
memory manager is `lh-gpu-device-memory`: after bufferization, buffers the payload allocates
(`memref.alloc`), frees and copies in host code become `gpu.alloc` / `gpu.dealloc` /
`gpu.memcpy`, since every buffer the payload touches lives on the device.
"""
from __future__ import annotations

from mlir import ir

from workbench.worker.bench_wrapper import WRAPPER_BENCH, WRAPPER_CALL, _funcs, _sym, timed_loops
from workbench.worker.cuda.stream_syncs import SYNC_MARKER

DEVICE_CALL = "_lh_device_call"
#: the device call of the samples that make several calls (see the module docstring)
TIMED_DEVICE_CALL = "_lh_device_call_timed"
#: unit attribute on the host-facing wrapper functions (they touch host memory on purpose)
HOST_ATTR = "lh.host_wrapper"


class GpuWrapperError(Exception):
    pass


def _func(module, name: str):
    for f in _funcs(module):
        if _sym(f) == name:
            return f
    return None


def to_device_wrapper(module) -> bool:
    """Rewrite the host wrapper into the device form; False if there is none or it is done already."""
    bench = _func(module, WRAPPER_BENCH)
    call = _func(module, WRAPPER_CALL)
    if bench is None or call is None:
        return False
    if HOST_ATTR in bench.attributes:
        return False
    if "lh.bench" not in bench.attributes:
        raise GpuWrapperError("@_lh_bench has no lh.bench attribute: not a workbench wrapper")
    d = ir.DictAttr(bench.attributes["lh.bench"])
    warmup = ir.IntegerAttr(d["warmup"]).value
    iterations = ir.IntegerAttr(d["iterations"]).value
    calls = ir.IntegerAttr(d["calls_per_sample"]).value if "calls_per_sample" in d else 1
    ftype = ir.FunctionType(ir.TypeAttr(call.attributes["function_type"]).value)
    types = [str(t) for t in ftype.inputs]
    for t in ftype.inputs:
        if not isinstance(t, ir.MemRefType):
            raise GpuWrapperError(f"wrapper argument of type {t}: the GPU wrapper handles memrefs only")
    n = len(types)
    forward_result_buffers(call)
    # a scalar argument (the wrapper's memref<1xT>, loaded before the entry's call) is read on the host:
    # it stays a host buffer (a device copy read by the host call's memref.load was a SIGSEGV)
    host_read = {i for i, arg in enumerate(call.regions[0].blocks[0].arguments)
                 if _only_loaded(arg)} if len(call.regions[0].blocks) else set()
    # the old call becomes the device-side call
    call.attributes["sym_name"] = ir.StringAttr.get(DEVICE_CALL)
    if "llvm.emit_c_interface" in call.attributes:
        del call.attributes["llvm.emit_c_interface"]
    if calls > 1:
        timed_copy = call.operation.clone(ip=ir.InsertionPoint.after(call))
        timed_copy.attributes["sym_name"] = ir.StringAttr.get(TIMED_DEVICE_CALL)
    sig = ", ".join(f"%h{i}: {t}" for i, t in enumerate(types))
    all_types = ", ".join(types)
    dev_args = ", ".join(f"%h{i}" if i in host_read else f"%d{i}" for i in range(n))
    on_device = [(i, t) for i, t in enumerate(types) if i not in host_read]
    alloc = "\n".join(f"    %d{i} = gpu.alloc () : {t}\n    gpu.memcpy %d{i}, %h{i} : {t}, {t}" for i, t in on_device)
    back = "\n".join(f"    gpu.memcpy %h{i}, %d{i} : {t}, {t}" for i, t in on_device)
    free = "\n".join(f"    gpu.dealloc %d{i} : {t}" for i, t in on_device)
    text = f"""
func.func private @{DEVICE_CALL}({all_types})
func.func private @{TIMED_DEVICE_CALL}({all_types})
{f"func.func private @{SYNC_MARKER}()" if calls > 1 else ""}
func.func private @rtclock() -> f64
func.func @{WRAPPER_CALL}({sig}) attributes {{llvm.emit_c_interface, {HOST_ATTR}}} {{
{alloc}
    func.call @{DEVICE_CALL}({dev_args}) : ({all_types}) -> ()
{back}
{free}
    return
}}
func.func @{WRAPPER_BENCH}({sig}{', ' if sig else ''}%times: memref<{iterations}xf64>) attributes {{llvm.emit_c_interface, {HOST_ATTR}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cw = arith.constant {warmup} : index
    %cn = arith.constant {iterations} : index
{alloc}
{_timed_device_loops(dev_args, all_types, iterations, calls)}{back}
{free}
    return
}}
"""
    try:
        snippet = ir.Module.parse(text)
    except ir.MLIRError as e:
        raise GpuWrapperError(f"internal error building the GPU wrapper: {e}")
    new_bench = None
    body = module.operation.regions[0].blocks[0]
    for op in list(snippet.body.operations):
        sym = _sym(op)
        if sym in (DEVICE_CALL, TIMED_DEVICE_CALL, "rtclock"):
            continue
        op.operation.detach_from_parent()
        body.append(op.operation)
        if sym == WRAPPER_BENCH:
            new_bench = op
    new_bench.attributes["lh.bench"] = bench.attributes["lh.bench"]
    bench.operation.erase()
    return True


def _only_loaded(value) -> bool:
    """Whether every use of `value` (a wrapper argument) is a memref.load: a scalar the host reads."""
    uses = list(value.uses)
    return bool(uses) and all(use.owner.name == "memref.load" for use in uses)


def _timed_device_loops(dev_args: str, types: str, iterations: int, calls: int) -> str:
    """@_lh_bench's loops on device buffers: one synchronized call a sample, or `calls` calls of the
    timed copy and one synchronization of the stream (the module docstring)."""
    if calls == 1:
        return timed_loops(DEVICE_CALL, dev_args, types, iterations)
    call = f"func.call @{TIMED_DEVICE_CALL}({dev_args}) : ({types}) -> ()"
    return timed_loops(DEVICE_CALL, dev_args, types, iterations, calls_per_sample=calls,
                       timed=("", f"      {call}\n      func.call @{SYNC_MARKER}() : () -> ()", ""),
                       repeated=f"        {call}")


def forward_result_buffers(call_wrapper) -> int:
    """In the call wrapper, let the entry write its results straight into the output arguments.

    After bufferization `@_lh_call` allocates a buffer per result, passes it to the entry as an out
    parameter and copies it into the output argument: on a GPU that is a cudaMalloc, a device copy
    and a cudaFree inside every timed call. When the buffer has no other use (the call, the copy,
    a dealloc) the output argument is passed instead. Output arguments are buffers of their own
    (the runner allocates them), so they alias nothing the entry reads. Returns how many it forwarded.
    """
    block = call_wrapper.regions[0].blocks[0]
    args = list(block.arguments)
    forwarded = 0
    # the allocs are listed before anything is erased: a handle to an op erased later (a copy, a
    # dealloc) dangles, and reading it crashes the process (the bindings keep no live-op map)
    allocs = [op for op in block.operations if op.name == "memref.alloc" and not len(op.operands)]
    for op in allocs:
        buf = op.results[0]
        uses = [u.owner for u in buf.uses]
        calls = [u for u in uses if u.name == "func.call"]
        copies = [u for u in uses if u.name == "memref.copy" and u.operands[0] == buf]
        deallocs = [u for u in uses if u.name == "memref.dealloc"]
        if len(calls) != 1 or len(copies) != 1 or len(uses) != 1 + 1 + len(deallocs):
            continue
        dst = copies[0].operands[1]
        if dst not in args or dst.type != buf.type:
            continue
        ops = list(block.operations)
        if ops.index(copies[0]) < ops.index(calls[0]):
            continue
        for d in deallocs:
            d.erase()
        copies[0].erase()
        buf.replace_all_uses_with(dst)
        op.erase()
        forwarded += 1
    return forwarded


def _inside_device_code(op) -> bool:
    p = op.parent
    while p is not None:
        if p.name in ("gpu.launch", "gpu.module", "gpu.func"):
            return True
        p = p.parent
    return False


def device_memory(module) -> int:
    """memref.alloc/dealloc/copy in host code of the payload -> gpu.alloc/dealloc/memcpy; constants
    (memref.get_global) -> device copies.

    Host-facing wrapper functions (`lh.host_wrapper`) are left alone. Returns the number of
    ops rewritten. A copy of a non-contiguous (strided) buffer becomes a `linalg.copy` that the naive
    mapping after it runs as a kernel (one gpu.memcpy cannot copy it).
    """
    todo = _host_side_ops(module, lambda op: op.name in ("memref.alloc", "memref.dealloc", "memref.copy",
                                                         "memref.get_global"))
    count = 0
    for op in todo:
        if _inside_device_code(op):
            continue
        if op.name == "memref.get_global":
            if _global_to_device(op):
                count += 1
            continue
        with ir.InsertionPoint(op), op.location:
            if op.name == "memref.alloc":
                t = op.results[0].type
                if ir.MemRefType(t).memory_space is not None:
                    continue  # an explicit memory space (workgroup, private, ...) is not ours to move
                sizes = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
                n_dyn = sizes[0]
                operands = list(op.operands)
                from mlir.dialects import gpu

                new = gpu.AllocOp(t, None, [], operands[:n_dyn], operands[n_dyn:])
                op.results[0].replace_all_uses_with(new.results[0])
                _free_at_end_of_block(new.results[0])
            elif op.name == "memref.dealloc":
                from mlir.dialects import gpu

                gpu.DeallocOp(None, [], op.operands[0])
            else:  # memref.copy src, dst
                from mlir.dialects import gpu

                src, dst = op.operands[0], op.operands[1]
                if (all(_contiguous(v.type) and "offset" not in str(ir.MemRefType(v.type).layout) for v in (src, dst))
                        and not isinstance(ir.MemRefType(src.type).layout, ir.StridedLayoutAttr)):
                    gpu.MemcpyOp(None, [], dst, src)
                else:
                    # a strided view (a slice, a pad's interior, ...), one at an offset, or a source
                    # typed with explicit strides even where contiguous (`strided<[5, 1]>`: cummax_dim0's
                    # results; gpu-to-llvm lowers a memcpy only from an identity-layout source, and a
                    # memref.cast to one folds back into it): a linalg.copy in host code, which
                    # cuda-lower's naive mapping turns into a kernel of its own
                    from mlir.dialects import linalg

                    linalg.copy(src, outs=[dst])
        op.erase()
        count += 1
    return count + _host_copies_for_external_calls(module)


def _external_callees(module) -> set[str]:
    return {ir.StringAttr(f.attributes["sym_name"]).value for f in _funcs(module) if len(f.regions[0].blocks) == 0}


def _host_copies_for_external_calls(module) -> int:
    """A host function the payload calls (printMemrefF32 in an upstream test program) gets host copies
    of the device buffers it is passed: a buffer (or its memref.cast, e.g. to memref<*xf32>) is copied
    into a host allocation right before the call (gpu.memcpy; gpu-async-region waits for the device
    before a call) and freed after it. Before, printMemref read device memory from the host: the run
    worker died. Returns how many copies were made."""
    from mlir.dialects import gpu, memref

    from workbench.worker.cuda.reduce_kernels import _index

    external = _external_callees(module)
    calls = _host_side_ops(module, lambda op: op.name == "func.call"
                           and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in external)
    copies = 0
    for call in calls:
        for i, v in enumerate(list(call.operands)):
            cast = v.owner if not isinstance(v.owner, ir.Block) and v.owner.name == "memref.cast" else None
            ranked = cast.operands[0] if cast is not None else v
            if not isinstance(ranked.type, ir.MemRefType) or ir.MemRefType(ranked.type).memory_space is not None:
                continue
            t = ir.MemRefType(ranked.type)
            if not _contiguous(ranked.type):
                continue
            with ir.InsertionPoint(call), call.location:
                dims = [memref.DimOp(ranked, _index(d)).result
                        for d, size in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(size)]
                host = memref.AllocOp(ir.MemRefType.get(t.shape, t.element_type), dims, []).result
                gpu.MemcpyOp(None, [], host, ranked)
                arg = memref.CastOp(v.type, host).result if cast is not None else host
            call.operands[i] = arg
            with ir.InsertionPoint.after(call), call.location:
                memref.DeallocOp(host)
            copies += 1
    return copies


def _is_constant_global(get_global) -> bool:
    name = ir.FlatSymbolRefAttr(get_global.attributes["name"]).value
    p = get_global.operation
    while p.parent is not None and p.name != "builtin.module":
        p = p.parent
    for o in p.regions[0].blocks[0].operations:
        if o.name == "memref.global" and ir.StringAttr(o.attributes["sym_name"]).value == name:
            return "constant" in o.attributes
    return False


def _global_to_device(op) -> bool:
    """A constant (memref.get_global of a host global: weights, dense constants) read by device code:
    a device copy made where it is taken (gpu.alloc + gpu.memcpy), freed at the end of the block.
    Kernels cannot read host memory (CUDA_ERROR_ILLEGAL_ADDRESS)."""
    from mlir.dialects import gpu

    g = op.results[0]
    t = ir.MemRefType(g.type)
    if t.memory_space is not None or not _contiguous(g.type) or not list(g.uses):
        return False
    if not _is_constant_global(op):
        return False  # mutable host state (e.g. the wgmma kernels' TMA descriptor cache) stays on the host
    after = op.operation.block.operations
    ops = list(after)
    nxt = ops[ops.index(op.operation) + 1]
    with ir.InsertionPoint(nxt), op.location:
        dev = gpu.AllocOp(g.type, None, [], [], []).results[0]
        copy = gpu.MemcpyOp(None, [], dev, g)
    g.replace_all_uses_except(dev, copy.operation)
    _free_at_end_of_block(dev)
    return True


def serial_kernels(module) -> int:
    """Linalg ops in host code with no parallel loop (rank-0 fills and elementwise ops, reductions of a
    whole tensor to a scalar) -> a kernel of one thread each (`gpu.launch` of 1 x 1): the naive mapping
    makes no kernel of them, and their loops would read and write device buffers from the host.
    Returns how many it wrapped."""
    from mlir.dialects import arith, gpu

    def serial_on_buffers(op) -> bool:
        if not op.name.startswith("linalg.") or op.name in ("linalg.yield", "linalg.index"):
            return False
        if "iterator_types" in op.attributes:  # generics
            its = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
            serial = not any("parallel" in it for it in its)
        else:  # named ops: rank-0 operands only (a fill of a scalar buffer, ...)
            serial = all(ir.ShapedType(v.type).rank == 0 for v in op.operands
                         if isinstance(v.type, ir.ShapedType))
        return serial and all(isinstance(v.type, ir.MemRefType) or not isinstance(v.type, ir.ShapedType)
                              for v in op.operands)

    todo = _host_side_ops(module, serial_on_buffers)
    for op in todo:
        with ir.InsertionPoint(op), op.location:
            one = arith.ConstantOp(ir.IndexType.get(), 1).result
            launch = gpu.LaunchOp((one, one, one), (one, one, one))
            with ir.InsertionPoint(launch.regions[0].blocks[0]):
                term = gpu.TerminatorOp()
        op.move_before(term)
    return len(todo)


def _host_side_ops(module, keep) -> list:
    """The ops for which `keep(op)` holds in the payload's host code: every function but the host-facing
    wrappers (`lh.host_wrapper`), outside kernels (gpu.launch, gpu.module) and linalg op bodies."""
    found: list = []
    for f in _funcs(module):
        if HOST_ATTR in f.attributes or len(f.regions[0].blocks) == 0:
            continue

        def visit(op):
            if op.name in ("gpu.launch", "gpu.module"):
                return ir.WalkResult.SKIP
            if keep(op):
                found.append(op)
            return ir.WalkResult.SKIP if op.name.startswith("linalg.") else ir.WalkResult.ADVANCE

        f.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


_ESCAPES = ("func.return", "scf.yield", "memref.dealloc", "gpu.dealloc", "func.call", "cf.br")


def _free_at_end_of_block(value) -> None:
    """gpu.dealloc before the terminator of the block that allocates `value`, unless it escapes."""
    from mlir.dialects import gpu

    for use in value.uses:
        if use.owner.name in _ESCAPES[:4]:
            return
    block = value.owner.operation.block
    terminator = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint(terminator), value.owner.operation.location:
        gpu.DeallocOp(None, [], value)


def _contiguous(t) -> bool:
    mt = ir.MemRefType(t)
    if mt.rank == 0:
        return True
    layout = str(mt.layout)
    if layout.startswith("affine_map<(d0") and layout.count("d") and "->" in layout:
        # identity maps print as affine_map<(d0, d1) -> (d0, d1)>
        lhs, rhs = layout[len("affine_map<"):-1].split("->")
        return lhs.strip() == rhs.strip()
    if layout.startswith("strided<"):
        # contiguous row-major with any offset: strides are the suffix products of the shape
        strides, _, _ = layout[len("strided<["):].partition("]")
        want, acc = [], 1
        for d in reversed(mt.shape):
            want.append(str(acc))
            acc *= d
        return [s.strip() for s in strides.split(",")] == list(reversed(want))
    return False
