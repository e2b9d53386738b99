"""A static check of a student's code cells, run by the grader before a notebook is executed.

The checks of a notebook run in the same Python namespace as the student's answers, so an
answer could make a check pass by changing the checking machinery instead of answering:
rebinding a name the checks use (``isclose = lambda *a, **k: True``, ``AssertionError = ...``),
patching a module (``math.isclose = ...``), reaching the interpreter's internals (``builtins``,
``sys.modules``, ``globals()``, frames, ``exec``), or reading the checks themselves from the
kernel's input history (``In``, ``_ih``). Such a notebook is not run and scores 0.

Plain code passes: arithmetic, functions and classes, NumPy and Matplotlib, any import of an
ordinary module, and an import that binds exactly what the notebook's own cells bind
(``from math import isclose``). Code that does not parse passes too: it fails when it runs.

Example
-------
>>> import nbformat
>>> from nbformat.v4 import new_code_cell, new_notebook
>>> setup = new_code_cell("from math import isclose", metadata={"nbgrader": {"locked": True, "grade_id": "s"}})
>>> test = new_code_cell("assert isclose(f(2), 4)", metadata={"nbgrader": {"locked": True, "grade_id": "t"}})
>>> answer = new_code_cell("def f(x):\\n    return x * x", metadata={"nbgrader": {"solution": True, "grade_id": "a"}})
>>> check(new_notebook(cells=[setup, answer, test])) is None
True
>>> answer.source = "def f(x):\\n    return 0\\n\\nisclose = lambda *a, **k: True"
>>> check(new_notebook(cells=[setup, answer, test]))
'rebinds isclose, which the checks use (cell a, line 4)'
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["check"]

# Modules that reach the interpreter, the kernel, or code execution by other names.
DENIED_MODULES = frozenset(
    {
        "builtins", "__builtin__", "sys", "importlib", "imp", "ctypes", "_ctypes", "cffi", "gc", "inspect",
        "code", "codeop", "runpy", "pickle", "_pickle", "cPickle", "dill", "cloudpickle", "marshal", "copyreg",
        "shelve", "IPython", "ipykernel", "jupyter_client", "zmq", "traitlets", "tornado", "asyncio", "signal",
        "faulthandler", "trace", "tracemalloc", "pdb", "bdb", "dis", "operator", "unittest", "pytest", "_pytest",
        "pydoc", "types", "_thread", "threading", "multiprocessing", "concurrent", "atexit", "weakref",
        "sitecustomize", "site", "_io",
    }
)  # fmt: skip
# Calls and names that run code, reach namespaces, or change attributes by name.
DENIED_NAMES = frozenset(
    {
        "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "setattr", "delattr", "breakpoint",
        "get_ipython", "In", "Out", "_ih", "_oh", "_dh", "_i", "_ii", "_iii",
    }
)  # fmt: skip
# Attributes that lead to frames, code, namespaces, memory, or the modules above.
DENIED_ATTRIBUTES = frozenset(
    {
        "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_lineno", "f_trace", "f_trace_lines",
        "f_trace_opcodes", "f_lasti", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
        "tb_frame", "tb_next", "co_code", "co_consts", "ctypes", "ctypeslib", "stride_tricks", "as_strided",
        "chdir", "fchdir", "modules", "format_map", "vformat", "Formatter", "mro",
    }
    | DENIED_MODULES
)  # fmt: skip
# Methods that change the object they are called on (a check's data, or an ABC's registry).
MUTATORS = frozenset(
    {
        "update", "clear", "pop", "popitem", "setdefault", "append", "extend", "insert", "remove", "register",
        "sort", "reverse", "fill", "put", "resize", "itemset", "setflags", "add", "discard", "difference_update",
        "intersection_update", "symmetric_difference_update", "cache_clear",
    }
)  # fmt: skip
ALLOWED_DUNDERS = frozenset({"__init__", "__name__", "__doc__", "__main__", "__repr__", "__str__", "__post_init__"})
_DUNDER = re.compile(r"__\w+?__")
_HISTORY = re.compile(r"^_i?\d+$")
_BUILTINS = frozenset(dir(builtins))


def _instructor(cell: Any) -> bool:
    """A cell whose code the grader restored from the gradebook (a locked setup or test cell).

    Every other code cell is the student's: answer cells, cells the student added, and cells
    claiming to be locked under an id the gradebook does not know (nbgrader drops such ids).
    """
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("locked") and meta.get("grade_id") and not meta.get("solution"))


def _name(cell: Any, index: int) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"{index + 1}"


def _parse(source: str) -> ast.Module | None:
    """A cell's code as Python (IPython's magics and shell escapes turned into the calls they make)."""
    with contextlib.suppress(Exception):  # IPython missing, or the cell confuses it: parse it as written
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _bound(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Names a statement binds in the namespace it runs in (not inside the functions and classes it defines)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, node
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name.split(".")[0]), node
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id, node
    if isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, node
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name, node
    if isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest, node
    if isinstance(node, ast.NamedExpr):
        yield from _bound(node.target)
        yield from _bound(node.value)
        return
    if isinstance(node, ast.Lambda):
        return
    for child in ast.iter_child_nodes(node):
        yield from _bound(child)


def _loaded(node: ast.AST, local: frozenset[str] = frozenset()) -> set[str]:
    """Names a node reads from the namespace it runs in (not the parameters and locals of what it defines)."""
    if isinstance(node, ast.Name):
        return {node.id} - local if isinstance(node.ctx, ast.Load) else set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        outer: list[ast.AST] = [*getattr(node, "decorator_list", []), *a.defaults, *(d for d in a.kw_defaults if d)]
        body = node.body if isinstance(node.body, list) else [node.body]
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
        inner = local | {p.arg for p in params} | {name for stmt in body for name, _ in _bound(stmt)}
        return set().union(*(_loaded(n, local) for n in outer), *(_loaded(n, frozenset(inner)) for n in body))
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = local | {name for gen in node.generators for name, _ in _bound(gen.target)}
        return set().union(*(_loaded(n, frozenset(inner)) for n in ast.iter_child_nodes(node)))
    return set().union(*(_loaded(n, local) for n in ast.iter_child_nodes(node)))


def _free(tree: ast.Module) -> set[str]:
    """Names a cell reads before binding them itself: those it takes from the namespace."""
    free: set[str] = set()
    bound: set[str] = set()
    for stmt in tree.body:
        own = {name for name, _ in _bound(stmt)}
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            free |= _loaded(stmt) - bound
        else:
            free |= _loaded(stmt) - bound - own
        bound |= own
    return free


def _import_key(node: ast.AST, name: str) -> tuple[str, ...] | None:
    """What an import binds ``name`` to, as (module, attribute), so equal imports compare equal."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (alias.asname or alias.name.split(".")[0]) == name:
                return (alias.name if alias.asname else name,)
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                return (node.module or "", alias.name)
    return None


def _problem(tree: ast.Module, protected: set[str], imports: dict[str, set[tuple[str, ...]]]) -> tuple[str, int] | None:
    """The first way this student cell changes the checking machinery, with its line, or None."""
    # what the checks use other than modules (``np.add`` and ``plt.rcParams[...] = ...`` are fine)
    data = {name for name in protected if not any(len(key) == 1 for key in imports.get(name, set()))}
    for stmt in tree.body:  # names bound in the notebook's namespace
        for name, node in _bound(stmt):
            if name in protected:
                key = _import_key(node, name)
                if key is None or key not in imports.get(name, set()):
                    return f"rebinds {name}, which the checks use", node.lineno  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            hit = sorted(set(node.names) & protected)
            if hit:
                return f"rebinds {hit[0]}, which the checks use", line
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.level:
                return "a relative import", line
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in DENIED_MODULES or set(module.split(".")) & DENIED_ATTRIBUTES:
                    return f"imports {module}", line
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == "*":
                        return f"imports * from {node.module}", line
                    if alias.name in DENIED_ATTRIBUTES | DENIED_NAMES or _DUNDER.fullmatch(alias.name):
                        return f"imports {alias.name} from {node.module}", line
        elif isinstance(node, ast.Name):
            if node.id == "get_ipython":
                return "uses IPython magics, shell commands or get_ipython", line
            if node.id in DENIED_NAMES or _HISTORY.match(node.id):
                return f"uses {node.id}", line
            if node.id == "getattr":
                return "uses getattr", line
            if _DUNDER.fullmatch(node.id) and node.id not in ALLOWED_DUNDERS:
                return f"uses {node.id}", line
        elif isinstance(node, ast.Attribute):
            if node.attr in DENIED_ATTRIBUTES or (_DUNDER.fullmatch(node.attr) and node.attr not in ALLOWED_DUNDERS):
                return f"uses .{node.attr}", line
            if isinstance(node.ctx, (ast.Store, ast.Del)) and not (
                isinstance(node.value, ast.Name) and node.value.id == "self"
            ):
                return f"assigns {ast.unparse(node)} (only attributes of self may be assigned)", line
            if node.attr == "format":
                if not isinstance(node.value, ast.Constant):
                    return "calls .format on a string built at run time", line
                read = {w for w in re.findall(r"\w+", str(node.value.value)) if w in DENIED_ATTRIBUTES and "_" in w}
                if read:
                    return f"a format string reading .{min(read)}", line
            value = node.value
            if isinstance(value, ast.Name) and value.id in data and node.attr in MUTATORS:
                return f"changes {value.id}, which the checks use", line
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in data:
                return f"changes {root.id}, which the checks use", line
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _DUNDER.fullmatch(node.name) and node.name not in ALLOWED_DUNDERS:
                return f"defines {node.name}", line
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            if len(node.args) > 1 or node.keywords:
                return "creates a class with type()", line
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = {w for w in _DUNDER.findall(node.value) if w not in ALLOWED_DUNDERS}
            if named:
                return f"a string naming {min(named)}", line
    return None


def check(nb: Any) -> str | None:
    """Why a notebook's student cells change the checking machinery (one line), or None if they do not.

    Student cells are the answer cells and any code cell the student added; the cells the
    grader restores (locked setup cells and test cells) are the checks. The names the checks
    read from the namespace, where the checks or Python's builtins define them, are protected.
    """
    instructor: list[tuple[str, ast.Module]] = []
    student: list[tuple[str, ast.Module]] = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        tree = _parse(cell.source)
        if tree is not None:
            (instructor if _instructor(cell) else student).append((_name(cell, index), tree))
    free: set[str] = set()
    defined: set[str] = set()
    imports: dict[str, set[tuple[str, ...]]] = {}
    for _, tree in instructor:
        free |= _free(tree)
        for stmt in tree.body:
            for name, node in _bound(stmt):
                defined.add(name)
                key = _import_key(node, name)
                if key is not None:
                    imports.setdefault(name, set()).add(key)
    protected = free & (defined | _BUILTINS)
    for name, tree in student:
        found = _problem(tree, protected, imports)
        if found is not None:
            return f"{found[0]} (cell {name}, line {found[1]})"
    return None
