"""Widespread public tool-calling layouts, converted to hsa's messages layout: one module per layout.

- **Hermes / Qwen tags** (:mod:`hsa.formats.hermes`): ``<tools>``, ``<tool_call>``, ``<tool_response>`` in
  ShareGPT ``conversations`` or ``messages`` turns.
- **Glaive function-calling v2** (:mod:`hsa.formats.glaive`): ``system`` / ``chat`` texts, and the same turns
  republished as ShareGPT ``conversations`` or text ``messages``.
- **ToolACE** (:mod:`hsa.formats.toolace`): a JSON tool list in the system text, ``[Name(args)]`` call lists.
- **Anthropic Messages** (:mod:`hsa.formats.anthropic`): ``tool_use`` / ``tool_result`` content blocks
  (:func:`convert_messages`).
- **Gemini** (:mod:`hsa.formats.gemini`): ``contents`` / ``parts``, ``functionDeclarations``,
  ``systemInstruction``.
- **OpenAI legacy function calling** (:mod:`hsa.formats.openai_legacy`): ``functions``, ``function_call``,
  ``function`` result messages.
- **ReAct text** (:mod:`hsa.formats.react`, ToolBench): ``Thought / Action / Action Input`` turns.
- **OpenAI Responses API items** (:mod:`hsa.formats.responses`): ``function_call`` / ``function_call_output`` /
  typed-text ``message`` items, as the OpenAI Agents SDK logs a run.
- **LangChain message dicts** (:mod:`hsa.formats.langchain`): ``messages_to_dict`` / ``dumpd`` output.
- **Vercel AI SDK** parts (:mod:`hsa.formats.ai_sdk`) and **Ollama**'s ``tool_name`` (:mod:`hsa.formats.ollama`).
- **Calls left as model output text** (:mod:`hsa.formats.text_calls`): Mistral ``[TOOL_CALLS]``, Llama 3.1
  ``<|python_tag|>`` / bare JSON calls to declared tools.
- **APIGen / xLAM** (:mod:`hsa.formats.xlam`): ``query`` / ``tools`` / ``answers``.
- **BFCL / Gorilla** (:mod:`hsa.formats.bfcl`): ``question`` / ``function`` (a multi-turn row names its
  tool classes instead: rejected with how to join their functions).
- **ShareGPT without tags** (:mod:`hsa.formats.sharegpt`): ``function_call`` and ``observation`` turns.
- Spellings read first: list and object columns stored as JSON text (:mod:`hsa.formats.json_texts`), the turn
  list under another key and roles under other names (:mod:`hsa.formats.aliases`), a conversation kept only as
  rendered ChatML text (:mod:`hsa.formats.chatml`), tools kept in ``chat_template_kwargs`` (SmolLM3's
  ``xml_tools``, :mod:`hsa.formats.template_kwargs`).
- **Tool definitions as JSON in a system message** (:mod:`hsa.formats.system_tools`): the tools of a row that has
  none, cut from the text.

:func:`to_messages_layout` (:mod:`hsa.formats.dispatch`) is what :func:`hsa.records.normalize` calls: the
spellings first, then :func:`convert`, which recognises the layout of a row and converts it, then the plain
layouts (xLAM, BFCL, ShareGPT), then a top-level system text moved into the messages. What the readers share is
in :mod:`hsa.formats.common`. The result is ``{"messages": [...], "tools": [...], ...other keys of the
row..., "notes": [...]}``: OpenAI / Hugging Face chat messages with ``tool_calls`` (arguments as objects) and
``tool`` messages carrying ``tool_call_id`` and ``name``. Keys that are not converted stay in the row; anything
dropped is named in a note. Conversion is pure: the input row is never modified. A row that is clearly in one of
these layouts but broken raises :class:`hsa.record_model.RecordError` (which key or turn, what was expected, what
to do).
"""

from hsa.formats.anthropic import convert_messages
from hsa.formats.common import SHAREGPT_ROLES
from hsa.formats.dispatch import convert, to_messages_layout

__all__ = ["convert", "convert_messages", "to_messages_layout", "SHAREGPT_ROLES"]
