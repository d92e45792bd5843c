"""The IR view's model without a screen: line index, search, outline, regions, folds; patience
diffs; MLIR failure messages; the keymap file."""
from __future__ import annotations

import difflib
import random
import re

import pytest

from workbench.common import diagnostics
from workbench.common import textdiff
from workbench.tui import text_model as tm
from workbench.tui.keymap import KeymapError, load_keymap, parse_keymap

MODULE = """module {
  func.func @first(%arg0: memref<64xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %r = scf.for %i = %c0 to %c0 step %c0 iter_args(%acc = %cst) -> (f32) {
      %v = memref.load %arg0[%i] : memref<64xf32>
      scf.yield %v : f32
    }
    return %r : f32
  }
  memref.global "private" constant @table : memref<4xf32> = dense<0.0>
  func.func private @Second() -> f32 {
    %0 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
    return %0 : f32
  }
}
"""


def test_line_index_matches_splitlines():
    for text in (MODULE, MODULE.rstrip("\n"), "", "\n", "a\n\nb", "é\nñ x\n∅\n"):
        idx = tm.LineIndex(text)
        lines = text.splitlines()
        assert idx.count == len(lines)
        assert [idx.line(i) for i in range(idx.count)] == lines
        assert idx.max_len == max((len(ln) for ln in lines), default=0)
        for i in range(idx.count):
            assert idx.line_of(int(idx.starts[i])) == i
    head = tm.LineIndex.head(MODULE, 3)
    assert head.count == 3 and head.line(2) == MODULE.splitlines()[2]


def test_search_counts_lines_and_smart_case():
    idx = tm.LineIndex(MODULE)
    res = tm.search(idx, r"memref\.load|linalg\.\w+")
    assert res.count == 2 and list(res.lines) == [4, 11]
    # all lowercase: any case; with a capital: exact case
    assert tm.search(idx, "second").count == 1
    assert tm.search(idx, "Second").count == 1 and tm.search(idx, "SECOND").count == 0
    assert tm.search(idx, "^  func").count == 2        # ^ is per line
    assert res.first_at_or_after(5) == 1 and res.first_at_or_after(12) == 0  # wraps
    with pytest.raises(tm.SearchError, match="bad regex"):
        tm.search(idx, "(")


def test_outline_lists_symbols_and_ops_with_their_lines():
    idx = tm.LineIndex(MODULE)
    got = [(s.line, s.name, s.kind) for s in tm.outline(idx)]
    assert (1, "@first", "func.func") in got
    assert (9, "@table", "memref.global") in got
    assert (10, "@Second", "func.func") in got
    assert (3, "scf.for", "scf.for") in got and (11, "linalg.matmul", "linalg.matmul") in got
    assert [g[0] for g in got] == sorted(g[0] for g in got)


def test_regions_and_enclosing_region():
    idx = tm.LineIndex(MODULE)
    assert tm.region_end(idx, 1) == 8          # func.func @first { ... }
    assert tm.region_end(idx, 3) == 6          # scf.for { ... }
    assert tm.region_end(idx, 2) is None       # not a region
    assert tm.enclosing_region(idx, 4) == (3, 6)
    assert tm.enclosing_region(idx, 7) == (1, 8)
    assert tm.function_regions(idx, tm.outline(idx)) == [(1, 8), (10, 13)]


def test_fold_map_agrees_with_a_plain_list():
    rnd = random.Random(7)
    n = 300
    for _ in range(40):
        folds = tm.FoldMap()
        for _ in range(rnd.randint(1, 8)):
            a = rnd.randrange(n - 3)
            folds.add(a, min(n - 1, a + rnd.randint(2, 40)))
        visible = [i for i in range(n) if folds.containing(i) < 0]
        assert folds.rows(n) == len(visible)
        for row, line in enumerate(visible):
            assert folds.row_to_line(row) == line
            assert folds.line_to_row(line) == row
        for i in range(n):   # a hidden line maps to the row of its fold's opening line
            k = folds.containing(i)
            if k >= 0:
                assert folds.line_to_row(i) == folds.line_to_row(folds.starts[k])


def _apply_unified(a: str, diff: str) -> str:
    """Apply a unified diff (to check it)."""
    src = a.splitlines(True)
    out, pos = [], 0
    for hunk in re.split(r"^(?=@@ )", diff.split("\n", 2)[2], flags=re.M):
        if not hunk.startswith("@@"):
            continue
        header, _, body = hunk.partition("\n")
        start = int(re.match(r"@@ -(\d+)", header).group(1))
        count = re.match(r"@@ -\d+(?:,(\d+))?", header).group(1)
        start = start - 1 if count != "0" else start
        out += src[pos:start]
        pos = start
        for line in body.splitlines(True):
            if line.startswith(" ") or line.startswith("-"):
                pos += 1
            if line.startswith(" ") or line.startswith("+"):
                out.append(line[1:])
    out += src[pos:]
    return "".join(out)


@pytest.mark.parametrize("difflib_max_lines", [10_000, 0])   # difflib's matcher / patience diff
def test_big_diffs_are_correct_unified_diffs(monkeypatch, difflib_max_lines):
    monkeypatch.setattr(textdiff, "DIFFLIB_MAX_LINES", difflib_max_lines)
    rnd = random.Random(3)
    a = "".join(f"  %{i} = arith.addf %x, %y : f32\n" if i % 5 else "  }\n" for i in range(400))
    lines = a.splitlines(True)
    for _ in range(30):
        i = rnd.randrange(len(lines))
        lines[i] = lines[i].replace("addf", "mulf") if rnd.random() < 0.7 else ""
    b = "".join(lines)
    diff = textdiff.unified_diff(a, b, "step 0", "step 1")
    assert diff.startswith("--- step 0\n+++ step 1\n@@ ")
    assert _apply_unified(a, diff) == b
    plus = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    assert plus - minus == len(b.splitlines()) - len(a.splitlines())
    # not longer than difflib's (patience aligns on unique lines; here it finds the same edits)
    ref = list(difflib.unified_diff(a.splitlines(True), b.splitlines(True)))
    assert plus + minus <= sum(1 for ln in ref if ln[:1] in "+-" and ln[:3] not in ("+++", "---"))
    assert textdiff.unified_diff(a, a) == ""


def test_side_by_side_keeps_both_texts_and_aligns(monkeypatch):
    a = "x\ny\nz\nw\n"
    b = "x\nY\nz\nnew\nw\n"
    left, right, lm, rm = textdiff.side_by_side(a, b)
    assert len(left.splitlines()) == len(right.splitlines())
    assert [ln for i, ln in enumerate(left.splitlines()) if lm.get(i) != "pad"] == a.splitlines()
    assert [ln for i, ln in enumerate(right.splitlines()) if rm.get(i) != "pad"] == b.splitlines()
    assert lm[1] == "change" and rm[1] == "change" and rm[3] == "add" and lm[3] == "pad"
    # big inputs go to the helper process: same answer
    monkeypatch.setattr(textdiff, "IN_PROCESS_CHARS", 0)
    assert textdiff.side_by_side(a, b) == (left, right, lm, rm)
    assert textdiff.unified_diff(a, b, "a", "b") == textdiff._unified(a, b, "a", "b", 3)


def test_mlir_failure_labels_and_no_repeats():
    error = "bad.mlir:4:3: argument #0 is consumed in the body"
    detail = 'Unable to parse module assembly:\nerror: "bad.mlir":4:3: argument #0 is consumed in the body\n note: x'
    e, d = diagnostics.tidy_mlir_failure("transform module does not parse: " + error, detail, verifier=True)
    assert e == "transform module fails to verify: " + error
    assert d.splitlines() == ["parsed, but the verifier rejected it:", " note: x"]
    e, d = diagnostics.tidy_mlir_failure("transform module does not parse: " + error, detail, verifier=False)
    assert "does not parse" in e and d.splitlines() == [" note: x"]
    # the probe: a parser that reaches the appended line had read the whole text
    text = "a\nb\n"
    assert diagnostics.probe_parsed_whole_text("<input>:4:1: expected op", text) is True
    assert diagnostics.probe_parsed_whole_text("<input>:2:1: expected op", text) is False
    assert diagnostics.probe_parsed_whole_text("<input>:4:1: x", text, "f:2:3: use of undeclared SSA value") is None
    assert diagnostics.source_excerpt("f.mlir:2:3: oops", "one\ntwo three\n") == "2 | two three\n  |   ^"


def test_keymap_file_toml_yaml_and_errors(tmp_path, monkeypatch):
    assert parse_keymap('"app.undo" = "ctrl+u"\n[ir]\nsearch = ["slash", "ctrl+f"]\n', ".toml") == \
        {"app.undo": "ctrl+u", "ir.search": "slash,ctrl+f"}
    assert parse_keymap("app:\n  redo: ctrl+r\n", ".yaml") == {"app.redo": "ctrl+r"}
    with pytest.raises(KeymapError, match="expected a key"):
        parse_keymap("app.undo = 3\n", ".toml")
    with pytest.raises(KeymapError):
        parse_keymap("app.undo = \n", ".toml")
    f = tmp_path / "keymap.toml"
    f.write_text('"app.undo" = "ctrl+u"\n"app.nope" = "x"\n')
    monkeypatch.setenv("LH_WORKBENCH_KEYMAP", str(f))
    keymap, warnings = load_keymap({"app.undo"})
    assert keymap == {"app.undo": "ctrl+u"} and "unknown binding ids app.nope" in warnings[0]
    f.write_text("[[[")
    keymap, warnings = load_keymap({"app.undo"})
    assert keymap == {} and "default keys used" in warnings[0]
    monkeypatch.setenv("LH_WORKBENCH_KEYMAP", str(tmp_path / "none.toml"))
    assert "no such file" in load_keymap({"app.undo"})[1][0]
    monkeypatch.delenv("LH_WORKBENCH_KEYMAP")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert load_keymap({"app.undo"}) == ({}, [])     # no file: defaults, no warning
