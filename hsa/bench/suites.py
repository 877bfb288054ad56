"""The public suites of hsa-bench, read from their PyPI packages at pinned versions.

* **BFCL** (``bfcl-eval``, Apache-2.0): the single-turn categories that have ground truth (simple in Python, Java and
  JavaScript, multiple, parallel, parallel_multiple, their ``live_`` counterparts) and the two irrelevance
  categories, whose right answer is no call. Questions are read with BFCL's own loader (``load_dataset_entry``), so
  the function documents are the ones BFCL sends to models: with its language hint, and Java and JavaScript
  parameters typed as strings holding code. Each BFCL question becomes one record: the question's messages, the
  function documents as tools, and a gold assistant turn whose calls take the first value BFCL accepts for each
  parameter; BFCL's full ``possible_answer`` (every accepted value, ``""`` for "may be omitted") is kept beside
  the record and scoring accepts any of them, as BFCL's AST checker does.
* **AgentDojo** (``agentdojo``, MIT): each suite's tools (the JSON schemas AgentDojo sends to function-calling
  models) and, per user task, the ground-truth calls executed in the suite's default environment: a trajectory of
  assistant calls and the real tool results, one call per assistant turn as AgentDojo's ground-truth pipeline
  writes it. Every call turn is a prompt.

Both packages are read from the environment as installed (``pip install --no-deps``: docs/benchmark.md says why);
nothing is downloaded at run time.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["SUITES", "SUITE_PACKAGES", "BFCL_CATEGORIES", "AGENTDOJO_SUITES", "AGENTDOJO_VERSION", "LICENCES",
           "BenchItem", "SuiteError", "installed_version", "package_dir", "install_hint", "bfcl_items", "code_types",
           "convert_code",
           "agentdojo_items", "suite_items"]

SUITES = ("bfcl", "agentdojo")

#: The PyPI package of each suite and the version hsa-bench v1 pins.
SUITE_PACKAGES = {"bfcl": ("bfcl-eval", "2026.3.23"), "agentdojo": ("agentdojo", "0.1.35")}

LICENCES = {"bfcl": "Apache-2.0 (bfcl-eval, the Berkeley Function Calling Leaderboard data)",
            "agentdojo": "MIT (agentdojo, the AgentDojo task suites)"}

#: BFCL v4 single-turn categories with ground truth, and the two whose answer is no call.
BFCL_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
                   "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "irrelevance",
                   "live_irrelevance")
_NO_CALL = ("irrelevance", "live_irrelevance")

AGENTDOJO_SUITES = ("banking", "slack", "travel", "workspace")
#: The AgentDojo benchmark version whose tasks are read (the newest the pinned package ships).
AGENTDOJO_VERSION = "v1.2.2"


class SuiteError(RuntimeError):
    """A suite that cannot be read here (not installed, another version, a changed layout); the message says what
    to do."""


@dataclasses.dataclass(frozen=True)
class BenchItem:
    """One benchmark item: an hsa input record and what scoring needs beside it.

    ``turns``: the indices of the record's assistant messages that are prompts; ``kind`` per turn is ``call`` (a
    call is wanted) or ``no_call`` (the right answer calls nothing); ``answers`` per call turn: BFCL's possible
    answers (``[{tool: {param: [accepted values]}}]``) or None (the gold calls alone); ``code``: for BFCL's Java and
    JavaScript items, the language and the raw parameter types its checker converts string arguments with."""

    suite: str
    category: str
    record: dict
    turns: tuple[int, ...]
    kinds: tuple[str, ...]
    answers: tuple[Any, ...]
    code: dict | None = None  # Java / JavaScript: {"language", "types"} (:func:`code_types`)


def installed_version(suite: str) -> str | None:
    """The installed version of a suite's package, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(SUITE_PACKAGES[suite][0])
    except PackageNotFoundError:
        return None


def install_hint(suite: str) -> str:
    pkg, ver = SUITE_PACKAGES[suite]
    return f"pip install --no-deps '{pkg}=={ver}' (or make venv-bench)"


def package_dir(module: str, suite: str) -> Path:
    spec = importlib.util.find_spec(module)  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise SuiteError(f"the {suite} suite needs the {SUITE_PACKAGES[suite][0]} package: {install_hint(suite)}")
    return Path(list(spec.submodule_search_locations)[0])


# --------------------------------------------------------------------------- BFCL


def _read_jsonl(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read it ({exc.strerror}); is the bfcl-eval package complete?") from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _is_options(value: Any) -> bool:
    """A BFCL nested answer: an object whose every value is a list of accepted values."""
    return isinstance(value, dict) and bool(value) and all(isinstance(v, list) for v in value.values())


def _first_value(value: Any) -> Any:
    """An accepted value with its nested answers (objects of option lists, lists of them) resolved to first choices."""
    if _is_options(value):
        return {k: v for k, (given, v) in ((k, _first_choice(o)) for k, o in value.items()) if given}
    if isinstance(value, list) and any(_is_options(x) for x in value):
        return [_first_value(x) for x in value]
    return value


def _first_choice(options: Any) -> tuple[bool, Any]:
    """(given, value): the first value BFCL accepts for a parameter; not given when only omission is listed."""
    if not isinstance(options, list):
        return True, options
    for v in options:
        if v != "" and v is not None:  # "" (and a null) in BFCL's list: the parameter may be left out
            return True, _first_value(v)
    return False, None


def code_types(raw_functions: list[dict]) -> dict[str, dict[str, list]]:
    """Java / JavaScript parameter types of BFCL's raw function documents: ``{function: {param: [type, item
    type]}}`` (what BFCL's checker converts a string argument with)."""
    out = {}
    for f in raw_functions:
        props = (f.get("parameters") or {}).get("properties") or {}
        out[f["name"]] = {k: [v.get("type"), (v.get("items") or {}).get("type")] for k, v in props.items()
                          if isinstance(v, dict)}
    return out


def convert_code(value: Any, types: list, language: str) -> Any:
    """A string argument of a Java / JavaScript function read as BFCL's checker reads it (its type converters);
    anything else, or a type they do not convert, as it is."""
    from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import java_type_converter
    from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import js_type_converter

    if not isinstance(value, str) or not types or types[0] in (None, "any", "String"):
        return value
    convert = java_type_converter if language == "java" else js_type_converter
    try:
        if types[0] in ("Array", "ArrayList", "array") and types[1]:
            return convert(value, types[0], types[1])
        return convert(value, types[0])
    except (ValueError, NotImplementedError, SyntaxError, TypeError, KeyError, IndexError):
        return value


def _java_literal(value: Any, java_type: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if java_type == "long" and isinstance(value, int):
        return f"{value}L"
    if java_type == "float" and isinstance(value, (int, float)):
        return f"{float(value)}f"
    if java_type == "char" and isinstance(value, str):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _code_string(value: Any, types: list, language: str) -> Any:
    """A string that BFCL's converter reads back as ``value`` (the gold argument of a Java / JavaScript function,
    whose parameters BFCL types as strings); ``value`` itself when no form tried reads back."""
    if isinstance(value, str) or not types or value is None:
        return value
    t, item = types[0], types[1]
    forms = [json.dumps(value, ensure_ascii=False)]
    if isinstance(value, bool):
        forms = ["true" if value else "false"]
    elif isinstance(value, (int, float)):
        forms = [str(value), f"{value}L", f"{value}f", repr(float(value)), f"{float(value)}f"]
    elif language == "java" and isinstance(value, list):
        items = ", ".join(_java_literal(x, item) for x in value)
        forms = [f"new ArrayList<>(Arrays.asList({items}))", f"new {item or 'Object'}[]{{{items}}}"]
    elif language == "java" and isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java_literal(v, None)});' for k, v in value.items())
        forms = [f"new HashMap<String, Object>() {{{{ {puts} }}}}"]
    for form in forms:
        if convert_code(form, types, language) == value:
            return form
    return value


def _gold_calls(ground_truth: list[dict], types: dict | None = None, language: str = "python") -> list[dict]:
    calls = []
    for n, entry in enumerate(ground_truth):
        (name, params), = entry.items()
        args = {}
        for key, options in params.items():
            given, value = _first_choice(options)
            if given:
                args[key] = value if types is None else _code_string(value, types.get(name, {}).get(key), language)
        calls.append({"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}})
    return calls


def bfcl_items(categories: tuple[str, ...] | list[str] = BFCL_CATEGORIES) -> Iterator[BenchItem]:
    """The BFCL items of ``categories``, in the package's order."""
    unknown = [c for c in categories if c not in BFCL_CATEGORIES]
    if unknown:
        raise SuiteError(f"unknown BFCL categories {unknown}; expected some of {list(BFCL_CATEGORIES)}")
    data = package_dir("bfcl_eval", "bfcl") / "data"
    try:
        from bfcl_eval.utils import load_dataset_entry
    except ImportError as exc:
        raise SuiteError(f"bfcl_eval's loader cannot be imported ({exc}); {install_hint('bfcl')}, with filelock") \
            from None
    for cat in categories:
        questions = load_dataset_entry(cat)
        answers = {} if cat in _NO_CALL else {a["id"]: a["ground_truth"]
                                               for a in _read_jsonl(data / "possible_answer" / f"BFCL_v4_{cat}.json")}
        language = {"simple_java": "java", "simple_javascript": "javascript"}.get(cat)
        raw = {q["id"]: q["function"] for q in _read_jsonl(data / f"BFCL_v4_{cat}.json")} if language else {}
        for q in questions:
            turns = q["question"]
            types = code_types(raw[q["id"]]) if language else None
            messages = [m for turn in turns for m in turn]
            if cat in _NO_CALL:
                gold = {"role": "assistant", "content": ""}
                kinds, answer = ("no_call",), (None,)
            else:
                if q["id"] not in answers:
                    raise SuiteError(f"BFCL {cat} question {q['id']} has no possible answer in the package")
                gold = {"role": "assistant", "content": "", "tool_calls": _gold_calls(answers[q["id"]], types,
                                                                                      language or "python")}
                kinds, answer = ("call",), (answers[q["id"]],)
            record = {"id": f"bfcl.{q['id']}", "messages": messages + [gold], "tools": q["function"],
                      "meta": {"suite": "bfcl", "category": cat}}
            yield BenchItem("bfcl", cat, record, (len(messages),), kinds, answer,
                            {"language": language, "types": types} if language else None)


# --------------------------------------------------------------------------- AgentDojo


def agentdojo_items(suites: tuple[str, ...] | list[str] = AGENTDOJO_SUITES) -> Iterator[BenchItem]:
    """The AgentDojo user tasks of ``suites`` (benchmark :data:`AGENTDOJO_VERSION`), in task-number order.

    AgentDojo's tools stamp sent e-mails and saved files with the current time, and some of them build lists from
    Python sets (whose order follows the string hash seed), so its ground truth is run in a child process
    (:mod:`hsa.bench.agentdojo`) with ``PYTHONHASHSEED=0`` and the clock frozen: the same package version gives
    the same trajectories on any machine, any day."""
    import os
    import subprocess

    unknown = [s for s in suites if s not in AGENTDOJO_SUITES]
    if unknown:
        raise SuiteError(f"unknown AgentDojo suites {unknown}; expected some of {list(AGENTDOJO_SUITES)}")
    package_dir("agentdojo", "agentdojo")
    env = {**os.environ, "PYTHONHASHSEED": "0", "TZ": "UTC"}
    proc = subprocess.run([sys.executable, "-m", "hsa.bench.agentdojo", *suites], capture_output=True, env=env,
                          cwd=str(Path(__file__).resolve().parents[2]))
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise SuiteError(err[-1] if err else f"reading the AgentDojo suites failed (exit {proc.returncode})")
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        yield BenchItem("agentdojo", d["category"], d["record"], tuple(d["turns"]), tuple(d["kinds"]),
                        tuple(d["answers"]))


def suite_items(suite: str, parts: list[str] | None = None) -> Iterator[BenchItem]:
    """The items of one suite (``parts``: BFCL categories or AgentDojo suites; None: all)."""
    if suite == "bfcl":
        return bfcl_items(parts or BFCL_CATEGORIES)
    if suite == "agentdojo":
        return agentdojo_items(parts or AGENTDOJO_SUITES)
    raise SuiteError(f"unknown suite {suite!r}; expected one of {list(SUITES)}")


if __name__ == "__main__":  # python -m hsa.bench.suites --pins: the pinned packages, for pip install --no-deps
    if sys.argv[1:] != ["--pins"]:
        print("usage: python -m hsa.bench.suites --pins", file=sys.stderr)
        raise SystemExit(2)
    print(" ".join(f"{pkg}=={ver}" for pkg, ver in SUITE_PACKAGES.values()))
