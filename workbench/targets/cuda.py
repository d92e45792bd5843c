"""The cuda target: NVIDIA GPUs through MLIR's GPU dialect -> NVVM -> PTX (driver JIT).

Host code is JIT-compiled with ExecutionEngine and calls MLIR's CUDA runtime wrappers
(`libmlir_cuda_runtime.so`, which needs the driver `libcuda.so.1`). The benchmark wrapper takes
its GPU form in the lowering (`lh-gpu-device-wrapper`): inputs are copied to device buffers before
the timed loop, outputs back after it, buffers freed at the end; each timed call ends with a
stream synchronize before rtclock is read (see workbench/worker/cuda/gpu_wrapper.py).
"""
from __future__ import annotations

import math
import re
from typing import Any

from workbench.targets.base import Target, register
from workbench.targets.cpu import _load_library_module


def simt_neighbours(matmul: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, str]:
    """The ops matmul_simt can do in the matmul's own kernel, by id (inspection's producers and
    consumers): `fill`, the linalg.fill of its output that nothing else reads, and `epilogue`, its
    elementwise consumer (`elementwise_consumer`: a bias add, a relu, ...)."""
    out: dict[str, str] = {}
    me = ops.index(matmul)
    producers = matmul.get("producers") or []
    init = producers[2] if len(producers) > 2 else -1
    if 0 <= init < len(ops) and ops[init].get("op") == "linalg.fill" and ops[init].get("consumers") == [me]:
        out["fill"] = ops[init]["id"]
    epilogue = elementwise_consumer(matmul, ops)
    if epilogue:
        out["epilogue"] = epilogue
    return out


def operands_after_narrowing(matmul: dict[str, Any], ops: list[dict[str, Any]],
                             narrow: tuple[str, ...] = ("f16", "bf16")) -> tuple[list, str]:
    """The producers (inspect's op dicts, None for a function argument or a non-linalg op) of a
    contraction's two operands and the element type it reads, once lh-narrow-contraction-inputs has run:
    an f32 contraction of f32 extensions (generics of one arith.extf) of f16 / bf16 tensors reads the
    tensors the extensions read."""
    def producer(op, k):
        producers = op.get("producers") or []
        return ops[producers[k]] if k < len(producers) and 0 <= producers[k] < len(ops) else None

    operands = [producer(matmul, 0), producer(matmul, 1)]
    extended = [p for p in operands if p is not None and p.get("op") == "linalg.generic"
                and p.get("body") == ["arith.extf", "linalg.yield"] and p.get("in_dtype") in narrow]
    if matmul.get("dtype") == "f32" and len(extended) == 2 and extended[0]["in_dtype"] == extended[1]["in_dtype"]:
        return [producer(p, 0) for p in extended], extended[0]["in_dtype"]
    return operands, matmul.get("in_dtype", "")


def _element_bytes(type_text: str) -> int:
    """Bytes of a tensor/memref type's element (4 where unknown): tensor<8x32xbf16> -> 2."""
    from workbench.common.dtypes import element_type_of, itemsize

    try:
        return itemsize(element_type_of(type_text))
    except (KeyError, ValueError, TypeError, AttributeError):
        return 4


def elementwise_consumer(matmul: dict[str, Any], ops: list[dict[str, Any]]) -> str:
    """The id of the matmul's one consumer when that is an elementwise generic over the result's domain
    ([b,] M, N; all loops parallel) reading the result element for element and writing its own output
    the same way (torch's rounding of an f32 accumulation, a scale, a bias, a relu), else "": what a
    matmul kernel may compute in its write-back (matmul_simt's `epilogue=`; for the wgmma kernel
    wgmma_matmul._epilogue_of decides on the IR, and a row chain leaves the op to it). An op that also
    reads a later contraction's result (a GNN layer's `neighbours(h) + root(x)`, bias fused in) is that
    one's epilogue, not this one's: both claimed it, and the second fusion found the op moved
    ("target and source are not in the same block")."""
    consumers = matmul.get("consumers") or []
    if len(consumers) != 1 or not 0 <= consumers[0] < len(ops):
        return ""
    epi, me = ops[consumers[0]], ops.index(matmul)
    loops = epi.get("loops") or {}
    dims = matmul.get("dims") or {}
    domain = ([dims["b"]] if "b" in dims else []) + [dims.get("m"), dims.get("n")]
    ident = list(range(len(domain)))
    reads = [i for i, prod in enumerate(epi.get("producers") or []) if prod == me]
    operand_dims = loops.get("operand_dims") or []
    if (epi.get("op") == "linalg.generic" and epi.get("kind") == "elementwise" and epi.get("id")
            and loops.get("domain") == domain and loops.get("iterators") == ["parallel"] * len(domain)
            and len(reads) == 1 and reads[0] < loops.get("num_inputs", 0)
            and not any(me < p < len(ops) and ops[p].get("kind") == "contraction" for p in epi.get("producers") or [])
            and operand_dims[reads[0]] == ident and operand_dims[loops["num_inputs"]:] == [ident]):
        return epi["id"]
    return ""


_BINARY = re.compile(r'gpu\.binary @(\w+)\s*\[#gpu\.object<.*?assembly = "((?:[^"\\]|\\.)*)"', re.S)


def _mlir_string(escaped: str) -> str:
    """An MLIR string attribute's text: \\XX hex escapes, \\\\ and \\" undone."""
    return re.sub(r'\\(\\|"|[0-9A-Fa-f]{2})',
                  lambda m: m.group(1) if m.group(1) in ('\\', '"') else chr(int(m.group(1), 16)), escaped)


def gpu_binary_assembly(ir_text: str) -> dict[str, str]:
    """Kernel module name -> PTX of every gpu.binary that carries its assembly (format=isa)."""
    return {m.group(1): _mlir_string(m.group(2)) for m in _BINARY.finditer(ir_text)}


@register
class CudaTarget(Target):
    name = "cuda"
    aliases = ("gpu",)
    description = "NVIDIA GPU: GPU dialect -> NVVM -> PTX, host JIT with the MLIR CUDA runtime"
    named_pipelines = {
        "cuda-lower": "cuda/lower.yaml",
    }
    default_lowering = "cuda-lower"
    lowering_maps_unscheduled_ops = True   # cuda-lower's naive mapping: a kernel per op left
    reference_lowering = "cpu-reference"
    reference_target = "cpu"
    runtime_libraries = ("mlir_cuda_runtime", "mlir_runner_utils", "mlir_c_runner_utils")
    # a GPU run worker: libcuda probed first, CUDA runtime errors printed to stderr detected
    run_worker_module = "workbench.worker.cuda.run_worker"
    run_worker_name = "gpu run worker"

    #: the shipped schedules the selector fills in (pipelines/cuda/*.py)
    matmul_schedule = "cuda/matmul.py"
    softmax_schedule = "cuda/softmax.py"
    reduce_schedule = "cuda/reduce.py"
    rows_schedule = "cuda/rows.py"

    def assembly(self, artifact: Any, function: str = "", timeout: float = 120.0) -> dict:
        """The PTX of the lowered module's kernels (`asm`), read from its gpu.binary objects (cuda-lower's
        format=isa keeps the PTX text); `function`: the kernels whose name contains it."""
        kernels = gpu_binary_assembly(artifact)
        if not kernels:
            return {"ok": False, "error": "no PTX in the lowered module: no kernels, or compiled to cubin "
                                          "(lower with cuda-lower{format=isa})"}
        chosen = {name: ptx for name, ptx in kernels.items() if function in name}
        if not chosen:
            return {"ok": False, "error": f"no kernel named like {function!r} (kernels: {', '.join(kernels)})"}
        text = "".join(f"// ---- kernel {name}\n{ptx.rstrip()}\n\n" for name, ptx in chosen.items())
        return {"ok": True, "format": "ptx", "text": text}

    def probe(self) -> dict:
        from workbench.common.cuda_probe import probe

        return probe()

    def can_run(self) -> tuple[bool, str]:
        info = self.probe()
        if not info["ok"]:
            return False, info["reason"]
        try:
            self.shared_libs()
        except Exception as e:  # the runtime library is not in the installed mlir package
            return False, str(e)
        return True, info["reason"]

    def chip(self) -> str:
        """The chip cuda-lower's chip=auto compiles for (the detected one, else its default)."""
        from workbench.common.cuda_probe import DEFAULT_CHIP, detected_chip

        return detected_chip() or DEFAULT_CHIP

    def multiprocessors(self) -> int:
        """The detected GPU's SM count (the selector sizes tiles to fill whole waves), else the H100's 132."""
        info = self.probe()
        return int(info.get("multiprocessors") or 132) if info.get("ok") else 132

    #: upstream's elementwise fusion, broadcast operands unguarded (the row kernels keep a broadcast
    #: operand in registers, so fusing it into its consumer costs nothing here; the cpu target guards
    #: it: lh-fuse-elementwise), named matmuls kept out of fusion by expansion (they would be generics
    #: without a matmul schedule; batch matmuls of the operand types the schedules take, {batch}:
    #: the others are naive kernels either way): workbench/worker/cuda/fusion.py
    FUSE_ELEMENTWISE = "pass lh-fuse-elementwise-keep-contractions{{batch-operands={batch}}}"

    #: a transpose feeding a matmul's B folded into its maps (the wgmma kernel reads B K-major, which
    #: saves the transpose's kernel and pass over memory): workbench/worker/cuda/kmajor_operands.py.
    #: Only for operand types the wgmma kernel reads (f32 matmuls take matmul_simt, which wants B [k][n])
    TRANSPOSED_B_MATMULS = "pass lh-transposed-b-matmuls"
    #: an f32 upcast several ops read (what the fusion above leaves) kept narrow in memory, widened by
    #: each reader: workbench/worker/cuda/narrow_results.py
    NARROW_WIDENED_RESULTS = "pass lh-narrow-widened-results"
    #: a matmul of f32 extensions of f16 / bf16 tensors (torch-mlir's f16 linear layers) reads the narrow
    #: tensors (the wgmma kernel takes them): workbench/worker/cuda/narrow_contractions.py. Before the
    #: fusion, which would fuse the extensions into their producers' bodies
    NARROW_CONTRACTION_INPUTS = "pass lh-narrow-contraction-inputs"
    KMAJOR_OPERANDS = ("f16", "bf16")

    def preparation_steps(self, info: dict[str, Any]) -> list[str]:
        """Elementwise fusion (unit dims folded, integer powers expanded) when the payload has two or more
        linalg.generic ops: on a GPU each torch-mlir generic is a kernel launch and a pass over device
        memory; fused, an elementwise chain is one kernel, a reduction computes its producers
        (exp(x - max)) as it reads, and results nobody reads (the index of torch's max) are dropped,
        which leaves the max to the reduction kernel."""
        ops = info.get("ops", [])
        generics = sum(1 for op in ops if op.get("op") == "linalg.generic")
        extensions = any("arith.extf" in (op.get("loops") or {}).get("body", []) for op in ops)
        steps = []
        if extensions and any(op.get("op") in ("linalg.matmul", "linalg.batch_matmul") and op.get("dtype") == "f32"
                              for op in ops):
            steps.append(self.NARROW_CONTRACTION_INPUTS)
        if generics >= 2:
            mm = _load_library_module(self.matmul_schedule)
            steps.append(self.FUSE_ELEMENTWISE.format(batch=",".join(mm.BATCH_OPERANDS)))
        if generics >= 2 and extensions:
            steps.append(self.NARROW_WIDENED_RESULTS)
        for op in ops:
            if op.get("op") not in ("linalg.matmul", "linalg.batch_matmul"):
                continue
            (_, b), in_dtype = operands_after_narrowing(op, ops)
            if b is not None and b.get("op") == "linalg.transpose" and in_dtype in self.KMAJOR_OPERANDS:
                steps.append(self.TRANSPOSED_B_MATMULS)
                break
        return steps

    def select_params(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Static-shape matmuls and batch matmuls -> the matmul schedule, softmax -> the softmax schedule.

        One matmul: its schedule for the whole module. Several: one entry per matmul, each targeting
        its op by id (`op=`) with its own shape's parameters, from the generators that can schedule
        one op of several (matmul.PER_OP: the wgmma kernel, else matmul_simt)."""
        mm = _load_library_module(self.matmul_schedule)
        contractions = [op for op in info.get("ops", []) if op["op"] in ("linalg.matmul", "linalg.batch_matmul")
                        and (op.get("dims") or {}) and all(v > 0 for v in op["dims"].values())]
        several = len(contractions) > 1
        chosen: list[tuple[str, dict[str, Any]]] = []
        for op in contractions:
            dims, dtype, in_dtype = op["dims"], op.get("dtype", "f32"), op.get("in_dtype", "")
            layout = op.get("layout", "normal")
            if op["op"] == "linalg.batch_matmul":
                picked = mm.select_batch(dims["b"], dims["m"], dims["n"], dims["k"], dtype, self.chip(), in_dtype,
                                         self.multiprocessors(), layout)
                if picked is None:
                    continue  # left to the naive mapping
            else:
                pick = mm.select_one_of_many if several else mm.select
                picked = pick(dims["m"], dims["n"], dims["k"], dtype, self.chip(), in_dtype, self.multiprocessors(),
                              layout)
            gen, params = picked
            if several and op.get("id"):
                params = {**params, "op": op["id"]}
            if gen == "matmul_simt":
                fused = simt_neighbours(op, info.get("ops", []))
                if fused and op.get("id"):
                    params = {**params, **fused, "op": op["id"]}
            chosen.append((f"pipelines/{self.matmul_schedule}[gen={gen}]", params))
        if any(op["op"] == "linalg.softmax" for op in info.get("ops", [])):
            chosen.append((f"pipelines/{self.softmax_schedule}[gen=softmax_rows]", {}))
        ops = info.get("ops", [])
        wgmma = [op for op, (spec, _) in zip(contractions, chosen) if spec.endswith("[gen=matmul_wgmma]")] \
            if len(chosen) == len(contractions) else []
        epilogues = {e for e in (elementwise_consumer(op, ops) for op in wgmma) if e}
        chosen += self._row_chains(info, epilogues)
        chosen += self._reductions(info)
        return chosen

    def _row_chains(self, info: dict[str, Any], leave: set[str] = frozenset()) -> list[tuple[str, dict[str, Any]]]:
        """Chains of ops on the same rows -> one fused row kernel each (rows.py[gen=gpu_rows]).

        Static linalg.generic ops of one iteration domain [rows..., cols...]: reductions of the
        innermost dims (parallel dims first), elementwise ops over the whole domain. Two of them are
        linked where one reads the other's result along the same rows: a reduction's result through the
        row map (d0..d_p-1: broadcast along the row), an elementwise result through the identity map;
        elementwise ops over the rows alone (a mean's division, logsumexp's log(sum) + max) join too.
        A linked set with a reduction and two ops or more is one chain (softmax: max, exp, sum,
        divide; layer_norm: extf, mean, variance, normalize). Its reductions stay marked for the
        single-reduction kernel too: a chain the rewrite cannot take falls back to them."""
        rows_mod = _load_library_module(self.rows_schedule)
        ops = info.get("ops", [])

        def shape_of(op):
            domain, its = op.get("domain") or [], op.get("iterators") or []
            if (op.get("op") != "linalg.generic" or not op.get("id") or op["id"] in leave or not domain
                    or len(domain) != len(its)
                    or any(d <= 0 for d in domain) or op.get("kind") not in ("reduction", "elementwise")
                    or not op.get("loops")):
                return None
            p = its.index("reduction") if "reduction" in its else None
            if p is not None and (p == 0 or its != ["parallel"] * p + ["reduction"] * (len(its) - p)):
                return None
            return tuple(domain), p

        shapes = [shape_of(op) for op in ops]
        parent = list(range(len(ops)))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for j, op in enumerate(ops):
            if shapes[j] is None:
                continue
            dims = op["loops"].get("operand_dims") or []
            for k, i in enumerate(op.get("producers") or []):
                if i < 0 or shapes[i] is None or k >= len(dims):
                    continue
                # what i writes: a reduction its rows, an elementwise op its whole domain; j reads it
                # element for element: after a reduction, an op over the same domain or over its
                # rows alone (a row op); after an elementwise op, one over its domain or, after a
                # row op, over whole rows that start with it
                domain_i, p_i = shapes[i]
                written = domain_i if p_i is None else domain_i[:p_i]
                if dims[k] != list(range(len(written))):
                    continue
                if p_i is not None:   # a reduction: an op over its domain, or an elementwise one over its rows
                    linked = shapes[j][0] == domain_i or (shapes[j][0] == written and shapes[j][1] is None)
                else:
                    linked = shapes[j][0][:len(domain_i)] == domain_i
                if linked:
                    parent[find(j)] = find(i)
        groups: dict[int, list[int]] = {}
        for i in range(len(ops)):
            if shapes[i] is not None:
                groups.setdefault(find(i), []).append(i)
        out = []
        for linked in groups.values():
            # one chain: the reductions of one domain and split, the ops over that domain or over its
            # rows alone (where linked ops reduce different domains, the chain that holds most ops)
            chains = []
            for domain, p in dict.fromkeys(shapes[i] for i in linked if shapes[i][1] is not None):
                chains.append(([i for i in linked if shapes[i] == (domain, p)
                                or (shapes[i][1] is None and shapes[i][0] in (domain, domain[:p]))], domain, p))
            if not chains:
                continue
            members, domain, p = max(chains, key=lambda c: len(c[0]))
            if len(members) < 2:
                continue
            params = rows_mod.select(math.prod(domain[:p]), math.prod(domain[p:]), domain[-1],
                                     min(_element_bytes(t) for i in members for t in ops[i].get("operand_types", [])))
            if params is None:
                continue
            out.append((f"pipelines/{self.rows_schedule}[gen=gpu_rows]",
                        {**params, "group": len(out), "op": ",".join(ops[i]["id"] for i in members)}))
        return out

    def _reductions(self, info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Each linalg.generic reduction of static shape (torch's sums, means, norms, softmax pieces;
        not contractions or convolutions) -> the row-reduction kernel (reduce.py[gen=gpu_reduce]) with
        threads for its reduced length and rows per block for short rows, targeted by its id. Rows of
        fewer than 8 elements stay with the naive mapping (one thread per row)."""
        red = _load_library_module(self.reduce_schedule)
        out = []
        for op in info.get("ops", []):
            domain, its = op.get("domain") or [], op.get("iterators") or []
            if (op["op"] != "linalg.generic" or op.get("kind") != "reduction" or not op.get("id")
                    or len(domain) != len(its) or not domain or any(d <= 0 for d in domain)):
                continue
            rows = math.prod(d for d, it in zip(domain, its) if it == "parallel")
            length = math.prod(d for d, it in zip(domain, its) if it == "reduction")
            params = red.select(rows, length)
            if params is not None:
                out.append((f"pipelines/{self.reduce_schedule}[gen=gpu_reduce]", {**params, "op": op["id"]}))
        return out

    def extra_run_request(self) -> dict:
        # the GPU module is loaded by a global constructor: ExecutionEngine.initialize() must run
        return {"initialize": True}
