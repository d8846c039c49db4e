"""The simulation's expression language: a hand-written recursive-descent parser
producing a small tree, compiled to vectorised NumPy over all runs at once.
Nothing of the user's text is ever handed to Python's own evaluator.

Grammar (whitespace between tokens is ignored):

    expression := comparison
    comparison := additive [ ("<" | "<=" | ">" | ">=" | "==" | "!=") additive ]   # no chaining
    additive   := term { ("+" | "-") term }
    term       := unary { ("*" | "/") unary }
    unary      := "-" unary | power
    power      := primary [ "^" unary ]                                         # right-associative
    primary    := number | name | name "(" expression { "," expression } ")" | "(" expression ")"
    number     := digits ["." {digit}] [exponent]  |  "." digits [exponent]      exponent := ("e"|"E") ["+"|"-"] digits
    name       := letter_or_underscore { letter | digit | "_" }

So `-2^2` is -4 and `2^3^2` is 512. Names are variable ids, earlier output ids,
or one of the functions min(a, b, ...) (two or more arguments), max(a, b, ...),
abs, sqrt, exp, log (natural), floor, ceil (one argument), clamp(x, lo, hi) and
if(cond, a, b) (three). A comparison is 1 when true and 0 when false; `if`
takes `a` where `cond` is nonzero. NaN propagates through comparisons and an
`if` whose condition is NaN gives NaN. `if` is lazy in meaning: a non-finite
value in the branch not taken never reaches the result, so never discards a
run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InputProblem

MAX_LENGTH = 1000
MAX_DEPTH = 50  # nesting of parentheses, calls, unary minus and powers

# name -> (min arguments, max arguments or None for any)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "min": (2, None),
    "max": (2, None),
    "abs": (1, 1),
    "sqrt": (1, 1),
    "exp": (1, 1),
    "log": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
    "clamp": (3, 3),
    "if": (3, 3),
}
COMPARISONS = ("<=", ">=", "==", "!=", "<", ">")


@dataclasses.dataclass(frozen=True)
class Num:
    value: float


@dataclasses.dataclass(frozen=True)
class Name:
    name: str


@dataclasses.dataclass(frozen=True)
class Neg:
    operand: Node


@dataclasses.dataclass(frozen=True)
class Chain:
    """`first op1 x1 op2 x2 ...`, left to right; op in + - * / (one precedence level)."""

    first: Node
    rest: tuple[tuple[str, Node], ...]


@dataclasses.dataclass(frozen=True)
class Pow:
    base: Node
    exponent: Node


@dataclasses.dataclass(frozen=True)
class Compare:
    op: str
    left: Node
    right: Node


@dataclasses.dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]


Node = Num | Name | Neg | Chain | Pow | Compare | Call


# -- tokens -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Token:
    kind: str  # num, name, op, end
    text: str
    pos: int


def _is_name_start(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _is_name_char(c: str) -> bool:
    return _is_name_start(c) or ("0" <= c <= "9")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def tokenize(text: str, field: str) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif _is_name_start(c):
            j = i + 1
            while j < n and _is_name_char(text[j]):
                j += 1
            out.append(Token("name", text[i:j], i))
            i = j
        elif _is_digit(c) or (c == "." and i + 1 < n and _is_digit(text[i + 1])):
            j = i
            while j < n and _is_digit(text[j]):
                j += 1
            if j < n and text[j] == ".":
                j += 1
                while j < n and _is_digit(text[j]):
                    j += 1
            if j < n and text[j] in "eE":
                k = j + 1
                if k < n and text[k] in "+-":
                    k += 1
                if k < n and _is_digit(text[k]):
                    while k < n and _is_digit(text[k]):
                        k += 1
                    j = k
                else:
                    raise InputProblem("bad_expression", f"malformed number exponent at position {j}", field, j)
            if j < n and (_is_name_char(text[j]) or text[j] == "."):
                raise InputProblem("bad_expression", f"malformed number at position {i}", field, i)
            out.append(Token("num", text[i:j], i))
            i = j
        elif text.startswith(("<=", ">=", "==", "!="), i):
            out.append(Token("op", text[i : i + 2], i))
            i += 2
        elif c in "+-*/^(),<>":
            out.append(Token("op", c, i))
            i += 1
        else:
            raise InputProblem("bad_expression", f"unexpected character {c!r} at position {i}", field, i)
    out.append(Token("end", "", n))
    return out


# -- parser ------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str, field: str, names: Mapping[str, str]) -> None:
        self.field = field
        self.names = names  # name -> "variable" | "output" | "later_output"
        self.tokens = tokenize(text, field)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, code: str, message: str, pos: int) -> InputProblem:
        return InputProblem(code, f"{message} at position {pos}", self.field, pos)

    def expect(self, text: str) -> Token:
        t = self.tok
        if t.kind != "op" or t.text != text:
            found = "the end of the expression" if t.kind == "end" else repr(t.text)
            raise self.fail("bad_expression", f"expected {text!r} but found {found}", t.pos)
        self.i += 1
        return t

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail("expression_too_deep", f"the expression nests more than {MAX_DEPTH} levels", pos)

    def parse(self) -> Node:
        node = self.comparison()
        t = self.tok
        if t.kind != "end":
            raise self.fail("bad_expression", f"unexpected {t.text!r}", t.pos)
        return node

    def comparison(self) -> Node:
        left = self.additive()
        t = self.tok
        if t.kind == "op" and t.text in COMPARISONS:
            self.i += 1
            right = self.additive()
            nxt = self.tok
            if nxt.kind == "op" and nxt.text in COMPARISONS:
                raise self.fail("bad_expression", "comparisons do not chain; use parentheses", nxt.pos)
            return Compare(t.text, left, right)
        return left

    def _chain(self, ops: str, operand: Callable[[], Node]) -> Node:
        first = operand()
        rest: list[tuple[str, Node]] = []
        while self.tok.kind == "op" and self.tok.text in ops and len(self.tok.text) == 1:
            op = self.tok.text
            self.i += 1
            rest.append((op, operand()))
        return Chain(first, tuple(rest)) if rest else first

    def additive(self) -> Node:
        return self._chain("+-", self.term)

    def term(self) -> Node:
        return self._chain("*/", self.unary)

    def unary(self) -> Node:
        t = self.tok
        if t.kind == "op" and t.text == "-":
            self.i += 1
            self.enter(t.pos)
            node = Neg(self.unary())
            self.depth -= 1
            return node
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        t = self.tok
        if t.kind == "op" and t.text == "^":
            self.i += 1
            self.enter(t.pos)
            node = Pow(base, self.unary())
            self.depth -= 1
            return node
        return base

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            value = float(t.text)
            if not np.isfinite(value):
                raise self.fail("bad_expression", f"the number {t.text} is too large", t.pos)
            return Num(value)
        if t.kind == "op" and t.text == "(":
            self.i += 1
            self.enter(t.pos)
            node = self.comparison()
            self.expect(")")
            self.depth -= 1
            return node
        if t.kind == "name":
            self.i += 1
            if self.tok.kind == "op" and self.tok.text == "(":
                return self.call(t)
            if t.text in FUNCTIONS:
                raise self.fail("bad_expression", f"the function {t.text!r} needs arguments in parentheses", t.pos)
            role = self.names.get(t.text)
            if role is None:
                raise self.fail("unknown_name", f"unknown name {t.text!r}", t.pos)
            if role == "later_output":
                raise self.fail(
                    "later_output", f"{t.text!r} is this or a later output; only earlier outputs may be used", t.pos
                )
            return Name(t.text)
        found = "the end of the expression" if t.kind == "end" else repr(t.text)
        raise self.fail("bad_expression", f"expected a number, a name or '(' but found {found}", t.pos)

    def call(self, name: Token) -> Node:
        if name.text not in FUNCTIONS:
            raise self.fail("unknown_name", f"unknown function {name.text!r}", name.pos)
        self.expect("(")
        self.enter(name.pos)
        args = [self.comparison()]
        while self.tok.kind == "op" and self.tok.text == ",":
            self.i += 1
            args.append(self.comparison())
        self.expect(")")
        self.depth -= 1
        lo, hi = FUNCTIONS[name.text]
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = f"{lo}" if lo == hi else f"at least {lo}"
            raise self.fail("wrong_arity", f"{name.text} takes {want} argument(s), got {len(args)}", name.pos)
        return Call(name.text, tuple(args))


def parse(text: str, field: str = "expression", names: Mapping[str, str] | None = None) -> Node:
    """Parses `text`; `names` maps each usable name to "variable" or "output" (and
    names that are this or later outputs to "later_output", for a precise refusal).
    Raises InputProblem with the character position of the error."""
    if not isinstance(text, str) or not text.strip():
        raise InputProblem("bad_expression", "the expression is empty (at position 0)", field, 0)
    if len(text) > MAX_LENGTH:
        raise InputProblem(
            "expression_too_long",
            f"the expression has {len(text)} characters; at most {MAX_LENGTH} are accepted (too long from position {MAX_LENGTH})",
            field,
            MAX_LENGTH,
        )
    return _Parser(text, field, names or {}).parse()


def names_used(node: Node) -> set[str]:
    out: set[str] = set()
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Name):
            out.add(n.name)
        elif isinstance(n, Neg):
            stack.append(n.operand)
        elif isinstance(n, Chain):
            stack.append(n.first)
            stack.extend(x for _, x in n.rest)
        elif isinstance(n, (Pow, Compare)):
            stack.extend((n.left, n.right) if isinstance(n, Compare) else (n.base, n.exponent))
        elif isinstance(n, Call):
            stack.extend(n.args)
    return out


# -- compiler to vectorised NumPy ------------------------------------------------------------
Value = Any  # an ndarray over the runs, or a Python float for constant parts
Compiled = Callable[[Mapping[str, np.ndarray]], Value]

_UNARY: dict[str, Callable[[Any], Any]] = {
    "abs": np.abs,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "floor": np.floor,
    "ceil": np.ceil,
}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def _nan_where(value: Any, *operands: Any) -> Any:
    """`value` (a 0/1 result) as float, NaN wherever an operand is NaN."""
    bad = None
    for x in operands:
        m = np.isnan(x)
        bad = m if bad is None else (bad | m)
    out = np.asarray(value, dtype=np.float64)
    if np.ndim(bad) == 0:
        return float("nan") if bad else (float(out) if np.ndim(out) == 0 else out)
    return np.where(bad, np.nan, out)


def _power(base: Value, exponent: Value) -> Value:
    """x ^ y as IEEE pow: NumPy's square-root shortcut for a scalar 0.5 gives -0 for -0,
    where pow gives +0 (and so 1 / that, -inf instead of inf), and nan for -inf, where pow
    gives +inf; a zero result is negative only for an odd integer exponent."""
    out = np.power(base, exponent)
    integer = np.floor(exponent) == exponent
    odd = integer & (np.mod(exponent, 2) == 1)
    # pow(-inf, y) for a y that is no integer is +inf above zero and +0 below (NumPy's square root gives nan)
    out = np.where(np.isneginf(base) & ~integer & ~np.isnan(exponent), np.where(exponent > 0, np.inf, 0.0), out)
    return np.where((out == 0) & ~odd, 0.0, out)


def _compile(node: Node) -> Compiled:
    if isinstance(node, Num):
        v = node.value
        return lambda env: v
    if isinstance(node, Name):
        key = node.name
        return lambda env: env[key]
    if isinstance(node, Neg):
        f = _compile(node.operand)
        return lambda env: np.negative(f(env))
    if isinstance(node, Chain):
        first = _compile(node.first)
        rest = [(_ARITH[op], _compile(x)) for op, x in node.rest]

        def chain(env: Mapping[str, np.ndarray]) -> Value:
            acc = first(env)
            for fn, g in rest:
                acc = fn(acc, g(env))
            return acc

        return chain
    if isinstance(node, Pow):
        b, e = _compile(node.base), _compile(node.exponent)
        return lambda env: _power(b(env), e(env))
    if isinstance(node, Compare):
        cmp, lf, rf = _COMPARE[node.op], _compile(node.left), _compile(node.right)

        def compare(env: Mapping[str, np.ndarray]) -> Value:
            a, b = lf(env), rf(env)
            return _nan_where(cmp(a, b), a, b)

        return compare
    if isinstance(node, Call):
        args = [_compile(a) for a in node.args]
        fn = node.function
        if fn in _UNARY:
            u, a0 = _UNARY[fn], args[0]
            return lambda env: u(a0(env))
        if fn in ("min", "max"):
            red = np.minimum if fn == "min" else np.maximum

            def minmax(env: Mapping[str, np.ndarray]) -> Value:
                acc = args[0](env)
                for g in args[1:]:
                    acc = red(acc, g(env))  # NaN propagates
                return acc

            return minmax
        if fn == "clamp":
            x, lo, hi = args

            def clamp(env: Mapping[str, np.ndarray]) -> Value:
                return np.minimum(np.maximum(x(env), lo(env)), hi(env))

            return clamp
        if fn == "if":
            c, a, b = args

            def if_(env: Mapping[str, np.ndarray]) -> Value:
                cond = c(env)
                # Both branches are computed over all runs (vectorised), but only the
                # chosen branch's value of each run reaches the result: the other
                # branch's non-finite values are masked away.
                picked = np.where(cond != 0, a(env), b(env))
                return _nan_where(picked, cond)

            return if_
    raise AssertionError(f"unknown node {node!r}")  # pragma: no cover


@dataclasses.dataclass(frozen=True)
class Program:
    """One output's compiled expression."""

    node: Node
    fn: Compiled

    def evaluate(self, env: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = self.fn(env)
        arr = np.asarray(out, dtype=np.float64)
        if arr.shape != (n,):
            arr = np.full(n, float(arr), dtype=np.float64)
        return arr


def compile_expression(text: str, field: str = "expression", names: Mapping[str, str] | None = None) -> Program:
    node = parse(text, field, names)
    return Program(node, _compile(node))


def compile_outputs(
    variables: Sequence[str], outputs: Sequence[tuple[str, str]], field: str = "outputs"
) -> list[Program]:
    """Compiles every output in order: each may use the variables and the outputs
    before it. Raises InputProblem (with position) on the first error."""
    programs: list[Program] = []
    ids = [o for o, _ in outputs]
    for k, (_, text) in enumerate(outputs):
        names: dict[str, str] = {v: "variable" for v in variables}
        names.update({o: "output" for o in ids[:k]})
        names.update({o: "later_output" for o in ids[k:]})
        programs.append(compile_expression(text, f"{field}[{k}].expression", names))
    return programs
