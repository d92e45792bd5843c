"""Every exported torch fixture with its weights replaced by splat constants, through the CPU selector path:

    python scripts/sweep_constant_weights.py [--fixtures tests/fixtures/torch] [--only a,b]
                                             [--values 1.0e-02,0.0,1.0] [--cpu avx2] [--threads 1]

Each `dense_resource<NAME> : tensor<...>` of NAME.mlir becomes `dense<VALUE> : tensor<...>` (the blob section
dropped): what a payload with constant-initialized weights (zeros, ones, `torch.full`) looks like. Then
`select --apply`, `bench`, `apply cpu-lower`, `run --check` (random inputs, against the unscheduled run of the
same splat payload: torch's expected outputs no longer apply). Integer and bool weights get VALUE's integer
part (a float VALUE rounds). Fixtures without `dense_resource` constants are skipped (nothing to replace).
Prints one line per fixture and value; the last line: RESULT passed=K/N.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_RESOURCE = re.compile(r"dense_resource<[^>]+>(\s*:\s*tensor<[^>]*x([a-z0-9]+)>|\s*:\s*tensor<([a-z0-9]+)>)")


def splat_payload(text: str, value: str) -> str | None:
    """The module with every dense_resource constant replaced by a splat of `value` (None: it has none)."""
    if "dense_resource<" not in text:
        return None

    def literal(m: re.Match) -> str:
        element = m.group(2) or m.group(3)
        if element.startswith("i"):
            v = str(int(float(value))) if element != "i1" else ("true" if float(value) else "false")
        else:
            v = value
        return f"dense<{v}>{m.group(1)}"

    text = _RESOURCE.sub(literal, text)
    start = text.find("{-#")
    return text[:start] if start >= 0 else text


_RESOURCE_NAMED = re.compile(r"dense_resource<(?P<name>[^>]+)>(?P<type>\s*:\s*tensor<(?:[^>]*x)?(?P<elt>[a-z0-9]+)>)")
_BLOB = re.compile(r'^\s*(?P<name>[^\s:]+):\s*"0x[0-9A-Fa-f]*",?\s*$')


def splat_float_weights(text: str, value: str) -> str | None:
    """The module with its float dense_resource constants (weights) replaced by splats of `value` and its
    integer and bool ones (index tables: a group norm's channel-to-group maps, gathers' indices) kept as
    blobs, which a splat would make wrong programs of (every channel read group 0's statistics); None
    when it has no float resource. For shrinking bench-shape exports (scripts/random_weights.py puts random
    float weights back)."""
    kept: set[str] = set()
    replaced = 0

    def literal(m: re.Match) -> str:
        nonlocal replaced
        if not m.group("elt").startswith(("f", "bf")):
            kept.add(m.group("name"))
            return m.group(0)
        replaced += 1
        return f"dense<{value}>{m.group('type')}"

    text = _RESOURCE_NAMED.sub(literal, text)
    if not replaced:
        return None
    start = text.find("{-#")
    if start < 0:
        return text
    blobs = [line for line in text[start:].splitlines() if (m := _BLOB.match(line)) and m.group("name") in kept]
    if not blobs:
        return text[:start]
    blobs = [b.rstrip().rstrip(",") for b in blobs]
    return (text[:start] + "{-#\n  dialect_resources: {\n    builtin: {\n      "
            + ",\n      ".join(b.strip() for b in blobs) + "\n    }\n  }\n#-}\n")


def check(path: Path, threads: int, cpu: str, timeout: float) -> str:
    """'' when select -> bench -> cpu-lower -> run --check all work, else the failing step and its error."""
    sys.path.insert(0, str(ROOT))
    from workbench.commands import CommandContext, default_registry
    from workbench.session import Session

    s = Session()
    s.journal_enabled = False
    ctx = CommandContext(s, default_registry())
    try:
        for line in (f"load {path}", f"target cpu --threads {threads}" + (f" --cpu {cpu}" if cpu else ""),
                     "select --apply", "bench warmup=1 iterations=2", "apply cpu-lower",
                     f"run --check --threads {threads} --timeout {timeout}"):
            res = ctx.registry.dispatch(line, ctx)
            if not res.ok:
                return f"`{line.split()[0]}`: {res.error}".splitlines()[0]
        return ""
    finally:
        s.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "torch"))
    ap.add_argument("--only", default="")
    ap.add_argument("--values", default="1.0e-02,0.0,1.0")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    os.environ.setdefault("LH_WORKBENCH_STATE_DIR", tempfile.mkdtemp(prefix="lh-sweep-state-"))
    fixtures = Path(args.fixtures)
    names = args.only.split(",") if args.only else sorted(p.stem for p in fixtures.glob("*.mlir"))
    out = Path(tempfile.mkdtemp(prefix="lh-splat-"))
    passed = total = 0
    for name in names:
        text = (fixtures / f"{name}.mlir").read_text()
        for value in args.values.split(","):
            payload = splat_payload(text, value)
            if payload is None:
                break
            path = out / f"{name}.{value}.mlir"
            path.write_text(payload)
            t0 = time.perf_counter()
            error = check(path, args.threads, args.cpu, args.timeout)
            total += 1
            passed += not error
            print(f"{name:28s} {value:8s} {'ok' if not error else 'FAILED ' + error[:300]} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"RESULT passed={passed}/{total}")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
