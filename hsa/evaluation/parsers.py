"""Tool calls read back from a model's completion, in the formats models write them.

``parse(text, fmt="auto", names=...)`` returns a :class:`Parsed`: the reply text, the
calls (``{"name", "arguments"}`` with object arguments) and whether the completion is
well formed. Formats (:data:`FORMATS`):

``hermes``
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (Hermes, Qwen 2.5 / 3,
    the tiny model); a block may hold a list of calls; JSON or Python literals.
``json``
    the whole completion is one call object or a list of them, ``arguments`` or
    ``parameters`` (a ```json fence is allowed). A JSON value that is not call-shaped is a reply.
``llama``
    Llama 3.1 / 3.2: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (several joined by
    ``;``), or the bare JSON object.
``mistral``
    ``[TOOL_CALLS] [{"name", "arguments"}, ...]`` (v3) or ``[TOOL_CALLS]name[ARGS]{...}`` (v11+,
    one block per call, an optional ``[CALL_ID]id``).
``pythonic``
    ``[get_weather(city="Paris"), get_time()]`` (Llama 3.2 / 4 pythonic, ToolACE): names may hold
    spaces or dots, values are JSON or Python literals; nothing is evaluated.

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

from hsa.chat_formats import _CALL_RE, _ToolaceCalls, _parse_literal, _strip_body

__all__ = ["FORMATS", "Parsed", "parse", "parse_message"]

FORMATS = ("auto", "hermes", "json", "llama", "mistral", "pythonic")


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
                   r"<end_of_turn>|<\|return\|>|<｜end▁of▁sentence｜>))+\s*$")
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
            args = _parse_literal(args)
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


def _hermes(text: str) -> tuple[str, list[dict]]:
    blocks = list(_CALL_RE.finditer(text))
    if text.count("<tool_call>") != len(blocks) or text.count("</tool_call>") != len(blocks):
        raise _Bad("unbalanced <tool_call> tags (a block is not closed)")
    calls: list[dict] = []
    for k, m in enumerate(blocks, 1):
        body = _strip_body(m.group(1))
        fence = _FENCE.match(body)
        if fence:
            body = fence.group(1).strip()
        try:
            value = _parse_literal(body)
        except ValueError as exc:
            raise _Bad(f"<tool_call> {k} is not JSON ({exc})") from None
        calls.extend(_calls_of(value, f"<tool_call> {k}"))
    return _CALL_RE.sub("", text).strip(), calls


def _bare_json(text: str) -> list[dict] | None:
    """The calls when the whole text is a call object or list; None when it is not JSON or not call-shaped."""
    fence = _FENCE.match(text)
    body = fence.group(1).strip() if fence else text
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
            value = _parse_literal(part.strip())
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
                args = _parse_literal(part[m.end():].strip())
            except ValueError as exc:
                raise _Bad(f"[TOOL_CALLS] block {k + 1} ({m.group(1)}): the arguments are not JSON ({exc})") from None
            calls.append(_call_of({"name": m.group(1), "arguments": args}, f"[TOOL_CALLS] block {k + 1}"))
        return head.strip(), calls
    try:
        value = _parse_literal(rest)
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

    fence = _FENCE.match(text)
    body = fence.group(1).strip() if fence else text.strip()
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
        parsed = _ToolaceCalls(body, "completion", sorted(names, key=len, reverse=True)).parse()
    except RecordError as exc:
        if strict or declared or body.rstrip().endswith(")]"):
            raise _Bad(exc.detail) from None
        return None
    return [{"name": n, "arguments": a} for n, a in parsed]


def _parse(text: str, fmt: str, names: Collection[str]) -> tuple[str, list[dict], str]:
    if fmt == "hermes" or (fmt == "auto" and ("<tool_call>" in text or "</tool_call>" in text)):
        return (*_hermes(text), "hermes")
    if fmt == "mistral" or (fmt == "auto" and _MISTRAL in text):
        if _MISTRAL not in text:
            calls = _bare_json(text)
            return ("", calls, "mistral") if calls else (text, [], "")
        return (*_mistral(text), "mistral")
    if fmt == "llama" or (fmt == "auto" and _PYTHON_TAG in text):
        if _PYTHON_TAG not in text:
            calls = _bare_json(text)
            return ("", calls, "llama") if calls else (text, [], "")
        return (*_llama(text), "llama")
    if fmt == "pythonic":
        calls = _pythonic(text, names, strict=text.lstrip().startswith("["))
        return ("", calls, "pythonic") if calls else (text, [], "")
    calls = _bare_json(text)
    if calls:
        return "", calls, "json"
    if fmt == "auto":
        calls = _pythonic(text, names, strict=False)
        if calls:
            return "", calls, "pythonic"
    return text, [], ""


def parse(text: str, fmt: str = "auto", *, names: Collection[str] = ()) -> Parsed:
    """Read the calls of one completion ``text`` in ``fmt`` (one of :data:`FORMATS`).

    ``names`` are the tools the prompt declared: a pythonic call is read in ``auto`` only
    when it calls one of them (so a reply such as ``[see below]`` stays a reply), and names
    holding spaces or parentheses are matched whole.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if not isinstance(text, str):
        return Parsed("", (), False, f"the completion is {type(text).__name__}, not text")
    text = _clean(text)
    try:
        content, calls, found = _parse(text, fmt, names)
    except _Bad as exc:
        return Parsed(text, (), False, str(exc), fmt if fmt != "auto" else "")
    return Parsed(content, tuple(calls), True, "", found)


def parse_message(message: Mapping[str, Any], fmt: str = "auto", *, names: Collection[str] = ()) -> Parsed:
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
        return parse(content or "", fmt, names=names)
    if not isinstance(raw_calls, list):
        return Parsed(content or "", (), False, "'message.tool_calls' is not a list")
    try:
        calls = _calls_of(raw_calls, "tool_calls")
    except _Bad as exc:
        return Parsed(content or "", (), False, str(exc), "message")
    return Parsed(_clean(content or ""), tuple(calls), True, "", "message")
