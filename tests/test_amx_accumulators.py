"""lh-amx-tile-accumulators: after the AMX conversion, a K loop whose only stores are result tiles loaded and
stored at one loop-invariant place carries those tiles instead, and the repeated A / B loads are merged;
loops that write anything else are left as they are. (Runs anywhere: no AMX instruction executes.)"""
from __future__ import annotations

KERNEL = """func.func @k(%a: memref<64x32xbf16>, %b: memref<64x32xbf16>, %c: memref<32x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c0 to %c64 step %c16 {
    %ta = amx.tile_load %a[%k, %c0] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
    %tb = amx.tile_load %b[%k, %c0] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
    %tc0 = amx.tile_load %c[%c0, %c0] : memref<32x16xf32> into !amx.tile<16x16xf32>
    %r0 = amx.tile_mulf %ta, %tb, %tc0 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    amx.tile_store %c[%c0, %c0], %r0 : memref<32x16xf32>, !amx.tile<16x16xf32>
    %ta2 = amx.tile_load %a[%k, %c0] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
    %tc1 = amx.tile_load %c[%c16, %c0] : memref<32x16xf32> into !amx.tile<16x16xf32>
    %r1 = amx.tile_mulf %ta2, %tb, %tc1 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    amx.tile_store %c[%c16, %c0], %r1 : memref<32x16xf32>, !amx.tile<16x16xf32>
  }
  return
}
"""


def _carry(text: str) -> tuple[int, str]:
    from mlir import ir

    from workbench.worker.cpu.amx_accumulators import carry_tile_accumulators

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        n = carry_tile_accumulators(module)
        assert module.operation.verify()
        return n, str(module)


def _loop_body(text: str) -> str:
    start = text.index("scf.for")
    return text[start:text.index("scf.yield", start)]


def test_result_tiles_are_carried_across_the_k_loop():
    n, text = _carry(KERNEL)
    assert n == 1
    assert "iter_args" in text and "-> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>)" in text
    body = _loop_body(text)
    assert "amx.tile_store" not in body                    # no result tile stored per product
    assert body.count("amx.tile_load") == 2                # A once (its repeat merged), B once: no C load
    assert body.count("amx.tile_mulf") == 2
    after = text[text.index("scf.yield"):]
    assert after.count("amx.tile_store %arg2[%c0, %c0]") == 1 and after.count("amx.tile_store %arg2[%c16, %c0]") == 1
    before = text[:text.index("scf.for")]
    assert before.count("amx.tile_load %arg2") == 2       # the result tiles loaded once, before the loop


def test_loops_that_write_other_memory_are_left():
    # a store of something else in the loop: hoisting the tiles could reorder it with the tile stores
    other = KERNEL.replace("  }\n  return", "    memref.store %c0f, %c[%c0, %c0] : memref<32x16xf32>\n  }\n  return") \
        .replace("%c64 = arith.constant 64 : index", "%c64 = arith.constant 64 : index\n  %c0f = arith.constant 0.0 : f32")
    n, text = _carry(other)
    assert n == 0 and "iter_args" not in text
    # a result tile stored somewhere else than where it was loaded
    moved = KERNEL.replace("amx.tile_store %c[%c16, %c0], %r1", "amx.tile_store %c[%c0, %c0], %r1")
    n, _ = _carry(moved)
    assert n == 0
    # a place that moves with the loop (not loop-invariant)
    varying = KERNEL.replace("%tc0 = amx.tile_load %c[%c0, %c0]", "%tc0 = amx.tile_load %c[%k, %c0]") \
        .replace("amx.tile_store %c[%c0, %c0], %r0", "amx.tile_store %c[%k, %c0], %r0").replace("%c64 = arith.constant 64", "%c64 = arith.constant 32")
    n, _ = _carry(varying)
    assert n == 0


# a convolution's K step with its window positions unrolled: each position loads, multiplies into and stores
# the same result tile
CHAINED = """func.func @k(%a: memref<64x64xbf16>, %b: memref<64x64xbf16>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c0 to %c64 step %c16 {
    %ta = amx.tile_load %a[%k, %c0] : memref<64x64xbf16> into !amx.tile<16x32xbf16>
    %tb = amx.tile_load %b[%k, %c0] : memref<64x64xbf16> into !amx.tile<16x32xbf16>
    %tc = amx.tile_load %c[%c0, %c0] : memref<16x16xf32> into !amx.tile<16x16xf32>
    %r = amx.tile_mulf %ta, %tb, %tc : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    amx.tile_store %c[%c0, %c0], %r : memref<16x16xf32>, !amx.tile<16x16xf32>
    %ta2 = amx.tile_load %a[%k, %c32] : memref<64x64xbf16> into !amx.tile<16x32xbf16>
    %tb2 = amx.tile_load %b[%k, %c32] : memref<64x64xbf16> into !amx.tile<16x32xbf16>
    %tc2 = amx.tile_load %c[%c0, %c0] : memref<16x16xf32> into !amx.tile<16x16xf32>
    %r2 = amx.tile_mulf %ta2, %tb2, %tc2 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    amx.tile_store %c[%c0, %c0], %r2 : memref<16x16xf32>, !amx.tile<16x16xf32>
  }
  return
}
"""


def test_products_chained_into_one_tile_are_carried_as_one_accumulator():
    n, text = _carry(CHAINED)
    assert n == 1
    body = _loop_body(text)
    # one carried tile: no result-tile load or store left in the loop, the two products chained
    assert "memref<16x16xf32> into" not in body and "amx.tile_store" not in body, body
    assert body.count("amx.tile_mulf") == 2 and text.count("iter_args") == 1
    first, second = [line for line in body.splitlines() if "amx.tile_mulf" in line]
    first_result = first.split("=")[0].strip()
    assert second.split(":")[0].rstrip().endswith(f", {first_result}"), body     # the second adds to the first
    assert text.count("amx.tile_store") == 1 and text.index("amx.tile_store") > text.index("scf.yield")
    assert text.count("memref<16x16xf32> into") == 1 and text.index("memref<16x16xf32> into") < text.index("scf.for")
