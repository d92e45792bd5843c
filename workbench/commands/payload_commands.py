"""Loading and inspecting the payload: `load`, `inspect`. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations

from pathlib import Path

from workbench.common import split_input
from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry
from workbench.commands.step_results import confirm_losing_steps, fail
from workbench.result import Result
from workbench.session import SessionError


def cmd_load(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if not confirm_losing_steps(ctx, f"load {a['file']}"):
        return Result.failure("load cancelled: the session is unchanged (save it first with `save FILE.yaml`)")
    try:
        s.load(a["file"], allow_unregistered=bool(a.get("allow_unregistered")), chunk=a.get("chunk"))
    except SessionError as e:
        return fail(e)
    chunk = a.get("chunk")
    msg = f"loaded {a['file']}" + (f" chunk {chunk}" if chunk is not None else "") + f" ({s.line_count_at(s.cursor)} lines)"
    count = s.payload_chunks if chunk is None else 0
    if count > 1:
        msg += (f"; it has {count} chunks separated by `{split_input.SPLIT_MARKER}` lines, loaded as one module "
                f"(`load --chunk K {a['file']}` takes one, as mlir-opt --split-input-file does)")
    journal = s.journal_for(Path(a["file"]), s.payload_chunk)
    data = {"payload": str(s.payload_path), "ir_sha256": s.current_sha,
            **({"chunk": chunk} if chunk is not None else {"chunks": count} if count > 1 else {})}
    if journal is not None:
        msg += f"; an autosaved session exists ({s.describe_journal(journal)}): `resume` to restore it"
        data["journal"] = str(journal)
    if s.expected is not None:
        msg += (f"; expected outputs from {s.expected.source}: `run` uses its inputs, "
                "`run --check` compares with its outputs too")
        data["expected"] = s.expected.to_json()
    elif s.expected_warning:
        msg += f" (warning: {s.expected_warning})"
        data["warnings"] = [s.expected_warning]
    return Result(True, msg, data=data)


def cmd_inspect(ctx: CommandContext, a: Args) -> Result:
    try:
        info = ctx.session.inspect(a.get("step"))
    except SessionError as e:
        return fail(e)
    rows = []
    for f in info["funcs"]:
        if f["declaration"]:
            continue
        rows.append(["func", "@" + f["name"], "(" + ", ".join(f["args"]) + ") -> (" + ", ".join(f["results"]) + ")", ""])
    for o in info["ops"]:
        if o["kind"] == "contraction":
            shape = " ".join(f"{k}={v}" for k, v in o["dims"].items())
        else:
            shape = "x".join(map(str, o.get("domain") or o.get("shape") or []))
        rows.append([o["kind"], o["op"] + (f" in @{o['func']}" if o.get("func") else ""),
                     f"{shape} {o['dtype']}".strip(), _human_flops(o["flops"]) if o["flops"] else ""])
    summary = f"{len(info['ops'])} linalg ops, {_human_flops(info['total_flops'])} per call"
    if "transform" in info.get("dialects", []):   # an upstream test file's own schedule, next to the code
        summary += ("; the payload carries a transform script: `pass lh-apply-payload-schedule` runs it, "
                    "the lowering and `select` erase it")
    return Result(True, summary,
                  kind="table", data={"inspect": info,
                                      "table": {"columns": ["what", "name", "type / shape", "FLOP"], "rows": rows}})


def _human_flops(n: float) -> str:
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} FLOP"


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("load", "load a payload .mlir file (parse + verify)", cmd_load,
                [Arg("file", "payload file", complete="path:.mlir")],
                [Flag("--allow-unregistered", "accept ops of dialects MLIR does not know (kept as generic ops; "
                      "recorded in the session)"),
                 Flag("--chunk", "only chunk K (1-based) of a file split by `// -----` lines, as mlir-opt "
                      "--split-input-file reads it (recorded in the session)", takes_value=True, type="int",
                      metavar="K")],
                category="1-session"))
    add(Command("inspect", "functions, linalg ops with shapes, FLOP count", cmd_inspect,
                [Arg("step", "step index (default: current)", type="int", optional=True, complete="step")],
                category="1-session"))
