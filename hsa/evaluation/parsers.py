"""Tool calls read back from a model's completion, in the formats models write them.

``parse(text, fmt="auto", names=...)`` returns a :class:`Parsed`: the reply text, the
calls (``{"name", "arguments"}`` with object arguments) and whether the completion is
well formed. Formats (:data:`FORMATS`):

``hermes``
    ``<tool_call>...</tool_call>`` blocks holding ``{"name": ..., "arguments": {...}}`` (Hermes, Qwen 2.5 / 3,
    the tiny model; a block may hold a list; JSON or Python literals), Qwen 3.5+ / Qwen3-Coder / Nemotron 3
    ``<function=name><parameter=key>value</parameter></function>``, or GLM-4.5
    ``name<arg_key>key</arg_key><arg_value>value</arg_value>``.
``json``
    the whole completion is one call object or a list of them, ``arguments`` or
    ``parameters`` (a ```json fence is allowed; Granite's ``<|tool_call|>`` marker too). A JSON
    value that is not call-shaped is a reply.
``llama``
    Llama 3.1 / 3.2: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (several joined by
    ``;``), or the bare JSON object.
``mistral``
    ``[TOOL_CALLS] [{"name", "arguments"}, ...]`` (v3) or ``[TOOL_CALLS]name[ARGS]{...}`` (v11+,
    one block per call, an optional ``[CALL_ID]id``).
``pythonic``
    ``[get_weather(city="Paris"), get_time()]`` (Llama 3.2 / 4 pythonic, ToolACE, LFM2 between
    ``<|tool_call_start|>`` and ``<|tool_call_end|>``): names may hold spaces or dots, values are JSON
    or Python literals; nothing is evaluated.
``gemma``
    Gemma 4: ``<|tool_call>call:name{key:<|"|>text<|"|>,n:5}<tool_call|>``.
``harmony``
    gpt-oss: ``<|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|>``; the
    reply is the ``final`` channel, the ``analysis`` channel is dropped.
``deepseek``
    DeepSeek V3 / R1 (``<｜tool▁call▁begin｜>function<｜tool▁sep｜>name`` and a ```json fence) and V3.1
    (``<｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``).
``kimi``
    Kimi K2: ``<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...}<|tool_call_end|>``.
``invoke``
    ``<invoke name="f"><parameter name="a">1</parameter></invoke>`` (MiniMax M2 and other XML styles; a
    ``ns:`` prefix on the tags is allowed).

Formats that write parameters as text (Qwen 3.5, GLM, invoke) are typed with the tool's schema
when it is given: text where the schema wants a string, JSON otherwise.

``auto`` picks the format from the markers in the text (``<tool_call>``, ``[TOOL_CALLS]``,
``<|python_tag|>``), else reads a bare JSON call or a pythonic call list of a declared tool,
else the completion is a reply. A completion that starts a call it does not finish (an
unclosed tag, a marker followed by text that is no call) is *not well formed*: ``ok`` is
False and ``error`` says why. Reasoning blocks (``<think>...</think>``) and end-of-turn
tokens are removed first.

>>> parse('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>').calls
({'name': 'f', 'arguments': {'a': 1}},)
>>> parse('[f(a=1), g(b="x")]', names={"f", "g"}).calls
({'name': 'f', 'arguments': {'a': 1}}, {'name': 'g', 'arguments': {'b': 'x'}})
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from hsa.formats.common import parse_literal, strip_body
from hsa.formats.hermes import CALL_RE
from hsa.formats.toolace import ToolaceCalls

__all__ = ["FORMATS", "Parsed", "parse", "parse_message"]

FORMATS = ("auto", "hermes", "json", "llama", "mistral", "pythonic", "gemma", "harmony", "deepseek", "kimi", "invoke")


@dataclasses.dataclass(frozen=True)
class Parsed:
    """A completion read in a tool-call format."""

    content: str
    calls: tuple[dict, ...]  # {"name": str, "arguments": dict}
    ok: bool
    error: str = ""
    format: str = ""  # the format the calls were read in ("" for a plain reply)


_THINK = re.compile(r"<think>.*?</think>", re.S)
_TAIL = re.compile(r"(?:\s*(?:<\|im_end\|>|<\|endoftext\|>|</s>|<\|eot_id\|>|<\|eom_id\|>|<\|end\|>|<eos>|"
                   r"<end_of_turn>|<\|return\|>|<｜end▁of▁sentence｜>|<\|eot\|>|<\|eom\|>|<\|end_of_text\|>|"
                   r"<end_of_sentence>|<\|eos\|>|<\|stop\|>))+\s*$")
_FENCE = re.compile(r"\A```(?:json|python|tool_code)?[ \t]*\n?(.*?)\n?```\Z", re.S)
_MISTRAL = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"
_CALL_SHAPE = '{"name": ..., "arguments": {...}}'


class _Bad(ValueError):
    """A completion that starts a call and does not finish it."""


def _clean(text: str) -> str:
    text = _THINK.sub("", text)
    if "</think>" in text:  # a template that opens the reasoning block in the prompt
        text = text.split("</think>", 1)[1]
    return _TAIL.sub("", text).strip()


def _call_of(item: Any, where: str) -> dict:
    """One call object (OpenAI ``{"function": {...}}`` wrapping allowed) as ``{"name", "arguments"}``."""
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item, dict):
        raise _Bad(f"{where} is {type(item).__name__}; expected {_CALL_SHAPE}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise _Bad(f"{where} has no string 'name'; expected {_CALL_SHAPE}")
    args = item.get("arguments", item.get("parameters", {}))
    if args is None or (isinstance(args, str) and not args.strip()):
        args = {}
    if isinstance(args, str):
        try:
            args = parse_literal(args)
        except ValueError as exc:
            raise _Bad(f"{where} ({name}): the arguments string is not JSON ({exc})") from None
    if not isinstance(args, dict):
        raise _Bad(f"{where} ({name}): arguments must be an object, got {type(args).__name__}")
    return {"name": name, "arguments": args}


def _is_call_shaped(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        isinstance(i, dict) and isinstance((i.get("function") if isinstance(i.get("function"), dict) else i)
                                           .get("name"), str)
        and set(i.get("function") if isinstance(i.get("function"), dict) else i)
        <= {"name", "arguments", "parameters", "id", "type", "function"} for i in items)


def _calls_of(value: Any, where: str) -> list[dict]:
    items = value if isinstance(value, list) else [value]
    return [_call_of(item, f"{where} call {k}") for k, item in enumerate(items, 1)]


_QWEN_FN = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.S)
_QWEN_PARAM = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)


def _xml_value(raw: str, schema: Any) -> Any:
    """A parameter written as text (Qwen 3.5 / GLM / invoke XML): kept as text where the schema wants a string,
    else read as JSON (or a Python literal) when it is one."""
    text = raw[1:] if raw.startswith("\n") else raw
    text = text[:-1] if text.endswith("\n") else text
    types = schema.get("type") if isinstance(schema, dict) else None
    types = {types} if isinstance(types, str) else set(types or ())
    if types and types <= {"string"}:
        return text
    try:
        return parse_literal(text.strip())
    except ValueError:
        return text


def _props(schemas: Mapping[str, Any] | None, name: str) -> dict:
    schema = (schemas or {}).get(name)
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _xml_call(body: str, k: int, schemas: Mapping[str, Any] | None) -> list[dict] | None:
    """A ``<tool_call>`` body in Qwen 3.5's ``<function=name><parameter=key>value...`` or GLM-4's
    ``name<arg_key>key</arg_key><arg_value>value</arg_value>`` layout; None for other bodies."""
    if body.startswith("<function="):
        calls = []
        for m in _QWEN_FN.finditer(body):
            name = m.group(1).strip()
            props = _props(schemas, name)
            calls.append({"name": name, "arguments": {p.group(1).strip(): _xml_value(p.group(2), props.get(
                p.group(1).strip())) for p in _QWEN_PARAM.finditer(m.group(2))}})
        if not calls:
            raise _Bad(f"<tool_call> {k}: <function=...> is not closed")
        return calls
    if "<arg_key>" in body or (body and "\n" not in body.strip() and body.strip()[0] not in "[{"
                               and re.fullmatch(r"[^\s{}\[\]\"']+", body.strip())):
        name, _, rest = body.strip().partition("\n")
        if "<arg_key>" in name:
            name, rest = name.split("<arg_key>", 1)[0], body[body.index("<arg_key>"):]
        props = _props(schemas, name.strip())
        return [{"name": name.strip(), "arguments": {a.group(1).strip(): _xml_value(a.group(2), props.get(
            a.group(1).strip())) for a in _GLM_ARG.finditer(rest)}}]
    return None


def _hermes(text: str, schemas: Mapping[str, Any] | None = None) -> tuple[str, list[dict]]:
    blocks = list(CALL_RE.finditer(text))
    if text.count("<tool_call>") != len(blocks) or text.count("</tool_call>") != len(blocks):
        raise _Bad("unbalanced <tool_call> tags (a block is not closed)")
    calls: list[dict] = []
    for k, m in enumerate(blocks, 1):
        body = strip_body(m.group(1))
        fence = _FENCE.match(body)
        if fence:
            body = fence.group(1).strip()
        xml = _xml_call(body, k, schemas)
        if xml is not None:
            calls.extend(xml)
            continue
        try:
            value = parse_literal(body)
        except ValueError as exc:
            raise _Bad(f"<tool_call> {k} is not JSON ({exc})") from None
        calls.extend(_calls_of(value, f"<tool_call> {k}"))
    return CALL_RE.sub("", text).strip(), calls


# --------------------------------------------------------------------------- other models' own markers

_GEMMA_CALL = re.compile(r"<\|tool_call>\s*call:([^{\s]+)\s*(\{.*?\})\s*<tool_call\|>", re.S)
_GEMMA_STR = re.compile(r'<\|"\|>(.*?)<\|"\|>', re.S)
_GEMMA_KEY = re.compile(r"([{,]\s*)([^\s\"{}\[\],:]+)\s*:")


def _gemma_args(text: str) -> dict:
    """Gemma 4's argument object ``{key:<|"|>text<|"|>,n:5,list:[...]}`` as JSON."""
    strings: list[str] = []

    def keep(m: re.Match) -> str:
        strings.append(m.group(1))
        return f'"@@hsa-str-{len(strings) - 1}@@"'

    body = _GEMMA_STR.sub(keep, text)
    body = _GEMMA_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}":', body)
    value = json.loads(body)

    def back(v: Any) -> Any:
        if isinstance(v, str):
            m = re.fullmatch(r"@@hsa-str-(\d+)@@", v)
            return strings[int(m.group(1))] if m else v
        if isinstance(v, list):
            return [back(x) for x in v]
        if isinstance(v, dict):
            return {back(k): back(x) for k, x in v.items()}
        return v

    return back(value)


def _gemma(text: str) -> tuple[str, list[dict]]:
    found = list(_GEMMA_CALL.finditer(text))
    if text.count("<|tool_call>") != len(found):
        raise _Bad("a <|tool_call> block is not call:name{...}<tool_call|>")
    calls = []
    for k, m in enumerate(found, 1):
        try:
            args = _gemma_args(m.group(2))
        except ValueError as exc:
            raise _Bad(f"<|tool_call> {k} ({m.group(1)}): the arguments do not read ({exc})") from None
        calls.append(_call_of({"name": m.group(1), "arguments": args}, f"<|tool_call> {k}"))
    content = _GEMMA_CALL.sub("", text).split("<|tool_response>")[0].strip()
    return content, calls


_HARMONY_CALL = re.compile(r"to=functions\.([^\s<]+)(.*?)<\|message\|>(.*?)(?=<\|call\|>|<\|end\|>|<\|start\|>|\Z)",
                           re.S)
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*<\|message\|>(.*?)(?=<\|end\|>|<\|return\|>|<\|start\|>|\Z)",
                            re.S)


def _harmony(text: str) -> tuple[str, list[dict]]:
    """gpt-oss (harmony): ``<|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|>``;
    the reply is the ``final`` channel, the ``analysis`` channel (reasoning) is dropped."""
    calls = []
    for k, m in enumerate(_HARMONY_CALL.finditer(text), 1):
        try:
            args = parse_literal(m.group(3).strip()) if m.group(3).strip() else {}
        except ValueError as exc:
            raise _Bad(f"to=functions.{m.group(1)}: the message is not JSON ({exc})") from None
        calls.append(_call_of({"name": m.group(1), "arguments": args}, f"harmony call {k}"))
    final = _HARMONY_FINAL.findall(text)
    if not calls and not final and "<|message|>" in text and "to=functions." in text:
        raise _Bad("to=functions.name has no <|message|> with the arguments")
    return "\n".join(f.strip() for f in final), calls


_DS_BEGIN, _DS_SEP, _DS_END = "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"
_DS_CALL = re.compile(re.escape(_DS_BEGIN) + r"(.*?)" + re.escape(_DS_SEP) + r"(.*?)" + re.escape(_DS_END), re.S)


def _deepseek(text: str) -> tuple[str, list[dict]]:
    """DeepSeek V3 (``begin function<sep>name\n```json\n{...}\n```end``) and V3.1 (``begin name<sep>{...}end``)."""
    found = list(_DS_CALL.finditer(text))
    if text.count(_DS_BEGIN) != len(found):
        raise _Bad("a <｜tool▁call▁begin｜> block is not closed")
    calls = []
    for k, m in enumerate(found, 1):
        head, body = m.group(1).strip(), m.group(2).strip()
        if head == "function" or not head:  # V3: the name is the first line of the body
            name, _, body = body.partition("\n")
        else:
            name = head
        fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body.strip(), re.S)
        body = fence.group(1) if fence else body.strip()
        try:
            args = parse_literal(body) if body else {}
        except ValueError as exc:
            raise _Bad(f"DeepSeek call {k} ({name.strip()}): the arguments are not JSON ({exc})") from None
        calls.append(_call_of({"name": name.strip(), "arguments": args}, f"DeepSeek call {k}"))
    content = text.split("<｜tool▁calls▁begin｜>")[0].split(_DS_BEGIN)[0].strip()
    return content, calls


_INVOKE = re.compile(r'<(?:[\w-]+:)?invoke\s+name="([^"]+)"\s*>(.*?)</(?:[\w-]+:)?invoke>', re.S)
_INVOKE_PARAM = re.compile(r'<(?:[\w-]+:)?parameter\s+name="([^"]+)"\s*>(.*?)</(?:[\w-]+:)?parameter>', re.S)
_INVOKE_WRAP = re.compile(r"</?(?:[\w-]+:)?(?:function_calls|tool_call)>|<\|[a-z_]+\|>|\bto=\S+", re.S)


def _invoke(text: str, schemas: Mapping[str, Any] | None) -> tuple[str, list[dict]]:
    """``<invoke name="f"><parameter name="a">1</parameter></invoke>`` (MiniMax M2, Claude-style XML; an
    ``ns:`` prefix on the tags is allowed)."""
    opened = len(re.findall(r"<(?:[\w-]+:)?invoke\s", text))
    found = list(_INVOKE.finditer(text))
    if opened != len(found):
        raise _Bad("an <invoke name=...> block is not closed")
    calls = []
    for m in found:
        props = _props(schemas, m.group(1))
        calls.append({"name": m.group(1), "arguments": {p.group(1): _xml_value(p.group(2), props.get(p.group(1)))
                                                        for p in _INVOKE_PARAM.finditer(m.group(2))}})
    content = _INVOKE_WRAP.sub("", _INVOKE.sub("", text)).strip()
    return content, calls


_KIMI_CALL = re.compile(r"<\|tool_call_begin\|>\s*(?:functions\.)?([^\s:<]+)(?::\d+)?\s*"
                        r"<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>", re.S)


def _kimi(text: str) -> tuple[str, list[dict]]:
    """Kimi K2: ``<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...}<|tool_call_end|>``."""
    found = list(_KIMI_CALL.finditer(text))
    if text.count("<|tool_call_begin|>") != len(found):
        raise _Bad("a <|tool_call_begin|> block is not closed")
    calls = []
    for k, m in enumerate(found, 1):
        try:
            args = parse_literal(m.group(2).strip()) if m.group(2).strip() else {}
        except ValueError as exc:
            raise _Bad(f"Kimi call {k} ({m.group(1)}): the arguments are not JSON ({exc})") from None
        calls.append(_call_of({"name": m.group(1), "arguments": args}, f"Kimi call {k}"))
    return text.split("<|tool_calls_section_begin|>")[0].split("<|tool_call_begin|>")[0].strip(), calls


#: Markers around a JSON or pythonic call list (the chat templates of these models write them so, and
#: vLLM's tool parsers read them so): LFM2, Granite, Hunyuan-A13B and MiniMax-M1 (``<tool_calls>``: a JSON list,
#: or one call object per line), Nemotron (``<TOOLCALL>``), Qwen2.5-Coder as vLLM templates it (``<tools>``),
#: OLMo 3 (``<function_calls>``: one pythonic call per line), InternLM2 (``<|action_start|><|plugin|>``),
#: Apertus (``<|tools_prefix|>``: a list of ``{name: arguments}`` objects), HyperCLOVA X (a turn headed
#: ``-> tool/function_call``).
_WRAPPED = (("<|tool_call_start|>", "<|tool_call_end|>"), ("<|tool_call|>", ""),
            ("<tool_calls>", "</tool_calls>"), ("<TOOLCALL>", "</TOOLCALL>"), ("<tools>", "</tools>"),
            ("<function_calls>", "</function_calls>"), ("<|action_start|><|plugin|>", "<|action_end|>"),
            ("<|tools_prefix|>", "<|tools_suffix|>"), ("-> tool/function_call", ""))


def _wrapped(text: str, names: Collection[str]) -> tuple[str, list[dict], str] | None:
    for start, end in _WRAPPED:
        if start not in text:
            continue
        head, _, body = text.partition(start)
        if end:
            if end not in body:
                raise _Bad(f"{start} is not closed with {end}")
            body = body.split(end, 1)[0]
        body = body.strip()
        calls = _wrapped_json(body)
        fmt = "json"
        if not calls:
            lines = [line.strip() for line in body.splitlines() if line.strip()]
            if len(lines) > 1 and all(re.match(r"[^\s\[\](){}=,\"']+\s*\(.*\)\Z", line) for line in lines):
                body = "[" + ", ".join(lines) + "]"  # one call per line (OLMo 3)
            try:
                calls, fmt = _pythonic(body, names, strict=True), "pythonic"
            except _Bad as exc:
                raise _Bad(f"{start.strip()} is followed by no call list ({exc})") from None
        if not calls:
            raise _Bad(f"{start.strip()} is followed by no call list")
        return head.strip(), calls, fmt
    return None


def _unfenced(text: str) -> str:
    """``text`` without a ```json / ```python fence around it (what is inside, stripped), else as it is."""
    fence = _FENCE.match(text)
    return fence.group(1).strip() if fence else text


def _literal(text: str) -> Any:
    try:
        return parse_literal(text)
    except ValueError:
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _wrapped_json(body: str) -> list[dict] | None:
    """The calls of a wrapper's body when it is JSON (or Python literals): one call or a list of them (a ```json
    fence allowed), one call object per line, or a list of ``{name: arguments}`` objects; None otherwise."""
    body = _unfenced(body)
    if not body or body[0] not in "[{":
        return None
    value = _literal(body)
    if value is _NOT_LITERAL:
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        values = [_literal(line) for line in lines] if len(lines) > 1 else []
        if values and all(isinstance(v, dict) and _is_call_shaped(v) for v in values):
            return _calls_of(values, "JSON line")
        return None
    if _is_call_shaped(value):
        return _calls_of(value, "JSON")
    items = value if isinstance(value, list) else [value]
    if items and all(isinstance(i, dict) and len(i) == 1 and isinstance(next(iter(i.values())), dict)
                     for i in items):  # [{"get_weather": {"city": "Paris"}}]
        return [_call_of({"name": k, "arguments": v}, f"call {n}")
                for n, i in enumerate(items, 1) for k, v in i.items()]
    return None


def _bare_json(text: str) -> list[dict] | None:
    """The calls when the whole text is a call object or list; None when it is not JSON or not call-shaped."""
    body = _unfenced(text)
    if not body or body[0] not in "[{":
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not _is_call_shaped(value):
        return None
    return _calls_of(value, "JSON")


def _llama(text: str) -> tuple[str, list[dict]]:
    head, _, body = text.partition(_PYTHON_TAG)
    body = body.strip()
    calls: list[dict] = []
    for k, part in enumerate(p for p in _split_top(body, ";") if p.strip()):
        try:
            value = parse_literal(part.strip())
        except ValueError as exc:
            raise _Bad(f"<|python_tag|> call {k + 1} is not JSON ({exc})") from None
        calls.extend(_calls_of(value, "<|python_tag|>"))
    if not calls:
        raise _Bad("<|python_tag|> is followed by no call")
    return head.strip(), calls


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside strings and brackets."""
    out, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        elif c == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return out


_MISTRAL_V11 = re.compile(r"\s*([^\s\[\]{}]+)\s*(?:\[CALL_ID\]\s*(\S+?)\s*)?\[ARGS\]")


def _mistral(text: str) -> tuple[str, list[dict]]:
    head, _, rest = text.partition(_MISTRAL)
    rest = rest.strip()
    if _MISTRAL_V11.match(rest):  # name[ARGS]{...}[TOOL_CALLS]name[ARGS]{...}
        calls = []
        for k, part in enumerate(p for p in rest.split(_MISTRAL) if p.strip()):
            m = _MISTRAL_V11.match(part)
            if not m:
                raise _Bad(f"[TOOL_CALLS] block {k + 1} is not name[ARGS]{{...}}")
            try:
                args = parse_literal(part[m.end():].strip())
            except ValueError as exc:
                raise _Bad(f"[TOOL_CALLS] block {k + 1} ({m.group(1)}): the arguments are not JSON ({exc})") from None
            calls.append(_call_of({"name": m.group(1), "arguments": args}, f"[TOOL_CALLS] block {k + 1}"))
        return head.strip(), calls
    try:
        value = parse_literal(rest)
    except ValueError as exc:
        raise _Bad(f"[TOOL_CALLS] is not followed by a JSON list of calls ({exc})") from None
    calls = _calls_of(value, "[TOOL_CALLS]")
    if not calls:
        raise _Bad("[TOOL_CALLS] is followed by an empty list")
    return head.strip(), calls


def _pythonic(text: str, names: Collection[str], *, strict: bool) -> list[dict] | None:
    """The calls of ``[f(a=1), g(b="x")]`` (or one bare ``f(a=1)``); None when the text is not that shape and
    ``strict`` is False."""
    from hsa.records import RecordError

    body = _unfenced(text).strip()
    if not body.startswith("["):
        if not re.match(r"[^\s\[\](){}=,\"']+\s*\(", body) or not body.endswith(")"):
            if strict:
                raise _Bad("not a pythonic call list [name(param=value, ...), ...]")
            return None
        body = f"[{body}]"
    declared = False
    if not strict:
        m = re.match(r"\[\s*([^()\[\]\"']+?)\s*\(", body)
        declared = bool(m and names and m.group(1) in names)
        if not m or (names and not declared) or (not declared and not body.endswith("]")):
            return None
    try:
        parsed = ToolaceCalls(body, "completion", sorted(names, key=len, reverse=True)).parse()
    except RecordError as exc:
        if strict or declared or body.rstrip().endswith(")]"):
            raise _Bad(exc.detail) from None
        return None
    return [{"name": n, "arguments": a} for n, a in parsed]


#: (format, marker that announces it in auto) for the formats with markers of their own, in detection order.
_MARKERS = (("hermes", "<tool_call>"), ("hermes", "</tool_call>"), ("gemma", "<|tool_call>"),
            ("kimi", "<|tool_call_begin|>"), ("deepseek", _DS_BEGIN), ("harmony", "to=functions."),
            ("harmony", "<|channel|>"), ("mistral", _MISTRAL), ("llama", _PYTHON_TAG),
            ("invoke", "<invoke "), ("invoke", ":invoke "))


def _parse(text: str, fmt: str, names: Collection[str], schemas: Mapping[str, Any] | None
           ) -> tuple[str, list[dict], str]:
    if fmt == "auto":
        fmt = next((f for f, marker in _MARKERS if marker in text), "auto")
        if fmt == "auto" and any(start in text for start, _ in _WRAPPED):
            return _wrapped(text, names)
    if fmt == "hermes":
        return (*_hermes(text, schemas), "hermes")
    if fmt == "gemma":
        return (*_gemma(text), "gemma")
    if fmt == "kimi":
        return (*_kimi(text), "kimi")
    if fmt == "deepseek":
        return (*_deepseek(text), "deepseek")
    if fmt == "harmony":
        return (*_harmony(text), "harmony")
    if fmt == "invoke":
        return (*_invoke(text, schemas), "invoke")
    if fmt == "mistral":
        if _MISTRAL not in text:
            calls = _bare_json(text)
            return ("", calls, "mistral") if calls else (text, [], "")
        return (*_mistral(text), "mistral")
    if fmt == "llama":
        if _PYTHON_TAG not in text:
            calls = _bare_json(text)
            return ("", calls, "llama") if calls else (text, [], "")
        return (*_llama(text), "llama")
    if fmt == "pythonic":
        wrapped = _wrapped(text, names)
        if wrapped:
            return wrapped
        calls = _pythonic(text, names, strict=text.lstrip().startswith("["))
        return ("", calls, "pythonic") if calls else (text, [], "")
    if fmt == "json" and any(start in text for start, _ in _WRAPPED):
        return _wrapped(text, names)
    calls = _bare_json(text)
    if calls:
        return "", calls, "json"
    if fmt == "auto":
        calls = _pythonic(text, names, strict=False)
        if calls:
            return "", calls, "pythonic"
    return text, [], ""


def parse(text: str, fmt: str = "auto", *, names: Collection[str] = (),
          schemas: Mapping[str, Any] | None = None) -> Parsed:
    """Read the calls of one completion ``text`` in ``fmt`` (one of :data:`FORMATS`).

    ``names`` are the tools the prompt declared: a pythonic call is read in ``auto`` only
    when it calls one of them (so a reply such as ``[see below]`` stays a reply), and names
    holding spaces or parentheses are matched whole. ``schemas`` (tool name -> parameters
    schema; its keys are the names when ``names`` is empty) types the values of formats that
    write parameters as text (Qwen 3.5 / GLM / invoke XML): text where the schema wants a string.
    """
    if schemas is not None and not names:
        names = tuple(schemas)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if not isinstance(text, str):
        return Parsed("", (), False, f"the completion is {type(text).__name__}, not text")
    text = _clean(text)
    try:
        content, calls, found = _parse(text, fmt, names, schemas)
    except _Bad as exc:
        return Parsed(text, (), False, str(exc), fmt if fmt != "auto" else "")
    return Parsed(content, tuple(calls), True, "", found)


def parse_message(message: Mapping[str, Any], fmt: str = "auto", *, names: Collection[str] = (),
                  schemas: Mapping[str, Any] | None = None) -> Parsed:
    """An OpenAI-style assistant message ``{"content", "tool_calls"}`` (what vLLM's or an API's server returns).

    Its ``tool_calls`` are taken as they are (``arguments`` as a JSON string or an object); a message
    without them has its text parsed with :func:`parse` (a server that does not parse calls)."""
    if not isinstance(message, Mapping):
        return Parsed("", (), False, f"'message' is {type(message).__name__}, not an object")
    content = message.get("content")
    if isinstance(content, list):  # typed text parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is not None and not isinstance(content, str):
        return Parsed("", (), False, f"'message.content' is {type(content).__name__}, not text")
    raw_calls = message.get("tool_calls")
    if not raw_calls:
        return parse(content or "", fmt, names=names, schemas=schemas)
    if not isinstance(raw_calls, list):
        return Parsed(content or "", (), False, "'message.tool_calls' is not a list")
    try:
        calls = _calls_of(raw_calls, "tool_calls")
    except _Bad as exc:
        return Parsed(content or "", (), False, str(exc), "message")
    return Parsed(_clean(content or ""), tuple(calls), True, "", "message")
