"""`lh-drop-redundant-stream-syncs`: host synchronizations of the one stream that nothing needs.

After gpu-async-region and lh-reuse-gpu-stream every host function runs its kernels on the process's
one stream (`lh_reused_gpu_stream()`) and calls `mgpuStreamSynchronize` before each call of another
function and before it returns: in a chain of ops lowered to several host functions (a wgmma matmul
kernel is one: it looks its TMA descriptors up on the host and launches), the GPU then idles for a
launch latency between kernels (attention, 16 x 1024 x 64 f16: 3 kernels, 5 synchronizations).

On one stream the kernels run in launch order whatever the host does, so a synchronization is needed
only before the host touches memory a kernel may use or returns to code that may. A synchronization is
dropped when the host code that follows it, up to the next synchronization that stays, only does
*stream-safe* things: launches on that stream, arithmetic and addresses, loads and stores of its own
stack slots and globals (the descriptor caches), descriptor encoding, kept-buffer allocation, and calls
of module functions that are themselves stream-safe. Precisely, a synchronization goes when, in its
block, the next op that is not stream-safe is
  - another synchronization of the stream, or
  - a call of a stream-safe module function that synchronizes right before its one return; or
  - the return of an internal function (no C interface, address never taken) whose every call site is
    followed by stream-safe ops up to one of the two above,
along every path of the control flow from it (branches are followed; a path that comes back to a block
it went through, a loop of stream-safe ops, is covered by the loop's exit).
Each removal is justified by a later synchronization in execution order with only stream-safe ops
between, so the last one of any such chain stays; public entries keep their final synchronization.
Where a stream-safe function that synchronizes is called at a place a later synchronization covers, but
is public or also called where none does (so its own synchronization must stay), that call goes to an
internal copy of it (`<name>_lh_chained`), and so on down the functions the copy calls: the copies'
synchronizations go. The benchmark wrapper's timed copy of the device call calls the entry (public, and
its matmul kernel's host function) B times back to back that way.

`llvm.call @_lh_stream_sync()` (SYNC_MARKER: the GPU benchmark wrapper's synchronization after the
back-to-back calls of a timed sample) becomes the synchronization of the one stream first.
"""
from __future__ import annotations

SYNC = "mgpuStreamSynchronize"
STREAM_GETTER = "lh_reused_gpu_stream"
SYNC_MARKER = "_lh_stream_sync"
#: suffix of a public function's internal copy, called where a later synchronization covers its own
CHAINED_SUFFIX = "_lh_chained"
#: runtime functions that neither read nor write device data on the host nor wait for the device, or
#: wait for all of it: lh_cached_gpu_free of a kept temporary does nothing, of another buffer it is a
#: cuMemFree, which waits for the device before it frees (a free after a chain of kernels kept the
#: synchronization of each host function in the chain: a transpose kernel's, a wgmma kernel's)
SAFE_RUNTIME = (STREAM_GETTER, "lh_cached_gpu_alloc", "lh_cached_gpu_free", "mgpuTensorMapEncodeTiledMemref")
#: LLVM ops without memory effects that host code around launches uses
PURE = ("llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.poison", "llvm.mlir.undef", "llvm.mlir.addressof",
        "llvm.getelementptr", "llvm.ptrtoint", "llvm.inttoptr", "llvm.insertvalue", "llvm.extractvalue",
        "llvm.icmp", "llvm.add", "llvm.sub", "llvm.mul", "llvm.udiv", "llvm.sdiv", "llvm.urem", "llvm.and",
        "llvm.or", "llvm.select", "llvm.alloca", "llvm.bitcast", "llvm.zext", "llvm.sext", "llvm.trunc")


def _callee(op) -> str | None:
    from workbench.worker.ir_walk import callee_name

    return callee_name(op) if op.name == "llvm.call" else None


def _host_memory(ptr) -> bool:
    """Whether `ptr` (a load's or store's address) is a stack slot or a global: its root through GEPs is
    an llvm.alloca or an llvm.mlir.addressof."""
    from mlir import ir

    while True:
        owner = ptr.owner
        if isinstance(owner, ir.Block):
            return False
        if owner.name in ("llvm.alloca", "llvm.mlir.addressof"):
            return True
        if owner.name != "llvm.getelementptr":
            return False
        ptr = owner.operands[0]


def _on_stream(value) -> bool:
    from mlir import ir

    return not isinstance(value.owner, ir.Block) and _callee(value.owner) == STREAM_GETTER


def _is_sync(op) -> bool:
    return _callee(op) == SYNC and len(op.operands) == 1 and _on_stream(op.operands[0])


class _Module:
    def __init__(self, module):
        from mlir import ir

        self.funcs = {}
        for op in module.body.operations:
            if op.name == "llvm.func" and len(op.regions[0].blocks):
                self.funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
        self.addressed = set()
        self.callers: dict[str, list] = {}
        for f in self.funcs.values():
            for block in f.regions[0].blocks:
                for op in block.operations:
                    if op.name == "llvm.mlir.addressof":
                        self.addressed.add(ir.FlatSymbolRefAttr(op.attributes["global_name"]).value)
                    name = _callee(op)
                    if name in self.funcs:
                        self.callers.setdefault(name, []).append(op)
        self._safe: dict[str, bool] = {}

    def safe_op(self, op) -> bool:
        """Stream-safe: no host access to device data, no wait (see the module docstring)."""
        if op.name in PURE:
            return True
        if op.name == "gpu.launch_func":
            stream = op.opview.asyncObject
            return stream is not None and not list(op.opview.asyncDependencies) and _on_stream(stream)
        if op.name in ("llvm.load", "llvm.store"):
            return _host_memory(op.operands[0 if op.name == "llvm.load" else 1])
        name = _callee(op)
        return name in SAFE_RUNTIME or (name in self.funcs and self.safe_function(name))

    def safe_function(self, name: str) -> bool:
        if name not in self._safe:
            self._safe[name] = False  # recursion: not safe until shown
            ok = True
            for block in self.funcs[name].regions[0].blocks:
                for op in block.operations:
                    if not (self.safe_op(op) or _is_sync(op) or op.name in ("llvm.br", "llvm.cond_br", "llvm.return")):
                        ok = False
            self._safe[name] = ok
        return self._safe[name]

    def ends_with_sync(self, name: str) -> bool:
        returns = [op for block in self.funcs[name].regions[0].blocks for op in block.operations
                   if op.name == "llvm.return"]
        if len(returns) != 1:
            return False
        block_ops = list(_block_of(returns[0]).operations)
        i = block_ops.index(returns[0])
        return i > 0 and _is_sync(block_ops[i - 1])

    def internal(self, name: str) -> bool:
        f = self.funcs[name]
        return ("llvm.emit_c_interface" not in f.attributes and f"_mlir_ciface_{name}" not in self.funcs
                and name not in self.addressed and name != "main")

    def followed_by_sync(self, op, visiting: frozenset = frozenset()) -> bool:
        """Whether the ops after `op`, along every path of the control flow, are stream-safe up to a
        synchronization that the module docstring's rules let stand in for one right after `op`."""
        ops = list(_block_of(op).operations)
        return self._path_synced(ops[ops.index(op) + 1:], visiting, frozenset({_block_of(op)}))

    def _path_synced(self, ops, visiting: frozenset, on_path: frozenset) -> bool:
        for nxt in ops:
            if _is_sync(nxt):
                return True
            name = _callee(nxt)
            if name in self.funcs and self.safe_function(name) and self.ends_with_sync(name):
                return True
            if nxt.name == "llvm.return":
                fname = _function_name(nxt)
                return (fname not in visiting and self.internal(fname) and bool(self.callers.get(fname))
                        and all(self.followed_by_sync(c, visiting | {fname}) for c in self.callers[fname]))
            if nxt.name in ("llvm.br", "llvm.cond_br"):
                # every successor: a block already on this path closes a loop of stream-safe ops
                return all(succ in on_path or self._path_synced(list(succ.operations), visiting, on_path | {succ})
                           for succ in nxt.successors)
            if not self.safe_op(nxt):
                return False
        return False

    def waits(self, name: str, seen: frozenset = frozenset()) -> bool:
        """Whether function `name` synchronizes the stream, itself or in a module function it calls."""
        return any(_is_sync(op) or (_callee(op) in self.funcs and _callee(op) not in seen
                                    and self.waits(_callee(op), seen | {name}))
                   for block in self.funcs[name].regions[0].blocks for op in block.operations)

    def chain_copies(self) -> int:
        """One round of the module docstring's copies: calls that a later synchronization covers, of a
        stream-safe function that synchronizes and is public or also called where none covers it, go
        to an internal copy of it. How many calls moved (repeat until none: the copy's own calls)."""
        from mlir import ir

        moved = 0
        for name, f in list(self.funcs.items()):
            if not (self.safe_function(name) and self.waits(name)):
                continue
            calls = [c for c in self.callers.get(name, []) if _function_name(c) != name]
            covered = [c for c in calls if self.followed_by_sync(c)]
            if not covered or (self.internal(name) and len(covered) == len(calls)):
                continue
            copy_name = name + CHAINED_SUFFIX
            if copy_name not in self.funcs:
                copy = f.clone(ip=ir.InsertionPoint.after(f))
                copy.attributes["sym_name"] = ir.StringAttr.get(copy_name)
                copy.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
                if "llvm.emit_c_interface" in copy.attributes:
                    del copy.attributes["llvm.emit_c_interface"]
            for c in covered:
                c.attributes["callee"] = ir.FlatSymbolRefAttr.get(copy_name)
            moved += len(covered)
        return moved


def _block_of(op):
    return op.operation.block


def _function_name(op) -> str:
    from mlir import ir

    f = op.operation.parent
    while f.name != "llvm.func":
        f = f.parent
    return ir.StringAttr(f.attributes["sym_name"]).value


def expand_sync_markers(module) -> int:
    """`llvm.call @_lh_stream_sync()` -> the synchronization of the one stream, copied from one the module
    makes (nothing where it makes none: no GPU work to wait for); the marker's declaration goes. How many
    calls it expanded."""
    from mlir import ir

    from workbench.worker.ir_walk import llvm_calls, ops_where

    calls = llvm_calls(module, SYNC_MARKER)
    syncs = ops_where(module, _is_sync)
    for call in calls:
        if syncs:
            getter = syncs[0].operands[0].owner.clone(ip=ir.InsertionPoint(call))
            sync = syncs[0].clone(ip=ir.InsertionPoint(call))
            sync.operands[0] = getter.results[0]
        call.erase()
    for op in list(module.body.operations):
        if op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == SYNC_MARKER:
            op.erase()
    return len(calls)


def drop_redundant_syncs(module) -> int:
    """Drop the synchronizations the module docstring describes; how many were dropped."""
    expand_sync_markers(module)
    for _ in range(8):   # a chain of host functions as deep as this is more than any lowering makes
        if not _Module(module).chain_copies():
            break
    m = _Module(module)
    syncs = [op for f in m.funcs.values() for block in f.regions[0].blocks for op in block.operations
             if _is_sync(op)]
    doomed = [op for op in syncs if m.followed_by_sync(op)]
    for op in doomed:
        op.erase()
    return len(doomed)
