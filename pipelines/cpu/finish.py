"""The whole-module tail of a payload scheduled one op per step (what `select --apply` adds last).

Per-op schedules (`op=<id>`, `bufferize=false`) tile, pack and vectorize their op on tensors; this
step then bufferizes the whole module once (function boundaries, identity layouts), hoists buffers
out of loops and redundant vector transfers out of loops, and lowers the vector ops (outer
products, transfers, broadcasts) to what `cpu-lower` takes to LLVM. Linalg ops no schedule touched
stay linalg (on memrefs) and become loops in the lowering. `amx=1`: the AMX schedule's tile products
become AMX tile operations right after bufferization. `flush_denormals=1` (the default) marks the module
`lh.flush_denormals`: cpu-lower's lh-flush-denormals then runs its code with subnormals flushed to zero
and read as zero (x86 MXCSR FTZ + DAZ, set in the entry points, restored at return), as fast-math modes
do: an FMA with a subnormal operand takes a ~100-cycle microcode assist (a softmax of -100-masked scores,
Swin's shifted windows, gave subnormal probabilities: its attention-times-V batch matmuls ran 5-7x slower
in the model; docs/swin-round14.md). 0: IEEE subnormals kept.
"""
from __future__ import annotations

import generic
import matmul
from workbench.common.transform_text import transform_module


#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["bufferize_and_lower_vectors"]


PARAMS = {
    "amx": {"choices": [0, 1], "help": "1: bf16 contractions of AMX tile shapes (pipelines/cpu/matmul_amx.py) become "
                                      "AMX tile operations after bufferization"},
    "flush_denormals": {"choices": [0, 1], "help": "1: the module runs with subnormal floats flushed to zero and "
                                                  "read as zero (x86 MXCSR FTZ + DAZ, set by cpu-lower's "
                                                  "lh-flush-denormals in the entry points); 0: IEEE subnormals"},
}


def bufferize_and_lower_vectors(amx: int = 0, flush_denormals: int = 1) -> str:
    """The transform module (MLIR text)."""
    any_op = "!transform.any_op"
    # packs / unpacks no schedule vectorized (a payload's own: upstream tests) have no bufferization:
    # pad + expand_shape + transpose, and back (as cpu-lower's decomposition step does)
    pack, unpack = '!transform.op<"linalg.pack">', '!transform.op<"linalg.unpack">'
    # a linalg.softmax no schedule took: its generic ops (as cpu-lower's decomposition step does); bufferized
    # whole, the lowering's decomposition aborted on it (it casts the operands to tensors)
    mark = f'    transform.annotate %root "lh.flush_denormals" : {any_op}\n' if flush_denormals else ""
    return transform_module(f"""{mark}    %sm = transform.structured.match ops{{["linalg.softmax"]}} in %root : ({any_op}) -> {any_op}
    %sm_parts = transform.structured.decompose_interface %sm : ({any_op}) -> {any_op}
    %packs = transform.structured.match ops{{["linalg.pack"]}} in %root : ({any_op}) -> {pack}
    %lp:3 = transform.structured.lower_pack %packs : ({pack}) -> (!transform.op<"tensor.pad">,
      !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
    %unpacks = transform.structured.match ops{{["linalg.unpack"]}} in %root : ({any_op}) -> {unpack}
    %lu:4 = transform.structured.lower_unpack %unpacks : ({unpack}) -> (!transform.op<"tensor.empty">,
      !transform.op<"linalg.transpose">, !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)
    %fe = transform.structured.match ops{{["func.func"]}} in %root : ({any_op}) -> {any_op}
    transform.apply_patterns to %fe {{
      transform.apply_patterns.canonicalization
    }} : {any_op}
    transform.apply_cse to %fe : {any_op}
    transform.bufferization.eliminate_empty_tensors %fe : {any_op}
{matmul.bufferize_and_lower_vectors(amx=bool(amx))}{_serial_foralls()}""")


#: most loops of a serial forall (generic.py's fuse_init)
MAX_SERIAL_LOOPS = 6


def _serial_foralls() -> str:
    """The foralls generic.py's fuse_init made (attribute SERIAL_FORALL + their loop count), bufferized, as
    nested scf.for loops: they fused the init's producer into the op's tiles; they are no parallel loops."""
    a = "!transform.any_op"
    text = ""
    for n in range(1, MAX_SERIAL_LOOPS + 1):
        text += (f"    %serial{n} = transform.structured.match ops{{[\"scf.forall\"]}} attributes{{{generic.SERIAL_FORALL}{n}}}"
                 f" in %b : ({a}) -> {a}\n"
                 f"    transform.foreach %serial{n} : {a} {{\n    ^bb0(%one{n}: {a}):\n"
                 f"      %for{n}:{n} = transform.loop.forall_to_for %one{n} : ({a}) -> ({', '.join([a] * n)})\n"
                 f"      transform.yield\n    }}\n")
    return text
