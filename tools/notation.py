r"""One meaning per symbol: the tables of book/notation.md against the maths of every page of the book.

A *symbol* is one Latin or Greek letter (or a calligraphic letter, or a name the book spells with several
letters, $PE$ and $pos$) together with the label it carries:

- a subscript made of positions and counters is an index, not part of the name: $x_i$, $\alpha_{t,i}$,
  $e_{ij}$, $h_{t-1}$, $PE_{(pos, 2i)}$ and $E_{x_i}$ are x, alpha, e, h, PE and E;
- a subscript of digits ($W_1$, $\beta_2$) names a symbol of its own where the tables list it, and is an
  index otherwise ($x_1$ is x); so do primes ($y'$ is listed, $pos'$ is pos) and subscripts of entry letters
  ($T_k$ is listed, $x_k$ and $X_{rj}$ are x and X);
- any other subscript is part of the name: $D_h$, $T_q$, $d_{\text{model}}$, $n_{\text{look}}$, $x_{kv}$;
- a superscript is part of the name when it is a label ($W^Q$, $PE^{\text{learned}}$, $y^{(N)}$); otherwise
  it is an exponent ($\sigma^2$, $K^\top$, $10000^{-2i/D}$) and is read for symbols of its own;
- an accent makes a symbol of its own ($\hat{y}$, $\tilde{h}$, $\overrightarrow{h}$), except a bar (a
  gradient, or a complex conjugate), which is read as the letter under it: $\bar{W}^Q$ is W^Q.

Words and operators are not symbols: `\text{...}`, `\mathrm{...}`, `\operatorname{...}`, `\exp`, `\sum`,
numbers, big-O, $\mathbb{R}$, $\mathbb{E}$, $\mathcal{N}$, $\pi$, and Euler's $e$ (an e with an exponent and
no subscript). A control sequence the reader does not know is recorded, so that a new letter cannot slip by.

The tables of notation.md define symbols for the whole book; the table "Symbols used on one page only"
defines them for one page. The checks (tests/test_notation.py runs them):

(a) a symbol with two meanings: two rows of the main tables, or a page-local row against a main row or
    against another row for its page (`double_meanings`, `local_clashes`);
(b) a symbol that a page's markdown uses and no row lists for it (`unknown_symbols`);
(c) a row without a link to a page of the book that uses its symbol (`bad_links`);
(d) a formula that MyST does not parse as written (`broken_formulas`);
(e) a row that defines a symbol no page uses (`unused_rows`): a main row's symbol on any page, a page-local
    row's on its page.

    python -m tools.notation          # every page; prints the problems, exit status 1 if there are any
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from mdit_py_plugins.amsmath import amsmath_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin

from . import book

ROOT = Path(__file__).resolve().parent.parent
NOTATION = ROOT / "book" / "notation.md"

GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
    "kappa", "lambda", "mu", "nu", "xi", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon", "phi", "varphi",
    "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Upsilon", "Phi", "Psi", "Omega",
    "ell",
}
# commands whose argument is a word, not a letter: the whole thing is no symbol
WORDS = {"text", "mathrm", "operatorname", "textrm", "textit", "texttt", "textbf", "mbox", "mathit", "textsf"}
# letters in another alphabet: a symbol of their own
ALPHABETS = {"mathcal", "mathbf", "boldsymbol", "mathscr", "mathfrak", "mathbb"}
# accents that make a new symbol, and the bars that are read as the letter under them
ACCENTS = {"hat", "tilde", "widehat", "widetilde", "vec", "dot", "ddot", "overrightarrow", "overleftarrow",
           "check", "breve"}
BARS = {"bar", "overline"}
# commands whose arguments are read as they are (fractions, roots, braces over an expression)
WITH_ARGUMENTS = {"frac": 2, "dfrac": 2, "tfrac": 2, "sqrt": 1, "underbrace": 1, "overbrace": 1, "boxed": 1,
                  "xrightarrow": 1, "xleftarrow": 1, "underset": 2, "overset": 2, "stackrel": 2}
# operators, relations, delimiters and spacing: no symbols
OPERATORS = {
    "exp", "log", "ln", "lg", "sin", "cos", "tan", "tanh", "sinh", "cosh", "max", "min", "arg", "argmax", "argmin",
    "sup", "inf", "lim", "det", "dim", "sum", "prod", "int", "Pr", "sqrt", "cdot", "times", "div", "pm", "mp",
    "dots", "ldots", "cdots", "vdots", "ddots", "le", "leq", "ge", "geq", "ne", "neq", "approx", "sim", "simeq",
    "propto", "equiv", "ll", "gg", "in", "notin", "subset", "subseteq", "cup", "cap", "setminus", "emptyset",
    "infty", "partial", "nabla", "top", "mid", "vert", "Vert", "lvert", "rvert", "lVert", "rVert", "langle",
    "rangle", "lceil", "rceil", "lfloor", "rfloor", "left", "right", "big", "Big", "bigg", "Bigg", "bigl",
    "bigr", "Bigl", "Bigr", "quad", "qquad", "to", "mapsto", "rightarrow", "leftarrow", "Rightarrow",
    "Leftarrow", "Longrightarrow", "longrightarrow", "leftrightarrow", "iff", "implies", "circ", "odot",
    "otimes", "oplus", "forall", "exists", "prime", "colon", "displaystyle", "textstyle", "limits", "nolimits",
    "pi", "mod", "bmod", "pmod", "star", "ast", "bullet", "neg", "land", "lor", "cdotp", "hline", "tag", "label",
    "nonumber", "notag", "intercal", "perp", "parallel", "angle", "triangle", "square", "checkmark",
}
# a control sequence of one character: \, \; \! \: \  \\ \{ \} \| \_ \% \$ \#
ONE_CHARACTER = set(",;!: \\{}|_%$#&>")
# names of several letters, read as one symbol (when the letters stand alone, as in $PE_{pos}$)
MULTI_LETTER = {"PE", "pos"}
# letters and calligraphic letters that are constants or operators, not symbols of the book
CONSTANTS = {r"\mathbb{R}", r"\mathbb{E}", r"\mathcal{N}"}
# what a subscript made of positions and counters may contain
INDEX_LETTERS = {"i", "j", "t", "m", "n", "b", "w", "l", r"\ell", "pos", "S", "T", "N"}
# letters that index entries in some formulas and label a symbol in others ($x_k$ but $T_k$; $X_{rj}$)
ENTRY_LETTERS = {"k", "r"}
# a subscript with one of these is an index expression, whatever its letters: t-1, pos+k, t,i, <t, ij'
INDEX_OPERATORS = {"+", "-", ",", "<", ">", r"\le", r"\leq", r"\ge", r"\geq", "'", ".", ":", "="}
INDEX_OTHER = INDEX_OPERATORS | {"(", ")", r"\cdot", r"\dots", r"\ldots", "/", "*", "|", r"\mid"}
# subscripts spelt with plain letters that are one name, not a product of indices
SUBSCRIPT_NAMES = {"pos", "in"}
# the superscripts that name a projection: W^Q, b^O
PROJECTION_LABELS = {"Q", "K", "V", "O"}

_CODE_NAME = re.compile(r"[A-Za-z]+(?:\\_[A-Za-z0-9]+)+")     # max\_len: a name from the code, a word
_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|[A-Za-z]|\d|\s+|.", re.DOTALL)


@dataclass
class Atom:
    """One item of a formula: a letter (kind 'letter', with its name), a group, a word, an operator, a number or
    a punctuation mark, with the subscript and superscript attached to it (as token lists)."""
    kind: str
    name: str = ""
    inner: list = field(default_factory=list)     # a group's atoms; the arguments' atoms of a command
    sub: list | None = None
    sup: list | None = None
    primes: int = 0


@dataclass(frozen=True)
class Symbol:
    """A symbol as a page writes it. `key` names it (letter and label, indices dropped: $x_i$ is `x`, $D_h$ is
    `D_{h}`); `fallbacks` are the keys to try when the tables do not list `key` ($\\beta_1$ is `\\beta_{1}` where the
    tables list it and `\\beta` otherwise; $pos'$ is `pos`); `text` is the TeX it was read from, for messages."""
    key: str
    text: str
    fallbacks: tuple[str, ...] = ()
    letter: str = ""
    entry: bool = False          # the fall-back comes from entry letters ($X_{rj}$, $W_{ir}$), not digits or primes


class Reader:
    """Reads TeX into atoms and symbols; remembers the control sequences it did not know."""

    def __init__(self):
        self.unknown: set[str] = set()

    # ---- tokens to atoms ---------------------------------------------------------------------------------
    def atoms(self, tex: str) -> list[Atom]:
        tex = _CODE_NAME.sub(lambda m: r"\text{" + m.group(0).replace("\\_", "_") + "}", tex)
        tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
        atoms, _ = self._sequence(tokens, 0, stop=None)
        return atoms

    def _group(self, tokens, i):
        """The argument at tokens[i]: a braced group's tokens, or one token (a command with its own arguments)."""
        if i >= len(tokens):
            return [], i
        if tokens[i] == "{":
            depth, j = 0, i
            while j < len(tokens):
                depth += {"{": 1, "}": -1}.get(tokens[j], 0)
                if depth == 0:
                    return tokens[i + 1:j], j + 1
                j += 1
            return tokens[i + 1:], len(tokens)
        if tokens[i].startswith("\\") and tokens[i][1:] in ALPHABETS | ACCENTS | BARS | WORDS:
            arg, j = self._group(tokens, i + 1)
            return [tokens[i], "{", *arg, "}"], j
        return [tokens[i]], i + 1

    def _sequence(self, tokens, i, stop):
        atoms: list[Atom] = []
        while i < len(tokens):
            token = tokens[i]
            if token == stop:
                return atoms, i + 1
            if token in ("_", "^"):
                script, i = self._group(tokens, i + 1)
                target = atoms[-1] if atoms else Atom("punct")
                if not atoms:
                    atoms.append(target)
                if token == "_" and target.sub is None:
                    target.sub = script
                elif token == "^" and target.sup is None:
                    target.sup = script
                else:                                   # a second script of the same kind: read it alone
                    atoms.append(Atom("group", inner=self.atoms_of(script)))
                continue
            if token == "'":
                if atoms:
                    atoms[-1].primes += 1
                i += 1
                continue
            atom, i = self._atom(tokens, i)
            if atom is not None:
                atoms.append(atom)
        return atoms, i

    def atoms_of(self, tokens: list[str]) -> list[Atom]:
        return self._sequence(tokens, 0, stop=None)[0]

    def _atom(self, tokens, i):
        token = tokens[i]
        if token == "{":
            inner, j = self._group(tokens, i)
            return Atom("group", inner=self.atoms_of(inner)), j
        if token.isalpha() and len(token) == 1:
            j = i
            while j < len(tokens) and tokens[j].isalpha() and len(tokens[j]) == 1:
                j += 1
            run = "".join(tokens[i:j])
            if token == "O" and j == i + 1 and j < len(tokens) and tokens[j] == "(":      # O(n^2): big O
                return Atom("op", "O"), j
            if run in MULTI_LETTER:
                return Atom("letter", run), j
            return Atom("letter", token), i + 1
        if token.isdigit():
            return Atom("number", token), i + 1
        if not token.startswith("\\"):
            return Atom("punct", token), i + 1
        return self._command(tokens, i)

    def _command(self, tokens, i):
        """A control sequence and its arguments, as one atom."""
        token = tokens[i]
        command = token[1:].rstrip("*")
        if len(command) == 1 and not command.isalpha():
            if command not in ONE_CHARACTER:
                self.unknown.add(token)
            return Atom("punct", token), i + 1
        if command in GREEK:
            return Atom("letter", token), i + 1
        if command in WORDS:
            arg, j = self._group(tokens, i + 1)
            return Atom("word", "".join(arg)), j
        if command in ALPHABETS:
            arg, j = self._group(tokens, i + 1)
            name = f"\\{command}{{{''.join(arg)}}}"
            return Atom("op" if name in CONSTANTS else "letter", name), j
        if command in ACCENTS | BARS:
            arg, j = self._group(tokens, i + 1)
            inner = self.atoms_of(arg)
            if len(inner) == 1 and inner[0].kind == "letter" and inner[0].sub is None and inner[0].sup is None:
                if command in BARS:
                    return inner[0], j
                return Atom("letter", f"\\{command}{{{inner[0].name}}}"), j
            if len(inner) == 1 and inner[0].kind == "word":
                return inner[0], j
            return Atom("group", inner=inner), j
        if command in ("begin", "end"):
            name, j = self._group(tokens, i + 1)
            if "".join(name) == "array" and j < len(tokens) and tokens[j] == "{":   # column spec
                _, j = self._group(tokens, j)
            return Atom("punct", "&"), j
        if command in WITH_ARGUMENTS:
            j, inner = i + 1, []
            if command == "sqrt" and j < len(tokens) and tokens[j] == "[":
                close = tokens.index("]", j) if "]" in tokens[j:] else j
                inner += self.atoms_of(tokens[j + 1:close])
                j = close + 1
            for _ in range(WITH_ARGUMENTS[command]):
                arg, j = self._group(tokens, j)
                inner.append(Atom("group", inner=self.atoms_of(arg)))
            return Atom("group", inner=inner), j
        if command in ("left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr"):
            return Atom("punct", token), i + 2 if i + 1 < len(tokens) else i + 1
        if command not in OPERATORS:
            self.unknown.add(token)
        return Atom("op", token), i + 1

    # ---- atoms to symbols --------------------------------------------------------------------------------
    def symbols(self, tex: str) -> list[Symbol]:
        """Every symbol of a formula, in order."""
        return self._symbols(self.atoms(tex))

    def _symbols(self, atoms: list[Atom]) -> list[Symbol]:
        found: list[Symbol] = []
        for atom in atoms:
            if atom.kind == "letter":
                symbol, extra = self.symbol_of(atom)
                if symbol is not None:
                    found.append(symbol)
                found += extra
            else:
                found += self._symbols(atom.inner)
                for script in (atom.sub, atom.sup):      # \sum_{j=1}^{T}, \text{head}_m: read as they are
                    if script is not None:
                        found += self._symbols(self.atoms_of(script))
        return found

    def symbol_of(self, atom: Atom) -> tuple[Symbol | None, list[Symbol]]:
        """The symbol a letter atom names, and the symbols its exponent contains."""
        extra: list[Symbol] = []
        name, sub, sup, text = atom.name, "", "", atom.name
        fallback = entry = False
        if atom.sub is not None:
            text += f"_{{{''.join(atom.sub)}}}"
            kind = _subscript_kind(atom.sub)
            if kind != "index":
                sub = f"_{{{_label(atom.sub)}}}"
                fallback = kind == "counter"
                entry = fallback and not _label(atom.sub).isdigit()
        if atom.sup is not None:
            text += f"^{{{''.join(atom.sup)}}}"
            if atom.sup[0] == "(" and atom.sup[-1] == ")":
                sup = "^{(\\cdot)}" if _subscript_kind(atom.sup[1:-1]) == "index" else f"^{{{_label(atom.sup)}}}"
            elif _is_label_superscript(atom.sup):
                sup = f"^{{{_label(atom.sup)}}}"
            else:
                extra = self._symbols(self.atoms_of(atom.sup))
                if name == "e" and atom.sub is None:           # Euler's number
                    return None, extra
        primes = "'" * atom.primes
        text += primes
        fallbacks = []
        if fallback:
            fallbacks.append(name + sup + primes)
        if primes:
            fallbacks += [name + sub + sup, name + sup] if fallback else [name + sub + sup]
        return Symbol(name + sub + sup + primes, text, tuple(dict.fromkeys(fallbacks)), name, entry), extra


def _plain(tokens: list[str]) -> list[str]:
    """A script's tokens without braces, words unwrapped (\\text{model} -> model)."""
    out, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("\\") and token[1:] in WORDS and i + 1 < len(tokens) and tokens[i + 1] == "{":
            depth, j = 0, i + 1
            while j < len(tokens):
                depth += {"{": 1, "}": -1}.get(tokens[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append("".join(tokens[i + 2:j]))
            i = j + 1
            continue
        if token not in ("{", "}") and token not in (r"\,", r"\;", r"\!", r"\ "):
            out.append(token)
        i += 1
    merged = []                      # letters that spell one name: p o s -> pos, i n -> in (D_{in}, not i and n)
    for token in out:
        if merged and token.isalpha() and len(token) == 1 and any(
                word.startswith(merged[-1] + token) for word in SUBSCRIPT_NAMES):
            merged[-1] += token
        else:
            merged.append(token)
    return merged


def _label(tokens: list[str]) -> str:
    return "".join(_plain(tokens))


def _is_index(token: str) -> bool:
    return token in INDEX_LETTERS or token.isdigit()


def _subscript_kind(tokens: list[str]) -> str:
    """'index' for positions and counters ($x_i$, $h_{t-1}$, $PE_{(pos, 2i)}$, $E_{x_i}$, $e_{t,k}$): dropped;
    'counter' for digits or entry indices that are also labels elsewhere ($W_1$, $X_{rj}$, $x_k$): kept, with a
    fall-back to the letter alone; 'label' for everything else ($D_h$, $T_k$, $d_{\\text{model}}$): kept."""
    plain = _plain(tokens)
    if not plain:
        return "label"
    if "_" in tokens or any(t in INDEX_OPERATORS for t in plain):
        return "index"
    if all(t.isdigit() for t in plain):
        return "counter"
    if all(_is_index(t) or t in INDEX_OTHER or t == r"\Delta" for t in plain):
        return "index"
    if all(_is_index(t) or t in ENTRY_LETTERS for t in plain):
        return "counter"
    return "label"


def _is_label_superscript(tokens: list[str]) -> bool:
    """W^Q, PE^{learned}, y^{(N)}, q^{(i)}: a label. sigma^2, K^top, 10000^{-2i/D}, x^2: an exponent."""
    if not tokens:
        return False
    if tokens[0] == "(" and tokens[-1] == ")":
        return True
    plain = _plain(tokens)
    return len(plain) == 1 and (plain[0] in PROJECTION_LABELS or tokens[0][1:] in WORDS)


# ---- markdown to formulas ------------------------------------------------------------------------------------
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_MATH_ROLE = re.compile(r"\{math\}`([^`]*)`")
_DISPLAY = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?!\s)([^$]+?)(?<![\\\s])\$(?!\d)")
_ENVIRONMENT = re.compile(r"\\begin\{(equation|align|gather|multline|eqnarray)\*?\}(.+?)\\end\{\1\*?\}", re.DOTALL)


def formulas(markdown: str) -> list[str]:
    """The TeX of every formula of a piece of MyST markdown: `$...$`, `$$...$$`, {math} blocks and roles and
    amsmath environments, outside code blocks and inline code."""
    prose, blocks = _split_fences(markdown)
    found = list(blocks)
    found += _MATH_ROLE.findall(prose)
    prose = _MATH_ROLE.sub(" ", prose)
    prose = re.sub(r"<!--.*?-->", " ", prose, flags=re.DOTALL)
    prose = _CODE_SPAN.sub(" ", prose)
    for pattern in (_DISPLAY, _ENVIRONMENT):
        found += [m.group(m.re.groups) for m in pattern.finditer(prose)]
        prose = pattern.sub(" ", prose)
    found += _INLINE.findall(prose)
    return found


def _split_fences(markdown: str) -> tuple[str, list[str]]:
    """The prose outside code fences (directive fences' bodies are prose), and the bodies of {math} fences."""
    prose: list[str] = []
    maths: list[str] = []
    stack: list[tuple[str, str]] = []          # (fence, kind): kind is 'code', 'math' or 'directive'
    body: list[str] = []
    for line in markdown.splitlines():
        match = _FENCE.match(line)
        if match and stack and match.group(2)[0] == stack[-1][0][0] and len(match.group(2)) >= len(stack[-1][0]) \
                and not match.group(3):
            _, kind = stack.pop()
            if kind == "math":
                maths.append("\n".join(body))
                body = []
            continue
        if match and (not stack or stack[-1][1] == "directive"):
            info = match.group(3)
            kind = "math" if info.startswith("{math}") else "directive" if info.startswith("{") else "code"
            stack.append((match.group(2), kind))
            continue
        if stack and stack[-1][1] == "code":
            continue
        if stack and re.match(r"^\s*:[\w-]+:", line):       # a directive's option line
            continue
        (body if stack and stack[-1][1] == "math" else prose).append(line)
    maths = [m.strip() for m in maths]
    return "\n".join(prose), maths


_OPTION = re.compile(r"^\s*:[\w-]+:.*$", re.MULTILINE)


def _myst() -> MarkdownIt:
    """markdown-it as the book's MyST reads maths (_config.yml: dollarmath, amsmath, colon_fence)."""
    md = MarkdownIt("commonmark").enable("table")
    md.use(dollarmath_plugin, allow_labels=True, allow_space=True, allow_digits=True, double_inline=False)
    return md.use(amsmath_plugin).use(colon_fence_plugin)


_MD = _myst()


def rendered_formulas(markdown: str) -> list[str]:
    """The formulas of a piece of markdown as MyST's parser finds them, directive bodies included. Where they
    differ from `formulas`, the page does not render the maths its source means."""
    found: list[str] = []

    def walk(tokens):
        for token in tokens:
            if token.type in ("math_inline", "math_block", "math_block_label", "amsmath", "math_inline_double"):
                found.append(token.content)
            elif token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
                body = _OPTION.sub("", token.content)
                if token.info.strip().startswith("{math}"):
                    found.append(body.strip())
                else:
                    # the directive's argument (a dropdown's or an admonition's title) is inline Markdown too
                    walk(_MD.parseInline(token.info.strip().split("}", 1)[1].strip()))
                    walk(_MD.parse(body))
            walk(token.children or [])
    walk(_MD.parse(markdown))
    return found


# ---- the notation page -----------------------------------------------------------------------------------------
LOCAL_SECTION = "Symbols used on one page only"
SHAPES_SECTION = "Shapes"
_LINK = re.compile(r"\[[^\]]*\]\(([^)#\s]+?)(?:\.ipynb|\.md)(?:#[^)]*)?\)")


@dataclass(frozen=True)
class Row:
    """A row of a table of notation.md: the symbols its first cell defines, its meaning, its section, the pages
    its last column links ('introduced in', or 'page' in the page-local table) and its line, for messages.
    `local_page` is set for a row of the page-local table; `shapes_only` for a letter of the Shapes table that
    names a size in shape tuples only (its letter may name a matrix in equations)."""
    section: str
    cell: str
    symbols: tuple[Symbol, ...]
    meaning: str
    pages: tuple[str, ...]
    line: int
    local_page: str | None = None
    shapes_only: bool = False

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(symbol.key for symbol in self.symbols)

    @property
    def where(self) -> str:
        return f"notation.md line {self.line} ({self.section})"


def row_symbols(reader: Reader, cell: str) -> tuple[Symbol, ...]:
    r"""The symbols a table row defines: in each formula of its first cell, the first symbol of each
    comma-separated item, left of any '=' ($x = (x_1, \dots, x_S)$ defines x; $W^Q, W^K$ defines both;
    $\lvert Y\rvert$ defines Y). The row of the bar ($\bar{x}$) states a rule for every letter and defines none.
    A cell without symbols ($\operatorname{PPL}$, BLEU) is named by its text, so that it too is listed once."""
    found: list[Symbol] = []
    for tex in _INLINE.findall(_CODE_SPAN.sub(" ", cell)):
        if tex.lstrip().startswith(tuple(f"\\{bar}" for bar in BARS)):
            continue
        items: list[list[Atom]] = [[]]
        for atom in reader.atoms(tex):
            if atom.kind == "punct" and atom.name == "=":
                break
            if atom.kind == "punct" and atom.name in (",", ";"):
                items.append([])
            else:
                items[-1].append(atom)
        for item in items:
            symbols = reader._symbols(item)
            if symbols:
                found.append(symbols[0])
    if not found and not re.search(r"\\bar|\\overline", cell):
        found.append(Symbol(" ".join(cell.split()), cell, letter=" ".join(cell.split())))
    return tuple({symbol.key: symbol for symbol in found}.values())


def parse_notation(text: str, reader: Reader | None = None) -> list[Row]:
    """Every row of every table of notation.md (read by markdown-it), with the section it belongs to."""
    reader = reader or Reader()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    rows: list[Row] = []
    section, header, cells, line, in_head = "", [], [], 0, False
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content.strip()
        elif token.type == "thead_open":
            in_head, header = True, []
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            cells, line = [], (token.map[0] + 1 if token.map else 0)
        elif token.type == "inline" and tokens[index - 1].type in ("th_open", "td_open"):
            (header if in_head else cells).append(token.content.strip())
        elif token.type == "tr_close" and not in_head and cells and "meaning" in [h.lower() for h in header]:
            # a table without a "meaning" column (the parameter shapes) restates symbols; it defines none
            rows.append(_row(reader, section, [h.lower() for h in header], cells, line))
    return rows


def _row(reader: Reader, section: str, header: list[str], cells: list[str], line: int) -> Row:
    meaning = " ".join(cells[header.index("meaning")].split()) if "meaning" in header else ""
    pages = tuple(_LINK.findall(cells[-1]))
    local = section == LOCAL_SECTION
    return Row(section, cells[0], row_symbols(reader, cells[0]), meaning, pages, line,
               local_page=pages[0] if local and pages else None,
               shapes_only=section == SHAPES_SECTION and "in shape tuples only" in meaning)


# ---- the pages -------------------------------------------------------------------------------------------------
@dataclass
class Page:
    """A page's formulas: {cell index: [TeX, ...]} of its markdown cells, and of its figure captions."""
    name: str
    cells: dict[int, list[str]]
    captions: dict[int, list[str]] = field(default_factory=dict)
    rendered: dict[int, list[str]] = field(default_factory=dict)   # the cells' formulas as MyST parses them


def read_page(path: Path) -> Page:
    """The formulas of a notebook's markdown cells (and, apart, of its captions), or of a markdown page."""
    if path.suffix == ".md":
        text = path.read_text(encoding="utf-8")
        return Page(path.stem, {0: formulas(text)}, rendered={0: rendered_formulas(text)})
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells, captions, rendered = {}, {}, {}
    for index, cell in enumerate(notebook["cells"]):
        source = cell.get("source", "")
        if cell["cell_type"] == "markdown":
            source = "".join(source) if isinstance(source, list) else source
            cells[index], rendered[index] = formulas(source), rendered_formulas(source)
        caption = ((cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}).get("caption")
        if caption:
            captions[index] = formulas(str(caption))
    return Page(path.stem, cells, captions, rendered)


def book_pages(root: Path = ROOT) -> list[Path]:
    """Every page of the book with prose (tools.book.book_pages) but notation.md itself."""
    return [p for p in book.book_pages(root) if p.name != "notation.md"]


# ---- the checks ------------------------------------------------------------------------------------------------
class Table:
    """The tables of notation.md as a lookup: rows by key for the whole book, and each page's own rows."""

    def __init__(self, rows: list[Row]):
        self.rows = rows
        self.main: dict[str, list[Row]] = {}
        self.local: dict[str, dict[str, list[Row]]] = {}
        for row in rows:
            where = self.local.setdefault(row.local_page, {}) if row.local_page else self.main
            for key in row.keys:
                where.setdefault(key, []).append(row)

    def lookup(self, page: str, symbol: Symbol) -> list[Row]:
        """The rows that define a symbol on a page: its own key first, then its fall-backs ($x_1$: x)."""
        for key in (symbol.key, *symbol.fallbacks):
            found = self.main.get(key, []) + self.local.get(page, {}).get(key, [])
            if found:
                return found
        return []

    def same_letter(self, page: str, symbol: Symbol) -> list[tuple[str, Row]]:
        """The keys the tables define (for the whole book and for the page) with the symbol's letter."""
        found = []
        for where in (self.main, self.local.get(page, {})):
            found += [(key, rows[0]) for key, rows in where.items() if rows[0].symbols and any(
                s.key == key and s.letter == symbol.letter for s in rows[0].symbols)]
        return found

    def main_rows(self, symbol: Symbol) -> tuple[str, list[Row]]:
        """The key under which the main tables define a symbol, and their rows for it: $c_1$ or $f'$ is c or f
        where no row lists it; $W_{ir}$ stays itself (its letters are a name, whatever a page may index with them)."""
        for key in (symbol.key, *([] if symbol.entry else symbol.fallbacks)):
            if key in self.main:
                return key, self.main[key]
        return symbol.key, []


@dataclass(frozen=True)
class Clash:
    """A local row that gives a letter of the main tables (or of another local row of its page) another meaning."""
    page: str
    key: str
    local: Row
    other: Row

    def message(self) -> str:
        return (f"{self.local.where}: ${self.key}$ on {self.page} means '{self.local.meaning}', but "
                f"{self.other.where} says '{self.other.meaning}'")


def double_meanings(rows: list[Row]) -> list[str]:
    """(a) Two rows of the main tables that define one symbol with different meanings. A letter of the Shapes
    table marked 'in shape tuples only' is apart: in equations the same letter may name a matrix."""
    problems, first = [], {}
    for row in rows:
        if row.local_page:
            continue
        for key in row.keys:
            other = first.setdefault(("shape" if row.shapes_only else "equation", key), row)
            if other is not row and other.meaning != row.meaning:
                problems.append(f"{row.where}: ${key}$ has two meanings: '{other.meaning}' ({other.where}) and "
                                f"'{row.meaning}'")
    return problems


def local_clashes(rows: list[Row]) -> list[Clash]:
    """(a) Rows of the page-local table that clash: with a row of the main tables (looked up as a page would:
    $c_1$ is c where no row lists c_1), or with another local row of the same page."""
    table, clashes = Table(rows), []
    seen: dict[tuple[str, str], Row] = {}
    for row in rows:
        if not row.local_page:
            continue
        for symbol in row.symbols:
            key, others = table.main_rows(symbol)
            clashes += [Clash(row.local_page, key, row, other) for other in others[:1] if other.meaning != row.meaning]
            other = seen.setdefault((row.local_page, symbol.key), row)
            if other is not row and other.meaning != row.meaning:
                clashes.append(Clash(row.local_page, symbol.key, row, other))
    return clashes


def _short(tex: str, width: int = 80) -> str:
    tex = " ".join(tex.split())
    return tex if len(tex) <= width else tex[:width - 3] + "..."


def unknown_symbols(pages: list[Page], rows: list[Row], reader: Reader) -> list[str]:
    """(b) A symbol a page's markdown uses that neither the main tables nor the page's own rows list (each
    symbol reported once per page, at its first use)."""
    table, problems = Table(rows), []
    for page in pages:
        reported: set[str] = set()
        for index, texs in page.cells.items():
            for tex in texs:
                for symbol in reader.symbols(tex):
                    if symbol.key in reported or table.lookup(page.name, symbol):
                        continue
                    reported.add(symbol.key)
                    near = "; ".join(f"${key}$: {row.meaning[:50]}"
                                     for key, row in table.same_letter(page.name, symbol))
                    problems.append(f"{page.name}, cell {index}: ${symbol.text}$ (the symbol {symbol.key}) is in no "
                                    f"table of notation.md, nor in its rows for {page.name}; in ${_short(tex)}$. "
                                    f"The tables give this letter: {near or 'nothing'}")
    return problems


def bad_links(pages: list[Page], rows: list[Row], reader: Reader) -> list[str]:
    """(c) Every row links a page of the book, and that page uses at least one of the row's symbols (in its
    markdown or its captions): a main row links the page that introduces it, a local row the page it is for."""
    used: dict[str, set[str]] = {}
    for page in pages:
        keys = used.setdefault(page.name, set())
        for texs in (*page.cells.values(), *page.captions.values()):
            for tex in texs:
                for symbol in reader.symbols(tex):
                    keys.update((symbol.key, *symbol.fallbacks))
    problems = []
    for row in rows:
        if not row.pages:
            problems.append(f"{row.where}: the row {row.cell} links no page (its last column)")
        elif row.pages[0] not in used:
            problems.append(f"{row.where}: the row {row.cell} links {row.pages[0]}, which is not a page of the book")
        elif row.symbols and row.symbols[0].text != row.cell and not used[row.pages[0]] & set(row.keys):
            problems.append(f"{row.where}: the row {row.cell} links {row.pages[0]}, whose maths uses none of "
                            f"{', '.join(row.keys)}")
    return problems


def _squeezed(tex: str) -> str:
    return re.sub(r"[\s{}]", "", tex)


def unused_rows(pages: list[Page], rows: list[Row], reader: Reader) -> list[str]:
    """(e) A row that defines a symbol no page uses: every symbol of a main row is used by some page of the book,
    every symbol of a page-local row by its page. A row of bars ($\bar{x}$), which defines no symbol, is used
    when its formulas appear as written (spaces and braces aside) on those pages; a row named by its text (BLEU)
    is not checked."""
    used: dict[str, set[str]] = {}
    written: dict[str, list[str]] = {}
    for page in pages:
        keys, texts = used.setdefault(page.name, set()), written.setdefault(page.name, [])
        for texs in (*page.cells.values(), *page.captions.values()):
            for tex in texs:
                texts.append(_squeezed(tex))
                for symbol in reader.symbols(tex):
                    keys.update((symbol.key, *symbol.fallbacks))
    problems = []
    for row in rows:
        if row.symbols and row.symbols[0].text == row.cell:
            continue
        names = [row.local_page] if row.local_page else list(used)
        where = f"on {row.local_page}" if row.local_page else "on any page"
        if row.symbols:
            keys = set().union(*(used.get(name, set()) for name in names))
            unused = [symbol.text for symbol in row.symbols if symbol.key not in keys]
        else:
            texts = [text for name in names for text in written.get(name, [])]
            unused = [tex for tex in _INLINE.findall(_CODE_SPAN.sub(" ", row.cell))
                      if not any(_squeezed(tex) in text for text in texts)]
        if unused:
            problems.append(f"{row.where}: the row {row.cell} defines {', '.join(f'${t}$' for t in unused)}, "
                            f"which no formula {where} uses: delete it from the row")
    return problems


def broken_formulas(pages: list[Page]) -> list[tuple[str, int, str]]:
    """(d) Cells whose maths MyST does not parse as written: (page, cell, message). A line inside `$...$` that
    starts with '- ' or '1. ' turns into a list item, and the formula is shown as raw TeX."""
    broken = []
    for page in pages:
        for index, texs in page.cells.items():
            written = sorted(" ".join(t.split()) for t in texs)
            parsed = sorted(" ".join(t.split()) for t in page.rendered.get(index, []))
            if written != parsed:
                # counted, so that a formula written twice and read once is caught too
                lost = list((Counter(written) - Counter(parsed)).elements())
                extra = list((Counter(parsed) - Counter(written)).elements())
                what = (f"the formula ${_short(lost[0])}$ as written" if lost else
                        f"${_short(extra[0])}$ as a formula, which the source does not mean")
                broken.append((page.name, index, f"{page.name}, cell {index}: MyST does not read {what}; the page "
                                                 f"shows other maths or raw TeX there"))
    return broken


def check_book(root: Path = ROOT, known_clashes: dict[tuple[str, str], str] | None = None) -> list[str]:
    """Everything at once, for the command line: (a), (b), (c) and unknown TeX commands."""
    reader = Reader()
    rows = parse_notation((root / "book" / "notation.md").read_text(encoding="utf-8"), reader)
    pages = [read_page(path) for path in book_pages(root)]
    known = known_clashes or {}
    problems = double_meanings(rows)
    problems += [c.message() for c in local_clashes(rows) if (c.page, c.key) not in known]
    problems += unknown_symbols(pages, rows, reader) + bad_links(pages, rows, reader)
    problems += unused_rows(pages, rows, reader)
    problems += [message for _, _, message in broken_formulas(pages)]
    return problems + [f"a TeX command this reader does not know: {c}" for c in sorted(reader.unknown)]


def main(argv: list[str] | None = None) -> int:
    problems = check_book()
    print("\n".join(problems) or "no problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
