"""Which layout a row is in, and its conversion: :func:`convert` tries the readers of :mod:`hsa.formats` in
a fixed order (the first that recognises the row converts it); :func:`to_messages_layout` is the whole reading
of a row into the messages layout that :func:`hsa.records.normalize` starts with."""

from __future__ import annotations

from hsa.formats.ai_sdk import ai_sdk_parts, convert_ai_sdk
from hsa.formats.aliases import ROLE_ALIASES, ROLES, standard_roles, turn_list_alias
from hsa.formats.anthropic import convert_messages
from hsa.formats.bfcl import check_bfcl_multi_turn, convert_bfcl, is_bfcl
from hsa.formats.call_roles import CALL_ROLES, RESULT_ROLES, convert_call_roles
from hsa.formats.chatml import rendered_chatml
from hsa.formats.common import noted, with_notes
from hsa.formats.gemini import convert_gemini, is_gemini
from hsa.formats.glaive import convert_glaive, convert_glaive_sharegpt, glaive_turns_of, is_glaive
from hsa.formats.hermes import convert_hermes, hermes_turns
from hsa.formats.json_texts import decode_json_texts
from hsa.formats.langchain import convert_langchain, is_langchain
from hsa.formats.ollama import ollama_tool_names
from hsa.formats.openai_legacy import convert_legacy_openai
from hsa.formats.react import convert_react, react_turns_of
from hsa.formats.responses import convert_responses, responses_items
from hsa.formats.sharegpt import convert_sharegpt, sharegpt_turns
from hsa.formats.result_ids import exit_message, result_ids
from hsa.formats.system_tools import convert_system_tools
from hsa.formats.template_kwargs import tools_from_template_kwargs
from hsa.formats.text_calls import convert_text_calls
from hsa.formats.toolace import convert_toolace, toolace_turns
from hsa.formats.toolbench import convert_toolbench_answer, toolbench_answer
from hsa.formats.xlam import convert_xlam, is_xlam
from hsa.record_model import RecordError

__all__ = ["convert", "to_messages_layout"]


#: Keys only hsa's own records carry: such a record is never in a foreign layout, and a ``<tools>`` section of its
#: prompt (or a tag in a message) is text of the harness, not a Hermes tool block.
_HSA_ONLY_KEYS = ("prompt", "skills", "hooks", "hook_events", "mapping", "transforms", "source_id")


def _convert_within_messages(raw: dict, hsa_record: bool) -> dict | None:
    """A messages row with its tool calls and results rewritten from the per-message dialects into OpenAI's: legacy
    ``function_call``, Vercel AI SDK parts, Ollama's ``tool_name``, calls left as model output text (not in hsa
    records, whose texts are the harness's own) and Anthropic content blocks; None when nothing changed."""
    row, changed = raw, False
    steps = [convert_legacy_openai,
             lambda r: convert_ai_sdk(r) if ai_sdk_parts(r["messages"]) else None,
             ollama_tool_names]
    if not hsa_record:  # hsa writes calls as tool_calls, and texts are the harness's own
        steps.insert(0, exit_message)
        steps.insert(1, convert_call_roles)
        steps.append(result_ids)
        steps.append(convert_system_tools)
        steps.append(convert_text_calls)
    for step in steps:
        out = step(row)
        if out is not None:
            row, changed = out, True
    blocks = convert_messages(row["messages"])
    if blocks is not None:
        row, changed = with_notes({**row, "messages": blocks[0]}, blocks[1]), True
    return row if changed else None


def convert(raw: dict) -> dict | None:
    """The row in hsa's messages layout when it is in one of the layouts of this module, else None.
    Raises hsa.records.RecordError(reason, detail) for a row that is clearly in one of these layouts but broken
    (detail: which key/turn, what was expected, what to do).

    Rows already in the Hugging Face format, and the xLAM, BFCL and tag-free ShareGPT layouts (read after it by
    :func:`to_messages_layout`), give None. In hsa records (a key of ``_HSA_ONLY_KEYS``), texts are the harness's
    own: tags, tool lists and calls written in them stay text, and only structure (content blocks and parts,
    legacy fields, whole-row item layouts) is converted.
    """
    if not isinstance(raw, dict):
        return None
    hsa_record = any(k in raw for k in _HSA_ONLY_KEYS)
    responses = responses_items(raw)
    if responses is not None:
        return convert_responses(raw, *responses)
    if is_langchain(raw):
        return convert_langchain(raw)
    if not hsa_record and (answer := toolbench_answer(raw)) is not None:
        row = convert_toolbench_answer(raw, answer)
        return _convert_within_messages(row, False) or row
    if not hsa_record:
        for find, convert_turns in ((hermes_turns, convert_hermes), (glaive_turns_of, convert_glaive_sharegpt),
                                    (react_turns_of, convert_react)):
            found = find(raw)
            if found is not None:
                return convert_turns(raw, *found)
    if isinstance(raw.get("messages"), list):
        return _convert_within_messages(raw, hsa_record)
    if hsa_record:
        return None
    toolace = toolace_turns(raw)
    if toolace is not None:
        return convert_toolace(raw, toolace)
    if is_glaive(raw):
        return convert_glaive(raw)
    if is_gemini(raw):
        return convert_gemini(raw)
    return None


def _plain_layouts(raw: dict) -> dict:
    """The layouts without tags or per-message dialects, tried when :func:`convert` finds none and the row has no
    "messages": xLAM, BFCL, tag-free ShareGPT; else explain what is expected."""
    if is_xlam(raw):
        return convert_xlam(raw)
    if is_bfcl(raw):
        return convert_bfcl(raw)
    check_bfcl_multi_turn(raw)
    from hsa.formats.claude_code import check_session_event  # loaded once a row gets here: not at start-up
    from hsa.formats.codex import check_rollout_line

    check_session_event(raw)
    check_rollout_line(raw)
    conv = sharegpt_turns(raw)
    if conv is not None:
        return convert_sharegpt(raw, conv)
    _check_agent_log_pieces(raw)
    raise RecordError("missing messages", "a record needs a 'messages' list (Hugging Face conversational format); "
                      f"this one has the keys {sorted(raw)[:12]}. Also read: xLAM (query/tools/answers), ShareGPT "
                      "(conversations, with or without Hermes <tool_call> tags), ToolACE, ToolBench (ReAct text, answer "
                      "files), Glaive (system/chat), "
                      "Anthropic (content blocks), Gemini (contents/parts), OpenAI Responses items (input/output), "
                      "LangChain message dicts and BFCL (question/function); see docs/format.md")


def _check_agent_log_pieces(raw: dict) -> None:
    """Refuse, saying what to do, a line that is a piece of a conversation or a file of many: one chat message (a
    file holding one conversation's messages as a JSON array gives one per element), an OpenHands event, a
    tau2-bench results file."""
    if isinstance(raw.get("role"), str) and ("content" in raw or "tool_calls" in raw):
        raise RecordError("a message, not a record", (
            f"this line (or JSON array element) is one chat message (role {raw['role']!r}), not a conversation; a "
            "file whose JSON array holds one conversation's messages is read as one record per element. Write each "
            "conversation as one {\"messages\": [...]} object per line"))
    history = raw.get("history")
    events = history if isinstance(history, list) and history and all(isinstance(e, dict) for e in history) else ()
    if _is_openhands_event(raw) or (events and all("role" not in e for e in events)
                                     and any("action" in e or "observation" in e for e in events)):
        where = "its 'history' holds OpenHands events" if events else "an OpenHands event"
        raise RecordError("openhands event", (
            f"{where} (actions and observations of an event stream); hsa reads "
            "conversations, not event streams: each action event's tool_call_metadata.model_response holds the "
            "model's message with its tool calls in OpenAI's form, and the observation that follows (its "
            "'cause' is the action's id) holds the result; write those as {\"messages\": [...]} per conversation"))
    if isinstance(raw.get("simulations"), list) and ("tasks" in raw or "info" in raw):
        raise RecordError("tau2-bench results file", (
            "its conversations are 'simulations' (each with 'messages'), one file of many; convert it first: "
            "'hsa import tau2 RESULTS.json --out sims.jsonl' writes one record per simulation (the domain's policy "
            "its system prompt), then pass the domain's tools with --tools FILE (tau2 keeps them in its code)"))


def _is_openhands_event(e: dict) -> bool:
    return isinstance(e.get("source"), str) and ("action" in e or "observation" in e) and "id" in e


def to_messages_layout(raw: dict) -> dict:
    """``raw`` in the messages layout: other layouts converted, a top-level system text moved into the messages."""
    raw = decode_json_texts(raw)
    if "chat_template_kwargs" in raw:
        raw = tools_from_template_kwargs(raw)
    raw = standard_roles(rendered_chatml(turn_list_alias(raw)))
    converted = convert(raw)
    plain = converted is None and "messages" not in raw
    if converted is not None:
        raw = converted
    elif plain:
        raw = _plain_layouts(raw)
    system = raw.get("system")
    if isinstance(system, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in system):
        system = "\n\n".join(str(b.get("text", "")) for b in system)  # Anthropic text blocks
    if isinstance(system, str) and isinstance(raw.get("messages"), list):
        msgs = raw["messages"]
        if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system":
            if msgs[0].get("content") == system:
                raw = noted({k: v for k, v in raw.items() if k != "system"},
                            "top-level 'system' dropped: the same text is messages[0]")
            else:
                raw = noted(raw, "top-level 'system' kept as an extra key: the messages already start with another "
                                  "system message")
        else:
            raw = {k: v for k, v in raw.items() if k != "system"}
            raw["messages"] = [{"role": "system", "content": system}, *msgs]
            raw = noted(raw, "top-level 'system' moved into messages[0]")
    if plain:  # ShareGPT with a top-level "system": its tool definitions there, as a messages row's in convert()
        raw = convert_system_tools(raw) or raw
    _check_roles(raw)
    return raw



def _check_roles(raw: dict) -> None:
    """Refuse a message whose role no reader made standard: a call or result written as a role of its own that
    hsa does not read would otherwise pass as text (no call to vary or check), and chat templates fail on it."""
    msgs = raw.get("messages")
    if not isinstance(msgs, list):
        return
    try:
        if {m.get("role") for m in msgs if isinstance(m, dict)} <= ROLES:
            return
    except TypeError:  # a role that is no string: the schema check names it
        return
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if isinstance(role, str) and role not in ROLES:
            spellings = sorted((set(ROLE_ALIASES) | CALL_ROLES | RESULT_ROLES | {"function"}) - ROLES)
            raise RecordError("unknown role", f"messages[{i}] has role {role!r}; hsa reads {sorted(ROLES)} and the "
                              f"spellings {spellings}; rename the role in the data (a call belongs in an assistant "
                              "message's tool_calls, a result in a tool message)")
