"""The hook model: entry(payload) -> decision, importers, and how payloads and decisions map.

A hook is Python source bound to a harness event. Three styles share one model:

``function``
    ``entry`` names a function ``f(payload: dict) -> dict`` (the native style).
``script``
    ``entry == "__main__"``: a Claude Code command hook. The script reads the
    payload as JSON on stdin (``tool_name``, ``tool_input``, ``hook_event_name``) and
    answers with its exit code (2 blocks, stderr is fed to the model) or with JSON on
    stdout (``hookSpecificOutput.permissionDecision: "deny"``, ``updatedInput``).
``method``
    ``entry == "Class.method"``: an OpenAI Agents SDK ``RunHooks``/``AgentHooks``
    subclass; ``on_tool_start(context, agent, tool)`` and friends observe the run.

:func:`decision_of` turns the raw outcome of any style into one decision:
``{"decision": "allow" | "deny" | "retry" | "ask", "message"?, "updated_input"?, "context"?}``.

Mapping (docs/design.md invariant 7): :func:`map_payload` carries a payload through one
mapping step (tool names and inputs, skill names, names mentioned in text fields);
:func:`map_output` carries a hook's raw output the same way (text through
:func:`text_map`, a rewritten tool input through the step). The hook's rewritten
source is correct when ``run(new, map_payload(p)) == map_output(run(old, p))``.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from hsa import _json
from hsa.steps import Step
from hsa.names import replace_tokens

__all__ = [
    "EVENTS",
    "CLAUDE_EVENTS",
    "hook_style",
    "infer_entry",
    "entry_of",
    "decision_of",
    "text_map",
    "map_text",
    "map_content",
    "map_payload",
    "map_output",
    "import_claude_code",
    "import_claude_settings",
    "sibling_files",
    "safe_relative_path",
    "import_agents_hooks",
    "RUN_HOOKS_EVENTS",
    "AGENT_HOOKS_EVENTS",
    "generated_payloads",
    "schema_examples",
]

#: Harness events with a meaning in hsa (any other string is allowed and replayed on recorded payloads).
EVENTS = ("user_input", "pre_tool_use", "post_tool_use", "pre_reply", "skill_check", "agent_start", "agent_end",
          "llm_start", "llm_end", "handoff", "session_start", "stop")
#: Claude Code hook events and their hsa names.
CLAUDE_EVENTS = {"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use", "UserPromptSubmit": "user_input",
                 "Stop": "pre_reply", "SubagentStop": "pre_reply", "SessionStart": "session_start",
                 "Notification": "notification", "PreCompact": "pre_compact", "SessionEnd": "session_end"}
_CLAUDE_NAMES = {v: k for k, v in CLAUDE_EVENTS.items() if k not in ("SubagentStop",)}
#: The OpenAI Agents SDK's lifecycle classes (``agents/lifecycle.py``): the methods of each and the hsa events they
#: stand for. ``RunHooks`` observe every agent of a run, ``AgentHooks`` (set as ``agent.hooks``) one agent, so the
#: same moments have other names there (``on_start`` / ``on_end``, ``on_handoff(context, agent, source)``).
RUN_HOOKS_EVENTS = {"on_agent_start": "agent_start", "on_agent_end": "agent_end", "on_handoff": "handoff",
                    "on_tool_start": "pre_tool_use", "on_tool_end": "post_tool_use", "on_llm_start": "llm_start",
                    "on_llm_end": "llm_end"}
AGENT_HOOKS_EVENTS = {"on_start": "agent_start", "on_end": "agent_end", "on_handoff": "handoff",
                      "on_tool_start": "pre_tool_use", "on_tool_end": "post_tool_use", "on_llm_start": "llm_start",
                      "on_llm_end": "llm_end"}
_LIFECYCLE = {"RunHooks": RUN_HOOKS_EVENTS, "RunHooksBase": RUN_HOOKS_EVENTS,
              "AgentHooks": AGENT_HOOKS_EVENTS, "AgentHooksBase": AGENT_HOOKS_EVENTS}
_AGENT_BASES = tuple(_LIFECYCLE)
_AGENT_EVENTS = {**RUN_HOOKS_EVENTS, **AGENT_HOOKS_EVENTS}  # any lifecycle method, whichever class
_TEXT_SKIP_KEYS = frozenset({"tool_name", "tool_input", "hook_event_name", "session_id", "transcript_path", "cwd"})


# ---------------------------------------------------------------------------- entries and styles


def hook_style(hook: dict) -> str:
    """``"function"``, ``"script"`` or ``"method"`` (see the module docstring)."""
    entry = entry_of(hook)
    if entry == "__main__":
        return "script"
    if entry and "." in entry:
        return "method"
    return "function"


def entry_of(hook: dict) -> str | None:
    """The hook's entry: its ``entry`` key, else inferred from the source (None when ambiguous)."""
    entry = hook.get("entry")
    if isinstance(entry, str) and entry:
        return entry
    return infer_entry(hook.get("source", ""))


@lru_cache(maxsize=1024)
def infer_entry(source: str) -> str | None:
    """Guess the entry of hook ``source``: an Agents SDK class method, a stdin script, or its one public function."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        events = _lifecycle_events(node)
        if events:
            methods = [m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and m.name in events]
            if methods:
                return f"{node.name}.{methods[0]}"
    functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and not n.name.startswith("_")]
    if "sys.stdin" in source and (any(isinstance(n, ast.If) for n in tree.body) or not functions):
        return "__main__"
    if len(functions) == 1:
        return functions[0]
    return None


def _lifecycle_events(node: ast.stmt) -> dict[str, str]:
    """The lifecycle methods of ``node`` when it is a class deriving from an Agents SDK hooks class, else {}."""
    if not isinstance(node, ast.ClassDef):
        return {}
    out: dict[str, str] = {}
    for b in node.bases:
        out.update(_LIFECYCLE.get(_base_name(b), {}))
    return out


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


# ---------------------------------------------------------------------------- decisions


def decision_of(hook: dict, outcome: dict) -> dict:
    """One decision from the raw outcome of a sandbox run (see :mod:`hsa.sandbox`) of ``hook``.

    An outcome that is an error (the hook raised) gives ``{"decision": "error", "error": type}``.
    """
    if not outcome.get("ok"):
        return {"decision": "error", "error": outcome.get("error", "error")}
    value = outcome.get("value")
    style = hook_style(hook)
    if style == "script":
        return _script_decision(value, hook.get("event", "pre_tool_use"))
    if style == "method":
        out = {"decision": "allow"}
        if isinstance(value, dict) and value.get("context") is not None:
            out["context"] = value["context"]
        return out
    if isinstance(value, dict):
        out = dict(value)
        d = out.get("decision")
        if d in ("block",):
            out["decision"] = "deny"
        elif d in ("approve",):
            out["decision"] = "allow"
        elif d is None:
            out["decision"] = "allow"
        if "updatedInput" in out:
            out["updated_input"] = out.pop("updatedInput")
        return out
    if value is None or value is True:
        return {"decision": "allow"}
    if value is False:
        return {"decision": "deny"}
    if isinstance(value, str):
        return {"decision": "retry", "message": value}
    return {"decision": "allow", "value": value}


def _script_decision(value: Any, event: str) -> dict:
    if not isinstance(value, dict):
        return {"decision": "error", "error": "script outcome is not an object"}
    code = value.get("exit_code", 0)
    stdout, stderr = value.get("stdout", ""), value.get("stderr", "")
    blocking = "deny" if event in ("pre_tool_use", "user_input") else "retry"
    if code == 2:
        return {"decision": blocking, "message": stderr.strip()}
    if code != 0:
        return {"decision": "allow", "error": f"exit code {code}", "message": stderr.strip()}
    if isinstance(stdout, dict):
        out: dict[str, Any] = {"decision": "allow"}
        spec = stdout.get("hookSpecificOutput") if isinstance(stdout.get("hookSpecificOutput"), dict) else {}
        pd = spec.get("permissionDecision")
        if pd in ("allow", "deny", "ask"):
            out["decision"] = pd
        if stdout.get("decision") == "block":
            out["decision"] = blocking
        if stdout.get("continue") is False:
            out["decision"] = "deny"
        for key in ("permissionDecisionReason", "reason", "stopReason"):
            text = spec.get(key) if key in spec else stdout.get(key)
            if isinstance(text, str) and text:
                out["message"] = text
                break
        if isinstance(spec.get("updatedInput"), dict):
            out["updated_input"] = spec["updatedInput"]
        if isinstance(spec.get("additionalContext"), str):
            out["context"] = spec["additionalContext"]
        if isinstance(stdout.get("systemMessage"), str):
            out["system_message"] = stdout["systemMessage"]
        return out
    if isinstance(stdout, str) and stdout.strip() and event in ("user_input", "session_start"):
        return {"decision": "allow", "context": stdout.strip()}
    return {"decision": "allow"}


# ---------------------------------------------------------------------------- mapping payloads and outputs


def content_text(content: Any) -> Any:
    """A message's text: the string, or the text parts of a content list joined (None for no text)."""
    if isinstance(content, list):
        texts = [p["text"] if isinstance(p, dict) else p for p in content
                 if (isinstance(p, dict) and isinstance(p.get("text"), str)) or isinstance(p, str)]
        return "".join(texts) if texts else None
    return content


def map_content(content: Any, fn: Callable[[str], str]) -> Any:
    """A message's ``content`` with ``fn`` applied to its text: a string, or each text part of a list of
    parts (``{"type": "text", "text": ...}`` or bare strings; other parts and other values as they are)."""
    if isinstance(content, str):
        return fn(content)
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part = dict(part)
                part["text"] = fn(part["text"])
            elif isinstance(part, str):
                part = fn(part)
            out.append(part)
        return out
    return content


def text_map(step: dict) -> dict[str, str]:
    """Token renames that a step applies to text a hook reads or writes.

    Tool and skill renames apply to every text (as :func:`hsa.renames.map_texts`
    does to the trajectory); a parameter rename applies to identifier-like names of
    top-level parameters only;
    value and opaque steps change no text. (:meth:`hsa.steps.Step.hook_text_map` of the typed step.)
    """
    return Step.from_json(step).hook_text_map()


def map_text(text: str, step: dict) -> str:
    """``text`` with the step's token renames (:func:`text_map`)."""
    table = text_map(step)
    return replace_tokens(text, table) if table else text


def _map_strings(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return replace_tokens(value, table)
    if isinstance(value, list):
        return [_map_strings(v, table) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, table) for k, v in value.items()}
    return value


def map_payload(payload: dict, step: dict, *, table: dict[str, str] | None = None) -> dict:
    """``payload`` carried through one mapping step (a new dict; the input is not changed).

    ``tool_name``/``tool_input`` follow the step like a tool call; for tool and skill
    renames every other top-level string (and list of strings) follows the text
    renames, so a skill list or a reply that names a tool reads as in the variant.
    ``table`` is ``text_map(step)`` when the caller has it already (many payloads, one step).
    """
    out = dict(payload)
    typed = Step.from_json(step)
    if isinstance(out.get("tool_name"), str) and isinstance(out.get("tool_input"), dict):
        call = typed.carry_call({"name": out["tool_name"], "arguments": out["tool_input"]}, True)
        out["tool_name"], out["tool_input"] = call["name"], call["arguments"]
    if typed.renames_names:
        if table is None:
            table = typed.hook_text_map()
        for key, value in list(out.items()):
            if key in _TEXT_SKIP_KEYS:
                continue
            if isinstance(value, str):
                out[key] = replace_tokens(value, table)
            elif isinstance(value, list):
                out[key] = [replace_tokens(v, table) if isinstance(v, str) else v for v in value]
    return out


def map_output(output: Any, step: dict, tool_name: str | None, *, table: dict[str, str] | None = None) -> Any:
    """A hook's raw output carried through one mapping step.

    Strings follow :func:`text_map` (dict keys are structure and stay); a rewritten
    tool input (``updatedInput``/``updated_input``, at any depth) follows the step as
    the arguments of a call of ``tool_name`` (the payload's tool, before the step).
    ``table`` is ``text_map(step)`` when the caller has it already.
    """
    from hsa.codemods.analysis import UPDATED_KEYS  # the decision keys, defined once beside MESSAGE_KEYS

    typed = Step.from_json(step)
    if table is None:
        table = typed.hook_text_map()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return replace_tokens(value, table) if table else value
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in UPDATED_KEYS and isinstance(v, dict) and tool_name is not None:
                    out[k] = typed.carry_call({"name": tool_name, "arguments": v}, True)["arguments"]
                else:
                    out[k] = walk(v)
            return out
        return value

    return walk(output)


# ---------------------------------------------------------------------------- importers


def import_claude_code(source: str, *, name: str, event: str = "PreToolUse", matcher: str | None = None) -> dict:
    """A hook record from the source of a Claude Code command hook written in Python.

    ``event`` is a Claude Code event (``PreToolUse``...) or an hsa event; ``matcher``
    is the settings' tool-name pattern (``"Edit|Write"``), kept on the hook and
    applied by the sandbox before the script runs.
    """
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"hook {name!r}: the script does not parse as Python ({exc.msg}, line {exc.lineno}); "
                         "only Python command hooks can be imported") from None
    hook = {"name": name, "event": CLAUDE_EVENTS.get(event, event), "entry": "__main__", "source": source}
    if matcher not in (None, "", "*"):
        re.compile(matcher)
        hook["matcher"] = matcher
    return hook


def import_claude_settings(settings: dict, read_script: Callable[[str], str], *,
                           read_file: Callable[[str], str | None] | None = None) -> tuple[list[dict], list[str]]:
    """Hooks from a Claude Code ``settings.json`` object; ``read_script(path)`` returns a script's source.

    Each hook carries its sibling files (``files``, relative to the script's folder; ``path`` is the script's
    own name there): the modules it imports from its folder (``import rules``, ``from lib import x``, a
    package's ``__init__.py``), recursively, and the files its string literals name beside it
    (``os.path.join(os.path.dirname(__file__), "rules.json")``). ``read_file(path)`` returns a file's text, or
    None when there is none (default: ``read_script``, a missing file being an ``OSError`` or ``KeyError``).

    Returns the hooks and, for each command that is not a Python script, a line saying why it was skipped.
    """
    hooks: list[dict] = []
    skipped: list[str] = []
    table = settings.get("hooks") or {}
    if not isinstance(table, dict):
        raise ValueError(f"settings 'hooks' must be an object of events (got {type(table).__name__})")
    if read_file is None:
        def read_file(path: str) -> str | None:
            try:
                return read_script(path)
            except (OSError, KeyError, UnicodeDecodeError):
                return None
    for event, groups in table.items():
        for gi, group in enumerate(groups or ()):
            matcher = group.get("matcher")
            for hi, spec in enumerate(group.get("hooks") or ()):
                command = spec.get("command", "")
                script = _python_script(command) if spec.get("type", "command") == "command" else None
                if script is None:
                    skipped.append(f"{event}[{gi}].hooks[{hi}]: {command!r} is not a Python script")
                    continue
                name = f"{event}:{script.rsplit('/', 1)[-1]}"
                source = read_script(script)
                hook = import_claude_code(source, name=name, event=event, matcher=matcher)
                folder, _, base = script.rpartition("/")
                files = sibling_files(source, folder, read_file)
                if files:
                    hook["path"] = base
                    hook["files"] = files
                hooks.append(hook)
    return hooks, skipped


def safe_relative_path(path: Any) -> bool:
    """True for a relative POSIX path inside its folder: no absolute path, no ``..``, no backslash or NUL."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return False
    parts = path.split("/")
    return all(p not in ("", ".", "..") for p in parts)


#: File types a hook may read beside it (named by a string literal of its source).
_DATA_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".md", ".csv")


def sibling_files(source: str, folder: str, read_file: Callable[[str], str | None], *,
                  limit: int = 64) -> dict[str, str]:
    """The files beside a hook script (in ``folder``) that it imports or names: relative path -> text.

    Imports are followed into the modules found (``import rules`` -> ``rules.py`` or ``rules/__init__.py``;
    ``from engine.match import x`` -> ``engine/match.py`` and the package files on the way); a string literal
    that is a relative file name with a known suffix (``"rules.json"``, ``"config/deny.yaml"``) is read when
    it exists. At most ``limit`` files; standard-library and installed modules are not files of the folder.
    """
    prefix = f"{folder}/" if folder else ""
    out: dict[str, str] = {}
    todo = [("", source)]
    while todo and len(out) < limit:
        rel_dir, text = todo.pop()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        wanted: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
            elif isinstance(node, ast.ImportFrom) and node.level:  # from . import x / from .x import y
                base = rel_dir.rstrip("/").split("/") if rel_dir else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                pkg = ".".join(base + ([node.module] if node.module else []))
                mods = [m for m in [pkg] + [f"{pkg}.{a.name}" if pkg else a.name for a in node.names] if m]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                v = node.value
                if v.endswith(_DATA_SUFFIXES) and len(v) < 200 and "\n" not in v:
                    if safe_relative_path(v):
                        wanted.append(v)
                        if rel_dir:
                            wanted.append(rel_dir + v)
                continue
            else:
                continue
            for mod in mods:
                parts = mod.split(".")
                for i in range(1, len(parts) + 1):
                    stem = "/".join(parts[:i])
                    wanted += [f"{stem}.py", f"{stem}/__init__.py"]
        for rel in wanted:
            if rel in out or len(out) >= limit:
                continue
            text_ = read_file(prefix + rel)
            if text_ is None:
                continue
            out[rel] = text_
            if rel.endswith(".py"):
                todo.append((rel.rpartition("/")[0] + "/" if "/" in rel else "", text_))
    return dict(sorted(out.items()))


def _python_script(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for w in words:
        if w.endswith(".py"):
            return w.replace("$CLAUDE_PROJECT_DIR/", "").replace('"', "")
    return None


def import_agents_hooks(source: str) -> list[dict]:
    """One hook per lifecycle method of every ``RunHooks``/``AgentHooks`` subclass in ``source``.

    The methods are those of the SDK's lifecycle classes (:data:`RUN_HOOKS_EVENTS`, :data:`AGENT_HOOKS_EVENTS`):
    ``AgentHooks.on_start`` / ``on_end`` become ``agent_start`` / ``agent_end`` hooks as ``RunHooks.on_agent_start``
    / ``on_agent_end`` do. Other methods (helpers) stay in the source but are no hooks.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"the hooks module does not parse ({exc.msg}, line {exc.lineno})") from None
    hooks = []
    for node in tree.body:
        events = _lifecycle_events(node)
        for m in node.body if events else ():
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name in events:
                hooks.append({"name": f"{node.name}.{m.name}", "event": events[m.name],
                              "entry": f"{node.name}.{m.name}", "source": source})
    if not hooks:
        raise ValueError("no RunHooks/AgentHooks subclass with on_* methods found; expected e.g. "
                         "'class MyHooks(RunHooks): async def on_tool_start(self, context, agent, tool): ...'")
    return hooks


# ---------------------------------------------------------------------------- payloads


def schema_examples(schema: dict, *, limit: int = 6) -> list[dict]:
    """A few argument objects for a tool schema: all properties, required only, each enum value, empty.

    A fact of the schema (:func:`hsa.schema_facts.schema_fact`, exact: the examples copy its values), worked out
    once per schema; each call gets its own objects."""
    from hsa.schema_facts import schema_fact

    return _json.copy(schema_fact(schema, _schema_examples, limit, exact=True, size=_examples_size))


def _examples_size(examples: list) -> int:
    return 3 * len(repr(examples))


def _schema_examples(schema: dict, limit: int) -> list[dict]:
    out: list[dict] = []

    def sample(s: Any, depth: int = 0) -> Any:
        if not isinstance(s, dict) or depth > 6:
            return "x"
        for key in ("const", "default"):
            if key in s:
                return _json.copy(s[key])
        if isinstance(s.get("enum"), list) and s["enum"]:
            return _json.copy(s["enum"][0])
        if isinstance(s.get("examples"), list) and s["examples"]:
            return _json.copy(s["examples"][0])
        t = s.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), "null")
        if t == "object" or "properties" in s:
            return {k: sample(v, depth + 1) for k, v in (s.get("properties") or {}).items()}
        if t == "array":
            n = max(1, int(s.get("minItems", 1) or 1))
            return [sample(s.get("items"), depth + 1) for _ in range(min(n, 3))]
        if t == "integer":
            return int(s.get("minimum", 1))
        if t == "number":
            return float(s.get("minimum", 1.5))
        if t == "boolean":
            return True
        if t == "null":
            return None
        return "sample"

    full = sample(schema)
    if isinstance(full, dict):
        out.append(full)
        required = schema.get("required") or []
        out.append({k: v for k, v in full.items() if k in required})
        for key, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and isinstance(sub.get("enum"), list):
                for value in sub["enum"][1:3]:
                    variant = dict(full)
                    variant[key] = value
                    out.append(variant)
    out.append({})
    return _unique(out, limit)


def _unique(values: list, limit: int) -> list:
    """The first ``limit`` distinct JSON values of ``values`` (equal up to key order: the same canonical JSON), in
    order."""
    seen: set[str | bytes] = set()
    unique = []
    for v in values:
        key = _json.sorted_key(v)
        if key not in seen:
            seen.add(key)
            unique.append(v)
    return unique[:limit]


def _calls(record: dict) -> Iterable[tuple[str, dict, Any]]:
    results = {}
    for m in record["messages"]:
        if m.get("role") == "tool" and m.get("tool_call_id"):
            results[m["tool_call_id"]] = m.get("content")
    for m in record["messages"]:
        for c in m.get("tool_calls") or ():
            fn = c["function"]
            args = fn.get("arguments")
            if isinstance(args, dict):
                yield fn["name"], args, results.get(c.get("id"))


def generated_payloads(record: dict, hook: dict, *, limit: int = 96) -> list[dict]:
    """Payloads for ``hook`` made from the record: recorded events, trajectory calls and replies, tool schemas, skills.

    Deterministic and in a fixed order; the recorded payloads of the hook come first.
    """
    event = hook.get("event", "")
    style = hook_style(hook)
    out: list[dict] = []
    for ev in record.get("hook_events") or ():
        if ev.get("hook") == hook.get("name") and isinstance(ev.get("payload"), dict):
            out.append(ev["payload"])
    skills = [s["name"] for s in record.get("skills") or ()]
    st = record.get("skill_tool") or {"name": "load_skill", "argument": "skill"}
    tool_events = event in ("pre_tool_use", "post_tool_use") or event not in EVENTS
    if tool_events:
        for name, args, result in _calls(record):
            p = {"tool_name": name, "tool_input": args}
            if event == "post_tool_use":
                p["tool_response"] = result
            out.append(p)
        for tool in record["tools"]:
            examples = schema_examples(tool["parameters"])
            if tool["name"] == st["name"]:
                examples += [{st["argument"]: s} for s in skills]
            for args in examples:
                out.append({"tool_name": tool["name"], "tool_input": args})
    reply_events = event in ("pre_reply", "agent_end", "stop", "skill_check") or event not in EVENTS
    if reply_events:
        loaded: list[str] = []
        for m in record["messages"]:
            for c in m.get("tool_calls") or ():
                fn = c["function"]
                if fn["name"] == st["name"] and isinstance(fn.get("arguments"), dict):
                    value = fn["arguments"].get(st["argument"])
                    if isinstance(value, str):
                        loaded.append(value)
            if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"] \
                    and not m.get("tool_calls"):
                out.append({"reply": m["content"], "loaded_skills": list(loaded)})
        out.append({"reply": "OK.", "loaded_skills": []})
        for s in skills:
            out.append({"reply": "OK.", "loaded_skills": [s]})
            if event == "skill_check":
                out.append({"skill": s, "loaded_skills": [s]})
    if event == "user_input" or event not in EVENTS:
        for m in record["messages"]:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                out.append({"text": m["content"]})
    if style == "script":
        claude = _CLAUDE_NAMES.get(event)
        out = [{**p, "hook_event_name": claude} if claude and "hook_event_name" not in p else p for p in out]
    if style == "method":
        if event == "agent_start":  # the agent starts: nothing more to pass than the context and the agent
            out.append({})
        out = [{"agent_name": "assistant", "context": {}, **({"output": p["reply"]} if "reply" in p else {}), **p}
               for p in out]
    return _unique(out, limit)
