"""`run` on a payload that is mostly weights (`dense_resource` blobs, as torch-mlir writes a model's), with the
weights bound to the JIT as data (external globals, the default) and as constants of the code
($LH_WORKBENCH_WEIGHTS_AS_CODE=1, as before), runs alternated in one session; then one `run --check` of each,
whose outputs must be identical bit for bit.

    PYTHONPATH=$PWD python bench/weights_as_data.py [--layers 32 --dim 2048 --rows 8 --repeats 3 --threads 2]
    PYTHONPATH=$PWD python bench/weights_as_data.py --target mpi --ranks 2 --threads 1 ...   # on MPI ranks

The default payload carries 32 matmuls' 2048x2048 f32 weights: 512 MB, about GPT-2 small's 500 MB. On the mpi
target every rank holds the whole (replicated) payload; its JIT compile is the slowest rank's.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AS_CODE = "LH_WORKBENCH_WEIGHTS_AS_CODE"   # (workbench/worker/run_worker.py WEIGHTS_AS_CODE_ENV)


def write_payload(path: Path, layers: int, dim: int, rows: int, seed: int = 0) -> int:
    """A chain of `layers` matmuls (rows x dim) @ (dim x dim), each weight a `dense_resource` blob; its bytes."""
    rng = np.random.default_rng(seed)
    act, w = f"tensor<{rows}x{dim}xf32>", f"tensor<{dim}x{dim}xf32>"
    with open(path, "w") as f:
        f.write(f"func.func @main(%x: {act}) -> {act} {{\n  %zero = arith.constant 0.0 : f32\n"
                f"  %e = tensor.empty() : {act}\n  %z = linalg.fill ins(%zero : f32) outs(%e : {act}) -> {act}\n")
        h = "%x"
        for i in range(layers):
            f.write(f"  %w{i} = arith.constant dense_resource<weight_{i}> : {w}\n"
                    f"  %h{i} = linalg.matmul ins({h}, %w{i} : {act}, {w}) outs(%z : {act}) -> {act}\n")
            h = f"%h{i}"
        f.write(f"  return {h} : {act}\n}}\n{{-#\n  dialect_resources: {{\n    builtin: {{\n")
        for i in range(layers):
            # (variance 3/dim: the activations keep their magnitude through the layers)
            data = rng.uniform(-1, 1, (dim, dim)).astype(np.float32) * np.float32(np.sqrt(3 / dim))
            f.write(f'      weight_{i}: "0x04000000{data.tobytes().hex().upper()}"{"," if i + 1 < layers else ""}\n')
        f.write("    }\n  }\n#-}\n")
    return layers * dim * dim * 4


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--dim", type=int, default=2048)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--payload", help="write (or reuse) the payload here")
    p.add_argument("--target", default="cpu", help="cpu, or mpi (with --ranks)")
    p.add_argument("--ranks", type=int, default=2, help="ranks of the mpi target")
    args = p.parse_args(argv)
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    tmp = Path(tempfile.mkdtemp(prefix="lh-weights-"))
    path = Path(args.payload) if args.payload else tmp / "weights.mlir"
    if not path.exists():
        t0 = time.perf_counter()
        size = write_payload(path, args.layers, args.dim, args.rows)
        print(f"payload: {path} ({size / 1e6:.0f} MB of weights, {path.stat().st_size / 1e6:.0f} MB of text, "
              f"{time.perf_counter() - t0:.1f} s)", flush=True)
    session = Session()
    ctx = CommandContext(session, default_registry())

    def do(line: str) -> tuple[float, dict]:
        t0 = time.perf_counter()
        res = ctx.registry.dispatch(line, ctx)
        wall = time.perf_counter() - t0
        if not res.ok:
            raise SystemExit(f"{line}: {res.error}")
        return wall, res.data.get("run") or {}

    try:
        wall, _ = do(f"load {path}")
        print(f"load: {wall:.1f} s", flush=True)
        if args.target != "cpu":
            do(f"target {args.target}")
        where = f" --ranks {args.ranks}" if args.target == "mpi" else ""
        modes = {"data": None, "code": "1"}
        walls: dict[str, list] = {m: [] for m in modes}
        for r in range(args.repeats):
            for mode, env in (modes.items() if r % 2 == 0 else reversed(list(modes.items()))):
                if env:
                    os.environ[AS_CODE] = env
                else:
                    os.environ.pop(AS_CODE, None)
                wall, run = do(f"run --iterations 1 --warmup 0 --threads {args.threads} --timeout 600{where}")
                walls[mode].append((wall, run["compile_s"]))
                print(f"run, weights as {mode}: {wall:.1f} s (JIT compile {run['compile_s']:.1f} s)", flush=True)
        outs = {}
        for mode, env in modes.items():   # (the second reuses the first's reference run: same inputs)
            if env:
                os.environ[AS_CODE] = env
            else:
                os.environ.pop(AS_CODE, None)
            d = tmp / f"out-{mode}"
            wall, run = do(f"run --check --iterations 1 --warmup 0 --threads {args.threads} --save-outputs {d}{where}")
            outs[mode] = np.load(d / "output0.npy")
            print(f"run --check, weights as {mode}: {wall:.1f} s (JIT compile {run['compile_s']:.1f} s), check "
                  f"{'passed' if run['check']['passed'] else 'FAILED'} (max abs err {run['check']['max_abs_err']:.3g}, "
                  f"largest output {np.abs(outs[mode]).max():.3g})", flush=True)
        os.environ.pop(AS_CODE, None)
        same = np.array_equal(outs["data"].view(np.uint32), outs["code"].view(np.uint32))
        print(f"outputs identical bit for bit: {same}")
        for mode in modes:
            w = sorted(x[0] for x in walls[mode])
            c = sorted(x[1] for x in walls[mode])
            print(f"weights as {mode}: run median {w[len(w) // 2]:.1f} s (min {w[0]:.1f}), JIT compile median "
                  f"{c[len(c) // 2]:.1f} s")
        return 0 if same else 1
    finally:
        session.close()


if __name__ == "__main__":
    sys.exit(main())
