"""Chat templates: render without transformers, find what a template cannot render, adapt rows to it.

Real chat templates refuse conversations that hsa rows hold: Mistral's wants tool-call ids of 9
letters and digits, Llama 3.x JSON-call templates one call per assistant turn, several templates
no system message after the first (a hook's note) or no two user turns in a row, and some join a
call's arguments to their text as a JSON string (Apertus). What a template
needs is found by rendering small *probe* conversations through it (never by its name): a probe
that fails or loses a part, and renders whole once rewritten, names a rewrite the template needs.
The rewrites (:data:`REWRITES`) are pure functions of the message list that count what they change.

Used by :func:`hsa.chat.to_chat` (the trainers, ``hsa stats``) and ``hsa export --template``. Torch-free:
rendering uses jinja2 in a sandbox with the helpers Hugging Face templates expect
(``raise_exception``, ``tojson``, ``strftime_now``, ``{% generation %}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

__all__ = ["REWRITES", "render", "template_needs", "harness_not_rendered", "probe_harness_not_rendered",
           "probe_refusal", "probe_final_calls_dropped", "probe_text_with_calls_dropped", "texts_beside_calls",
           "probe_reasoning_dropped", "template_losses", "lost_turns", "losses_summary",
           "refusal_cause", "compile_error", "template_error", "adapt",
           "split_parallel_calls", "alnum9_call_ids", "system_as_user", "fold_system", "merge_user_turns",
           "system_in_last_user", "string_arguments", "tool_call_tags", "read_template", "tool_template"]

#: Rewrites for templates that cannot render some conversations, in the order :func:`adapt` applies them.
REWRITES = ("split_parallel_calls", "system_as_user", "fold_system", "merge_user_turns", "system_in_last_user",
            "alnum9_call_ids", "string_arguments", "tool_call_tags")

Adapted = tuple[list[dict], list[bool], int]


# --------------------------------------------------------------------------- rendering


@lru_cache(maxsize=32)
def _compiled(template: str):
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):  # {% generation %}...{% endgeneration %}: the body, as is
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def compile_error(template: str) -> str | None:
    """Why ``template`` is not a Jinja template (``line N: message``), or None when it compiles. Checked before
    any probe, so a template with a syntax error is reported as that, not as a template that refuses rows."""
    import jinja2

    try:
        _compiled(template)
    except jinja2.TemplateSyntaxError as exc:
        lines = template.splitlines()
        line = lines[exc.lineno - 1].strip() if exc.lineno and exc.lineno <= len(lines) else ""
        return f"line {exc.lineno}: {exc.message}" + (f" (in {line[:100]!r})" if line else "")
    return None


def render(template: str, messages: Sequence[dict], tools: Sequence[dict] | None = None, *,
           add_generation_prompt: bool = False, **special: Any) -> str:
    """``template`` rendered for ``messages`` and ``tools`` (OpenAI form), as ``apply_chat_template`` does."""
    return _compiled(template).render(messages=list(messages), tools=list(tools) if tools else None,
                                      add_generation_prompt=add_generation_prompt,
                                      **{"bos_token": "<s>", "eos_token": "</s>", **special})


def tool_template(templates: Any) -> Any:
    """The template to render tool conversations with, from a tokenizer's ``chat_template``: a string as it is;
    of named templates (a ``{name: template}`` dict, or ``tokenizer_config.json``'s list of ``{"name",
    "template"}``), ``tool_use`` where there is one, else ``default``, as ``apply_chat_template`` chooses when it
    is given tools (Hermes 2 Pro and Command-R ship a ``default`` that renders no tools). None when there is
    neither."""
    if isinstance(templates, list):
        templates = {t.get("name"): t.get("template") for t in templates if isinstance(t, dict)}
    if isinstance(templates, dict):
        return templates.get("tool_use") or templates.get("default")
    return templates


def read_template(spec: str) -> str:
    """A chat template from a ``.jinja`` file, or from a tokenizer folder (``chat_template.jinja``, or
    ``additional_chat_templates/tool_use.jinja`` where the folder has one, or the ``chat_template`` of
    ``tokenizer_config.json``); of named templates, the one for tools (:func:`tool_template`)."""
    from pathlib import Path

    p = Path(spec).expanduser()
    if p.is_file():
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".json":
            tpl = tool_template(json.loads(text).get("chat_template"))
            if not isinstance(tpl, str):
                raise ValueError(f"{spec} has no chat_template")
            return tpl
        return text
    if p.is_dir():
        if (p / "additional_chat_templates" / "tool_use.jinja").is_file():
            return (p / "additional_chat_templates" / "tool_use.jinja").read_text(encoding="utf-8")
        if (p / "chat_template.jinja").is_file():
            return (p / "chat_template.jinja").read_text(encoding="utf-8")
        if (p / "tokenizer_config.json").is_file():
            return read_template(str(p / "tokenizer_config.json"))
        raise ValueError(f"{spec} is a folder without chat_template.jinja or tokenizer_config.json")
    raise FileNotFoundError(f"chat template {spec} does not exist; give a .jinja file or a tokenizer folder")


def harness_not_rendered(render_fn: Callable[[list[dict], list[dict] | None], str], messages: Sequence[dict],
                         tools: Sequence[dict] | None) -> str | None:
    """What a chat template leaves out of a conversation with tools and tool calls, or None when it renders both.

    ``render_fn(messages, tools) -> text`` renders with the template being checked. A template that ignores
    ``tools`` (or reads them under another name) or drops ``tool_calls`` gives the same text without them:
    training would then fit calls to names the model never sees (SmolLM2-Instruct's own template is one). The
    trainers, ``hsa export --template`` and ``hsa eval run`` run this check."""
    messages = list(messages)
    full = render_fn(messages, list(tools) if tools else None)

    def same_without(msgs, tls) -> bool:
        try:
            return render_fn(msgs, tls) == full
        except Exception:  # noqa: BLE001  (a template that needs the part to render at all does render it)
            return False

    if tools and same_without(messages, None):
        return ("does not render the 'tools' list (the text is the same without it), so the model would never see "
                "the harness it is trained to call")
    if any(m.get("tool_calls") for m in messages):
        bare = [{k: v for k, v in m.items() if k != "tool_calls"} for m in messages]
        if same_without(bare, list(tools) if tools else None):
            return ("does not render assistant 'tool_calls' (the text is the same without them), so there would be "
                    "no call to learn")
        if same_without([_other_calls(m) for m in messages], list(tools) if tools else None):
            return ("renders that an assistant turn has 'tool_calls' but not which (the text is the same with other "
                    "names and arguments), so there would be no call to learn")
    return None


def _other_calls(message: dict) -> dict:
    """``message`` with each call's name and arguments changed (arguments in the form they had)."""
    if not message.get("tool_calls"):
        return message
    calls = []
    for c in message["tool_calls"]:
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            calls.append(c)
            continue
        args = {"hsa_other_argument": 8093}
        calls.append({**c, "function": {**fn, "name": f"{fn.get('name')}_hsa_other",
                                         "arguments": json.dumps(args) if isinstance(fn.get("arguments"), str)
                                         else args}})
    return {**message, "tool_calls": calls}


# --------------------------------------------------------------------------- rewrites


def split_parallel_calls(messages: list[dict], train: list[bool]) -> Adapted:
    """An assistant turn with N calls answered by N tool messages becomes N (one call, its result) pairs; the
    turn's text stays on the first. A turn with no results after it becomes N one-call turns. Turns whose
    results follow them otherwise are left as they are. Counts the turns split."""
    out_m: list[dict] = []
    out_t: list[bool] = []
    n = 0
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = m.get("tool_calls") or []
        results = messages[i + 1:i + 1 + len(calls)]
        ids = [c.get("id") for c in calls]
        answered = (len(results) == len(calls) and all(r.get("role") == "tool" for r in results)
                    and (all(x is None for x in ids)
                         or sorted(map(str, ids)) == sorted(str(r.get("tool_call_id")) for r in results)))
        if m.get("role") == "assistant" and len(calls) > 1 and answered:
            by_id = {str(r.get("tool_call_id")): r for r in results}
            for k, call in enumerate(calls):
                turn = {**m, "tool_calls": [call]}
                if k:
                    turn["content"] = ""
                out_m += [turn, by_id[str(call["id"])] if call.get("id") is not None else results[k]]
                out_t += [train[i], train[i + 1 + k]]
            i += 1 + len(calls)
            n += 1
            continue
        if m.get("role") == "assistant" and len(calls) > 1 and not (i + 1 < len(messages)
                                                                   and messages[i + 1].get("role") == "tool"):
            # calls with no results after them (xLAM, BFCL answers): one assistant turn per call
            for k, call in enumerate(calls):
                out_m.append({**m, "tool_calls": [call], **({"content": ""} if k else {})})
                out_t.append(train[i])
            i += 1
            n += 1
            continue
        out_m.append(m)
        out_t.append(train[i])
        i += 1
    return out_m, out_t, n


_ALNUM9 = re.compile(r"[A-Za-z0-9]{9}")


def alnum9_call_ids(messages: list[dict], train: list[bool]) -> Adapted:
    """Tool-call ids rewritten to 9 letters and digits (``call00001``), the same in each call and its result.
    Counts the ids rewritten (ids that already have that form are rewritten too, so that none collides)."""
    new: dict[str, str] = {}

    def fresh(old: Any) -> str:
        key = str(old)
        if key not in new:
            new[key] = f"call{len(new) + 1:05d}"[-9:]
        return new[key]

    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [{**c, "id": fresh(c.get("id", f"#missing{id(c)}"))} for c in m["tool_calls"]]}
        elif m.get("role") == "tool":
            m = {**m, "tool_call_id": fresh(m.get("tool_call_id", f"#missing{id(m)}"))}
        out.append(m)
    return out, list(train), len(new)


def system_as_user(messages: list[dict], train: list[bool]) -> Adapted:
    """A system message after the first message sent as a user message. Counts those."""
    out, n = [], 0
    for i, m in enumerate(messages):
        if i and m.get("role") == "system":
            m = {**m, "role": "user"}
            n += 1
        out.append(m)
    return out, list(train), n


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def fold_system(messages: list[dict], train: list[bool]) -> Adapted:
    """A system message after the first message folded into the turn the model reads it with: put before the
    next message when that is a user message, else appended to the previous message when that is a user
    message or a tool result (a hook's note after a result, as Claude Code attaches hook feedback to the
    result), else sent as a user message. Counts the messages folded."""
    msgs, flags, n = list(messages), list(train), 0
    i = 1
    while i < len(msgs):
        m = msgs[i]
        if m.get("role") != "system":
            i += 1
            continue
        n += 1
        nxt = msgs[i + 1] if i + 1 < len(msgs) else None
        prev = msgs[i - 1]
        if nxt is not None and nxt.get("role") == "user":
            msgs[i + 1] = {**nxt, "content": _text(m.get("content")) + "\n\n" + _text(nxt.get("content"))}
            del msgs[i], flags[i]
        elif prev.get("role") in ("user", "tool"):
            msgs[i - 1] = {**prev, "content": _text(prev.get("content")) + "\n\n" + _text(m.get("content"))}
            del msgs[i], flags[i]
        else:
            msgs[i] = {**m, "role": "user"}
            i += 1
    return msgs, flags, n


def merge_user_turns(messages: list[dict], train: list[bool]) -> Adapted:
    """Consecutive user messages joined into one (texts separated by a blank line). Counts the merges."""
    out: list[dict] = []
    flags: list[bool] = []
    n = 0
    for m, t in zip(messages, train):
        if out and m.get("role") == "user" and out[-1].get("role") == "user":
            out[-1] = {**out[-1], "content": _text(out[-1].get("content")) + "\n\n" + _text(m.get("content"))}
            n += 1
            continue
        out.append(m)
        flags.append(t)
    return out, flags, n


def system_in_last_user(messages: list[dict], train: list[bool]) -> Adapted:
    """The first message, a system message, put before the text of the last user message (a blank line between),
    for a template that renders the system message only when the conversation ends with a user turn, as Mistral's
    v0.3 templates do (``loop.last``): a training row ends with an assistant turn, so its system prompt, the
    harness's prompt, would be left out of every row. The last user message is where Mistral's own tokenizer
    (mistral-common) puts the system prompt. Counts the messages moved (0 or 1)."""
    if not messages or messages[0].get("role") != "system":
        return list(messages), list(train), 0
    last = next((i for i in range(len(messages) - 1, 0, -1) if messages[i].get("role") == "user"), None)
    if last is None:
        return list(messages), list(train), 0
    text, user = _text(messages[0].get("content")), messages[last]
    content = user.get("content")
    if isinstance(content, list):
        content = [{"type": "text", "text": text + "\n\n"}, *content]
    else:
        content = text + "\n\n" + _text(content)
    out = list(messages)
    out[last] = {**user, "content": content}
    return out[1:], list(train)[1:], 1


def string_arguments(messages: list[dict], train: list[bool]) -> Adapted:
    """Tool-call arguments written as JSON text (the OpenAI API's form: ``"{\"x\": 1}"``), for a template that
    joins them to its text as a string and fails on an object (``'...' + function.arguments``). Counts the calls
    changed."""
    out, n = [], 0
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict) and "arguments" in fn and not isinstance(fn["arguments"], str):
                    c = {**c, "function": {**fn, "arguments": json.dumps(fn["arguments"], ensure_ascii=False)}}
                    n += 1
                calls.append(c)
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out, list(train), n


def tool_call_tags(messages: list[dict], train: list[bool]) -> Adapted:
    """Each assistant turn's calls written into its text as ``<tool_call>`` tags, one JSON object
    (``{"name", "arguments"}``) per call after the turn's own text, for a template that renders a message's
    content and not its ``tool_calls``, and whose own text tells the model to answer in those tags (SmolLM3).
    Counts the calls written."""
    out, n = [], 0
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            text = _text(m.get("content"))
            parts = [text] if text else []
            for c in m["tool_calls"]:
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict):
                    continue
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                parts.append("<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": args},
                                                           ensure_ascii=False) + "\n</tool_call>")
                n += 1
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            m["content"] = "\n".join(parts)
        out.append(m)
    return out, list(train), n


_REWRITE_FNS: dict[str, Callable[[list[dict], list[bool]], Adapted]] = {
    "split_parallel_calls": split_parallel_calls, "system_as_user": system_as_user, "fold_system": fold_system,
    "merge_user_turns": merge_user_turns, "system_in_last_user": system_in_last_user,
    "alnum9_call_ids": alnum9_call_ids, "string_arguments": string_arguments, "tool_call_tags": tool_call_tags}


def adapt(messages: list[dict], train: list[bool], rewrites: Sequence[str]) -> tuple[list[dict], list[bool],
                                                                                     dict[str, int]]:
    """``messages`` (and their train flags) through ``rewrites`` (in :data:`REWRITES` order); returns the counts
    of what each rewrite changed (only those that changed something)."""
    unknown = [r for r in rewrites if r not in _REWRITE_FNS]
    if unknown:
        raise ValueError(f"unknown chat template rewrite(s) {unknown}; expected some of {list(REWRITES)}")
    counts: dict[str, int] = {}
    for name in REWRITES:
        if name in rewrites:
            messages, train, n = _REWRITE_FNS[name](list(messages), list(train))
            if n:
                counts[name] = n
    return messages, train, counts


# --------------------------------------------------------------------------- probes

#: The probes' tools, written as most real tools are (each parameter described): a template that needs more of a
#: tool than a name, a description and typed, described parameters fails on the rows that lack it, one by one.
_TOOLS = [{"type": "function", "function": {"name": "probe_alpha", "description": "Probe tool one.", "parameters": {
    "type": "object", "properties": {"x": {"type": "integer", "description": "A number."}}, "required": ["x"]}}},
          {"type": "function", "function": {"name": "probe_beta", "description": "Probe tool two.", "parameters": {
              "type": "object", "properties": {"y": {"type": "string", "description": "A word."}},
              "required": ["y"]}}}]


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _probes() -> dict[str, tuple[list[dict], tuple[str, ...]]]:
    """Rewrite -> (probe conversation, texts the rendering must hold). Each probe isolates one problem: its
    other parts are in the form every template takes (9-character ids, alternating turns). What a rendering must
    not hold is in :data:`_UNWANTED`."""
    sys_ = {"role": "system", "content": "You are a probe."}
    return {
        "split_parallel_calls": ([sys_, {"role": "user", "content": "Use both tools."},
                                  {"role": "assistant", "content": "", "tool_calls": [
                                      _call("aaaaaaaa1", "probe_alpha", {"x": 4711}),
                                      _call("bbbbbbbb2", "probe_beta", {"y": "PROBE_ARG_B"})]},
                                  {"role": "tool", "tool_call_id": "aaaaaaaa1", "name": "probe_alpha",
                                   "content": "PROBE_RESULT_A"},
                                  {"role": "tool", "tool_call_id": "bbbbbbbb2", "name": "probe_beta",
                                   "content": "PROBE_RESULT_B"},
                                  {"role": "assistant", "content": "Done."}],
                                 ("4711", "PROBE_ARG_B", "PROBE_RESULT_A", "PROBE_RESULT_B")),
        # a short id with an underscore, as most datasets write them: fails a template that wants exactly 9
        # letters and digits (Mistral v0.3) and one that wants at least 9 and renders the last 9 (Mistral 3)
        "alnum9_call_ids": ([sys_, {"role": "user", "content": "Use a tool."},
                             {"role": "assistant", "content": "", "tool_calls": [
                                 _call("call_1", "probe_alpha", {"x": 4711})]},
                             {"role": "tool", "tool_call_id": "call_1", "name": "probe_alpha",
                              "content": "PROBE_RESULT_A"},
                             {"role": "assistant", "content": "Done."}],
                            ("4711", "PROBE_RESULT_A")),
        # the first system message must stay rendered too: a template that keeps only the last system message it
        # meets (DeepSeek-R1's distills) would otherwise pass while dropping the harness's prompt
        "fold_system": ([sys_, {"role": "user", "content": "First question."},
                         {"role": "assistant", "content": "First answer."},
                         {"role": "system", "content": "PROBE LATE NOTE"},
                         {"role": "user", "content": "Second question."},
                         {"role": "assistant", "content": "Second answer."}],
                        ("You are a probe.", "PROBE LATE NOTE", "Second question.")),
        # a conversation that ends with an assistant turn, as every training row does: a template that renders the
        # system message only beside a last user turn (Mistral v0.3's) drops it
        "system_in_last_user": ([{"role": "system", "content": "PROBE SYSTEM PROMPT"},
                                 {"role": "user", "content": "PROBE QUESTION"},
                                 {"role": "assistant", "content": "Answer."}],
                                ("PROBE SYSTEM PROMPT", "PROBE QUESTION")),
        "merge_user_turns": ([sys_, {"role": "user", "content": "PROBE USER ONE"},
                              {"role": "user", "content": "PROBE USER TWO"},
                              {"role": "assistant", "content": "Answer."}],
                             ("PROBE USER ONE", "PROBE USER TWO")),
        # arguments as an object, as the Hugging Face templates and trl take them
        "string_arguments": (_tool_probe(()), ("4711", "PROBE_RESULT_A")),
        # a call in tool_calls: a template that renders only the content drops it (needed only where the
        # template's own text asks for <tool_call> tags: _ASKS)
        "tool_call_tags": (_tool_probe(()), ("4711", "PROBE_RESULT_A")),
    }


def _tool_probe(rewrites: Sequence[str]) -> list[dict]:
    """A system message, a question, one call, its result and a reply, through ``rewrites``."""
    sys_ = {"role": "system", "content": "You are a probe."}
    messages = [sys_, {"role": "user", "content": "Use a tool."},
                {"role": "assistant", "content": "", "tool_calls": [_call("aaaaaaaa1", "probe_alpha", {"x": 4711})]},
                {"role": "tool", "tool_call_id": "aaaaaaaa1", "name": "probe_alpha", "content": "PROBE_RESULT_A"},
                {"role": "assistant", "content": "Done."}]
    return adapt(messages, [True] * len(messages), rewrites)[0]


def probe_harness_not_rendered(render_fn: Callable[[list[dict], list[dict] | None], str],
                               rewrites: Sequence[str] = ()) -> str | None:
    """:func:`harness_not_rendered` on a probe conversation (a system message, two tools, one call, its result
    and a reply; through ``rewrites`` first), so a template is judged before any row is read. None also when the
    template cannot render the probe at all (:func:`probe_refusal` says why)."""
    try:
        return harness_not_rendered(render_fn, _tool_probe(rewrites), _TOOLS)
    except Exception:  # noqa: BLE001 - the template refuses the probe itself
        return None


def probe_final_calls_dropped(render_fn: Callable[[list[dict], list[dict] | None], str],
                              rewrites: Sequence[str] = ()) -> str | None:
    """What a template loses when a conversation ends with a turn of calls, or None: a template that renders the
    probe's calls before a result, and drops them when the call turn is the last one (it holds a last assistant
    turn as a generation prefill and renders its text alone, as vLLM's Nemotron templates do). None also when
    the probe's calls are not rendered at all (:func:`probe_harness_not_rendered` says so)."""
    probe = _tool_probe(rewrites)
    try:
        if harness_not_rendered(render_fn, probe, _TOOLS) is not None:
            return None
        last = next(i for i, m in enumerate(probe) if m.get("tool_calls"))
        if harness_not_rendered(render_fn, probe[:last + 1], _TOOLS) is None:
            return None
    except Exception:  # noqa: BLE001 - the template refuses the probe itself
        return None
    return ("drops the calls of a conversation's last assistant turn (it renders that turn's text alone, as a "
            "generation prefill), so a row or window that ends with calls would train none")


#: The text of the probe's call turn in :func:`probe_text_with_calls_dropped`.
_TEXT_BESIDE_CALLS = "PROBE TEXT BESIDE THE CALL"


def probe_text_with_calls_dropped(render_fn: Callable[[list[dict], list[dict] | None], str],
                                  rewrites: Sequence[str] = ()) -> str | None:
    """What a template loses of an assistant turn that has text and calls ("Let me check the forecast." and a
    call), or None: many render such a turn's calls alone (Hermes, Llama 3.1/3.2, Mistral 3, gpt-oss, xLAM,
    Command R7B as their templates ship), so the text is in no rendered row and no model learns it. Not a rewrite:
    the template's format has no place for it. None also when the probe's calls are not rendered, or the template
    cannot render the probe (other checks say so)."""
    text = _edited_probe(render_fn, rewrites, "calls", "content", _TEXT_BESIDE_CALLS)
    if text is None or _TEXT_BESIDE_CALLS in text or "4711" not in text:
        return None
    return "drops the text of an assistant turn that also calls tools (it renders the calls alone)"


def _edited_probe(render_fn: Callable[[list[dict], list[dict] | None], str], rewrites: Sequence[str], turn: str,
                  key: str, value: str) -> str | None:
    """The rendering of the tool probe (:func:`_tool_probe`) with ``key`` of one assistant turn set to ``value``
    before the ``rewrites`` (``turn``: ``"calls"``, the turn with the call, or ``"last"``, the answer), or None when
    the template refuses it."""
    messages = [dict(m) for m in _tool_probe(())]
    at = next(i for i, m in enumerate(messages) if m.get("tool_calls")) if turn == "calls" else len(messages) - 1
    messages[at][key] = value
    try:
        return render_fn(adapt(messages, [True] * len(messages), rewrites)[0], _TOOLS)
    except Exception:  # noqa: BLE001 - the template refuses the probe itself
        return None


def texts_beside_calls(messages: Sequence[dict]) -> int:
    """How many assistant turns of ``messages`` have text (not only white space) beside their tool calls: what a
    template that :func:`probe_text_with_calls_dropped` finds leaves out of a row."""
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls")
               and _text(m.get("content")).strip())


def probe_reasoning_dropped(render_fn: Callable[[list[dict], list[dict] | None], str],
                            rewrites: Sequence[str] = ()) -> str | None:
    """What a template loses of an assistant turn's ``reasoning_content`` (an Anthropic ``thinking`` block, a
    reasoning model's trace), or None: a template that renders it on none of the turns, not even the last answer's
    (most templates of models without a reasoning format), so no row trains it. A template that renders it on the
    last turns only (Qwen 3, DeepSeek-R1: earlier turns' reasoning is stripped by design) is not reported. None also
    when the template cannot render the probe."""
    text = _edited_probe(render_fn, rewrites, "last", "reasoning_content", "PROBE REASONING TRACE")
    if text is None or "PROBE REASONING TRACE" in text:
        return None
    return "renders no assistant turn's reasoning_content, not even the last one's"


def reasoning_turns(messages: Sequence[dict]) -> int:
    """How many assistant turns of ``messages`` carry ``reasoning_content`` (not only white space)."""
    return sum(1 for m in messages if m.get("role") == "assistant" and isinstance(m.get("reasoning_content"), str)
               and m["reasoning_content"].strip())


#: What a template may leave out of rows that no rewrite can put back: kind -> (probe, turns of a row it concerns,
#: what the count is of).
_LOSSES = {"text beside calls": (probe_text_with_calls_dropped, texts_beside_calls,
                                 "the text beside the calls of {turns} ({rows}; their calls are kept)"),
           "reasoning": (probe_reasoning_dropped, reasoning_turns, "the reasoning_content of {turns} ({rows})")}


def template_losses(render_fn: Callable[[list[dict], list[dict] | None], str],
                    rewrites: Sequence[str] = ()) -> dict[str, str]:
    """Kind -> what its probe showed, for each part of a row that the template leaves out of its rendering and no
    rewrite puts back (:data:`_LOSSES`): the caller says so before the first row and counts the turns it concerns
    (:func:`lost_turns`)."""
    return {kind: found for kind, (probe, _, _) in _LOSSES.items() if (found := probe(render_fn, rewrites))}


def lost_turns(messages: Sequence[dict], losses: dict[str, str]) -> dict[str, int]:
    """Kind -> how many turns of ``messages`` each of ``losses`` concerns (only those with some)."""
    return {kind: k for kind in losses if (k := _LOSSES[kind][1](messages))}


def losses_summary(counts: dict[str, list[int]]) -> list[str]:
    """``{kind: [rows, turns]}`` as one phrase per kind: "the text beside the calls of 10 assistant turns (in 5
    rows; their calls are kept)"."""
    from hsa.formats.common import plural

    return [_LOSSES[kind][2].format(turns=plural(turns, "assistant turn"), rows="in " + plural(rows, "row"))
            for kind, (rows, turns) in counts.items()]


def probe_refusal(render_fn: Callable[[list[dict], list[dict] | None], str],
                  rewrites: Sequence[str] = ()) -> str | None:
    """Why the template cannot render the probe of :func:`probe_harness_not_rendered` (one call and its result,
    through ``rewrites``) at all (its error, first line), or None when it renders it. A template for plain chat
    (strict user/assistant turns, no tool role) refuses it; so may a template that wants something of real rows
    the probe lacks, which is why ``hsa export --template`` also tries the first row before it refuses."""
    return _renders(render_fn, _tool_probe(rewrites), _TOOLS, ())


def refusal_cause(render_fn: Callable[[list[dict], list[dict] | None], str],
                  rewrites: Sequence[str] = ()) -> tuple[str, str] | None:
    """Where a template that refuses the tool probe (:func:`probe_refusal`) fails, or None when it renders it:
    ``("conversation", error)`` when it cannot render a system message, a question and an answer either,
    ``("tools", error)`` when it renders those but not with the probe's tool list, ``("tool turn", error)`` when
    it renders both and fails only on one call and its result (a template for plain chat)."""
    refusal = probe_refusal(render_fn, rewrites)
    if refusal is None:
        return None
    plain = [{"role": "system", "content": "You are a probe."}, {"role": "user", "content": "Say hello."},
             {"role": "assistant", "content": "Hello."}]
    if (error := _renders(render_fn, plain, None, ())) is not None:
        return "conversation", error
    if (error := _renders(render_fn, plain, _TOOLS, ())) is not None:
        return "tools", error
    return "tool turn", refusal


def template_error(exc: BaseException) -> str:
    """What a template's error says, in one line: its type and the first line of its message (a template's
    ``raise_exception`` text, or a Jinja error), cut at 120 characters."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0][:120] if text else ''}"


#: Rewrite -> (text, what it shows) that the probe's rendering must not hold: ``{'x': 4711}`` is the probe call's
#: arguments object as Python prints it, which a template that writes ``{{ function.arguments }}`` as it is
#: (expecting JSON text, as vLLM's Phi-4-mini and InternLM2 templates do) puts in the training text.
_UNWANTED = {"string_arguments": (("{'x': 4711}", "writes the arguments object as Python prints it, not as JSON"),)}
#: Rewrite -> the text a template's own rendering of the probe must hold for the rewrite to be its form: calls
#: are written as ``<tool_call>`` tags only for a template that tells the model to answer in them (SmolLM3), never
#: for one that drops calls and teaches another form (LFM2's ``<|tool_call_start|>``), which stays refused.
_ASKS = {"tool_call_tags": "<tool_call>"}


def _renders(render_fn, messages, tools, wanted, unwanted=()) -> str | None:
    """None when ``messages`` render with every ``wanted`` text and no ``unwanted`` one, else why not."""
    try:
        text = render_fn(messages, tools)
    except Exception as exc:  # noqa: BLE001 - a template's raise_exception, or any error it makes
        return template_error(exc)
    missing = [w for w in wanted if w not in text]
    if missing:
        return f"leaves out {missing}"
    shown = [f"{why} ({u})" for u, why in unwanted if u in text]
    return shown[0] if shown else None


def _holds(render_fn, messages, text: str) -> bool:
    try:
        return text in render_fn(messages, _TOOLS)
    except Exception:  # noqa: BLE001 - the template refuses the probe itself
        return False


def template_needs(render_fn: Callable[[list[dict], list[dict] | None], str]) -> dict[str, str]:
    """The rewrites a template needs, each with what its probe showed (``render_fn(messages, tools) -> text``).

    A rewrite is needed when its probe fails to render (or loses a part) and renders whole once rewritten; a
    probe that fails both ways is left out (the template cannot render that conversation at all, and the
    rows will fail where it occurs, with the template's own error)."""
    probes = _probes()

    def problem(name: str, rewrites: Sequence[str]) -> str | None:  # the probe of ``name``, through ``rewrites``
        msgs, wanted = probes[name]
        return _renders(render_fn, adapt(msgs, [True] * len(msgs), rewrites)[0], _TOOLS, wanted,
                        _UNWANTED.get(name, ()))

    failing = {name: why for name in probes if (why := problem(name, ())) is not None}
    for name, asked in _ASKS.items():
        if name in failing and not _holds(render_fn, probes[name][0], asked):
            del failing[name]
    out = {name: why for name, why in failing.items() if problem(name, [name]) is None}
    # a probe that fails both ways may fail for a second reason another probe found (Mistral-style ids in a
    # template that also wants string arguments): needed if it renders with those rewrites and its own only
    found = list(out)
    for name in (n for n in failing if n not in out and found):
        if problem(name, found) is not None and problem(name, [*found, name]) is None:
            out[name] = failing[name]
    return out


@lru_cache(maxsize=32)
def needs_of_template(template: str) -> tuple[tuple[str, str], ...]:
    """:func:`template_needs` of a template text, rendered with :func:`render` (cached per template)."""
    return tuple(template_needs(lambda m, t: render(template, m, t)).items())
