"""MLIR syntax highlighting without tree-sitter: one regex tokenizer, three consumers.

- `tokens(line)` -> [(start, end, capture)] with tree-sitter-like capture names
  (comment, string, variable, function, label, type, attribute, number, keyword,
  operator); the TUI's IR view styles only the lines on screen, so a 20,000-line
  module costs nothing until it is scrolled.
- `THEME`: capture name -> rich Style.
- `MlirLexer`: a pygments lexer (the REPL prints IR with rich Syntax + this lexer;
  pygments itself ships no MLIR lexer).
"""
from __future__ import annotations

import re

from rich.style import Style

_PATTERNS = [
    ("comment", r"//.*$"),
    ("string", r'"(?:[^"\\]|\\.)*"'),
    ("variable", r"%[\w.$-]+(?:#\d+)?(?::\d+)?"),
    ("function", r'@[\w.$-]+|@"(?:[^"\\]|\\.)*"'),
    ("label", r"\^[\w.$-]+"),
    ("type", r"![\w.$-]+|\b(?:tensor|memref|vector|complex|tuple|index|none|[su]?i\d+|bf16|tf32|f\d+(?:E\w+)?)\b"),
    ("shape", r"(?<=[<x?])\d+(?=x)|(?<=x)(?:[su]?i\d+|bf16|f\d+|index)\b|\?(?=x)"),
    ("attribute", r"#[\w.$-]+"),
    ("keyword", r"\b(?:func\.func|module|return|ins|outs|to|step|iter_args|attributes|dense|dense_resource|loc|"
                r"affine_map|affine_set|array|private|public|nested|unit|true|false|x)\b(?!\.)"),
    ("operator", r"\b[a-z_][\w$]*(?:\.[\w$]+)+\b"),
    ("number", r"\b0x[0-9a-fA-F]+\b|-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b"),
]
_RE = re.compile("|".join(f"(?P<{name}>{pat})" for name, pat in _PATTERNS))

THEME: dict[str, Style] = {
    "comment": Style(color="#7f8c8d", italic=True),
    "string": Style(color="#e6db74"),
    "variable": Style(color="#66d9ef"),
    "function": Style(color="#a6e22e", bold=True),
    "label": Style(color="#fd971f"),
    "type": Style(color="#ae81ff"),
    "shape": Style(color="#ae81ff"),
    "attribute": Style(color="#f92672"),
    "keyword": Style(color="#f92672", bold=True),
    "operator": Style(color="#fd971f", bold=True),
    "number": Style(color="#ae81ff"),
}
DIFF_STYLES = {
    "add": Style(bgcolor="#16361e"),
    "del": Style(bgcolor="#3f1a1a"),
    "hunk": Style(color="#5fafd7", bold=True),
    "file": Style(bold=True),
    "change": Style(bgcolor="#3a3520"),
    "pad": Style(color="#555555"),
}


def tokens(line: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _RE.finditer(line):
        out.append((m.start(), m.end(), m.lastgroup))
    return out


def diff_kind(line: str) -> str | None:
    if line.startswith("+++") or line.startswith("---"):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return None


def _make_lexer():
    from pygments.lexer import RegexLexer
    from pygments import token as T

    mapping = {"comment": T.Comment, "string": T.String, "variable": T.Name.Variable, "function": T.Name.Function,
               "label": T.Name.Label, "type": T.Keyword.Type, "shape": T.Keyword.Type, "attribute": T.Name.Attribute,
               "keyword": T.Keyword, "operator": T.Name.Builtin, "number": T.Number}

    class MlirLexer(RegexLexer):
        name = "MLIR"
        aliases = ["mlir"]
        filenames = ["*.mlir"]
        flags = re.MULTILINE
        tokens = {"root": [(pat, mapping[name]) for name, pat in _PATTERNS] + [
            (r"\s+", T.Whitespace), (r".", T.Text)]}

    return MlirLexer


_LEXER_CLS = None


def mlir_lexer():
    """A pygments lexer instance for MLIR."""
    global _LEXER_CLS
    if _LEXER_CLS is None:
        _LEXER_CLS = _make_lexer()
    return _LEXER_CLS()
