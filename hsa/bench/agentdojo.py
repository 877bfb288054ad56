"""AgentDojo's tasks as hsa-bench items: run as ``python -m hsa.bench.agentdojo SUITE...`` by
:func:`hsa.bench.suites.agentdojo_items`, which sets ``PYTHONHASHSEED=0``; this process freezes the clock
(time-machine) while the ground truth runs, and writes one JSON line per user task on standard output.

Per user task: AgentDojo's default system message, the task's prompt, then each ground-truth call as its own
assistant turn followed by the real tool result (AgentDojo's ``FunctionsRuntime`` in the suite's default
environment, formatted by AgentDojo's ``tool_result_to_str``), then the task's ground-truth output. The tools are
the JSON schemas AgentDojo sends to function-calling models (``parameters.model_json_schema()``).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

from hsa.bench.suites import AGENTDOJO_SUITES, AGENTDOJO_VERSION, SuiteError, install_hint, package_dir

__all__ = ["FROZEN_AT", "load_agentdojo", "task_lines", "main"]

#: The instant the clock shows while the ground truth runs, in UTC (AgentDojo's workspace calendar says "today" is
#: 2024-05-15).
FROZEN_AT = (2024, 5, 15, 12, 0, 0)


def load_agentdojo():
    """``(get_suites, tool_result_to_str, FunctionsRuntime)`` of the installed agentdojo.

    The package's ``agent_pipeline/__init__`` imports every LLM client it supports (anthropic, cohere,
    google-genai, openai, langchain: 41 packages, 270 MB) although the suites use none of them. When those are
    not installed, the pipeline package is entered without its ``__init__`` (its submodules load as usual), and
    the one constant the tool executor takes from the Google client module is read from that module's source."""
    try:
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime
        from agentdojo.task_suite.load_suites import get_suites
        return get_suites, tool_result_to_str, FunctionsRuntime
    except ImportError as exc:
        first_error = exc
    root = package_dir("agentdojo", "agentdojo")
    if not (root / "agent_pipeline" / "llms" / "google_llm.py").is_file():
        raise SuiteError(f"agentdojo at {root} is not laid out as the pinned version ({first_error}); "
                         f"{install_hint('agentdojo')}")
    for name in [m for m in sys.modules if m.startswith("agentdojo")]:
        del sys.modules[name]  # the failed import left half-initialised modules
    pipeline = types.ModuleType("agentdojo.agent_pipeline")
    pipeline.__path__ = [str(root / "agent_pipeline")]
    llms = types.ModuleType("agentdojo.agent_pipeline.llms")
    llms.__path__ = [str(root / "agent_pipeline" / "llms")]
    google = types.ModuleType("agentdojo.agent_pipeline.llms.google_llm")
    google.EMPTY_FUNCTION_NAME = _module_constant(root / "agent_pipeline" / "llms" / "google_llm.py",
                                                  "EMPTY_FUNCTION_NAME")
    sys.modules.update({pipeline.__name__: pipeline, llms.__name__: llms, google.__name__: google})
    try:
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime
        from agentdojo.task_suite.load_suites import get_suites
    except ImportError as exc:
        raise SuiteError(f"agentdojo's suites cannot be loaded ({exc}); {install_hint('agentdojo')}, with "
                         "pydantic, email-validator, docstring-parser and deepdiff (pip install 'hsa[bench]')") \
            from None
    return get_suites, tool_result_to_str, FunctionsRuntime


def _module_constant(path: Path, name: str) -> Any:
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise SuiteError(f"{path}: no constant {name}; this agentdojo is not the pinned one "
                     f"({install_hint('agentdojo')})")


def _task_number(task_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in task_id if ch.isdigit())
    return (int(digits) if digits else -1, task_id)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def task_lines(suites: list[str]):
    """One dict per user task of ``suites``: ``category``, ``record``, ``turns``, ``kinds``, ``answers``."""
    import yaml
    import datetime
    from zoneinfo import ZoneInfo

    import time_machine

    get_suites, tool_result_to_str, FunctionsRuntime = load_agentdojo()
    root = package_dir("agentdojo", "agentdojo")
    system = yaml.safe_load((root / "data" / "system_messages.yaml").read_text(encoding="utf-8"))["default"]
    loaded = get_suites(AGENTDOJO_VERSION)
    frozen = datetime.datetime(*FROZEN_AT, tzinfo=ZoneInfo("UTC"))  # the time zone is mocked too
    for name in suites:
        suite = loaded[name]
        tools = [{"type": "function", "function": {"name": f.name, "description": f.description,
                                                   "parameters": f.parameters.model_json_schema()}}
                 for f in suite.tools]
        runtime = FunctionsRuntime(suite.tools)
        for task_id in sorted(suite.user_tasks, key=_task_number):
            task = suite.user_tasks[task_id]
            with time_machine.travel(frozen, tick=False):
                env = task.init_environment(suite.load_and_inject_default_environment({}))
                calls = task.ground_truth(env.model_copy(deep=True))
                messages: list[dict] = [{"role": "system", "content": system},
                                        {"role": "user", "content": task.PROMPT}]
                turns = []
                for n, call in enumerate(calls):
                    cid = f"call_{n}"
                    turns.append(len(messages))
                    messages.append({"role": "assistant", "content": "", "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": call.function,
                                                                      "arguments": _jsonable(dict(call.args))}}]})
                    result, error = runtime.run_function(env, call.function, call.args, raise_on_error=False)
                    text = tool_result_to_str(result) if error is None else error
                    messages.append({"role": "tool", "tool_call_id": cid, "name": call.function, "content": text})
            if not turns:
                continue
            messages.append({"role": "assistant", "content": str(task.GROUND_TRUTH_OUTPUT or "")})
            record = {"id": f"agentdojo.{name}.{task_id}", "messages": messages, "tools": tools,
                      "meta": {"suite": "agentdojo", "category": name}}
            yield {"category": name, "record": record, "turns": turns, "kinds": ["call"] * len(turns),
                   "answers": [None] * len(turns)}


def main(argv: list[str] | None = None) -> int:
    suites = list(sys.argv[1:] if argv is None else argv) or list(AGENTDOJO_SUITES)
    try:
        for line in task_lines(suites):
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    except SuiteError as exc:
        print(f"hsa: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"hsa: error: the AgentDojo suites need {exc.name} (pip install 'hsa[bench]')", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
