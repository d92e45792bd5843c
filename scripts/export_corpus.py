"""Export the torch corpus (examples/torch/corpus.py) to payload fixtures, under the torch Python:

    /path/to/torch-venv/bin/python scripts/export_corpus.py [--out tests/fixtures/torch] [--shapes test|bench]
                                                            [--only name,name]

Each entry becomes NAME.mlir + NAME.input<i>.npy + NAME.expected<j>.npy + NAME.expected.json (the
`import` command's files; workbench/importers/torch_export.py does the work). Prints one line per
entry and exits 1 if any failed.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def extra_timing(module, inputs, sidecar: Path, calls: int) -> None:
    import json
    import statistics
    import time

    import torch

    torch.set_num_threads(1)
    with torch.no_grad():
        module(*inputs)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            module(*inputs)
            times.append(time.perf_counter() - t0)
    doc = json.loads(sidecar.read_text())
    doc.update(torch_eager_median_s=statistics.median(times), torch_eager_threads=1)
    sidecar.write_text(json.dumps(doc, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "torch"))
    p.add_argument("--shapes", choices=["test", "bench"], default="test")
    p.add_argument("--only", help="comma-separated entry names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time", type=int, default=0, metavar="N",
                   help="also time torch eager on one thread (median of N calls) into the sidecar "
                        "(`torch_eager_median_s`), the baseline of bench/torch_corpus.py")
    args = p.parse_args(argv)
    import torch

    exporter = _load(ROOT / "workbench" / "importers" / "torch_export.py", "lh_torch_export")
    corpus = _load(ROOT / "examples" / "torch" / "corpus.py", "lh_torch_corpus").CORPUS
    names = args.only.split(",") if args.only else list(corpus)
    unknown = [n for n in names if n not in corpus]
    if unknown:
        print(f"unknown corpus entries: {', '.join(unknown)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    failed = 0
    for name in names:
        entry = corpus[name]
        torch.manual_seed(args.seed)
        generator = torch.Generator().manual_seed(args.seed)
        try:
            module = entry.module(args.shapes).eval()
            shapes = entry.test_shapes if args.shapes == "test" else entry.bench_shapes
            inputs = [exporter.make_input(exporter.parse_input_spec(s), generator) for s in shapes]
            if entry.dtype != "f32":
                dtype = getattr(torch, exporter._DTYPE_NAMES[entry.dtype])
                module = module.to(dtype)
                inputs = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
            side = exporter.export_module(module, inputs, out, name, source=f"examples/torch/corpus.py:{name}")
        except Exception as e:  # one line per failing entry; go on with the others
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
            continue
        if args.time:
            extra_timing(module, inputs, out / f"{name}.expected.json", args.time)
        extra = f"  (left: {', '.join(side['unsupported_ops'])})" if side["unsupported_ops"] else ""
        print(f"ok   {name}: {', '.join(side['input_types'])} -> {', '.join(side['expected_types'])}{extra}")
    print(f"{len(names) - failed} exported, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
