"""What a harness is about: content words of tools and texts, and the harness's domain.

Used by ``tool.distractors`` (a distractor must be provably irrelevant to every real tool:
:func:`relevance`) and ``tool.describe`` (a domain phrase bank applies only on a harness of its
domain: :func:`harness_domain`). Pure functions of the record; no randomness.

**Content words** are the lower-case words of names (split at ``_``, ``-``, dots and camel
humps) and texts, folded to a stem (plural and ``-ing``/``-ed`` endings off) and without
stop words: English function words and the generic words of tool APIs (get, list, search,
id, name, value, ...) that say nothing about what a tool is for.

**Domain** of a harness: ``meta.domain`` when the record states one; otherwise the domain of
:data:`DOMAIN_WORDS` with the most distinct keyword stems among the content words of the
tool names and descriptions, the prompt sections and the skill names and descriptions, when
it has at least :data:`MIN_DOMAIN_HITS` and strictly more than any other domain (a domain
that specialises another, :data:`DOMAIN_PARENT`, wins over its parent once it has enough hits
of its own); else ``None`` (no domain: only domain-neutral bank groups apply).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from hsa import _json
from hsa.names import split_words

__all__ = ["content_words", "tool_words", "pool_tool_words", "relevance", "words_relevance", "nearest_tool", "harness_domain", "text_domain",
           "domain_applies", "DOMAIN_WORDS", "DOMAIN_PARENT", "MIN_DOMAIN_HITS", "RELEVANCE_THRESHOLD"]

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")

_STOP = frozenset("""
a an the and or of for to in on at by from with without into onto over under about as is are be been being was were
it its this that these those their there they them you your we our us he she his her i me my one two any all each
every some no not only if then else when where which who whom whose what how why can may might must should would
will shall do does did done has have had than also more most less least such e g eg etc via per between within
get set list lists search searches find fetch retrieve return returns returned look up show give make create add
update change delete remove check run call use used using given given pass passed optional required default true
false null none id ids name names type types value values number numbers string strings integer boolean object array
field fields key keys info information detail details data result results item items record records entry entries
query request response option options parameter parameters param params argument arguments tool tools function
new current specific certain other another based whether otherwise
""".split())


def _stem(word: str) -> str:
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 4 and w.endswith("ed") and not w.endswith("eed"):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """The content-word stems of ``text`` (names inside it are split into their words)."""
    out = set()
    for token in _WORD.findall(text):
        for w in split_words(token):
            if len(w) < 2 or w.isdigit():
                continue
            s = _stem(w)
            if w not in _STOP and s not in _STOP:
                out.add(s)
    return frozenset(out)


def _param_texts(schema: Any, out: list[str]) -> None:
    """Property names, their descriptions and string enum values of ``schema``, at any depth."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for k, v in props.items():
                out.append(str(k))
                if isinstance(v, dict) and isinstance(v.get("description"), str):
                    out.append(v["description"])
                _param_texts(v, out)
        for k in ("items", "anyOf", "oneOf", "allOf", "$defs", "definitions"):
            sub = schema.get(k)
            if isinstance(sub, dict):
                for v in (sub.values() if k in ("$defs", "definitions") else [sub]):
                    _param_texts(v, out)
            elif isinstance(sub, list):
                for v in sub:
                    _param_texts(v, out)
        enum = schema.get("enum")
        if isinstance(enum, list):
            out.extend(str(v) for v in enum if isinstance(v, str))


def tool_words(tool: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """``{"name", "description", "params", "output", "all"}``: the content words of each part of a tool definition
    (internal, OpenAI, MCP, Anthropic or flat form): the name; the description with the title (MCP ``title``,
    ``annotations.title``); the parameters' names, descriptions and string enum values at any depth; the same of
    the result's schema (:data:`OUTPUT_SCHEMA_KEYS`). Cached per the tool's JSON text (the words follow from it)."""
    try:
        key = _json.dumps_bytes(tool)
    except (TypeError, ValueError):  # not JSON: no cache
        return _tool_words(tool)
    return dict(_tool_words_of(key))


@lru_cache(maxsize=4096)
def _tool_words_of(text: bytes) -> dict[str, frozenset[str]]:
    """:func:`_tool_words` of the tool written as ``text`` (its strings and nesting are all the words read)."""
    return _tool_words(_json.loads(text))


#: Where a tool definition holds the JSON Schema of its result: MCP ``outputSchema``, OpenAI Responses
#: ``output_schema`` (and the distractor bank's), Gemini ``responseJsonSchema`` / ``response``.
OUTPUT_SCHEMA_KEYS = ("outputSchema", "output_schema", "responseJsonSchema", "response")


def _tool_words(tool: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    fn = tool.get("function", tool) if isinstance(tool.get("function"), dict) else tool
    fields = fn.get("extra") if isinstance(fn.get("extra"), dict) else fn  # the internal form keeps them in extra
    name = content_words(" ".join(split_words(str(fn.get("name", "")))))
    annotations = fields.get("annotations") if isinstance(fields.get("annotations"), dict) else {}
    titles = [t for t in (fields.get("title"), annotations.get("title")) if isinstance(t, str)]
    desc = content_words(" ".join([str(fn.get("description") or ""), *titles]))
    texts: list[str] = []
    _param_texts(fn.get("parameters") or fn.get("input_schema") or fn.get("inputSchema") or {}, texts)
    params = frozenset().union(*(content_words(t) for t in texts)) if texts else frozenset()
    out_texts: list[str] = []
    for key in OUTPUT_SCHEMA_KEYS:
        _param_texts(fields.get(key) or fn.get(key) or {}, out_texts)
    output = frozenset().union(*(content_words(t) for t in out_texts)) if out_texts else frozenset()
    return {"name": name, "description": desc, "params": params, "output": output,
            "all": name | desc | params | output}


#: A candidate distractor whose :func:`relevance` to a real tool reaches this is near it and is never added.
#: Measured on the fixtures and on hand-written airline / retail / coding / live-commerce harnesses against the
#: built-in distractor bank (docs/design.md, "Distractors"): of 570 pairs, the unrelated ones score at most 0.29
#: (run_sql_query beside Bash, sharing "read" and "timeout"), the related ones 0.44 and more.
RELEVANCE_THRESHOLD = 0.3


_POOL_WORDS: dict[int, tuple[Any, dict[str, frozenset[str]]]] = {}  # id -> (the pool tool, kept alive; its words)


def pool_tool_words(tool: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """:func:`tool_words` of a long-lived pool tool (the banks and pool files are loaded once), cached."""
    hit = _POOL_WORDS.get(id(tool))
    if hit is None or hit[0] is not tool:
        if len(_POOL_WORDS) > 65536:
            _POOL_WORDS.clear()
        hit = _POOL_WORDS[id(tool)] = (tool, tool_words(tool))
    return hit[1]


def words_relevance(a: dict[str, frozenset[str]], b: dict[str, frozenset[str]]) -> float:
    """:func:`relevance` of two tools given as their :func:`tool_words` (``a`` the candidate, ``b`` the real tool)."""
    if a["name"] & b["all"]:  # the candidate's subject is something the real tool names or talks about
        return 1.0
    if not a["all"] or not b["all"]:
        return 0.0
    return len(a["all"] & b["all"]) / min(len(a["all"]), len(b["all"]))


def relevance(candidate: Mapping[str, Any], real: Mapping[str, Any]) -> float:
    """How near ``candidate`` is to ``real``, in [0, 1]: the overlap coefficient of their content words
    (name, title, description, parameters with their enums, and output schema together, ``|A & B| / min(|A|, |B|)``),
    and 1.0 when a content word of the candidate's name occurs anywhere in the real tool (``search_flights`` beside
    ``search_direct_flights`` share ``flight``; ``get_weather_forecast`` beside a tool whose output schema describes
    "Weather conditions")."""
    return words_relevance(tool_words(candidate), tool_words(real))


def nearest_tool(candidate: Mapping[str, Any], tools: Iterable[Mapping[str, Any]], *,
                 pooled: bool = False) -> tuple[float, str | None]:
    """The highest :func:`relevance` of ``candidate`` to any of ``tools``, and that tool's name (``pooled``:
    ``candidate`` is a long-lived pool tool whose words may be cached)."""
    a = pool_tool_words(candidate) if pooled else tool_words(candidate)
    best, who = 0.0, None
    for t in tools:
        r = words_relevance(a, tool_words(t))
        if r > best:
            best, who = r, str(t.get("name") or (t.get("function") or {}).get("name"))
    return best, who


#: Keyword stems of each domain (after :func:`content_words`); a domain needs distinct hits.
DOMAIN_WORDS: dict[str, frozenset[str]] = {
    "live_commerce": frozenset({"live", "livestream", "stream", "streamer", "broadcast", "host", "viewer", "anchor",
                                "room", "shelf", "flash", "danmaku", "presenter", "audience"}),
    "airline": frozenset({"flight", "airport", "airline", "passenger", "baggage", "bag", "cabin", "seat", "boarding",
                          "departure", "arrival", "iata", "layover", "fare", "itinerary", "reservation"}),
    "retail": frozenset({"order", "product", "catalog", "catalogue", "cart", "refund", "exchange", "shipping",
                         "shipment", "sku", "inventory", "stock", "customer", "checkout", "purchase", "warehouse"}),
    "coding": frozenset({"file", "path", "directory", "bash", "shell", "command", "repository", "repo", "git",
                         "commit", "branch", "code", "grep", "edit", "diff", "test", "lint", "compile", "terminal"}),
    "travel": frozenset({"hotel", "booking", "trip", "destination", "guest", "travel", "nights", "resort"}),
    "finance": frozenset({"account", "balance", "transaction", "transfer", "payment", "bank", "card", "loan",
                          "invoice", "currency", "stock", "ticker"}),
    "telecom": frozenset({"phone", "line", "plan", "roaming", "sim", "mobile", "network", "bill", "carrier"}),
}

#: A domain that specialises another: a live-commerce harness also sells products and ships orders (retail words),
#: so a child with enough hits of its own wins over its parent, and the parent's bank groups apply to it.
DOMAIN_PARENT: dict[str, str] = {"live_commerce": "retail"}

#: The least number of distinct keyword stems of one domain that makes it the harness's domain.
MIN_DOMAIN_HITS = 2


def text_domain(words: frozenset[str]) -> str | None:
    """The domain of a set of content words (see the module docstring), or None."""
    hits = {d: len(words & kw) for d, kw in DOMAIN_WORDS.items()}
    for child, parent in DOMAIN_PARENT.items():
        if hits[child] >= MIN_DOMAIN_HITS:
            hits[child] = max(hits[child], hits[parent])
            hits[parent] = 0
    scores = sorted(((n, d) for d, n in hits.items()), reverse=True)
    (top, domain), (second, _) = scores[0], scores[1]
    return domain if top >= MIN_DOMAIN_HITS and top > second else None


def domain_applies(bank_domain: str | None, harness: str | None) -> bool:
    """True when a bank group of ``bank_domain`` (None: domain-neutral) may be used on a harness of ``harness``:
    the same domain or one that specialises it."""
    if bank_domain is None:
        return True
    while harness is not None:
        if harness == bank_domain:
            return True
        harness = DOMAIN_PARENT.get(harness)
    return False


def harness_domain(record: Mapping[str, Any]) -> str | None:
    """The domain of ``record``'s harness: ``meta.domain`` when given, else the keyword vote."""
    meta = record.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("domain"), str) and meta["domain"]:
        return meta["domain"]
    words: set[str] = set()
    for t in record.get("tools") or ():
        w = tool_words(t)
        words |= w["name"] | w["description"]
    prompt = record.get("prompt")
    if isinstance(prompt, dict):
        for s in prompt.get("sections") or ():
            if isinstance(s, dict):
                words |= content_words(" ".join(str(v) for v in s.values() if isinstance(v, str)))
    for s in record.get("skills") or ():
        if isinstance(s, dict):
            words |= content_words(f"{s.get('name', '')} {s.get('description', '')}")
    for m in record.get("messages") or ():
        if isinstance(m, dict) and m.get("role") == "system" and isinstance(m.get("content"), str):
            words |= content_words(m["content"])
    return text_domain(frozenset(words))
