"""Vectorization generators.

    apply pipelines/lib/vectorize.py[gen=vectorize]{lowering=outerproduct}
"""
from __future__ import annotations

from workbench.common.transform_text import transform_module

#: the functions a session may call as generators (`file.py[gen=NAME]`); nothing else here is callable
GENERATORS = ["vectorize"]

PARAMS = {
    "lowering": {"choices": ["outerproduct", "dot", "matmulintrinsics", "parallelarith", "none"],
                 "help": "how vector.contract is lowered (none: keep vector.contract)"},
    "transfer_rank": {"min": 0, "help": "lower vector transfers to this rank (0: keep them)"},
}


def vectorize(lowering: str = "outerproduct", transfer_rank: int = 0, cse: bool = True) -> str:
    """Vectorize every linalg op of every function, then lower contractions."""
    patterns = ["transform.apply_patterns.vector.transfer_permutation_patterns",
                "transform.apply_patterns.vector.lower_transpose"]
    if lowering != "none":
        patterns.insert(0, f'transform.apply_patterns.vector.lower_contraction lowering_strategy = "{lowering}"')
        patterns.append("transform.apply_patterns.vector.lower_outerproduct")
    if transfer_rank:
        patterns.append(f"transform.apply_patterns.vector.lower_transfer max_transfer_rank = {transfer_rank}")
    patterns.append("transform.apply_patterns.canonicalization")
    pats = "\n".join("      " + p for p in patterns)
    cse_text = "    transform.apply_cse to %v : !transform.any_op\n" if cse else ""
    return transform_module(f"""    %f = transform.structured.match ops{{["func.func"]}} in %root : (!transform.any_op) -> !transform.any_op
    %v = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %v {{
{pats}
    }} : !transform.any_op
{cse_text}""")
