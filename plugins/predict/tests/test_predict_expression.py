"""The expression language: the grammar, errors with positions, the lazy `if`,
and two hypothesis properties:

* the parser accepts exactly the grammar: strings built from the language's
  tokens and from foreign ones (Python syntax, quotes, attribute access...) are
  accepted by the engine if and only if an independent recogniser written here
  from the documented grammar (docs/predict.md) accepts them, and arbitrary text is never accepted
  unless the recogniser accepts it;
* random expression trees, rendered to text, parsed and compiled to vectorised
  NumPy, give the same numbers as a slow scalar reference evaluator (plain
  Python floats and `math`, run by run, with a truly lazy `if`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tollway_predict import expression
from tollway_predict.errors import InputProblem

VARS = {"a": "variable", "b": "variable", "c": "variable"}
ARITY = {
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


def ev(text: str, env: dict[str, Any] | None = None, n: int = 1) -> np.ndarray:
    env = env or {}
    names = {k: "variable" for k in env}
    prog = expression.compile_expression(text, "e", names)
    return prog.evaluate({k: np.asarray(v, dtype=float).reshape(n) for k, v in env.items()}, n)


def problem(text: str, names: dict[str, str] | None = None) -> InputProblem:
    with pytest.raises(InputProblem) as err:
        expression.parse(text, "e", names if names is not None else VARS)
    return err.value


# -- grammar, precedence, functions ---------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("-2 ^ 2", -4.0),
        ("2 ^ 3 ^ 2", 512.0),
        ("2 ^ -1", 0.5),
        ("10 - 4 - 3", 3.0),
        ("12 / 3 / 2", 2.0),
        ("--3", 3.0),
        ("1.5e1 + .5", 15.5),
        ("3 > 2", 1.0),
        ("3 <= 2", 0.0),
        ("2 == 2", 1.0),
        ("2 != 2", 0.0),
        ("1 + 1 >= 2", 1.0),
        ("min(3, 1, 2) + max(4, 5)", 6.0),
        ("abs(-2) + sqrt(9) + floor(1.7) + ceil(1.2)", 8.0),
        ("clamp(15, 0, 10) + clamp(-1, 0, 10)", 10.0),
        ("exp(0) + log(1)", 1.0),
        ("if(1 < 2, 10, 20)", 10.0),
        ("if(0, 10, 20)", 20.0),
    ],
)
def test_values_and_precedence(text: str, want: float) -> None:
    assert ev(text)[0] == want


def test_vectorised_over_runs() -> None:
    out = ev("if(a > 0, a * 2, -a) + b", {"a": [1.0, -3.0, 2.0], "b": [0.5, 0.5, 0.5]}, 3)
    assert out.tolist() == [2.5, 3.5, 4.5]
    assert ev("2", {}, 4).tolist() == [2.0] * 4  # constants broadcast to every run


def test_if_is_lazy_in_meaning() -> None:
    # each run's untaken branch is non-finite (log of 0 or of a negative): no run is affected
    out = ev("if(a > 0, log(a), log(1 - a))", {"a": [-1.0, 0.0, math.e]}, 3)
    assert out.tolist() == [math.log(2.0), 0.0, 1.0]
    nested = ev("if(a > 0, if(a > 1, sqrt(a - 1), 1 / (a - a)), 7)", {"a": [-2.0, 5.0]}, 2)
    assert nested.tolist() == [7.0, 2.0]


def test_if_lazy_exact() -> None:
    out = ev("if(a > 0, log(a), 0)", {"a": [-1.0, 0.0, 1.0]}, 3)
    assert out.tolist() == [0.0, 0.0, 0.0]
    out = ev("if(a > 0, 1, 1 / a)", {"a": [0.0, 2.0]}, 2)
    assert out.tolist() == [math.inf, 1.0]  # the taken branch's inf does count
    assert np.isnan(ev("if(0 / 0, 1, 2)")[0])  # a NaN condition gives NaN


def test_nan_propagates_through_comparisons() -> None:
    assert np.isnan(ev("sqrt(-1) < 1")[0]) and np.isnan(ev("max(1, sqrt(-1))")[0])


@pytest.mark.parametrize(
    ("text", "code", "pos"),
    [
        ("a + zed", "unknown_name", 4),
        ("foo(1)", "unknown_name", 0),
        ("a +", "bad_expression", 3),
        ("(a + b", "bad_expression", 6),
        ("a + b)", "bad_expression", 5),
        ("a $ b", "bad_expression", 2),
        ("a ** b", "bad_expression", 3),
        ("1 < a < 2", "bad_expression", 6),
        ("+a", "bad_expression", 0),
        ("sqrt(1, 2)", "wrong_arity", 0),
        ("1 + clamp(1, 2)", "wrong_arity", 4),
        ("min(1)", "wrong_arity", 0),
        ("if(a, b)", "wrong_arity", 0),
        ("sqrt", "bad_expression", 0),
        ("1e", "bad_expression", 1),
        ("1e999", "bad_expression", 0),
        ("1.2.3", "bad_expression", 0),
        ("2x", "bad_expression", 0),
        ("a.real", "bad_expression", 1),
        ("a[0]", "bad_expression", 1),
        ("'a'", "bad_expression", 0),
        ("__import__('os')", "bad_expression", 11),
        ("__import__(os)", "unknown_name", 0),
        ("", "bad_expression", 0),
        ("   ", "bad_expression", 0),
    ],
)
def test_refusals_carry_code_and_position(text: str, code: str, pos: int) -> None:
    err = problem(text)
    assert (err.code, err.position, err.field) == (code, pos, "e")
    assert str(pos) in err.message


def test_later_and_own_outputs_are_refused_with_position() -> None:
    with pytest.raises(InputProblem) as err:
        expression.compile_outputs(["x"], [("o1", "x + 1"), ("o2", "o1 + o3"), ("o3", "1")], "simulation.outputs")
    e = err.value
    assert (e.code, e.position, e.field) == ("later_output", 5, "simulation.outputs[1].expression")
    with pytest.raises(InputProblem) as err:
        expression.compile_outputs(["x"], [("o1", "o1 * 2")])
    assert err.value.code == "later_output"
    progs = expression.compile_outputs(["x"], [("o1", "x + 1"), ("o2", "o1 * 2")])
    assert expression.names_used(progs[1].node) == {"o1"}


def test_too_long_and_too_deep() -> None:
    long = "1" + " + 1" * 250
    assert len(long) > 1000
    err = problem(long)
    assert err.code == "expression_too_long" and err.position == 1000
    assert expression.parse("1" + "+1" * 499, "e", {})  # 999 characters: fine, and no deep recursion
    deep = "(" * 51 + "1" + ")" * 51
    err = problem(deep)
    assert err.code == "expression_too_deep" and err.position == 50
    assert expression.parse("(" * 50 + "1" + ")" * 50, "e", {})
    assert problem("-" * 60 + "1").code == "expression_too_deep"
    assert problem("sqrt(" * 60 + "1" + ")" * 60).code == "expression_too_deep"


# -- property 1: the parser accepts exactly the grammar ---------------------------------------
_TOKEN = re.compile(
    r"[ \t\r\n]*(?:(?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><=|>=|==|!=|[-+*/^(),<>]))"
)


def recognise(text: str, names: dict[str, str]) -> bool:
    """An independent recogniser for the documented grammar (token list + recursion)."""
    if not text.strip() or len(text) > 1000:
        return False
    toks: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        if text[i:].strip(" \t\r\n") == "":
            break
        m = _TOKEN.match(text, i)
        if not m:
            return False
        kind = m.lastgroup or ""
        tok = m.group(kind)
        i = m.end()
        if kind == "num":
            if i < len(text) and (text[i].isascii() and (text[i].isalnum() or text[i] in "_.")):
                return False
            if not math.isfinite(float(tok)):
                return False
        toks.append((kind, tok))
    toks.append(("end", ""))
    pos = [0]

    def peek() -> tuple[str, str]:
        return toks[pos[0]]

    def take(t: str) -> bool:
        if peek() == ("op", t):
            pos[0] += 1
            return True
        return False

    def expr() -> bool:
        if not add():
            return False
        if peek()[0] == "op" and peek()[1] in ("<", "<=", ">", ">=", "==", "!="):
            pos[0] += 1
            if not add():
                return False
            if peek()[0] == "op" and peek()[1] in ("<", "<=", ">", ">=", "==", "!="):
                return False
        return True

    def add() -> bool:
        if not term():
            return False
        while peek() in (("op", "+"), ("op", "-")):
            pos[0] += 1
            if not term():
                return False
        return True

    def term() -> bool:
        if not unary():
            return False
        while peek() in (("op", "*"), ("op", "/")):
            pos[0] += 1
            if not unary():
                return False
        return True

    def unary() -> bool:
        if take("-"):
            return unary()
        if not primary():
            return False
        if take("^"):
            return unary()
        return True

    def primary() -> bool:
        kind, tok = peek()
        if kind == "num":
            pos[0] += 1
            return True
        if take("("):
            return expr() and take(")")
        if kind == "name":
            pos[0] += 1
            if peek() == ("op", "("):
                if tok not in ARITY:
                    return False
                pos[0] += 1
                count = 0
                while True:
                    if not expr():
                        return False
                    count += 1
                    if not take(","):
                        break
                if not take(")"):
                    return False
                lo, hi = ARITY[tok]
                return count >= lo and (hi is None or count <= hi)
            return tok in names and tok not in ARITY
        return False

    return expr() and peek()[0] == "end"


def engine_accepts(text: str) -> bool:
    try:
        expression.parse(text, "e", VARS)
        return True
    except InputProblem:
        return False


PIECES = [
    "a",
    "b",
    "c",
    "zz",
    "1",
    "2.5",
    ".5",
    "3.",
    "1e3",
    "2E-2",
    "1e",
    "e",
    "+",
    "-",
    "*",
    "/",
    "^",
    "(",
    ")",
    ",",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "=",
    "!",
    "**",
    "//",
    "%",
    "min",
    "max",
    "abs",
    "sqrt",
    "exp",
    "log",
    "floor",
    "ceil",
    "clamp",
    "if",
    "lambda",
    "import",
    "__import__",
    "os",
    "[",
    "]",
    ".",
    "'",
    '"',
    ";",
    ":",
    "@",
    "&",
    "|",
    "~",
    "not",
    "and",
    "or",
    "{",
    "}",
    "\\",
    "#",
    "\n",
    "\u00e9",
    "\u0661",
    "\u00a0",
]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=25),
    st.lists(st.sampled_from(["", " "]), min_size=25, max_size=25),
)
def test_parser_accepts_exactly_the_grammar(pieces: list[str], gaps: list[str]) -> None:
    text = "".join(p + g for p, g in zip(pieces, gaps))
    assert engine_accepts(text) == recognise(text, VARS), text


@settings(max_examples=800, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_is_accepted_only_within_the_grammar(text: str) -> None:
    if engine_accepts(text):
        assert recognise(text, VARS), text
        assert set(text) <= set("abc0123456789.eE+-*/^(),<>=! \t\r\nminaxbsqrtplogfuceil_")


# -- property 2: vectorised engine == scalar reference ----------------------------------------
LEAF_VALUES = [0.0, 0.5, 1.0, 2.0, 3.0, 10.0, 0.25, 100.0]
RUN_VALUES = {
    "a": [-3.0, -1.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0],
    "b": [2.0, 0.0, -0.0, -2.5, 1.5, 4.0, -1.0, 0.5],
    "c": [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0],
}

Tree = tuple  # ("num", v) | ("var", name) | ("neg", t) | ("bin", op, l, r) | ("cmp", op, l, r) | ("call", f, args)


def trees() -> st.SearchStrategy[Tree]:
    leaf = st.one_of(
        st.sampled_from(LEAF_VALUES).map(lambda v: ("num", v)),
        st.sampled_from(sorted(RUN_VALUES)).map(lambda v: ("var", v)),
    )

    def extend(inner: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
        return st.one_of(
            inner.map(lambda t: ("neg", t)),
            st.tuples(st.just("bin"), st.sampled_from(["+", "-", "*", "/", "^"]), inner, inner),
            st.tuples(st.just("cmp"), st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), inner, inner),
            st.tuples(
                st.just("call"), st.sampled_from(["abs", "sqrt", "exp", "log", "floor", "ceil"]), st.tuples(inner)
            ),
            st.tuples(
                st.just("call"), st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=4).map(tuple)
            ),
            st.tuples(st.just("call"), st.sampled_from(["clamp", "if"]), st.tuples(inner, inner, inner)),
        )

    return st.recursive(leaf, extend, max_leaves=14)


def render(t: Tree) -> str:
    kind = t[0]
    if kind == "num":
        return repr(t[1])
    if kind == "var":
        return t[1]
    if kind == "neg":
        return f"(-{render(t[1])})"
    if kind in ("bin", "cmp"):
        return f"({render(t[2])} {t[1]} {render(t[3])})"
    return f"{t[1]}({', '.join(render(a) for a in t[2])})"


def _div(x: float, y: float) -> float:
    if y != 0:
        return x / y
    if math.isnan(x) or math.isnan(y) or x == 0:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _odd_integer(y: float) -> bool:
    return math.isfinite(y) and y == math.floor(y) and math.fmod(y, 2.0) != 0


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return -math.inf if x < 0 and _odd_integer(y) else math.inf
    except ValueError:
        if x == 0 and y < 0:
            return math.copysign(math.inf, x) if _odd_integer(y) else math.inf
        return math.nan


def _round(f: Any, x: float) -> float:
    if not math.isfinite(x):
        return x
    r = float(f(x))
    return math.copysign(0.0, x) if r == 0 else r


def _unary(name: str, x: float) -> float:
    if name == "abs":
        return abs(x)
    if name == "sqrt":
        return math.nan if x < 0 else math.sqrt(x) if not math.isnan(x) else x
    if name == "exp":
        try:
            return math.exp(x)
        except OverflowError:
            return math.inf
    if name == "log":
        if math.isnan(x) or x < 0:
            return math.nan
        return -math.inf if x == 0 else math.log(x)
    return _round(math.floor if name == "floor" else math.ceil, x)


def _min(x: float, y: float) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.nan
    return x if x < y else y  # noqa: FURB136 - spelled out: on a tie NumPy keeps the second operand (signed zeros)


def _max(x: float, y: float) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.nan
    return x if x > y else y  # noqa: FURB136 - as above


CMP = {
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
}


def reference(t: Tree, env: dict[str, float]) -> float:
    """The slow scalar evaluator: one run, plain floats, a truly lazy `if`."""
    kind = t[0]
    if kind == "num":
        return float(t[1])
    if kind == "var":
        return env[t[1]]
    if kind == "neg":
        return -reference(t[1], env)
    if kind == "bin":
        x, y = reference(t[2], env), reference(t[3], env)
        return {
            "+": lambda: x + y,
            "-": lambda: x - y,
            "*": lambda: x * y,
            "/": lambda: _div(x, y),
            "^": lambda: _pow(x, y),
        }[t[1]]()
    if kind == "cmp":
        x, y = reference(t[2], env), reference(t[3], env)
        return math.nan if math.isnan(x) or math.isnan(y) else float(CMP[t[1]](x, y))
    name, args = t[1], t[2]
    if name == "if":
        cond = reference(args[0], env)
        if math.isnan(cond):
            return math.nan
        return reference(args[1] if cond != 0 else args[2], env)  # only the chosen branch is evaluated
    vals = [reference(a, env) for a in args]
    if name in ("min", "max"):
        acc = vals[0]
        for v in vals[1:]:
            acc = (_min if name == "min" else _max)(acc, v)
        return acc
    if name == "clamp":
        return _min(_max(vals[0], vals[1]), vals[2])
    return _unary(name, vals[0])


def same(engine: float, ref: float) -> bool:
    if math.isnan(ref) or math.isnan(engine):
        return math.isnan(ref) and math.isnan(engine)
    if math.isinf(ref) or math.isinf(engine):
        return ref == engine
    # NumPy's SIMD exp/log may differ from libm's in the last place
    return abs(engine - ref) <= 1e-9 * max(1.0, abs(ref))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_vectorised_engine_matches_scalar_reference(t: Tree) -> None:
    text = render(t)
    n = len(RUN_VALUES["a"])
    got = ev(text, RUN_VALUES, n)
    for k in range(n):
        want = reference(t, {name: vals[k] for name, vals in RUN_VALUES.items()})
        assert same(float(got[k]), want), (text, k, float(got[k]), want)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees(), st.integers(0, 10_000), st.integers(0, 3), st.sampled_from(PIECES))
def test_near_valid_strings_are_judged_like_the_grammar(t: Tree, where: int, cut: int, piece: str) -> None:
    """Valid expressions with a piece inserted and some characters removed: most of
    these sit right at the grammar's edge; engine and recogniser must agree."""
    text = render(t)
    assert engine_accepts(text) and recognise(text, VARS)
    k = where % (len(text) + 1)
    mutated = text[:k] + piece + text[k + cut :]
    assert engine_accepts(mutated) == recognise(mutated, VARS), mutated


def test_a_square_root_power_of_negative_zero_is_positive_zero() -> None:
    """pow(-0, 0.5) is +0 (NumPy's shortcut for a scalar 0.5 gave -0, so 1 / it gave -inf)."""
    got = ev("(b ^ 0.5) ^ (-1.0)", {"b": [-0.0, 0.0, 4.0]}, 3)
    assert [float(x) for x in got] == [math.inf, math.inf, 0.5]
    minus_infinity = ev("log(b) ^ 0.5", {"b": [0.0, 0.0]}, 2), ev("log(b) ^ (-0.5)", {"b": [0.0, 0.0]}, 2)
    assert [float(x) for x in minus_infinity[0]] == [math.inf, math.inf]  # pow(-inf, 0.5), not NumPy's sqrt: nan
    assert [math.copysign(1.0, float(x)) for x in minus_infinity[1]] == [1.0, 1.0] and float(
        minus_infinity[1][0]
    ) == 0.0
    odd = ev("b ^ 3", {"b": [-0.0, -1e-200]}, 2)
    assert [math.copysign(1.0, float(x)) for x in odd] == [-1.0, -1.0]  # an odd power keeps the sign of zero
