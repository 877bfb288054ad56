"""Tool-schema transforms: the ``tool`` family.

Every way a tool surface changes — names, parameter names, order, descriptions, nesting,
distractors, values, dialect — each one kept in the record's mapping, so that every
variant's calls map back to the source calls exactly, and verified by
:func:`hsa.invariants.check_variant`. Renames go through :mod:`hsa.renames`, so a name
changes everywhere it occurs (whole tokens) and nowhere else; structural changes are
mapping steps whose record-level appliers are the core's (:data:`hsa.renames.STEP_APPLIERS`),
so :func:`hsa.renames.canonicalize` undoes them.

``tool.irrelevance`` is the one task-changing transform here: it is opt-in, its mapping
step is ``{"op": "opaque"}`` and the pipeline counts its variants separately.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from hsa import _json
from hsa.mapping import Mapping
from hsa.names import DIALECT_NAME_RULES, is_legal_param
from hsa.record_texts import Words
from hsa.records import Record
from hsa.renames import hook_literals, record_words
from hsa.transform import Facts, HarnessView, Skip, Transform, check_probability, register
from transforms import tool_functional as F
from transforms.tool_functional import check_banks as _check_banks
from transforms.tool_functional import check_range as _check_range
from transforms.tool_functional import check_styles as _check_styles
from transforms.tool_functional import fresh_name as _fresh
from transforms.tool_names import ParamRename, SwapNames, ToolRename
from transforms._banks import load_banks
from transforms._domains import RELEVANCE_THRESHOLD, content_words, harness_domain, tool_words
from transforms._toolnames import NAME_STYLES, RANDOM_STYLES, new_name
from transforms._toolhooks import hooks_read_whole_input
from transforms._toolshape import distractor_name, dress, shape_of
from transforms._tooltext import has_constraint, paraphrase, shorten
from transforms._toolschema import UnsupportedSchema, convert_tool, is_strict, node_at

__all__ = [
    "ToolRename",
    "ParamRename",
    "SwapNames",
    "Reorder",
    "Describe",
    "DropDescriptions",
    "Nest",
    "Flatten",
    "Distractors",
    "AddRequired",
    "Values",
    "Dialect",
    "Irrelevance",
    "new_name",
    "NAME_STYLES",
    "DIALECTS",
    "VALUE_RESTYLES",
    "paraphrase",
    "shorten",
    "has_constraint",
    "convert_tool",
]

#: Tool dialects ``tool.dialect`` renders to.
DIALECTS = ("openai", "anthropic", "mcp", "gemini")

# --------------------------------------------------------------------------- checks and helpers


#: Skip reason of the structural transforms when a hook reads tool inputs as a whole (invariant 7).
_WHOLE_INPUT = "a hook reads tool inputs as a whole (len, iteration, passing them on): changing their shape is not safe"


# --------------------------------------------------------------------------- order and descriptions


@register
@dataclasses.dataclass(frozen=True)
class Reorder(Transform):
    """Shuffle the order of tools, of the properties of every object schema, and of ``required`` lists.

    Nothing a call depends on changes, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.reorder"
    family: ClassVar[str] = "tool"

    tools: bool = True
    properties: bool = True
    required: bool = True

    def __post_init__(self):
        if not (self.tools or self.properties or self.required):
            raise ValueError("tool.reorder with tools, properties and required all false changes nothing")

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        out: dict[str, Any] = {}
        names = [t["name"] for t in harness["tools"]]
        if self.tools and len(names) > 1:
            order = list(names)
            rng.shuffle(order)
            if order != names:
                out["tools"] = order
        props: dict[str, list] = {}
        reqs: dict[str, list] = {}
        for t in harness["tools"]:
            for ptr, node in F.objects(t["parameters"]):
                keys = list(node["properties"])
                if self.properties and len(keys) > 1:
                    order = list(keys)
                    rng.shuffle(order)
                    if order != keys:
                        props.setdefault(t["name"], []).append([ptr, order])
                req = node.get("required")
                if self.required and isinstance(req, list) and len(req) > 1:
                    order = list(req)
                    rng.shuffle(order)
                    if order != req:
                        reqs.setdefault(t["name"], []).append([ptr, order])
        if props:
            out["properties"] = props
        if reqs:
            out["required"] = reqs
        if not out:
            return Skip("nothing to reorder (one tool, objects with one property)")
        return out

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        return {"tools": F.reorder({"tools": harness["tools"]}, params)["tools"]}


@register
@dataclasses.dataclass(frozen=True)
class Describe(Transform):
    """Rewrite tool and parameter descriptions: paraphrased from the phrase bank, or shortened.

    Each description changes with probability ``p``, by a mode drawn from ``modes``
    (``paraphrase``: bank phrases swapped for synonyms where their kind fits the context
    (a verb group at the start of a sentence, a noun group as a whole noun phrase, wh-phrases
    at the start only), a domain group only on a harness of its domain
    (:func:`transforms._domains.harness_domain`), names and code spans untouched;
    ``shorten``: first sentence, at most ``max_words`` words, keeping every list whole or dropping it, and
    every sentence and clause that carries a warning or a constraint such as only, never, must, do not,
    unless, if, accepts, defaults to, or that explains one of the parameter's enum values; each rewrite
    passes the meaning checker of :mod:`transforms.meaning`). Names that appear in
    descriptions follow later renames like any other text. Dropping descriptions is the
    separate, opt-in ``tool.drop_descriptions``.
    """

    name: ClassVar[str] = "tool.describe"
    family: ClassVar[str] = "tool"

    modes: tuple[str, ...] = ("paraphrase", "shorten")
    p: float = 0.5
    max_words: int = 8
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        bad = [m for m in self.modes if m not in ("paraphrase", "shorten")]
        if not self.modes or bad:
            raise ValueError(f"modes must be some of ['paraphrase', 'shorten'] (got {list(self.modes)})")
        check_probability(self.p)
        if self.max_words < 1:
            raise ValueError(f"max_words must be >= 1 (got {self.max_words})")
        _check_banks(self.banks)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        texts = []
        # the domain reads meta, the prompt, the skills and the system text: a question of the record
        domain = facts.ask(harness_domain) if "paraphrase" in self.modes else None
        tools = {"tools": harness["tools"]}
        for tool, ptr, text in F.descriptions(tools):
            if rng.random() >= self.p:
                continue
            mode = rng.choice(self.modes)
            new = (paraphrase(text, rng, self.banks, domain=domain) if mode == "paraphrase"
                   else shorten(text, self.max_words, F.enum_words(tools, tool, ptr)))
            if new != text and new.strip():
                texts.append({"tool": tool, "at": ptr, "text": new})
        if not texts:
            return Skip("no description changed (none drawn, or no bank phrase and already short)")
        return {"texts": texts}

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        return {"tools": F.set_descriptions({"tools": harness["tools"]}, params["texts"], self.name)["tools"]}


@register
@dataclasses.dataclass(frozen=True)
class DropDescriptions(Transform):
    """Remove tool descriptions (``tools``) and parameter descriptions (``params``), each with probability ``p``.

    Opt-in: without a description a task can become ambiguous, so no preset but
    ``hammer``-style ablations should use it. Calls and the mapping are unchanged.
    """

    name: ClassVar[str] = "tool.drop_descriptions"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    tools: bool = True
    params: bool = True

    def __post_init__(self):
        check_probability(self.p)
        if not (self.tools or self.params):
            raise ValueError("tool.drop_descriptions with tools=false and params=false drops nothing")

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        drop = []
        for tool, ptr, _ in F.descriptions({"tools": harness["tools"]}):
            if (ptr is None and not self.tools) or (ptr is not None and not self.params):
                continue
            if rng.random() < self.p:
                drop.append({"tool": tool, "at": ptr})
        if not drop:
            return Skip("no description drawn")
        return {"drop": drop}

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        return {"tools": F.drop_descriptions({"tools": harness["tools"]}, params["drop"], self.name)["tools"]}


# --------------------------------------------------------------------------- structure


@register
@dataclasses.dataclass(frozen=True)
class Nest(Transform):
    """Group sibling parameters into a new object parameter; calls are rewritten to match.

    For each tool (probability ``p``), ``size`` properties of one object level (the top
    level or a nested object) move into a new object named from the ``containers`` bank: one
    word for the whole variant (the next one only where a tool already has it), and only
    words that say nothing of what the parameters do (``options``, ``params``, ``config``...).
    The new object is required when one of the moved properties was, lists the moved
    required ones as required, and has ``additionalProperties: false`` when its parent
    does or the tool is strict, so strict schemas stay strict. The mapping step
    (``kind: regroup``) moves the argument paths back. Objects with property constraints
    (``anyOf``, ``patternProperties``...), the skill tool and parameters named in hook
    literals are left alone, and nothing is nested when a tool hook reads the argument
    object as a whole (``len(args)``, iteration): it would see a different object.
    """

    name: ClassVar[str] = "tool.nest"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    size: tuple[int, int] = (2, 3)
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _check_range(self.size, "size", 1)
        _check_banks(self.banks)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        lo, hi = _check_range(self.size, "size", 1)
        if hooks_read_whole_input(harness):
            return Skip(_WHOLE_INPUT)
        literals = hook_literals(harness)
        taken = facts.ask_set(record_words)
        containers = [str(c) for c in load_banks(tuple(self.banks))["containers"]] or ["options"]
        # one container word for the whole variant, as one maintainer would choose it (git_diff's and git_show's
        # parameters both under "options", never "spec" beside "config"); the next word only where it is taken
        order = rng.sample(containers, len(containers))
        steps = []
        for t in harness["tools"]:
            if rng.random() >= self.p or t["name"] == harness["skill_tool"]["name"]:
                continue
            schema = t["parameters"]
            if not F.local_refs_only(schema):
                continue
            parents = F.nest_parents(schema, literals, lo)
            if not parents:
                continue
            path, node, keys = parents[rng.randrange(len(parents))]
            k = rng.randint(lo, min(hi, len(keys)))
            chosen = sorted(rng.sample(range(len(keys)), k))
            group = [keys[i] for i in chosen]
            declared = node["properties"]
            called = facts.ask_set(F.keys_in_calls, t["name"], path)  # a sibling is declared or passed in a call
            cname = next((n for n in order if n not in declared and n not in called and n not in taken
                          and is_legal_param(n)), None)
            if cname is None:
                continue
            cname = F.name_in_style([cname], next(iter(declared)))
            if cname in declared or cname in called or cname in taken:
                continue
            steps.append(F.nest_step(t, path, node, group, cname, is_strict(t)))
        if not steps:
            return Skip("no tool with enough groupable parameters drawn")
        return {"steps": steps}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        return F.checked_steps(params["steps"], ("params:regroup",), "tool.nest")


@register
@dataclasses.dataclass(frozen=True)
class Flatten(Transform):
    """Move the properties of a nested object up into its parent (``address.city`` -> ``address_city``).

    For each tool (probability ``p``), one object parameter (at any depth, arrays of objects
    included) is flattened; new names join the object's name and the property's, in the
    object name's style. A property is required after flattening when the object was
    required and listed it. The mapping step (``kind: regroup``) keeps the object's schema,
    so the mapping and ``canonicalize`` rebuild it exactly. Skipped, with the reason, for
    nullable objects, objects with constraints on their properties, objects some call
    passes empty or with undeclared keys, names that are hook literals, and records whose
    tool hooks read the argument object as a whole.
    """

    name: ClassVar[str] = "tool.flatten"
    family: ClassVar[str] = "tool"

    p: float = 1.0

    def __post_init__(self):
        check_probability(self.p)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        if hooks_read_whole_input(harness):
            return Skip(_WHOLE_INPUT)
        literals = hook_literals(harness)
        taken = facts.ask_set(_taken_or_mapped)  # every token of the record and every name the source had
        steps = []
        for t in harness["tools"]:
            if rng.random() >= self.p or t["name"] == harness["skill_tool"]["name"]:
                continue
            cands = F.flatten_candidates(facts, t, literals, taken)
            if cands:
                steps.append(cands[rng.randrange(len(cands))])
        if not steps:
            return Skip("no flattenable object parameter (none, nullable, constrained, named in a hook, or not drawn)")
        return {"steps": steps}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        return F.checked_steps(params["steps"], ("params:regroup",), "tool.flatten")


# --------------------------------------------------------------------------- distractors


def _taken_or_mapped(record: Record) -> Words:
    """Every token of the record and every name its source had (what a distractor's name must not be)."""
    return Words(*record_words(record).parts, Mapping(record["mapping"]).names())


@register
@dataclasses.dataclass(frozen=True)
class Distractors(Transform):
    """Add irrelevant tools, and optional parameters no call uses.

    ``n`` tools (an int or ``[lo, hi]``) come from the ``tools`` bank (synthetic tools of
    unrelated domains) or, with ``pool_file``, from a JSON / JSONL file of tool definitions
    (for example other records' tools). A candidate must be provably irrelevant to every
    real tool: one whose name words occur anywhere in a real tool (its name, title, description,
    parameters, enum values or output schema), or whose content words overlap a real tool's by
    ``max_relevance`` or more (:func:`transforms._domains.relevance`), is never added, nor
    one that collides with any token of the record. Candidates of another domain than the
    harness's (:func:`transforms._domains.harness_domain`) are drawn first. They take the
    record's dialect, strict form when the record's tools are strict, and the look of their
    neighbours (:mod:`transforms._toolshape`): the naming style and namespace prefix of the real
    tools' names, their parameter-name style, and every field they all have (MCP ``title``,
    ``annotations``, ``execution``, ``outputSchema``, the schema's ``$schema``, ...). With probability
    ``params_p`` per tool, one optional parameter from the ``params`` bank is added (never
    to strict tools, whose parameters must all be required, nor one whose name shares a word
    with a parameter of that tool). Calls do not change, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.distractors"
    family: ClassVar[str] = "tool"

    n: int | tuple[int, int] = (1, 3)
    params_p: float = 0.0
    pool_file: str = ""
    banks: tuple[str, ...] = ()
    max_relevance: float = RELEVANCE_THRESHOLD

    def __post_init__(self):
        _check_range(self.n, "n")
        check_probability(self.params_p, "params_p")
        if not 0.0 < self.max_relevance <= 1.0:
            raise ValueError(f"max_relevance must be in (0, 1] (got {self.max_relevance!r}); "
                             f"the default {RELEVANCE_THRESHOLD} is measured in docs/design.md")
        _check_banks(self.banks)
        if self.pool_file:
            F.pool_file(self.pool_file)

    def _pool(self) -> Sequence[dict]:
        """The candidate tools, shared and read only (:func:`_internal_tool` copies what it keeps)."""
        if self.pool_file:
            return F.pool_tools(self.pool_file)
        return load_banks(tuple(self.banks))["tools"]

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        lo, hi = _check_range(self.n, "n")
        tools = harness["tools"]
        dialect = tools[0]["dialect"] if tools else "openai"
        # strict form when most real tools are strict (the skill tool aside, as in shape_of: its neighbours)
        skill = (harness.get("skill_tool") or {}).get("name")
        real = [t for t in tools if t["name"] != skill] or tools
        strict = bool(real) and sum(is_strict(t) for t in real) * 2 > len(real)
        taken = facts.ask_set(_taken_or_mapped)
        shape = shape_of(harness)  # what every real tool has: a distractor is written the same way
        legal, pool, other, rest = F.distractor_candidates(harness, self._pool(), taken, dialect, self.max_relevance,
                                                           domain=facts.ask(harness_domain),
                                                           name_of=lambda raw: distractor_name(raw, shape))
        out: dict[str, Any] = {"tools": [], "params": []}
        k = min(rng.randint(lo, hi), len(pool))
        if k:
            chosen = rng.sample(other, min(k, len(other)))  # other domains first, then the rest
            chosen += rng.sample(rest, k - len(chosen))
            picks = [pool[i] for i in sorted(chosen)]
            for raw in picks:
                out["tools"].append({"index": rng.randint(0, len(tools) + len(out["tools"])),
                                     "tool": dress(F.internal_tool(raw, dialect, strict), raw, shape)})
        if self.params_p > 0:
            bank = [dict(p) for p in load_banks(tuple(self.banks))["params"]]
            for t in tools:
                if rng.random() >= self.params_p or not bank:
                    continue
                if is_strict(t) or t["name"] == harness["skill_tool"]["name"]:
                    continue
                if not F.takes_new_params(t["parameters"]):
                    continue
                entry = bank[rng.randrange(len(bank))]
                pname = str(entry["name"])
                if pname in t["parameters"]["properties"] or pname in taken or \
                        facts.ask(F.passed_in_calls, t["name"], pname):
                    continue
                if content_words(pname) & tool_words(t)["params"]:
                    continue  # near a real parameter of this tool (format beside output_format)
                out["params"].append({"tool": t["name"], "name": pname, "schema": _json.copy(entry["schema"])})
        if not out["tools"] and not out["params"]:
            if legal and not pool:
                return Skip(f"every candidate distractor is near a real tool (relevance >= {self.max_relevance})")
            return Skip("no distractor fits (pool empty or every candidate collides with the record)")
        return out

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        return {"tools": F.add_distractors({"tools": harness["tools"]}, params, self.name)["tools"]}


@register
@dataclasses.dataclass(frozen=True)
class AddRequired(Transform):
    """RoTBench heavy noise: a new required parameter with one allowed value, which every call must pass.

    With probability ``p`` per tool, an entry of the ``required_params`` bank is added at the
    top level (``enum`` of its one value, described), the calls pass it, and the mapping's
    ``fill`` removes it again on the way back. Strict schemas stay strict (it is required).
    Skipped when a tool hook reads the argument object as a whole (it would see one key more).
    """

    name: ClassVar[str] = "tool.add_required"
    family: ClassVar[str] = "tool"

    p: float = 0.5
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _check_banks(self.banks)
        for entry in load_banks(tuple(self.banks))["required_params"]:
            F.json_type(dict(entry).get("value"))

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        bank = [dict(e) for e in load_banks(tuple(self.banks))["required_params"]]
        if not bank:
            return Skip("the required_params bank is empty")
        if hooks_read_whole_input(record):
            return Skip(_WHOLE_INPUT)

        taken = _taken_or_mapped(record)  # every token of the record and every name the source had
        steps = []
        for t in record["tools"]:
            if rng.random() >= self.p or t["name"] == record["skill_tool"]["name"]:
                continue
            if not F.takes_new_params(t["parameters"]):
                continue
            entry = bank[rng.randrange(len(bank))]
            if F.free_param_name(record, t, str(entry["name"]), taken):
                steps.append(F.require_step(t["name"], entry))
        if not steps:
            return Skip("no tool drawn, or every bank name collides")
        return {"steps": steps}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        return F.checked_steps(params["steps"], ("params:require",), "tool.add_required")


# --------------------------------------------------------------------------- values


_VALUE_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")
#: The styles ``tool.values`` draws from by default: case and separators only, so a value keeps its words.
VALUE_RESTYLES = ("screaming", "camel", "kebab", "snake", "pascal")
_VALUE_STYLES = (*VALUE_RESTYLES, "noun", "mask")


@register
@dataclasses.dataclass(frozen=True)
class Values(Transform):
    """Change the values a schema allows, and the calls with them: enum restyles and Hammer default re-draws.

    ``enum``: a string enum is restyled (with probability ``p``), all its values in one style of
    ``styles`` — by default case and separators only (``same_day`` -> ``SAME_DAY``, ``sameDay``,
    ``same-day``), so a value keeps its words and its meaning; a value written as a phrase
    (``New York``) is not an identifier and keeps its spelling; the schema's ``enum``/``default``/
    ``const``/``examples``, the calls, hook payloads and whole-token mentions in every text but tool
    results follow (a result is what the environment returned: docs/design.md, "Tool results"), and
    the enum keeps its order. ``mask`` (random strings, Hammer-style) and ``noun`` (a synonym of a
    word) are opt-in styles; each masked value is explained where the schema describes the parameter
    (``The value must be one of "kQ3vZr" (error), "warning", ...``, in the enum's order), so the
    model can still tell what it means and which comes first. A value is left alone (with the reason)
    when it is a hook literal, a plain word mentioned in text, a name, or also used at another tool or
    path. ``default``: for a number default that a call passes explicitly, a new default of the same
    type within the schema's bounds is drawn and the calls passing the old default pass the new one
    (Hammer), only when neither number occurs in any text and no call passes the new one; booleans
    (whose only other value inverts the meaning) and string defaults are never re-drawn. The
    mapping's ``values`` steps give the original values back, with their types. Skipped when a tool
    hook reads the argument object as a whole.
    """

    name: ClassVar[str] = "tool.values"
    family: ClassVar[str] = "tool"

    modes: tuple[str, ...] = ("enum", "default")
    p: float = 0.5
    styles: tuple[str, ...] = VALUE_RESTYLES
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        bad = [m for m in self.modes if m not in ("enum", "default")]
        if not self.modes or bad:
            raise ValueError(f"modes must be some of ['enum', 'default'] (got {list(self.modes)})")
        check_probability(self.p)
        _check_styles(self.styles, _VALUE_STYLES)  # mask and noun only when asked: docs/design.md, "Values"
        _check_banks(self.banks)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        if hooks_read_whole_input(harness):
            return Skip(_WHOLE_INPUT)
        reserved = hook_literals(harness) | F.harness_names(harness)  # hook literals and names stay as they are
        taken = facts.ask_set(record_words)
        skill = harness["skill_tool"]
        # every (tool, path) each JSON value occurs at: in the schemas (the harness), and in the calls (asked)
        where = F.schema_value_sites(harness["tools"])
        calls = facts.ask_set(F.call_value_sites)
        mentioned = F.mention_asker(facts)  # whole-token mentions in any text (messages, harness texts, hooks)

        steps: list[dict] = []
        explain: list[dict] = []  # masked values, explained where the schema describes the parameter
        for t in harness["tools"]:
            for path, enum, _, has_default in F.value_nodes(t["parameters"]):  # every path has a node
                if t["name"] == skill["name"] and path == (skill["argument"],):
                    continue
                enum = list(enum) if enum is not None else None
                if "enum" in self.modes and enum:
                    table = []
                    masked = []
                    used = set(enum)
                    # one decision and one style for the whole enum: a maintainer who restyles an enum restyles
                    # all of it ("request-headers", "request-body" -> "REQUEST_HEADERS", "REQUEST_BODY"), never
                    # one value in camelCase beside another in SCREAMING_CASE
                    if rng.random() >= self.p:
                        continue
                    style = rng.choice(self.styles)
                    for v in enum:
                        if not F.enum_value_changeable(v, (t["name"], path), reserved, where, mentioned, calls):
                            continue
                        if style != "mask" and any(c.isspace() for c in v):
                            continue  # a phrase ("New York"), not an identifier: no maintainer restyles it
                        new = _fresh(lambda: new_name(v, style, rng, mask_len=(4, 8), banks=self.banks),
                                     lambda n: n != v and n not in used and n not in taken
                                     and _VALUE_TOKEN.fullmatch(n) is not None,
                                     retry=style in RANDOM_STYLES)
                        if new is None:
                            continue
                        used.add(new)
                        table.append([v, new])
                        if style == "mask":
                            masked.append([v, new])
                    if table:
                        steps.append({"op": "values", "tool": t["name"], "path": list(path), "map": table,
                                      "texts": True})
                    if masked:
                        explain.append({"tool": t["name"], "path": list(path), "map": masked})
                elif "default" in self.modes and not enum and has_default:
                    node = node_at(t["parameters"], path)
                    d = node["default"]
                    if isinstance(d, bool) or not isinstance(d, (int, float)) or "$ref" in _json.dumps(node):
                        continue
                    if not facts.ask(F.passes_value, t["name"], path, d) or rng.random() >= self.p:
                        continue  # a default no call passes explicitly, or not drawn
                    new = self._redraw(d, node, rng)
                    if new is None or mentioned(F.number_texts(d) + F.number_texts(new)):
                        continue
                    if facts.ask(F.passes_value, t["name"], path, new):
                        continue
                    steps.append({"op": "values", "tool": t["name"], "path": list(path),
                                  "map": [[d, new], [new, d]], "texts": False})
        if not steps:
            return Skip("no value can change safely (no string enum or used number default that is unambiguous)")
        return {"steps": steps, "explain": explain} if explain else {"steps": steps}

    @staticmethod
    def _redraw(d: int | float, node: dict, rng: random.Random) -> int | float | None:
        from hsa.invariants import quick_valid, validator_for

        check = {k: v for k, v in node.items() if k in ("type", "minimum", "maximum", "exclusiveMinimum",
                                                          "exclusiveMaximum", "multipleOf")}

        def valid(value: int | float) -> bool:  # the quick walk's "valid" is jsonschema's; anything else asks it
            return quick_valid(check, value) is True or validator_for(check).is_valid(value)

        span = max(5, abs(d))
        for _ in range(16):
            if isinstance(d, int):
                lo = node.get("minimum", d - span if d < 0 else 0)
                hi = node.get("maximum", d + span)
                try:
                    new: int | float = rng.randint(int(lo), int(hi))
                except ValueError:
                    return None
            else:
                new = float(round(d + rng.uniform(-span, span), 2))
            if not _json.strict_equal(new, d) and valid(new):
                return new
        return None

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        return F.checked_steps(params["steps"], ("values",), "tool.values")

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        """The masked values explained in their parameters' descriptions (after the steps)."""
        if not params.get("explain"):
            return {}
        return {"tools": F.explain_values({"tools": harness["tools"]}, params["explain"], "tool.values")["tools"]}


# --------------------------------------------------------------------------- dialect


@register
@dataclasses.dataclass(frozen=True)
class Dialect(Transform):
    """Render the tool list as OpenAI, Anthropic, MCP or Gemini (OpenAPI-subset) definitions.

    A target is drawn from ``targets`` among those every tool name is legal in and that
    change the record; the dialect every tool is in already is never a target. Every field the
    target's specification defines is kept (MCP ``title``, ``annotations``, ``outputSchema``,
    ``execution``, ``icons``, ``_meta``; Anthropic ``cache_control``, ``strict``, ``input_examples``,
    ...; OpenAI ``strict``: :data:`hsa.tool_dialects.DIALECT_FIELDS`); the fields it cannot hold are
    noted in the record's notes and given back by canonicalize (the restore patch). For Gemini, local ``$ref`` s are inlined, ``oneOf``
    becomes ``anyOf``, ``[T, "null"]`` becomes ``nullable`` (which hsa's call check reads as admitting
    null); a target whose schemas would no longer accept every call is not drawn. Gemini
    declarations are flat and read back as the ``plain`` dialect; put this transform last in
    a recipe when Gemini's stricter name rule must hold for later renames. Calls do not
    change, so the mapping gets no step.
    """

    name: ClassVar[str] = "tool.dialect"
    family: ClassVar[str] = "tool"

    targets: tuple[str, ...] = ("openai", "anthropic", "mcp")

    def __post_init__(self):
        bad = [t for t in self.targets if t not in DIALECTS]
        if not self.targets or bad:
            raise ValueError(f"targets must be some of {list(DIALECTS)} (got {list(self.targets)})")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        from hsa.invariants import check_record

        if not record["tools"]:
            return Skip("no tools")
        own = {t["dialect"] for t in record["tools"]}
        options = [d for d in self.targets if all(DIALECT_NAME_RULES[d].match(t["name"]) for t in record["tools"])
                   and own != {d}]  # never the dialect every tool is in already
        rng.shuffle(options)
        before = _json.canonical(record["tools"])
        for target in options:
            try:
                out = self.apply(record, {"target": target})
            except UnsupportedSchema:
                continue
            if _json.canonical(out["tools"]) != before and not check_record(out):
                return {"target": target}
        return Skip("no target dialect fits (names illegal there, or schemas without a faithful form)")

    def apply(self, record: Record, params: dict) -> Record:
        target = params["target"]
        if target not in DIALECTS:
            raise ValueError(f"tool.dialect: unknown target {target!r}; expected one of {list(DIALECTS)}")
        return F.convert_tools(record, target)


# --------------------------------------------------------------------------- irrelevance


@register
@dataclasses.dataclass(frozen=True)
class Irrelevance(Transform):
    """Task-changing (opt-in): remove the gold tool of one turn and relabel the answer as no call.

    An assistant turn that calls tools other than the skill tool, none of them called
    earlier, is drawn; the trajectory is cut there, those tools are removed from the tool
    list, and the turn becomes a reply from the ``replies`` bank. The mapping gets an
    ``{"op": "opaque"}`` step: the variant is never counted as task-preserving, invariants
    2 and 6 do not apply to it, and the pipeline reports it separately.
    """

    name: ClassVar[str] = "tool.irrelevance"
    family: ClassVar[str] = "tool"
    task_preserving: ClassVar[bool] = False

    banks: tuple[str, ...] = ()

    def __post_init__(self):
        _check_banks(self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        replies = [str(r) for r in load_banks(tuple(self.banks))["replies"]]
        if not replies:
            return Skip("the replies bank is empty")
        turns = F.gold_turns(record)
        if not turns:
            return Skip("no assistant turn calls a tool that was not called before")
        mi, gold = turns[rng.randrange(len(turns))]
        return {"turn": mi, "removed": gold, "reply": rng.choice(replies)}

    def apply(self, record: Record, params: dict) -> Record:
        return F.cut_at_turn(record, params, self.name)
