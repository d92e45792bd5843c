"""Ops that a schedule's transforms print into their diagnostics, printed without verifying first.

Some transform ops write the payload ops they work on into a diagnostic before they know whether it will
be emitted: `transform.structured.fuse_into_containing_op` starts each fusion with a remark "could not fuse
<producer> into <containing op>" (upstream LinalgTransformOps.cpp), dropped when the fusion succeeds. MLIR
prints an op in a diagnostic with local scope, and an op printed without `assume_verified` is verified
first, from the nearest op isolated from above: the whole function (dominance included). A row chain's
step fuses one producer at a time, so each of its fusions verified the function twice: about half of such
a step on 16 stacked transformer layers, and its cost grew with the model.

MLIR takes the default printing flags from its command-line options (`--mlir-print-assume-verified`,
registered by `mlir::registerAsmPrinterCLOptions`; the bindings never parse a command line). While a
schedule generator's transforms run, `unverified_diagnostic_ops()` sets that option (through LLVM's C API,
`LLVMParseCommandLineOptions`) and clears it after; the payload is verified after the stage anyway
(CompileWorker._apply_verified), and the text of a result is printed with explicit flags elsewhere. Where
the libraries do not export those symbols, nothing changes (the prints verify, as before).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os

OPTION = b"--mlir-print-assume-verified"


@functools.lru_cache(maxsize=1)
def _parse_options():
    """LLVMParseCommandLineOptions with the AsmPrinter's options registered, or None where the libraries
    do not export what it needs."""
    try:
        import mlir._mlir_libs as libs

        here = os.path.dirname(libs.__file__)
        capi = ctypes.CDLL(os.path.join(here, "libMLIRPythonCAPI.so"))
        register = capi._ZN4mlir27registerAsmPrinterCLOptionsEv   # mlir::registerAsmPrinterCLOptions()
        llvm = ctypes.CDLL(os.path.realpath(os.path.join(here, "..", "..", "llvm", "lib", "libLLVM.so")))
        parse = llvm.LLVMParseCommandLineOptions
    except (OSError, AttributeError, ImportError):
        return None
    register.restype = None
    register()
    parse.restype = None
    parse.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p]
    return parse


def _set(value: bool) -> bool:
    parse = _parse_options()
    if parse is None:
        return False
    argv = (ctypes.c_char_p * 2)(b"lh-compile-worker", OPTION + (b"=true" if value else b"=false"))
    parse(2, argv, b"")
    return True


@contextlib.contextmanager
def unverified_diagnostic_ops():
    """Ops printed with MLIR's default flags (a diagnostic's) are not verified first, within the block."""
    on = _set(True)
    try:
        yield on
    finally:
        if on:
            _set(False)
