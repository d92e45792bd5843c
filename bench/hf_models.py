"""Hugging Face `transformers` models (bench/hf_defs.py: tiny random-init configs) through `import` and the CPU
selector path, against torch eager on the same threads.

    LH_WORKBENCH_TORCH_PYTHON=/work/torchvenv/bin/python python bench/hf_models.py [--only GPT2_eager,Bert_sdpa]
        [--out /tmp/hf] [--threads 1,2] [--iterations 10] [--reuse] [--json out.json] [--dtype bf16] [--cpu avx2]

`LH_HF_SIZE=bench` (in the environment: the import and the torch side read it) builds the text and ViT-like
models at 4 layers, hidden 256, 128 tokens (use another --out). Needs `transformers` in the torch Python (not a workbench dependency). Per model: `import
bench/hf_defs.py:NAME --inputs SPEC` (skipped with --reuse where OUT/NAME.mlir exists), then for each thread
count N: `load`, `target cpu --threads N`, `select --apply`, `bench`, `apply cpu-lower`, `run --check --threads N`
(the unscheduled payload and torch's outputs). `--dtype bf16` imports with `import --dtype bf16` (the
parameters and the floating inputs cast: `model.to(torch.bfloat16)`) and times torch on the same bf16 model
(use another --out); `--cpu NAME` is passed to `target cpu` (`--cpu avx2`: no bf16 dot product). Coverage: the selector's ops that got a vectorized or matmul
schedule / all ops it scheduled (`class: scalar` entries are loops). Ratios: torch median / ours (> 1: faster).
Last line: RESULT imported=K/N checked=K/N geomean_vs_torch_1t_ratio=...
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _common import TORCH_PRELUDE, geomean, run_torch_worker, torch_python  # noqa: E402

DEFS = ROOT / "bench" / "hf_defs.py"

TORCH_WORKER = TORCH_PRELUDE + r'''
import importlib.util
names, threads_list, iterations, out, defs = sys.argv[2].split(","), [int(t) for t in sys.argv[3].split(",")], int(sys.argv[4]), sys.argv[5], sys.argv[6]
dtype = getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[sys.argv[7]]) if len(sys.argv) > 7 and sys.argv[7] else None
spec = importlib.util.spec_from_file_location("hf_defs", defs)
hf = importlib.util.module_from_spec(spec); spec.loader.exec_module(hf)
for name in names:
    try:
        side = json.load(open(f"{out}/{name}.expected.json"))
        torch.manual_seed(0)
        module = getattr(hf, name)().eval()
        xs = [torch.from_numpy(np.load(f"{out}/{p}")) for p in side["inputs"]]
        if dtype is not None:   # the import's --dtype: the same casts (inputs saved widened to f32: exact)
            module = module.to(dtype)
            xs = [x.to(dtype) if x.is_floating_point() else x for x in xs]
        times = {}
        with torch.inference_mode():
            for threads in threads_list:
                torch.set_num_threads(threads)
                for _ in range(2):
                    module(*xs)
                samples = []
                for _ in range(iterations):
                    t0 = time.perf_counter(); module(*xs); samples.append(time.perf_counter() - t0)
                times[str(threads)] = statistics.median(samples)
        print(json.dumps({"name": name, "times": times}), flush=True)
    except Exception as e:
        print(json.dumps({"name": name, "error": f"{type(e).__name__}: {e}".splitlines()[0]}), flush=True)
'''


def model_specs(python: str, defs: Path = DEFS) -> dict[str, str]:
    import subprocess

    code = (f"import sys; sys.path.insert(0, {str(defs.parent)!r}); import json, {defs.stem} as d; "
            "print(json.dumps(d.MODELS))")
    p = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def schedules(data: dict) -> dict[str, int]:
    """How many selector entries each schedule (the pipeline file's stem: matmul_vnni, conv_vnni, ...) got."""
    counts: dict[str, int] = {}
    for sel in data.get("selections", []):
        stem = Path(str(sel.get("schedule", "?")).split("[")[0]).stem
        counts[stem] = counts.get(stem, 0) + 1
    return dict(sorted(counts.items()))


def coverage(data: dict) -> tuple[int, int]:
    vec = total = 0
    for sel in data.get("selections", []):
        params = sel["params"]
        ops = params.get("op")
        n = len(ops) if isinstance(ops, list) else 1
        total += n
        if params.get("class") != "scalar":
            vec += n
    return vec, total


def ours(ctx, name: str, spec: str, out: Path, threads: list[int], iterations: int, reuse: bool, python: str,
         dtype: str = "", cpu: str = "", defs: Path = DEFS) -> dict:
    rec: dict = {"name": name, "import": False, "runs": {}}
    mlir = out / f"{name}.mlir"
    if not (reuse and mlir.exists()):
        t0 = time.perf_counter()
        res = ctx.registry.dispatch(f"import {defs}:{name} --inputs {spec} --out {out} --name {name} --no-load "
                                    f"--torch-python {python}" + (f" --dtype {dtype}" if dtype else ""), ctx)
        rec["import_s"] = time.perf_counter() - t0
        if not res.ok:
            rec["error"] = f"import: {res.error}"
            return rec
    rec["import"] = True
    for n in threads:
        run: dict = {"ok": False}
        rec["runs"][str(n)] = run
        for line in (f"load {mlir}", f"target cpu --threads {n}" + (f" --cpu {cpu}" if cpu else ""), "select --apply",
                     f"bench warmup=2 iterations={iterations}", "apply cpu-lower",
                     f"run --check --threads {n} --timeout 600"):
            t0 = time.perf_counter()
            res = ctx.registry.dispatch(line, ctx)
            if line.startswith("select"):
                run["select_s"] = time.perf_counter() - t0
                if res.ok:
                    run["coverage"] = coverage(res.data or {})
                    run["schedules"] = schedules(res.data or {})
            if not res.ok:
                run["error"] = f"`{line.split()[0]}`: {res.error}"
                break
        else:
            report = res.data["run"]
            chk, exp = report.get("check") or {}, report.get("expected_check") or {}
            run.update(ok=bool(chk.get("passed")) and bool(exp.get("passed")), median_s=report["median_s"],
                       max_abs_err_ref=chk.get("max_abs_err"), max_abs_err_torch=exp.get("max_abs_err"),
                       check_error=exp.get("error"))
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--reuse", action="store_true", help="keep OUT/NAME.mlir where it exists (no import)")
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--json", default="")
    ap.add_argument("--dtype", default="", choices=["", "f32", "bf16", "f16"],
                    help="import --dtype: the model's parameters and floating inputs in this type (torch too)")
    ap.add_argument("--cpu", default="", help="target cpu --cpu NAME (e.g. avx2)")
    ap.add_argument("--defs", default=str(DEFS), help="the models file (bench/real_defs.py: real architectures "
                                                      "at realistic sizes)")
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-bench-state-"))
    python = torch_python(args.torch_python)
    if not python:
        raise SystemExit("no torch Python (--torch-python or LH_WORKBENCH_TORCH_PYTHON)")
    defs = Path(args.defs).resolve()
    specs = model_specs(python, defs)
    names = [n for n in args.only.split(",") if n] or list(specs)
    out = Path(args.out or tempfile.mkdtemp(prefix="lh-hf-"))
    threads = [int(t) for t in args.threads.split(",")]
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    records = []
    for name in names:
        s = Session()
        s.journal_enabled = False
        try:
            rec = ours(CommandContext(s, default_registry()), name, specs[name], out, threads, args.iterations,
                       args.reuse, python, args.dtype, args.cpu, defs)
        finally:
            s.close()
        records.append(rec)
        print(json.dumps(rec), flush=True)
    ok_names = [r["name"] for r in records if r["import"]]
    base = run_torch_worker(python, TORCH_WORKER, [",".join(ok_names), ",".join(map(str, threads)),
                                                   str(args.iterations), str(out), str(defs), args.dtype]) if ok_names else {}
    print(f"{'model':18s} {'import':6s} {'coverage':>9s} {'check ' + '/'.join(f'{t}t' for t in threads):>12s} "
          f"{'max err':>9s} " + " ".join(f"{f'ours {t}t ms':>10s} {f'torch {t}t':>9s} {'ratio':>6s}" for t in threads))
    ratios: dict[str, list] = {str(t): [] for t in threads}
    for rec in records:
        tb = (base.get(rec["name"]) or {}).get("times") or {}
        runs = rec["runs"]
        cov = next((r["coverage"] for r in runs.values() if r.get("coverage")), None)
        line = f"{rec['name']:18s} {'ok' if rec['import'] else 'FAIL':6s} {f'{cov[0]}/{cov[1]}' if cov else '-':>9s} "
        line += f"{'/'.join('ok' if r.get('ok') else 'FAIL' for r in runs.values()) or '-':>12s} "
        errs = [r.get("max_abs_err_torch") for r in runs.values() if r.get("max_abs_err_torch") is not None]
        line += f"{max(errs):9.2g} " if errs else f"{'-':>9s} "
        for t in threads:
            r = runs.get(str(t)) or {}
            if r.get("ok") and tb.get(str(t)):
                ratio = tb[str(t)] / r["median_s"]
                ratios[str(t)].append(ratio)
                line += f"{r['median_s'] * 1e3:10.3f} {tb[str(t)] * 1e3:9.3f} {ratio:6.2f} "
            else:
                line += f"{'-':>10s} {'-':>9s} {'-':>6s} "
        print(line)
        for t, r in runs.items():
            if not r.get("ok"):
                print(f"    {t}t: {r.get('error') or r.get('check_error') or 'check failed: ' + json.dumps(r)}"[:400])
        if rec.get("error"):
            print(f"    {rec['error']}"[:400])
    if args.json:
        Path(args.json).write_text(json.dumps({"records": records, "torch": base}, indent=1))
    checked = sum(all(r.get("ok") for r in rec["runs"].values()) and bool(rec["runs"]) for rec in records)
    print(f"RESULT imported={len(ok_names)}/{len(records)} checked={checked}/{len(records)} "
          + " ".join(f"geomean_vs_torch_{t}t_ratio={geomean(v):.3f}" for t, v in ratios.items()))


if __name__ == "__main__":
    main()
