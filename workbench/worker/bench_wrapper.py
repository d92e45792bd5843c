"""The benchmark wrapper, generated from the entry function *as it is now* (runs in a worker).

Two functions are added next to the payload:

  @_lh_call(inputs..., outputs...)            one call of the entry, results written to `outputs`
  @_lh_bench(inputs..., outputs..., times)    `warmup` untimed calls, then `iterations` calls,
                                              each timed with rtclock into `times`

Inputs are memrefs: a tensor argument of the entry arrives as a memref of the same shape and
is turned into a tensor with `bufferization.to_tensor restrict`; a memref argument is passed
through with its exact type (strided layouts included); a scalar argument (f32, i1, index, ...)
arrives as a `memref<1xT>` and is loaded before the call. Tensor results are written with
`bufferization.to_buffer` + `memref.copy`, memref results with `memref.copy`, scalar results
are stored into a `memref<1xT>`. An entry with no results (destination-passing style, e.g.
after bufferization dropped equivalent results) reports its output arguments: by default the
last memref argument, or the indices given by the `outputs` parameter.

The wrapper is described by a `lh.bench` dictionary attribute on `@_lh_bench` so the runner
knows the argument roles without guessing.
"""
from __future__ import annotations

import re

from mlir import ir

from workbench.common.bench_defaults import (DEFAULT_PARAMS, MAX_CALLS_PER_SAMPLE, WRAPPER_BENCH,  # noqa: F401  (re-exported)
                                             WRAPPER_CALL)
from workbench.worker.ir_walk import ops_where



class BenchError(Exception):
    pass


def symbol_name(op) -> str:
    """The op's `sym_name`, or "" (shared by the worker-side modules)."""
    try:
        return ir.StringAttr(op.attributes["sym_name"]).value
    except Exception:
        return ""


_sym = symbol_name


def _funcs(module) -> list:
    return [op for op in module.operation.regions[0].blocks[0].operations if op.operation.name == "func.func"]


def _called_symbols(module) -> set[str]:
    return {ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            for op in ops_where(module, lambda op: op.name == "func.call")}


def _referenced_symbols(module) -> set[str]:
    """The symbols any op of `module` names in an attribute (a FlatSymbolRefAttr, or the root of a nested
    SymbolRefAttr), the functions' own names aside."""
    names: set[str] = set()

    def visit(op):
        if op.name != "func.func":
            for name in op.attributes:   # the attribute names
                value = op.attributes[name]
                if isinstance(value, ir.FlatSymbolRefAttr):
                    names.add(value.value)
                elif isinstance(value, ir.SymbolRefAttr):
                    names.add(str(value).split("::")[0].lstrip("@").strip('"'))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def find_entry(module, name: str = "") -> "ir.Operation":
    funcs = _funcs(module)
    if not any(len(f.regions[0].blocks) > 0 for f in funcs):
        lowered = [_sym(op) for op in module.operation.regions[0].blocks[0].operations
                   if op.operation.name == "llvm.func" and len(op.operation.regions[0].blocks) > 0]
        if lowered:   # (`entry function @matmul not found (functions: none)` said nothing of why)
            shown = ", ".join("@" + n for n in lowered[:4]) + (", ..." if len(lowered) > 4 else "")
            raise BenchError(f"the module is already in the LLVM dialect ({shown}): the benchmark wrapper goes "
                             "before the lowering steps (`undo` them, `bench`, then lower again)")
    if name:
        for f in funcs:
            if _sym(f) == name:
                return f
        raise BenchError(f"entry function @{name} not found (functions: "
                         f"{', '.join('@' + _sym(f) for f in funcs) or 'none'})")
    called = _called_symbols(module)
    candidates = [f for f in funcs if len(f.regions[0].blocks) > 0 and not _sym(f).startswith("_lh_")
                  and "sym_visibility" not in f.attributes and _sym(f) not in called]
    if len(candidates) > 1:
        # functions used otherwise than by func.call are not entries either: taken as values
        # (`func.constant @sqrt` for a `func.call_indirect`: upstream's Complex integration test), named by
        # an async.call, ... (the whole walk over every attribute only when the calls did not decide)
        referenced = _referenced_symbols(module)
        candidates = [f for f in candidates if _sym(f) not in referenced] or candidates
    if len(candidates) != 1:
        # upstream's Dialect tests define their kernels private (`func.func private @test_reduce_sum_kernel`): named,
        # as the candidates are, the user has the NAME to give
        private = [_sym(f) for f in funcs if len(f.regions[0].blocks) > 0 and not _sym(f).startswith("_lh_")
                   and "sym_visibility" in f.attributes and _sym(f) not in called]
        shown = ", ".join("@" + n for n in private[:6]) + (", ..." if len(private) > 6 else "")
        raise BenchError("cannot pick the entry function: "
                         + (f"candidates {', '.join('@' + _sym(f) for f in candidates)}" if candidates
                            else "no public function that is not called by another"
                            + (f" (private ones: {shown})" if private else ""))
                         + "; name it: `run --entry NAME`, or the bench step's `entry` parameter (`bench entry=NAME`)")
    return candidates[0]


def _static_strided_layout(t: ir.Type, index: int, name: str) -> tuple[list[int], int] | None:
    """(strides, offset) of a memref argument whose static layout a contiguous array of its shape does not have
    (`strided<[8, 1]>`, `offset: 2`); None where it does (identity, contiguous strides, dynamic ones, which the
    descriptor gives) or where the shape is dynamic (the runner refuses those)."""
    mt = ir.MemRefType(t)
    if any(ir.ShapedType.is_dynamic_size(d) for d in mt.shape):
        return None
    try:
        strides, offset = mt.get_strides_and_offset()
    except (RuntimeError, ValueError):
        raise BenchError(f"argument #{index} of @{name} is {t}: a layout that is no strided layout, which the "
                         f"wrapper cannot make from an array") from None
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    contiguous, step = [], 1
    for d in reversed(mt.shape):
        contiguous.insert(0, step)
        step *= d
    if all(s == dynamic or s == c or d == 1 for s, c, d in zip(strides, contiguous, mt.shape)) and offset in (0, dynamic):
        return None
    if dynamic in strides or offset == dynamic:
        raise BenchError(f"argument #{index} of @{name} is {t}: static and dynamic strides or offset mixed, "
                         f"which the wrapper cannot lay out (make them all static or all dynamic)")
    return list(strides), offset


def _memref_for_tensor(t: ir.Type) -> str:
    rt = ir.RankedTensorType(t)
    if any(ir.ShapedType.is_dynamic_size(d) for d in rt.shape):
        raise BenchError(f"dynamic shape {t} at the entry boundary: the wrapper needs static shapes (make the "
                         "arguments static first: `pass lh-specialize-shapes{shapes=0:64x32,1:...}`)")
    return str(ir.MemRefType.get(rt.shape, rt.element_type))


def _is_scalar(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) or isinstance(t, ir.FloatType) or isinstance(t, ir.IndexType)


def _calls_attr(calls: int) -> str:
    """`lh.bench`'s calls_per_sample entry: only where a sample makes several calls (readers take 1 when
    it is absent), so that a wrapper of one call per sample is the text it was before the parameter
    existed and sessions saved then replay to their recorded IR (sessions/*.yaml: "final IR differs")."""
    return f", calls_per_sample = {calls} : i64" if calls != 1 else ""


def timed_loops(callee: str, args: str, types: str, iterations: int, *,
                timed: tuple[str, str, str] | None = None, calls_per_sample: int = 1,
                repeated: str = "") -> str:
    """The body of @_lh_bench after its constants (%c0, %c1, %cw = warmup, %cn = iterations): `warmup`
    untimed calls of `callee`, then `iterations` timed samples into %times.

    `timed` = (setup, call, teardown) times `call` alone: the lines of `setup` run before the clock
    starts and those of `teardown` after it stops (the CPU wrapper copies the entry's results into
    the output arguments there: a serial copy of every output is no part of the payload's time).
    With `calls_per_sample` = B > 1 each sample makes B calls back to back between its two clock
    readings and stores their mean: B - 1 calls by the line `repeated` (it names no result) in a loop,
    then `call`. Short kernels are then timed as CUDA events around back-to-back launches time them: the
    launch latency of one call hides behind the work of the one before (the GPU wrapper synchronizes
    the stream once, after the last call of a sample)."""
    setup, call, teardown = timed or ("", f"      func.call @{callee}({args}) : ({types}) -> ()", "")
    repeat = ""
    mean = "      %dt = arith.subf %clock1, %clock0 : f64\n"
    if calls_per_sample > 1:
        line = repeated or f"        func.call @{callee}({args}) : ({types}) -> ()"
        repeat = (f"      %crep = arith.constant {calls_per_sample - 1} : index\n"
                  f"      scf.for %j = %c0 to %crep step %c1 {{\n{line}\n      }}\n")
        mean = ("      %dtotal = arith.subf %clock1, %clock0 : f64\n"
                f"      %ccalls = arith.constant {float(calls_per_sample)!r} : f64\n"
                "      %dt = arith.divf %dtotal, %ccalls : f64\n")
    return f"""    scf.for %i = %c0 to %cw step %c1 {{
      func.call @{callee}({args}) : ({types}) -> ()
    }}
    scf.for %i = %c0 to %cn step %c1 {{
{setup}      %clock0 = func.call @rtclock() : () -> f64
{repeat}{call}
      %clock1 = func.call @rtclock() : () -> f64
{teardown}{mean}      memref.store %dt, %times[%i] : memref<{iterations}xf64>
    }}
"""


def bench_counts(params: dict) -> tuple[int, int, int]:
    """(warmup, iterations, calls_per_sample) of the bench parameters, checked (BenchError)."""
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    warmup, iterations, calls = int(p["warmup"]), int(p["iterations"]), int(p["calls_per_sample"])
    if iterations < 1 or warmup < 0 or not 1 <= calls <= MAX_CALLS_PER_SAMPLE:
        raise BenchError(f"bench needs iterations >= 1, warmup >= 0 and 1 <= calls_per_sample <= {MAX_CALLS_PER_SAMPLE}")
    return warmup, iterations, calls


def insert_wrapper(module, params: dict) -> None:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    warmup, iterations, calls = bench_counts(p)
    existing = [f for f in _funcs(module) if _sym(f) in (WRAPPER_CALL, WRAPPER_BENCH)]
    if existing:
        raise BenchError("the module already has a benchmark wrapper (a `bench` step was applied "
                         "earlier); undo it first")
    entry = find_entry(module, p["entry"] or "")
    name = _sym(entry)
    from workbench.worker.mpi.sharding import shard_annotations

    if shard_annotations(entry):
        # partitioning turns the global shapes of this signature into per-rank shapes: a wrapper
        # built now would call the partitioned entry with the wrong shapes
        raise BenchError(f"@{name} still carries sharding annotations (shard.shard / shard.sharding): "
                         "partitioning will change its signature from global to per-rank shapes, so a "
                         "wrapper built now would call it with the wrong shapes; apply the partition "
                         "first (e.g. `apply mpi-partition`), then `bench`")
    ftype = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
    ins, res = list(ftype.inputs), list(ftype.results)

    wrapper_args: list[str] = []   # types of wrapper input args
    call_operands: list[str] = []  # SSA values passed to the entry
    pre: list[str] = []
    arg_roles: list[str] = []
    laid_out: list[str] = []   # after the call: the copies of strided-layout arguments back (see below)
    for i, t in enumerate(ins):
        if isinstance(t, ir.RankedTensorType):
            mt = _memref_for_tensor(t)
            wrapper_args.append(mt)
            pre.append(f"    %t{i} = bufferization.to_tensor %a{i} restrict writable : {mt} to {t}")
            call_operands.append(f"%t{i}")
            arg_roles.append("tensor")
        elif isinstance(t, ir.MemRefType):
            layout = _static_strided_layout(t, i, name)
            if layout is None:   # an identity layout, or one the descriptor of a contiguous array fits
                wrapper_args.append(str(t))
                call_operands.append(f"%a{i}")
            else:
                # a static strided layout (`strided<[8, 1]>`: rows 8 apart) is compiled in: the entry reads
                # where the layout says, beyond a contiguous array of the shape (it read out of bounds). The
                # wrapper takes a contiguous array and hands the entry a copy laid out as its type says,
                # copied back after the call (an output argument, an update in place).
                strides, offset = layout
                mt = ir.MemRefType(t)
                plain = str(ir.MemRefType.get(mt.shape, mt.element_type))
                extent = max(1, offset + sum((d - 1) * st for d, st in zip(mt.shape, strides)) + 1)
                flat = f"memref<{extent}x{mt.element_type}>"
                wrapper_args.append(plain)
                pre.append(f"    %flat{i} = memref.alloc() : {flat}\n"
                           f"    %v{i} = memref.reinterpret_cast %flat{i} to offset: [{offset}], sizes: "
                           f"[{', '.join(map(str, mt.shape))}], strides: [{', '.join(map(str, strides))}] : "
                           f"{flat} to {t}\n"
                           f"    memref.copy %a{i}, %v{i} : {plain} to {t}")
                laid_out.append(f"    memref.copy %v{i}, %a{i} : {t} to {plain}\n"
                                f"    memref.dealloc %flat{i} : {flat}")
                call_operands.append(f"%v{i}")
            arg_roles.append("memref")
        elif _is_scalar(t):
            # a scalar (a pad value, a flag, a bound) arrives as a one-element memref, loaded before the call
            wrapper_args.append(f"memref<1x{t}>")
            pre.append(f"    %c0_a{i} = arith.constant 0 : index\n"
                       f"    %s{i} = memref.load %a{i}[%c0_a{i}] : memref<1x{t}>")
            call_operands.append(f"%s{i}")
            arg_roles.append("scalar")
        else:
            raise BenchError(f"unsupported argument type {t} of @{name}")

    out_types: list[str] = []
    post: list[str] = []
    outputs: list[str] = []
    for j, t in enumerate(res):
        oidx = len(out_types)
        if isinstance(t, ir.RankedTensorType):
            mt = _memref_for_tensor(t)
            out_types.append(mt)
            # to_buffer + memref.copy rather than materialize_in_destination: schedules that vectorize every
            # linalg.copy of the module (bufferization's memcpy op) must not turn this copy into one huge vector
            post.append(f"    %b{j} = bufferization.to_buffer %r{j} read_only : {t} to {mt}\n"
                        f"    memref.copy %b{j}, %o{oidx} : {mt} to {mt}")
        elif isinstance(t, ir.MemRefType):
            mt = ir.MemRefType(t)
            plain = str(ir.MemRefType.get(mt.shape, mt.element_type))
            out_types.append(plain)
            post.append(f"    memref.copy %r{j}, %o{oidx} : {t} to {plain}")
        elif _is_scalar(t):
            out_types.append(f"memref<1x{t}>")
            post.append(f"    %c0_r{j} = arith.constant 0 : index\n    memref.store %r{j}, %o{oidx}[%c0_r{j}] : memref<1x{t}>")
        else:
            raise BenchError(f"unsupported result type {t} of @{name}")
        outputs.append(f"result:{j}")
    if not res:
        if p["outputs"]:
            idx = [int(x) for x in str(p["outputs"]).replace(",", " ").split()]
        else:
            memrefs = [i for i, r in enumerate(arg_roles) if r == "memref"]
            # none: a program (an upstream integration test's @main that prints its results): run for
            # what it prints (the run's `stdout`), no output buffers
            idx = [memrefs[-1]] if memrefs else []
        for i in idx:
            if not (0 <= i < len(ins)) or arg_roles[i] != "memref":
                raise BenchError(f"output argument #{i} of @{name} is not a memref argument")
            outputs.append(f"arg:{i}")

    post += laid_out
    n_in, n_out = len(wrapper_args), len(out_types)
    sig_in = ", ".join(f"%a{i}: {t}" for i, t in enumerate(wrapper_args))
    sig_out = ", ".join(f"%o{j}: {t}" for j, t in enumerate(out_types))
    sig = ", ".join(s for s in (sig_in, sig_out) if s)
    call_args = ", ".join(f"%a{i}" for i in range(n_in))
    out_args = ", ".join(f"%o{j}" for j in range(n_out))
    all_args = ", ".join(s for s in (call_args, out_args) if s)
    all_types = ", ".join(wrapper_args + out_types)
    results_lhs = (", ".join(f"%r{j}" for j in range(len(res))) + " = ") if res else ""
    entry_sig = f"({', '.join(str(t) for t in ins)}) -> ({', '.join(str(t) for t in res)})"
    pre_s = "\n".join(pre)
    post_s = "\n".join(post)
    roles = ", ".join(f'"{r}"' for r in arg_roles)
    outs_attr = ", ".join(f'"{o}"' for o in outputs)
    call_line = f"    {results_lhs}func.call @{name}({', '.join(call_operands)}) : {entry_sig}"
    # the timed loop of @_lh_bench times the entry alone: its argument casts before the clock, the
    # copies into the output arguments after it (a serial copy of each result is no part of the payload)
    indent = lambda block: "".join("  " + line + "\n" for line in block.splitlines())  # noqa: E731
    timed = (indent(pre_s), indent(call_line).rstrip("\n"), indent(post_s))
    # the calls of a sample before its last: their results (tensors the entry allocates) are dropped
    repeated = f"        func.call @{name}({', '.join(call_operands)}) : {entry_sig}"
    text = f"""
func.func private @{name}{entry_sig}
func.func private @rtclock() -> f64
func.func @{WRAPPER_CALL}({sig}) attributes {{llvm.emit_c_interface}} {{
{pre_s}
{call_line}
{post_s}
    return
}}
func.func @{WRAPPER_BENCH}({sig}{', ' if sig else ''}%times: memref<{iterations}xf64>) attributes {{llvm.emit_c_interface, lh.bench = {{entry = "{name}", warmup = {warmup} : i64, iterations = {iterations} : i64, arg_roles = [{roles}], outputs = [{outs_attr}], num_inputs = {n_in} : i64, num_outputs = {n_out} : i64{_calls_attr(calls)}}}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cw = arith.constant {warmup} : index
    %cn = arith.constant {iterations} : index
{timed_loops(WRAPPER_CALL, all_args, all_types, iterations, timed=timed, calls_per_sample=calls, repeated=repeated)}    return
}}
"""
    try:
        snippet = ir.Module.parse(text)
    except ir.MLIRError as e:
        raise BenchError(f"internal error building the wrapper: {e}")
    body = module.operation.regions[0].blocks[0]
    have_rtclock = any(_sym(f) == "rtclock" for f in _funcs(module))
    for op in list(snippet.body.operations):
        sym = _sym(op)
        if sym == name or (sym == "rtclock" and have_rtclock):
            continue
        op.operation.detach_from_parent()
        body.append(op.operation)
    # the entry gets the C interface too, so the runner can also call it directly
    entry.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    # record the argument specs so the metadata survives lowering to llvm.func
    import json

    wrapper = find_wrapper(module)
    ftype = ir.FunctionType(ir.TypeAttr(wrapper.attributes["function_type"]).value)
    specs = [_memref_spec(t) for t in ftype.inputs]
    d = ir.DictAttr(wrapper.attributes["lh.bench"])
    entries = {d[i].name: d[i].attr for i in range(len(d))}
    entries["arg_specs"] = ir.StringAttr.get(json.dumps(specs))
    wrapper.attributes["lh.bench"] = ir.DictAttr.get(entries)


#: lowers what `insert_lowered_program_wrapper` adds (scf loops, memref stores, func ops) next to LLVM-dialect code
LOWERED_WRAPPER_PIPELINE = ("builtin.module(convert-scf-to-cf, convert-arith-to-llvm, finalize-memref-to-llvm, "
                            "convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts)")
_VOID_LLVM_FUNC = "!llvm.func<void ()>"
#: a lowered program may return one scalar (mlir-runner's -entry-point-result=i32|i64|f32): the wrapper
#: prints it as mlir-runner does (`llvm::outs() << res`: integers signed, floats in printf's %e)
_SCALAR_PROGRAM = re.compile(r"^!llvm\.func<(i\d+|f32|f64) \(\)>$")


def lowered_programs(module) -> list:
    """`llvm.func`s that are programs lowered with the rest (an upstream test's @main after its RUN
    line's passes: no arguments, no results, a body, not private, called by nothing in the module)."""
    from workbench.worker.ir_walk import callee_name

    called = {callee_name(op) for op in ops_where(module, lambda op: op.name == "llvm.call")}
    found = []
    for op in module.body.operations:
        op = op.operation
        name = _sym(op)
        if (op.name != "llvm.func" or not len(op.regions[0].blocks) or name in called
                or name.startswith(("_lh_", "_mlir_ciface_"))
                or any(k in str(op.attributes["linkage"]) for k in ("internal", "private")
                       if "linkage" in op.attributes)):
            continue
        ftype = str(ir.TypeAttr(op.attributes["function_type"]).value)
        if ftype == _VOID_LLVM_FUNC or _SCALAR_PROGRAM.match(ftype):
            found.append(op)
    return found


def defined_functions(module) -> list:
    """The module's top-level functions with a body (func.func or llvm.func)."""
    return [op for op in module.body.operations
            if op.operation.name in ("func.func", "llvm.func") and len(op.operation.regions[0].blocks)]


def only_lowered_programs(module) -> bool:
    """The module's code is in `llvm.func`s (no func.func with a body) and one of them is a program."""
    return not any(len(f.regions[0].blocks) for f in _funcs(module)) and bool(lowered_programs(module))


def insert_lowered_program_wrapper(module, params: dict) -> None:
    """The wrapper for a program already in the LLVM dialect: @_lh_call calls it (`llvm.call`), @_lh_bench
    times it, both in the func dialect (lower them with LOWERED_WRAPPER_PIPELINE). BenchError when the
    module has no such program, or several and no `entry`."""
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    warmup, iterations, calls = bench_counts(p)
    programs = lowered_programs(module)
    if p["entry"]:
        programs = [f for f in programs if _sym(f) == p["entry"]]
        if not programs:
            raise BenchError(f"no lowered program @{p['entry']} (an llvm.func with no arguments and no results)")
    if len(programs) != 1:
        raise BenchError("no lowered program (an llvm.func with no arguments and no results) to run" if not programs
                         else f"several lowered programs ({', '.join('@' + _sym(f) for f in programs)}): "
                              "set the bench step's `entry` parameter")
    name = _sym(programs[0])
    body = module.operation.regions[0].blocks[0]
    for op in list(body.operations):    # a program that reads the clock itself declares it: ours replaces it
        if op.operation.name == "llvm.func" and _sym(op) == "rtclock" and not len(op.operation.regions[0].blocks):
            op.operation.erase()
    if any(_sym(op) in ("rtclock", WRAPPER_CALL, WRAPPER_BENCH) for op in body.operations):
        raise BenchError("the lowered module already defines @rtclock or a wrapper function")
    scalar = _SCALAR_PROGRAM.match(str(ir.TypeAttr(programs[0].attributes["function_type"]).value))
    result_type = scalar.group(1) if scalar else None
    if result_type is None:
        call, printing = f"    llvm.call @{name}() : () -> ()\n", ""
    else:
        call = f"    %r = llvm.call @{name}() : () -> {result_type}\n" + _print_scalar("%r", result_type)
        fmt = "%e" if result_type.startswith("f") else "%ld"
        printing = (f'llvm.func @printf(!llvm.ptr, ...) -> i32\n'
                    f'llvm.mlir.global internal constant @_lh_result_format("{fmt}\\0A\\00") {{addr_space = 0 : i32}}\n')
    text = f"""
llvm.func @{name}(){f" -> {result_type}" if result_type else ""}
{printing}func.func private @rtclock() -> f64
func.func @{WRAPPER_CALL}() attributes {{llvm.emit_c_interface}} {{
{call}    return
}}
func.func @{WRAPPER_BENCH}(%times: memref<{iterations}xf64>) attributes {{llvm.emit_c_interface, lh.bench = {{entry = "{name}", warmup = {warmup} : i64, iterations = {iterations} : i64, arg_roles = [], outputs = [], num_inputs = 0 : i64, num_outputs = 0 : i64{_calls_attr(calls)}, arg_specs = "[]"}}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cw = arith.constant {warmup} : index
    %cn = arith.constant {iterations} : index
{timed_loops(WRAPPER_CALL, "", "", iterations, calls_per_sample=calls)}    return
}}
"""
    snippet = ir.Module.parse(text)
    existing = {_sym(op) for op in body.operations}
    for op in list(snippet.body.operations):
        if _sym(op) == name or _sym(op) == "printf" and "printf" in existing:
            continue   # (declared for the parse only; the module's own @printf declaration serves)
        op.operation.detach_from_parent()
        body.append(op.operation)


def _print_scalar(value: str, type_name: str) -> str:
    """printf of a lowered program's result, widened as C varargs take it (i64, f64)."""
    if type_name.startswith("f"):
        widen, wide = (f"    %w = llvm.fpext {value} : {type_name} to f64\n", "f64") if type_name != "f64" else ("", "f64")
    else:
        widen, wide = (f"    %w = llvm.sext {value} : {type_name} to i64\n", "i64") if type_name != "i64" else ("", "i64")
    arg = "%w" if widen else value
    return (widen + "    %fmt = llvm.mlir.addressof @_lh_result_format : !llvm.ptr\n"
            f"    %n = llvm.call @printf(%fmt, {arg}) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, {wide}) -> i32\n")


def find_wrapper(module):
    for f in _funcs(module):
        if _sym(f) == WRAPPER_BENCH:
            return f
    # after lowering the wrapper is an llvm.func
    for op in module.operation.regions[0].blocks[0].operations:
        if op.operation.name == "llvm.func" and _sym(op) == WRAPPER_BENCH:
            return op
    return None


def _memref_spec(t) -> dict:
    mt = ir.MemRefType(t)
    return {"shape": list(mt.shape), "dtype": str(mt.element_type), "type": str(t)}


def wrapper_metadata(module) -> dict | None:
    """Argument roles and shapes of the wrapper, read before lowering (from its func type + lh.bench)."""
    f = find_wrapper(module)
    if f is None or f.operation.name != "func.func":
        # already lowered: metadata must come from the attribute alone
        if f is None or "lh.bench" not in f.attributes:
            return None
    attr = ir.DictAttr(f.attributes["lh.bench"])
    meta = {}
    for key in ("entry",):
        meta[key] = ir.StringAttr(attr[key]).value
    for key in ("warmup", "iterations", "num_inputs", "num_outputs"):
        meta[key] = ir.IntegerAttr(attr[key]).value
    # (a wrapper saved before the parameter existed made one call per sample)
    meta["calls_per_sample"] = ir.IntegerAttr(attr["calls_per_sample"]).value if "calls_per_sample" in attr else 1
    meta["outputs"] = [ir.StringAttr(a).value for a in ir.ArrayAttr(attr["outputs"])]
    meta["arg_roles"] = [ir.StringAttr(a).value for a in ir.ArrayAttr(attr["arg_roles"])]
    if "arg_specs" in attr:
        import json

        meta["arg_specs"] = json.loads(ir.StringAttr(attr["arg_specs"]).value)
    elif f.operation.name == "func.func":
        ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        meta["arg_specs"] = [_memref_spec(t) for t in ftype.inputs]
    else:
        return None
    return meta


def is_lowered(module) -> bool:
    return not unlowered_ops(module)


#: ops the LLVM IR translation handles besides the LLVM dialect: a GPU module serialized by
#: gpu-module-to-binary and the launches of its kernels (translated to runtime calls)
TRANSLATABLE_OPS = frozenset({"builtin.module", "gpu.binary", "gpu.launch_func"})


def unlowered_ops(module) -> set[str]:
    return {op.name for op in ops_where(
        module, lambda op: not (op.name.startswith("llvm.") or op.name in TRANSLATABLE_OPS))}


def first_unlowered_op(module):
    """The first op a lowering left outside the LLVM dialect that is not a cast it left behind (an
    unrealized_conversion_cast stands beside the op that could not be converted), or None."""
    left = ops_where(module, lambda op: not (op.name.startswith("llvm.") or op.name in TRANSLATABLE_OPS
                                             or op.name == "builtin.unrealized_conversion_cast"))
    return left[0] if left else None
