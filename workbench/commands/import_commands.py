"""`import`: a torch model -> a payload `.mlir`, its inputs and torch's outputs (see execution/torch_import)."""
from __future__ import annotations

from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry
from workbench.commands.step_results import confirm_losing_steps, fail
from workbench.execution.torch_import import TorchImportError, import_torch_model, next_commands
from workbench.result import Result
from workbench.session import SessionError


def run_import(a: Args, progress=None) -> Result:
    """The export itself (no session needed): also what `lh-workbench import ...` runs."""
    if progress:
        progress(f"exporting {a['model']} with torch-mlir (a process of its own) ...")
    try:
        answer = import_torch_model(a["model"], inputs=a.get("inputs"), out=a.get("out") or "out",
                                    name=a.get("name"), dtype=a.get("dtype"), seed=a.get("seed") or 0,
                                    python=a.get("torch_python"))
    except TorchImportError as e:
        return Result.failure(f"import failed: {e}", e.detail or None)
    summary = (f"imported {a['model']} -> {answer['mlir']} (inputs {', '.join(answer['input_types'])}; "
               f"torch outputs {', '.join(answer['expected_types'])})")
    if answer.get("unsupported_ops"):
        summary += (f"; warning: ops upstream MLIR does not know remain ({', '.join(answer['unsupported_ops'])}): "
                    "the payload will not load as is")
    nxt = next_commands(answer)
    return Result(True, summary + "\nnext:\n  " + "\n  ".join(nxt), data={"import": answer, "next": nxt})


def cmd_import(ctx: CommandContext, a: Args) -> Result:
    # it loads what it imports: ask first, as `load` does (it replaced unsaved steps without a word)
    if not a.get("no_load") and not confirm_losing_steps(ctx, f"import {a['model']}"):
        return Result.failure("import cancelled: the session is unchanged (save it first with `save FILE.yaml`, "
                              "or `import --no-load` only writes the files)")
    res = run_import(a, ctx.progress)
    if not res.ok or a.get("no_load"):
        return res
    try:
        ctx.session.load(res.data["import"]["mlir"])
    except SessionError as e:
        return fail(e)
    res.summary = res.summary.split("\nnext:")[0] + "; loaded it: `run --check` compares with torch's outputs"
    return res


IMPORT_FLAGS = [
    Flag("--inputs", "input specs, comma-separated: 8x3x224x224xf32,4x16xi64[0:100] (default: the file's "
                     "get_inputs())", True),
    Flag("--out", "output directory (default: out)", True, complete="path:"),
    Flag("--name", "file stem of what is written (default: the model's name, snake_case)", True),
    Flag("--dtype", "cast parameters and floating inputs: f32 | bf16 | f16 | f64", True,
         complete="choice:f32,bf16,f16,f64"),
    Flag("--seed", "seed of the inputs and of the module's initialisation", True, type="int"),
    Flag("--torch-python", "the Python that has torch + torch-mlir (default: $LH_WORKBENCH_TORCH_PYTHON, "
                           "else this one)", True, complete="path:"),
]


def register(reg: Registry) -> None:
    reg.register(Command(
        "import", "export a torch model to a linalg-on-tensors payload (+ inputs, torch's outputs) and load it",
        cmd_import, [Arg("model", "MODEL.py[:NAME] (an nn.Module class, a factory, or KernelBench's Model)",
                         complete="path:.py")],
        IMPORT_FLAGS + [Flag("--no-load", "only write the files")],
        details="torch-mlir's fx importer runs in a process of its own under the torch Python "
                "(`pip install 'lh-workbench[torch]'`). It writes DIR/NAME.mlir, NAME.input<i>.npy, "
                "NAME.expected<j>.npy and NAME.expected.json; `load` of the .mlir picks the last one up, so "
                "`run` uses the model's inputs and `run --check` compares with torch's outputs as well. "
                "cumsum/cumprod/logcumsumexp/cummax/cummin, sort/argsort/topk are decomposed in torch (blocked scan, "
                "bitonic network) "
                "so that no torch-mlir-only op (tm_tensor) is left.",
        category="1-session"))
