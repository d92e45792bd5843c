"""The session: a live payload module, an ordered list of applied steps, a cursor.

Every IR the session has seen lives in a content-addressed store (`IRStore`), so undo, redo,
`show N` and `diff N M` never recompute anything. A step's result is not printed when it is
applied (printing costs about half as much as the transform interpreter): the compile worker
keeps the module and sends its bytecode right after its answer, which the store keeps so that a
worker crash loses nothing; the text and its sha256 are printed the first time someone asks for
them (callers that show the result at once ask for it printed). Applying a step is
transactional: the compile worker applies it to a copy; the session changes only when
the worker answers with a verified module. Printed IR travels and is kept compact (weights once, by
sha256: workbench/common/compact_text.py); what is shown elides them (`view_at`), `ir_at` is exact. Failures raise `SessionError` carrying a
one-line message and the MLIR diagnostics; the session is then exactly as before.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

import workbench
from workbench.common.suggest import did_you_mean, did_you_mean_path
from workbench.common.textdiff import unified_diff
from workbench.common import safe_yaml, trust_store
from workbench.common.files import UTF8_BOM, atomic_write, output_file, read_regular_file, resolved, without_bom  # noqa: F401  (atomic_write re-exported)
from workbench.common.mlir_libs import mlir_version
from workbench.common import diagnostics, split_input
from workbench.common.compact_text import BlobStore, CompactText, as_elided, as_text
from workbench.execution.worker_client import CompileClient, command_cancelled, take_prestarted_compile_worker
from workbench.execution.expected import ExpectedError, ExpectedOutputs, find_sidecar
from workbench.paths import state_dir
from workbench.steps.kinds import (BuildContext, Step, StepError, pipeline_of, read_pipeline_doc, short_repr,
                                    step_from_entry)
from workbench.steps.params import ParamError, payload_dims
from workbench.steps.spec import SpecError
from workbench.targets import TargetError, get_target

SESSION_HEADER = "# lh-workbench session: replay with `lh-workbench replay THIS_FILE`\n"
#: the most cores `target --threads N` plans schedules for
MAX_CPU_THREADS = 4096
MLIR_BYTECODE_MAGIC = b"ML\xefR"   # MLIR bytecode files hold NUL bytes; text payloads never do


class SessionError(RuntimeError):
    def __init__(self, message: str, detail: str = "", step_index: int | None = None):
        super().__init__(message)
        self.detail = detail
        self.step_index = step_index


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class LRUCache:
    """A small least-recently-used mapping (get / put), safe to share between threads."""

    def __init__(self, size: int):
        import threading
        from collections import OrderedDict

        self.size = size
        self._items: "OrderedDict[Any, Any]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class IRStore:
    """Every IR a session has seen, by key. Printed IR: its text under its sha256. IR that a lazy
    apply left unprinted: its bytecode under the key the compile worker gave it (the worker holds the
    module under that key; the bytecode, which arrives just after the answer, survives a worker
    crash), until its text is asked for; and until its bytecode is here, how to make it again
    (`recipes`: the input's key and the stages, for the rare worker death in between)."""

    def __init__(self) -> None:
        self.texts: dict[str, str | CompactText] = {}   # sha256 of the text -> text (compact: weights shared)
        self.bytecode: dict[str, bytes] = {}     # key of an unprinted IR -> its MLIR bytecode
        self.printed: dict[str, str] = {}        # key of an IR printed after the fact -> its sha256
        self.recipes: dict[str, tuple[str, list[dict], str]] = {}   # key -> (input key, stages, label)

    def copy(self) -> "IRStore":
        other = IRStore()
        other.texts, other.bytecode, other.printed = dict(self.texts), dict(self.bytecode), dict(self.printed)
        other.recipes = dict(self.recipes)
        return other

    def backup_arrived(self, message: dict) -> None:
        """The follow-up of a lazy apply (see the compile worker): the result's bytecode, or its text."""
        key = message.get("key")
        if not message.get("ok") or key is None:
            return              # the worker died first: the recipe stays
        if "bytecode" in message:
            self.bytecode[key] = message["bytecode"]
        elif "ir" in message:
            self.add_printed(key, message["sha"], message["ir"])
        self.recipes.pop(key, None)

    def has_content(self, key: str) -> bool:
        return self.known_sha(key) is not None or key in self.bytecode

    def known_sha(self, key: str) -> str | None:
        """The text sha256 of `key` when it is printed already, else None."""
        return key if key in self.texts else self.printed.get(key)

    def content(self, key: str) -> dict:
        """What a worker that does not hold `key` needs to rebuild it."""
        sha = self.known_sha(key)
        if sha is not None:
            return {"text": as_text(self.texts[sha])}
        return {"bytecode": self.bytecode[key]}

    def nbytes(self) -> int:
        """About what the store holds (blobs shared by compact texts counted once)."""
        stores, total = {}, 0
        for text in self.texts.values():
            if isinstance(text, CompactText):
                stores[id(text.blobs)] = text.blobs
                total += text.own_nbytes
            else:
                total += len(text)
        return total + sum(len(b) for b in self.bytecode.values()) + sum(b.nbytes for b in stores.values())

    def add_printed(self, key: str, sha: str, text: "str | CompactText") -> None:
        self.texts[sha] = text
        if key != sha:
            self.printed[key] = sha
            self.bytecode.pop(key, None)
            self.recipes.pop(key, None)


@dataclass
class AppliedStep:
    """One applied step: its input and output IR by store key (see `IRStore`); `input_sha` and
    `output_sha` are the text sha256s, printed on first use through `resolve`."""
    step: Step
    input_key: str
    output_key: str
    seconds: float
    stage_seconds: list[float] = field(default_factory=list)
    resolve: Callable[[str], str] = field(default=lambda key: key, repr=False, compare=False)
    printed: str = field(default="", compare=False)   # what its schedule generators printed (`NAME printed:` ...)

    @property
    def input_sha(self) -> str:
        return self.resolve(self.input_key)

    @property
    def output_sha(self) -> str:
        return self.resolve(self.output_key)

    @property
    def noop(self) -> bool:
        return self.input_key == self.output_key or self.input_sha == self.output_sha


@dataclass
class StepReport:
    """What one apply did; the JSON step record of the headless contract."""
    index: int
    kind: str
    spec: str
    params: dict
    ok: bool
    seconds: float
    ir_sha256: str | None
    error: str | None = None
    detail: str | None = None
    noop: bool = False

    def to_json(self) -> dict:
        d = {"index": self.index, "kind": self.kind, "spec": self.spec, "params": self.params, "ok": self.ok,
             "seconds": round(self.seconds, 6), "ir_sha256": self.ir_sha256, "error": self.error}
        if self.noop:
            d["noop"] = True
        return d


@dataclass
class ParamEdit:
    """One `params` edit (Session.set_params) as undo and redo move it: the steps before and after it (the
    edited step and those re-applied after it), the cursor, and the edited step's dict before and after."""
    index: int
    before: list[AppliedStep]
    after: list[AppliedStep]
    cursor: int
    old_params: dict
    new_params: dict

    def changed(self, undone: bool = False) -> str:
        """`key=now (was before)` for each key whose value the edit changed (`undone`: as its undo left it)."""
        was, now = (self.new_params, self.old_params) if undone else (self.old_params, self.new_params)
        keys = [k for k in now if was.get(k) != now[k]]
        return ", ".join(f"{k}={now[k]} (was {was.get(k)})" for k in keys) or "no change"


class _SessionClient:
    """The compile client as one session uses it: the session's parse options go with every request."""

    def __init__(self, client: CompileClient, options: dict) -> None:
        self._client, self._options = client, options
        # printed IR comes compact (weights once) from a client that keeps the blobs (see CompileClient)
        self._compact = {"compact_ir": True} if isinstance(getattr(client, "blobs", None), BlobStore) else {}

    def request(self, req: dict, timeout: float | None = None,
                on_follow_up: Callable[[dict], None] | None = None) -> dict:
        return self._client.request({**self._options, **self._compact, **req}, timeout=timeout,
                                    on_follow_up=on_follow_up)

    def __getattr__(self, name: str):
        return getattr(self._client, name)


class Session:
    def __init__(self, client: CompileClient | None = None, allow_python: bool = False):
        #: worker options of this session's payload (`allow_unregistered`: `load --allow-unregistered`)
        self.parse_options: dict[str, bool] = {}
        self.client = _SessionClient(client or take_prestarted_compile_worker() or CompileClient(),
                                     self.parse_options)
        self.irs = IRStore()
        self.payload_path: Path | None = None
        self.payload_chunk: int | None = None     # `load --chunk K`: chunk K of a `// -----` split file
        self.payload_chunks = 0                   # how many such chunks the payload file has
        self.payload_file_sha: str | None = None
        self.initial_sha: str | None = None
        self.steps: list[AppliedStep] = []
        self.cursor = 0
        self._forget_param_edits()
        self.target_name = "cpu"
        self.cpu_name = ""   # `--cpu NAME`: the CPU machine model selected and compiled for ("" = this host)
        self.cpu_threads = 0  # `target --threads N`: the cores schedules are planned for (0 = all usable)
        self.build_ctx = BuildContext(allow_python=allow_python)
        self.last_run: dict | None = None
        self.diff_cache = LRUCache(16)          # unified diffs, by (sha a, sha b, a, b, context)
        #: `inspect` answers by (store key, with loops): the IR under a key never changes, and `select` reads
        #: one IR several times (the front-end and preparation steps, each step's parameter check)
        self.inspect_cache = LRUCache(8)
        #: `run --ranges`: argument index -> [lo, hi) of random inputs, kept for later runs and saved
        self.input_ranges: dict[int, tuple[float, float]] = {}
        self.reference_cache = LRUCache(4)  # reference outputs of `run --check` (see run_session)
        self.journal_enabled = True
        self.progress: Callable[[str], None] | None = None
        self.saved_path: Path | None = None   # where `save` last wrote (tune studies live next to it)
        # a framework's inputs and outputs for this payload (the `import` sidecar, or `run --expect`)
        self.expected: ExpectedOutputs | None = None
        self.expected_warning = ""
        # the crash journal belongs to this session alone (another process never deletes it); a lock
        # file held while we live tells others that it is not an orphan to resume
        self.session_id = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._journal_lock: int | None = None
        self._saved_state: tuple | None = None     # the steps as last saved (no journal needed then)
        self.journal_error: str | None = None      # why the journal could not be written (once set, warned)
        self.warn: Callable[[str], None] | None = None
        # consent to run: a session replayed from a file this user did not save is "from elsewhere";
        # its payload is native code and runs only with consent (`--allow-run` / a yes)
        self.foreign_source: Path | None = None
        self.run_allowed = False
        # transform.tune.knob schemas are read by parsing the transform module in our worker
        self.build_ctx.knob_reader = lambda text, path: self.client.request({"op": "knobs", "text": text, "path": path})

    # -- basic state -------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self.initial_sha is not None

    def require_loaded(self) -> None:
        if not self.loaded:
            raise SessionError("no payload loaded: use `load FILE.mlir`")

    @property
    def active_steps(self) -> list[AppliedStep]:
        return self.steps[: self.cursor]

    @property
    def store(self) -> dict[str, str]:
        """The printed IR: sha256 -> text."""
        return self.irs.texts

    def key_at(self, index: int) -> str:
        """The store key of the IR after step `index` (0 = the payload as loaded); nothing is printed."""
        self.require_loaded()
        if index == 0:
            return self.initial_sha
        if not 1 <= index <= len(self.steps):
            raise SessionError(f"no step {index} (steps: 0..{len(self.steps)}; 0 is the payload)")
        return self.steps[index - 1].output_key

    def sha_at(self, index: int) -> str:
        """IR sha after step `index` (0 = the payload as loaded)."""
        return self.sha_of(self.key_at(index))

    @property
    def current_key(self) -> str:
        return self.key_at(self.cursor)

    @property
    def current_sha(self) -> str:
        return self.sha_at(self.cursor)

    def ir_at(self, index: int) -> str:
        """The exact text of the IR after step `index`."""
        return as_text(self.store[self.sha_at(index)])

    def view_at(self, index: int) -> str:
        """The IR after step `index` for reading: long string literals (weights) elided to a placeholder
        naming their size and sha256 (`ir_at` has them)."""
        return as_elided(self.store[self.sha_at(index)])

    def elides_at(self, index: int) -> bool:
        """Whether `view_at(index)` leaves anything out."""
        text = self.store[self.sha_at(index)]
        return isinstance(text, CompactText) and text.elides

    def line_count_at(self, index: int) -> int:
        """Lines of the IR after step `index` (blobs hold no newline: counted on the elided text)."""
        view = self.view_at(index)
        return view.count("\n") + (0 if not view or view.endswith("\n") else 1)

    def sha_of(self, key: str) -> str:
        """The text sha256 of the IR stored under `key`, printed by the compile worker the first time."""
        sha = self.irs.known_sha(key)
        if sha is not None:
            return sha
        ans = self.request_on_ir(key, {"op": "print"})
        if not ans["ok"]:
            raise SessionError(f"cannot print the IR: {ans['error']}", ans.get("diagnostics", ""))
        self.irs.add_printed(key, ans["sha"], ans["ir"])
        return ans["sha"]

    def request_on_ir(self, key: str, req: dict, timeout: float | None = None,
                      on_follow_up: Callable[[dict], None] | None = None) -> dict:
        """A compile-worker request about the IR stored under `key`: sent by key alone, and again with
        the IR's text or bytecode when the worker does not hold it (restarted, evicted, another worker)."""
        ans = self.client.request({**req, "key": key}, timeout=timeout, on_follow_up=on_follow_up)
        if not ans["ok"] and ans.get("missing"):
            self.client.settle()           # its bytecode may be on its way
            if not self.irs.has_content(key):
                self._rebuild(key)
            ans = self.client.request({**req, "key": key, **self.irs.content(key)}, timeout=timeout,
                                      on_follow_up=on_follow_up)
        return ans

    def _rebuild(self, key: str) -> None:
        """An unprinted IR whose worker died before its bytecode came: apply its stages again (steps
        are deterministic: replay reproduces IR byte for byte), printed this time."""
        input_key, stages, label = self.irs.recipes[key]
        ans = self._run_stages(input_key, stages, label, printed=True)
        if not ans["ok"]:
            raise SessionError(f"the compile worker stopped before it sent this IR, and making it again "
                               f"failed: {ans['error']}", ans.get("diagnostics", ""))
        self.irs.add_printed(key, ans["sha"], ans["ir"])

    @property
    def current_ir(self) -> str:
        return self.ir_at(self.cursor)

    @property
    def target(self):
        """The selected target, set up for the session's CPU machine (`--cpu`)."""
        return get_target(self.target_name).for_cpu(self.cpu_name, self.cpu_threads)

    def select_cpu(self, name: str) -> None:
        """Select and compile for the CPU machine `name` (host/native/"" = this host); an unknown name
        changes nothing."""
        from workbench.targets.cpu_host import MachineError, machine_for

        try:
            machine = machine_for(name)
        except MachineError as e:
            raise SessionError(str(e))
        self.cpu_name = "" if machine.is_host and ":" not in name else name.strip()

    def select_cpu_threads(self, threads) -> None:
        """Plan schedules for `threads` cores (0 = the machine's usable CPUs); anything but an integer in
        [0, MAX_CPU_THREADS] changes nothing."""
        if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_CPU_THREADS:
            raise SessionError(f"threads must be an integer from 0 (all usable CPUs) to {MAX_CPU_THREADS}, "
                               f"got {threads!r}")
        self.cpu_threads = threads

    def select_target(self, name: str) -> None:
        """Make `name` the selected target; an unknown name changes nothing."""
        try:
            self.target_name = get_target(name).name   # an alias (`gpu`) is recorded as the target's name
        except TargetError as e:
            raise SessionError(str(e))

    def close(self) -> None:
        self.client.close()
        self._release_journal_lock()

    def state_snapshot(self) -> dict:
        """What `load`, `select_target` and applying steps replace (payload, steps, cursor, target, ranges,
        parse options), to be put back by `restore_state` when a replay fails half-way: the session as
        it was. The IR store and the workers are shared, not copied (they only gain entries)."""
        snapshot = dict(self.__dict__)
        snapshot["parse_options"] = dict(self.parse_options)
        snapshot["steps"] = list(self.steps)   # applying a step changes the list in place
        return snapshot

    def restore_state(self, snapshot: dict) -> None:
        self.__dict__.update(snapshot)
        self.steps = list(snapshot["steps"])

    # -- loading --------------------------------------------------------------------------
    @property
    def allow_unregistered(self) -> bool:
        return bool(self.parse_options.get("allow_unregistered"))

    def load(self, path: str | Path, allow_unregistered: bool = False, chunk: int | None = None,
             named_by: str | Path | None = None) -> str:
        """Parse and verify a payload file; on error the session keeps its previous state.
        `named_by`: the session file from elsewhere that names the payload (None: the user did), whose
        failure to parse then quotes nothing of a file whose name does not say it is MLIR
        (diagnostics.may_quote: `/etc/shadow`).
        `allow_unregistered`: ops of dialects MLIR does not know are accepted (as generic ops), for this
        payload's whole session (recorded in the saved session). `chunk`: only that chunk (1-based) of a
        file split by `// -----` lines (mlir-opt --split-input-file), with the file's line numbers."""
        path = Path(path)
        if not path.exists():
            raise SessionError(f"{path}: no such file{did_you_mean_path(path)}")
        try:   # read once: its sha256, its `// -----` chunks, the chunk asked for
            data = read_regular_file(path)   # a directory, /dev/zero, a FIFO: one line, no endless read
            if b"\0" in data and not data.startswith(MLIR_BYTECODE_MAGIC):
                raise SessionError(f"{path}: not MLIR text (a NUL byte at offset {data.index(0)}: a binary file?)")
            # a byte order mark first (a Windows editor's): the text without it (MLIR's lexer refuses it at 1:1)
            if chunk is not None:
                text = split_input.chunk_text(without_bom(data.decode()), chunk, label=path.name)
            else:   # the worker reads the file itself, unless the text has to lose its mark
                text = without_bom(data.decode()) if data.startswith(UTF8_BOM) else None
        except (OSError, UnicodeDecodeError) as e:
            raise SessionError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}")
        except split_input.ChunkError as e:
            raise SessionError(str(e))
        chunks = split_input.count_chunks(data)
        ans = self.client.request({"op": "parse", "filename": str(path), "text": text,
                                   "allow_unregistered": allow_unregistered})
        if not ans["ok"]:
            hint = ("; to accept such ops: load --allow-unregistered FILE (--allow-unregistered-dialects on the "
                    "command line)") if "unregistered dialect" in ans["error"] else ""
            if "killed by signal" in ans["error"]:   # MLIR's parser recurses per nesting level: a deep file overflows it
                depth = split_input.nesting_depth(data)
                if depth > split_input.DEEP_NESTING:
                    hint += f"; the payload nests {depth} levels deep: MLIR's recursive parser ran out of stack"
            if chunk is None and chunks > 1:
                hint += (f"; {path.name} has {chunks} chunks separated by `{split_input.SPLIT_MARKER}` lines "
                         f"(mlir-opt --split-input-file): load one with `load --chunk K {path.name}`")
            if not diagnostics.may_quote(str(path), named_by and str(named_by)):
                raise SessionError(diagnostics.withheld(ans["error"], str(path), str(named_by)) + hint)
            error, detail = self._tidy_failure(ans, (lambda: text) if text is not None else data.decode,
                                               {"allow_unregistered": allow_unregistered})
            raise SessionError(error + hint, detail)
        self.irs.texts[ans["sha"]] = ans["ir"]
        self.parse_options["allow_unregistered"] = allow_unregistered
        self.input_ranges = {}
        self.payload_path = resolved(path)
        self.payload_chunk = chunk
        self.payload_chunks = chunks
        self.payload_file_sha = hashlib.sha256(data).hexdigest()
        self.initial_sha = ans["sha"]
        self.saved_path = None
        self.steps = []
        self.cursor = 0
        self._forget_param_edits()
        self._saved_state = ()
        self.foreign_source = None
        self.last_run = None
        self.reference_cache.clear()
        try:
            self.expected, self.expected_warning = find_sidecar(path), ""
        except ExpectedError as e:  # the payload itself is fine: say why the sidecar is not used
            self.expected, self.expected_warning = None, str(e)
        return ans["sha"]

    def _named_by(self, step: Step, path: str | None) -> str | None:
        """Who named the file `path` a stage of `step` read, when the user did not: the session from elsewhere
        whose steps these are, or the pipeline file (an include, a named pipeline) that names it."""
        if self.foreign_source is not None:
            return str(self.foreign_source)
        if path is None or step.kind in ("pass", "bench"):
            return None
        try:
            own = step.resolve()
        except (StepError, OSError):
            return None
        return None if Path(path) == own else str(own)

    def _tidy_failure(self, ans: dict, read_text: Callable[[], str] | None,
                      parse_options: dict | None = None) -> tuple[str, str]:
        """The worker's error made readable (workbench/common/diagnostics.py): a verifier failure labelled as
        such (found by a probe parse of the failing text, when there is one), no repeated lines."""
        error, detail = ans["error"], ans.get("diagnostics", "")
        verifier = None
        excerpt = ""
        if read_text is not None and diagnostics.needs_probe(error, detail):
            try:
                text = read_text()
            except (OSError, UnicodeDecodeError):
                text = None
            if text is not None:
                probe = self.client.request({"op": "parse", "text": text + diagnostics.PROBE_SUFFIX,
                                             "filename": None, **(parse_options or {})})
                verifier = diagnostics.probe_parsed_whole_text(probe.get("error", ""), text, error)
                excerpt = diagnostics.source_excerpt(error, text)
        return diagnostics.tidy_mlir_failure(error, detail, verifier, excerpt)

    # -- applying ---------------------------------------------------------------------------
    def _run_stages(self, input_key: str, stages: list[dict], label: str, printed: bool = False) -> dict:
        req = {"op": "apply", "stages": stages, "label": label, "lazy": not printed}
        if any(stage.get("base_sha256") for stage in stages):  # a hand edit checks its input's sha256
            req["input_sha"] = self.sha_of(input_key)
        return self.request_on_ir(input_key, req, on_follow_up=self.irs.backup_arrived)

    def check_constraints(self, step: Step, input_key: str, index: int | None = None) -> None:
        """Check the step's complete parameter dict against its schema's relations and, when they
        name payload dimensions, against the dims of the step's input. Raises SessionError."""
        try:
            schema = step.schema(self.build_ctx)
        except (StepError, ParamError, SpecError) as e:
            raise SessionError(str(e), step_index=index)
        has_refs = any(p.divides is not None or p.multiple_of is not None for p in schema.params.values())
        if not (schema.constraints or has_refs) or not step.params:
            return
        values = schema.defaults()
        values.update(step.params)
        dims_list: list = [None]
        if schema.needs_payload:
            op_id = values.get("op") or None
            try:   # (the ops' dims and ids, or a per-op step's op's: no loop structures, most of an inspection)
                info = self.inspect_key(input_key, loops=False, only=op_id if isinstance(op_id, str) else None)
            except SessionError:
                info = None
            if info is not None:
                dims_list = payload_dims(info, schema.payload_op, op_id) or [None]
        try:
            for dims in dims_list:
                schema.check(values, dims)
        except ParamError as e:
            # the step by its file, not its whole dict: the message is about one value of it
            where = f"step {index} ({step.with_params({}).label()}): " if index else ""
            raise SessionError(f"{where}{e}", step_index=index)

    def _apply_on(self, input_key: str, step: Step, index: int, printed: bool = False) -> AppliedStep:
        self.check_constraints(step, input_key, index)
        try:
            stages = step.stages(self.build_ctx)
        except (StepError, ParamError, SpecError) as e:
            raise SessionError(str(e), step_index=index)
        t0 = time.perf_counter()
        ans = self._run_stages(input_key, stages, f"<step {index} input>", printed)
        wall = time.perf_counter() - t0
        if not ans["ok"]:
            where = ""
            si = ans.get("stage_index")
            if si is not None and len(stages) > 1:
                where = f" (stage {si + 1} of {len(stages)}: {_stage_label(stages[si])})"
            stage = stages[si] if si is not None and si < len(stages) else {}
            text, path = stage.get("text"), stage.get("path")
            named_by = self._named_by(step, path) if text else None
            if not diagnostics.may_quote(path, named_by):   # `transform: /etc/shadow` of a session from elsewhere
                raise SessionError(f"step {index} ({step.label()}) failed{where}: "
                                   f"{diagnostics.withheld(ans['error'], path, named_by)}", step_index=index)
            error, detail = self._tidy_failure(ans, (lambda: text) if text else None)
            raise SessionError(f"step {index} ({step.label()}) failed{where}: {error}", detail, step_index=index)
        if "key" in ans:    # a lazy apply: printed when asked for (sha_of); its bytecode follows
            output_key = ans["key"]
            if not self.irs.has_content(output_key):
                self.irs.recipes[output_key] = (input_key, stages, f"<step {index} input>")
        else:
            output_key = ans["sha"]
            self.irs.texts[output_key] = ans["ir"]
        return AppliedStep(step, input_key, output_key, ans.get("seconds", wall), ans.get("stage_seconds", []),
                           resolve=self.sha_of, printed=ans.get("printed") or "")

    def complete_params(self, step: Step) -> Step:
        """Fill in schema defaults so the recorded parameter dict is concrete."""
        try:
            schema = step.schema(self.build_ctx)
            params = schema.defaults()
            params.update(schema.validate(step.params))
        except (StepError, ParamError, SpecError) as e:
            raise SessionError(str(e))
        return step.with_params(params)

    def nested_as_mlir_opt_does(self, pipeline: str) -> str:
        """A pipeline read from mlir-opt pass flags (`run-line`, `pass -affine-loop-tile`) as mlir-opt runs it:
        each pass restricted to some op (`func.func`) nested in it (the compile worker asks MLIR which)."""
        ans = self.client.request({"op": "nest_pipeline", "pipeline": pipeline})
        return ans["pipeline"] if ans.get("ok") else pipeline

    def pass_options(self, name: str) -> list[str]:
        """The option names of the pass or pipeline `name` (the compile worker asks MLIR; kept per name)."""
        cache = self.__dict__.setdefault("_pass_options", {})
        if name not in cache:
            ans = self.client.request({"op": "pass_options", "pass": name})
            cache[name] = list(ans.get("options") or []) if ans.get("ok") else []
        return cache[name]

    def apply(self, step: Step, printed: bool = False) -> AppliedStep:
        """Apply `step` after the current step. The result is printed when first asked for, unless
        `printed` (the caller shows it at once: one worker request instead of two)."""
        self.require_loaded()
        step = self.complete_params(step)
        applied = self._apply_on(self.current_key, step, self.cursor + 1, printed)
        del self.steps[self.cursor:]
        self.steps.append(applied)
        self.cursor += 1
        return applied

    def undo(self) -> int:
        """Take back the last change: a `params` edit while the steps are as it left them (the edited step's
        old dict and what was re-applied after it come back; `last_edit_moved` says which), else the current
        step (the cursor moves back). Returns the cursor."""
        self.require_loaded()
        if self._move_param_edit(self._edits_done, self._edits_undone, restore="before"):
            return self.cursor
        if self.cursor == 0:
            raise SessionError("nothing to undo")
        self.cursor -= 1
        return self.cursor

    def redo(self) -> int:
        """Bring back what `undo` took back: a `params` edit while the steps are as its undo left them, else
        the next undone step. Returns the cursor."""
        self.require_loaded()
        if self._move_param_edit(self._edits_undone, self._edits_done, restore="after"):
            return self.cursor
        if self.cursor >= len(self.steps):
            raise SessionError("nothing to redo")
        self.cursor += 1
        return self.cursor

    def _forget_param_edits(self) -> None:
        # `params` edits as undo / redo take them back and bring them again: ParamEdit records, each valid
        # while the steps are exactly as the edit (or its undo) left them
        self._edits_done: list[ParamEdit] = []
        self._edits_undone: list[ParamEdit] = []
        #: the edit the last undo / redo took back or brought again (None: it moved the cursor)
        self.last_edit_moved: ParamEdit | None = None

    def _move_param_edit(self, source: list[ParamEdit], target: list[ParamEdit], restore: str) -> bool:
        """Restore the `restore` side ("before" / "after") of the newest edit in `source` if the steps are
        now its other side; stale edits (other steps applied, undone or edited since) are dropped."""
        self.last_edit_moved = None
        if not source:
            return False
        edit = source[-1]
        now = edit.after if restore == "before" else edit.before
        if len(now) != len(self.steps) or any(a is not b for a, b in zip(now, self.steps)):
            source.clear()   # other steps applied or edited since: this edit and older ones are stale
            return False
        if self.cursor != edit.cursor:   # steps undone after the edit's undo: redo brings them back first
            return False
        source.pop()
        self.steps = list(getattr(edit, restore))
        target.append(edit)
        self.last_edit_moved = edit
        return True

    def no_active_step(self, index: int) -> str:
        """The one-line error for a step number that is not an active step."""
        if self.cursor == 0:
            undone = f"; {len(self.steps)} undone (`redo`)" if self.steps else ""
            return f"no step {index}: no steps applied yet (`apply ...`, `select --apply`){undone}"
        return f"no active step {index} (active steps: 1..{self.cursor})"

    def set_params(self, index: int, updates: dict[str, Any], selected_by: str | None = None) -> list[AppliedStep]:
        """Edit step `index`'s parameters and re-apply steps index..cursor; all or nothing.
        `selected_by` records who produced the new dict (None: the user edited it)."""
        self.require_loaded()
        if not 1 <= index <= self.cursor:
            raise SessionError(self.no_active_step(index))
        old = self.steps[index - 1]
        try:
            schema = old.step.schema(self.build_ctx)
            validated = schema.validate(updates)
        except (StepError, ParamError) as e:
            raise SessionError(str(e), step_index=index)
        new_params = dict(old.step.params)
        new_params.update(validated)
        replaced: list[AppliedStep] = []
        key = old.input_key
        for i in range(index, self.cursor + 1):
            if i == index:
                step = old.step.with_params(new_params)
                step.selected_by = selected_by
            else:
                step = self.steps[i - 1].step
            if self.progress:
                self.progress(f"re-applying step {i}/{self.cursor}: {step.label()}")
            applied = self._apply_on(key, step, i)
            replaced.append(applied)
            key = applied.output_key
        before = list(self.steps)
        self.steps[index - 1: self.cursor] = replaced
        del self.steps[self.cursor:]
        self._edits_done.append(ParamEdit(index, before, list(self.steps), self.cursor,
                                          dict(old.step.params), dict(new_params)))
        self._edits_undone.clear()
        return replaced

    # -- views ----------------------------------------------------------------------------
    def diff(self, a: int, b: int, context: int = 3, full: bool = False) -> str:
        """Unified diff of the IR after step a and after step b (cached by the two IR hashes); long string
        literals (weights) elided as in `view_at` (a changed one shows as its placeholder's new sha256),
        unless `full`."""
        sa, sb = self.sha_at(a), self.sha_at(b)
        key = (sa, sb, a, b, context, full)
        cached = self.diff_cache.get(key)
        if cached is None:
            text_of = as_text if full else as_elided
            cached = unified_diff(text_of(self.store[sa]), text_of(self.store[sb]), f"step {a}", f"step {b}", context)
            self.diff_cache.put(key, cached)
        return cached

    def unsaved_steps(self) -> int:
        """How many active steps would be lost (load, quit): 0 when there are none, or when they
        are as `save` wrote them (or as a replayed file has them)."""
        if not self.loaded or not self.active_steps or self._state_key() == self._saved_state:
            return 0
        return len(self.active_steps)

    def history(self) -> list[dict]:
        rows = [{"index": 0, "kind": "payload", "spec": str(self.payload_path), "active": True,
                 "noop": False, "seconds": 0.0, "ir_sha256": self.initial_sha, "current": self.cursor == 0}]
        for i, a in enumerate(self.steps, start=1):
            rows.append({"index": i, "kind": a.step.kind, "spec": a.step.label(), "active": i <= self.cursor,
                         "noop": a.noop, "seconds": a.seconds, "ir_sha256": a.output_sha,
                         "current": i == self.cursor, "params": a.step.params})
        return rows

    def inspect(self, index: int | None = None) -> dict:
        return self.inspect_key(self.key_at(self.cursor if index is None else index))

    def inspect_key(self, key: str, loops: bool = True, only: str | None = None) -> dict:
        """The compile worker's inspection of the IR stored under `key` (`loops=False`: without each op's
        loop structure; `only=ID`: the op with that id alone, see payload_inspect.inspect_module), asked once
        per IR and kept (pickled: callers may change the dict they get)."""
        kept = self.inspect_cache.get((key, loops, only))
        if kept is not None:
            return pickle.loads(kept)
        req = {"op": "inspect", **({} if loops else {"loops": False}), **({"only": only} if only else {})}
        ans = self.request_on_ir(key, req)
        if not ans["ok"]:
            raise SessionError(ans["error"], ans.get("diagnostics", ""))
        self.inspect_cache.put((key, loops, only), pickle.dumps(ans["info"], protocol=pickle.HIGHEST_PROTOCOL))
        return ans["info"]

    # -- persistence ----------------------------------------------------------------------
    def to_yaml(self, path: Path | None) -> str:
        rel_to = path.parent if path is not None else None
        doc: dict[str, Any] = {"Pipeline": [a.step.to_entry(rel_to) for a in self.active_steps]}
        payload: dict[str, Any] = {}
        if self.payload_path is not None:
            payload = {"path": os.path.relpath(self.payload_path, rel_to) if rel_to else str(self.payload_path),
                       "sha256": self.payload_file_sha,
                       **({"chunk": self.payload_chunk} if self.payload_chunk is not None else {})}
        doc["Workbench"] = {
            "version": workbench.__version__,
            "mlir_version": mlir_version(),
            "payload": payload,
            "target": self.target_name,
            **({"allow_unregistered_dialects": True} if self.allow_unregistered else {}),
            **({"input_ranges": {i: list(r) for i, r in sorted(self.input_ranges.items())}} if self.input_ranges else {}),
            **({"cpu": self.cpu_name} if self.cpu_name else {}),
            **({"cpu_threads": self.cpu_threads} if self.cpu_threads else {}),
            "ir_sha256": self.current_sha if self.loaded else None,
            "steps": [{"index": i, "ir_sha256": a.output_sha, "seconds": round(a.seconds, 6), "noop": a.noop}
                      for i, a in enumerate(self.active_steps, start=1)],
        }
        if self.last_run is not None:
            doc["Workbench"]["last_run"] = self.last_run
        if self.foreign_source is not None and not self.run_allowed:
            doc["Workbench"]["from_elsewhere"] = str(self.foreign_source)
        return SESSION_HEADER + safe_yaml.dump(doc, sort_keys=False, default_flow_style=None, width=110)

    def save(self, path: str | Path) -> Path:
        path = output_file(path)
        where = resolved(path)
        for a in self.active_steps:
            a.step = a.step.portable(where)
        atomic_write(path, self.to_yaml(where))
        self.saved_path = where
        self.mark_saved()
        trust_store.record(path, trust_store.SESSION)   # this user's own session: not "from elsewhere"
        return path

    # -- the crash journal ------------------------------------------------------------------
    def _state_key(self) -> tuple:
        return tuple((a.step.label(), a.output_sha) for a in self.active_steps)

    def mark_saved(self) -> None:
        """The steps as they are now are safe in a file: drop the journal until they change."""
        self._saved_state = self._state_key()
        self._drop_own_journal()

    @staticmethod
    def _journal_prefix(payload: Path, chunk: int | None = None) -> str:
        name = str(resolved(payload)) + (f"#chunk{chunk}" if chunk is not None else "")
        key = hashlib.sha256(name.encode()).hexdigest()[:16]
        return f"{payload.stem}-{key}"

    @property
    def journal_path(self) -> Path | None:
        if self.payload_path is None:
            return None
        return state_dir() / "journal" / f"{self._journal_prefix(self.payload_path, self.payload_chunk)}.{self.session_id}.yaml"

    def _take_journal_lock(self, jp: Path) -> None:
        if self._journal_lock is not None:
            return
        import fcntl

        fd = os.open(jp.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._journal_lock = fd

    def _release_journal_lock(self) -> None:
        if self._journal_lock is None:
            return
        jp = self.journal_path
        try:
            if jp is not None:
                jp.with_suffix(".lock").unlink(missing_ok=True)
        except OSError:
            pass
        os.close(self._journal_lock)
        self._journal_lock = None

    def _drop_own_journal(self) -> None:
        jp = self.journal_path
        if jp is not None:
            try:
                jp.unlink(missing_ok=True)
            except OSError:
                pass

    def autosave(self) -> bool:
        """Write this session's journal (after every command); a killed process loses at most the
        command in flight. Never raises: a full disk is warned about once (`journal_error`), the
        session goes on. Returns False when the journal could not be written."""
        jp = self.journal_path
        if not self.journal_enabled or jp is None or not self.loaded:
            return True
        if not self.active_steps or self._state_key() == self._saved_state:
            self._drop_own_journal()
            return True
        try:
            jp.parent.mkdir(parents=True, exist_ok=True)
            self._take_journal_lock(jp)
            atomic_write(jp, self.to_yaml(jp))
        except OSError as e:
            first = self.journal_error is None
            self.journal_error = f"cannot write the crash journal {jp}: {e.strerror or e}"
            if first and self.warn:
                self.warn(f"warning: {self.journal_error}; going on without it")
            return False
        return True

    def journal_for(self, payload: Path, chunk: int | None = None) -> Path | None:
        """The newest journal of `payload` left by a session that is no longer running (killed, or
        quit with unsaved steps); never this session's own, never a live session's."""
        import fcntl

        folder = state_dir() / "journal"
        found = []
        for jp in folder.glob(f"{self._journal_prefix(payload, chunk)}*.yaml"):
            if jp == self.journal_path:
                continue
            lock = jp.with_suffix(".lock")
            if lock.exists():
                try:
                    fd = os.open(lock, os.O_RDWR)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue            # its session is alive
                finally:
                    os.close(fd)
            try:
                found.append((jp.stat().st_mtime, jp))
            except OSError:
                continue
        return max(found)[1] if found else None

    @staticmethod
    def describe_journal(journal: Path, now: float | None = None) -> str:
        """What an autosaved session holds, for the question whether to resume it: its steps and its
        age (`2 steps: tile.mlir, cpu-lower; autosaved 5 min ago`)."""
        try:
            doc = safe_yaml.load_file(journal)
            age = (time.time() if now is None else now) - journal.stat().st_mtime
        except (OSError, ValueError, yaml.YAMLError):
            return "unreadable"
        entries = doc.get("Pipeline") if isinstance(doc, dict) else None
        entries = entries if isinstance(entries, list) else []
        names = []
        for entry in entries:
            value = next(iter(entry.values()), "") if isinstance(entry, dict) and entry else ""
            key = next(iter(entry), "") if isinstance(entry, dict) and entry else ""
            text = str(value) if isinstance(value, str) else str(key)
            names.append(Path(text.partition("[")[0].partition("{")[0].strip()).name or str(key))
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        if age < 90:
            when = f"{max(age, 0):.0f} s ago"
        elif age < 5400:
            when = f"{age / 60:.0f} min ago"
        elif age < 2 * 86400:
            when = f"{age / 3600:.0f} h ago"
        else:
            when = f"{age / 86400:.0f} days ago"
        count = f"{len(names)} step{'s' if len(names) != 1 else ''}"
        return f"{count}{': ' + shown if names else ''}; autosaved {when}"

    def adopt_journal(self, journal: Path) -> None:
        """After `resume` from an orphan journal: this session's own journal takes over; the
        orphan is removed once ours is written (a failed write keeps it)."""
        if self.autosave() and (self.journal_path is None or self.journal_path.exists() or not self.active_steps):
            for p in (journal, journal.with_suffix(".lock")):
                try:
                    p.unlink(missing_ok=True)
                except OSError:
                    pass


def _stage_label(stage: dict) -> str:
    kind = stage["kind"]
    if kind == "pass":
        return f"pass {stage['pipeline']}"
    if kind == "schedule":
        return f"{Path(stage['path']).name}[gen={stage['gen']}]"
    if kind == "transform":
        return Path(stage.get("path") or "transform").name
    return kind


@dataclass
class LoadedSession:
    """A session file read from disk: its steps and workbench metadata."""
    path: Path
    steps: list[Step]
    meta: dict
    #: what replay should say about the file's entries (a parameter whose `params:` value overrides its
    #: reference's {k=v})
    notes: list[str] = field(default_factory=list)

    def _payload_meta(self) -> dict:
        payload = self.meta.get("payload") or {}
        if not isinstance(payload, dict):
            raise SessionError(f"{self.path}: Workbench.payload must be a mapping (path:, sha256:, chunk:)")
        return payload

    @property
    def payload(self) -> Path | None:
        p = self._payload_meta().get("path")
        if p is not None and not isinstance(p, str):
            raise SessionError(f"{self.path}: Workbench.payload.path must be a string")
        return resolved(self.path.parent / p) if p else None

    @property
    def payload_chunk(self) -> int | None:
        """`chunk:` of the payload (a `// -----` split file), None for the whole file."""
        chunk = self._payload_meta().get("chunk")
        if chunk is None:
            return None
        if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
            raise SessionError(f"{self.path}: Workbench.payload.chunk must be a positive integer, not {chunk!r}")
        return chunk


def read_session_file(path: str | Path) -> LoadedSession:
    path = Path(path)
    doc = read_pipeline_doc(path)   # read and parsed once (PyYAML's scanner is the slow part of a long file)
    entries, variables = pipeline_of(doc, path)
    unknown = sorted(str(k) for k in doc if k not in SESSION_TOP_KEYS)
    if unknown:
        raise SessionError(f"{path}: unknown top-level key {unknown[0]!r} (known: {', '.join(SESSION_TOP_KEYS)})")
    meta = doc.get("Workbench") or {}
    if not isinstance(meta, dict):
        raise SessionError(f"{path}: 'Workbench' must be a mapping")
    _check_meta(meta, path)
    steps, notes = [], []
    for i, entry in enumerate(entries, start=1):
        try:
            steps.append(step_from_entry(entry, path.parent.resolve(), variables, where=f"{path}: entry {i}",
                                         notes=notes))
        except (StepError, SpecError) as e:
            message = str(e)   # a parameter's own check (`tile_m='abc': expected int`) does not say where it is
            raise SessionError(message if str(path) in message else f"{path}: entry {i}: {message}")
    return LoadedSession(path, steps, meta, notes)


SESSION_TOP_KEYS = ("Pipeline", "Variables", "Workbench")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_sha256(v: Any) -> bool:
    """64 lowercase hex digits, as `save` writes a sha256 (`abc` was taken as a step's recorded hash, and compared)."""
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


def _is_range(v: Any) -> bool:
    """[lo, hi): two finite numbers, lo < hi, hi - lo finite (numpy cannot draw from [-1e308, 1e308))."""
    import math

    return (isinstance(v, list) and len(v) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
            and v[0] < v[1] and math.isfinite(v[1] - v[0]))


#: what `to_yaml` writes for each step under `Workbench.steps`: key -> check
_STEP_RECORD_FIELDS: dict[str, Callable[[Any], bool]] = {
    "index": lambda v: _is_int(v) and v >= 1,
    "ir_sha256": lambda v: v is None or _is_sha256(v),
    "seconds": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf"),
    "noop": lambda v: isinstance(v, bool),
}


def _is_step_record(record: Any) -> bool:
    return isinstance(record, dict) and all(k in _STEP_RECORD_FIELDS and _STEP_RECORD_FIELDS[k](v)
                                            for k, v in record.items())


# what `to_yaml` writes under `Workbench:`: key -> (check, what it must be)
_META_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "version": (lambda v: isinstance(v, str), "a string"),
    "mlir_version": (lambda v: isinstance(v, str), "a string"),
    "payload": (lambda v: isinstance(v, dict), "a mapping (path:, sha256:, chunk:)"),
    "target": (lambda v: v is None or isinstance(v, str), "a target name"),
    "allow_unregistered_dialects": (lambda v: isinstance(v, bool), "true or false"),
    "input_ranges": (lambda v: isinstance(v, dict) and all(_is_int(k) and _is_range(r) for k, r in v.items()),
                     "a mapping of argument indices to [lo, hi] (finite, lo < hi)"),
    "cpu": (lambda v: isinstance(v, str), "a CPU name"),
    "cpu_threads": (lambda v: _is_int(v) and 1 <= v <= MAX_CPU_THREADS, f"an integer in [1, {MAX_CPU_THREADS}]"),
    "ir_sha256": (lambda v: v is None or _is_sha256(v), "a sha256 hex string"),
    "steps": (lambda v: isinstance(v, list) and all(_is_step_record(x) for x in v),
              "a list of step records ({index: N, ir_sha256: HEX, seconds: S, noop: true|false}, as `save` writes)"),
    "last_run": (lambda v: isinstance(v, dict), "a mapping"),
    "from_elsewhere": (lambda v: isinstance(v, str), "a path"),
}
_PAYLOAD_FIELDS = ("path", "sha256", "chunk")


def _check_meta(meta: dict, path: Path) -> None:
    """A session's `Workbench:` metadata, checked before anything uses it: every key known and of its
    type (a hand-written or hostile file fails here in one line, not in a traceback later)."""
    for key, value in meta.items():
        if key not in _META_FIELDS:
            raise SessionError(f"{path}: unknown key Workbench.{key}{did_you_mean(str(key), _META_FIELDS)} "
                               f"(known: {', '.join(_META_FIELDS)})")
        check, what = _META_FIELDS[key]
        if not check(value):
            raise SessionError(f"{path}: Workbench.{key} must be {what}, not {short_repr(value)}")
    for position, record in enumerate(meta.get("steps") or [], start=1):
        # the records are read by their index (`replay` says after which step the IR first differs): one out of
        # place would compare a step with another step's IR
        if "index" in record and record["index"] != position:
            raise SessionError(f"{path}: Workbench.steps record {position} has index {short_repr(record['index'])}: "
                               f"the records are numbered 1, 2, ... in the order of the steps, as `save` writes them")
    for key, value in (meta.get("payload") or {}).items():
        if key not in _PAYLOAD_FIELDS:
            raise SessionError(f"{path}: unknown key Workbench.payload.{key}{did_you_mean(str(key), _PAYLOAD_FIELDS)} "
                               f"(known: {', '.join(_PAYLOAD_FIELDS)})")
        if key == "sha256" and not _is_sha256(value):
            raise SessionError(f"{path}: Workbench.payload.sha256 must be a sha256 hex string, not {short_repr(value)}")


def _from_session_key(loaded: LoadedSession, key: str, select: Callable, value) -> None:
    try:
        select(value)
    except SessionError as e:
        raise SessionError(f"{loaded.path}: Workbench.{key}: {e}") from None


def replay_into(session: Session, loaded: LoadedSession,
                on_step: Callable[[StepReport], None] | None = None, keep_going: bool = False) -> list[StepReport]:
    """Apply every step of `loaded` to `session` (already holding the payload)."""
    reports: list[StepReport] = []
    # (each with the file and key it came from: a bad machine item in a hand-edited session names its place)
    target = loaded.meta.get("target")
    if target:
        _from_session_key(loaded, "target", session.select_target, target)  # unknown target: before any work
    if loaded.meta.get("cpu"):
        # the machine the session was built for
        _from_session_key(loaded, "cpu", session.select_cpu, str(loaded.meta["cpu"]))
    if loaded.meta.get("cpu_threads") is not None:
        # and the cores it planned for
        _from_session_key(loaded, "cpu_threads", session.select_cpu_threads, loaded.meta["cpu_threads"])
    for n, step in enumerate(loaded.steps, start=1):
        index = session.cursor + 1
        if command_cancelled():   # Esc in the TUI (Ctrl-C elsewhere): a replay of cached steps sends no request
            reports.append(StepReport(index, step.kind, step.label(), step.params, False, 0.0, None,
                                      f"replay cancelled before step {n} of {len(loaded.steps)}"))
            break
        t0 = time.perf_counter()
        try:
            applied = session.apply(step, printed=True)   # the report carries its sha256 at once
            rep = StepReport(index, step.kind, applied.step.label(), applied.step.params, True, applied.seconds,
                             applied.output_sha, noop=applied.noop)
        except SessionError as e:
            # a failure before the step ran (its parameters, an include's) says which step it is
            error = str(e) if str(e).startswith(f"step {index} ") else f"step {index} ({step.label()}): {e}"
            if command_cancelled():   # Esc while the step ran: its request was cancelled, not the step wrong
                error = f"replay cancelled at step {n} of {len(loaded.steps)}"
            rep = StepReport(index, step.kind, step.label(), step.params, False, time.perf_counter() - t0, None,
                             error, e.detail)
        reports.append(rep)
        if on_step:
            on_step(rep)
        if not rep.ok and not keep_going:
            break
    return reports
