"""The transform protocol, the registry, and the combinators.

A transform is a frozen configuration. All randomness is in ``sample(record, rng)``,
which returns JSON params (or a :class:`Skip` saying why it does not apply); ``apply(
record, params)`` is pure and deterministic. Params are the replay record: applying
them again gives the same variant, byte for byte.

Combinators (:class:`Sequence`, :class:`OneOf`, :class:`SomeOf`, :class:`Sometimes`)
are transforms too. Their params are the list of leaf applications they made, so a
whole recipe replays from one list.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from hsa.records import Record

from hsa.cache import exact_key
from hsa.harness import HARNESS_KEYS
from hsa.plans import ABSENT, BRANCHES, pinned

if TYPE_CHECKING:
    from hsa.plans import LeafRun, SlotPlan

__all__ = [
    "Transform",
    "Skip",
    "Applied",
    "register",
    "registry",
    "get_transform",
    "load_plugins",
    "ENTRY_POINT_GROUP",
    "modules_of",
    "import_modules",
    "from_config",
    "to_config",
    "Combinator",
    "Sequence",
    "OneOf",
    "SomeOf",
    "Sometimes",
    "run",
    "replay",
    "restorable",
    "SlotRng",
    "config_key",
    "FAMILIES",
    "check_probability",
    "check_choices",
    "HarnessView",
    "Facts",
    "Answers",
    "NotHarnessError",
    "on_harness",
    "applies_harness",
    "makes_steps",
    "sample_reusing",
]

FAMILIES = ("tool", "skill", "prompt", "hook", "trajectory", "meta")


@dataclasses.dataclass(frozen=True)
class Skip:
    """A transform that does not apply to a record, and why (counted in the stats, not an error)."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Applied:
    """One leaf transform applied to a record: what ran, with which params."""

    name: str
    config: dict
    params: dict

    def to_json(self) -> dict:
        return {"name": self.name, "config": self.config, "params": self.params}


_REGISTRY: dict[str, type[Transform]] = {}


def register(cls: type[Transform]) -> type[Transform]:
    """Class decorator: add a transform class to the registry under ``cls.name``."""
    name = cls.name
    if not name or "." not in name:
        raise ValueError(f"transform {cls.__qualname__} needs a name like 'family.action' (got {name!r})")
    if cls.sample is not Transform.sample and cls.sample_harness is not Transform.sample_harness:
        raise TypeError(f"transform {name!r} ({cls.__qualname__}) defines both sample and sample_harness: define "
                        "sample_harness when the draw reads the harness (and asks the rest through facts), else sample")
    if cls.apply is not Transform.apply and cls.apply_harness is not Transform.apply_harness:
        raise TypeError(f"transform {name!r} ({cls.__qualname__}) defines both apply and apply_harness: define "
                        "apply_harness when it changes harness parts only, else apply")
    if cls.apply is not Transform.apply and cls.mapping_steps is not Transform.mapping_steps:
        raise TypeError(f"transform {name!r} ({cls.__qualname__}) defines both apply and mapping_steps: define "
                        "mapping_steps when its change is the mapping steps it makes (hsa applies them), else apply")
    if cls.apply_harness is not Transform.apply_harness and cls.sample_harness is Transform.sample_harness and \
            cls.mapping_steps is Transform.mapping_steps:
        raise TypeError(f"transform {name!r} ({cls.__qualname__}) defines apply_harness but samples on the record: "
                        "an apply on the harness goes with sample_harness (or follows mapping_steps)")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"transform name {name!r} is already registered by {existing.__module__}.{existing.__qualname__}")
    _REGISTRY[name] = cls
    return cls


#: The entry-point group through which packages register transform families: each entry names a module whose
#: import registers its transforms (``@register``) or one :class:`Transform` class. hsa's own pyproject.toml
#: declares the built-in families here (``tool = "transforms.tool"``, ...); docs/writing-transforms.md shows a
#: third-party package doing the same. The registry loads the group on its first lookup; the core never imports
#: a family itself.
ENTRY_POINT_GROUP = "hsa.transforms"

_PLUGINS = {"loaded": False, "loading": False}


def load_plugins() -> None:
    """Load every entry point of :data:`ENTRY_POINT_GROUP` once (the first :func:`registry` lookup calls it).

    An entry that fails to import raises ``ImportError`` naming the entry, its distribution and what to do; the
    next lookup tries again. Importing a family module yourself (``import transforms``) registers it too: that
    is how a source checkout that was never installed, which has no entry points, loads the built-in families.
    """
    if _PLUGINS["loaded"] or _PLUGINS["loading"]:  # loading: a plugin module that looks a name up while imported
        return
    from importlib.metadata import entry_points

    _PLUGINS["loading"] = True
    try:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
            try:
                obj = ep.load()
            except Exception as exc:
                dist = getattr(ep.dist, "name", None) or "an installed package"
                raise ImportError(
                    f"entry point {ep.name} = {ep.value!r} of group {ENTRY_POINT_GROUP!r} (declared by {dist}) failed "
                    f"to load: {type(exc).__name__}: {exc}. Fix or reinstall that package (pip install -e . in its "
                    f"source folder), or uninstall it") from exc
            if isinstance(obj, type) and issubclass(obj, Transform):
                register(obj)
        _PLUGINS["loaded"] = True
    finally:
        _PLUGINS["loading"] = False


def registry() -> dict[str, type[Transform]]:
    """All registered transforms by name (the entry points of :data:`ENTRY_POINT_GROUP` are loaded on first use)."""
    load_plugins()
    return dict(sorted(_REGISTRY.items()))


def get_transform(name: str) -> type[Transform]:
    """The transform class registered as ``name``."""
    reg = registry()
    if name not in reg:
        family = name.split(".")[0]
        if family in FAMILIES and family != "meta" and not any(n.split(".")[0] == family for n in reg):
            raise KeyError(  # a built-in family that was never loaded
                f"unknown transform {name!r}: no transform of the {family!r} family is registered. The built-in "
                f"families register through the entry-point group {ENTRY_POINT_GROUP!r}, which an installed hsa "
                "declares; a source checkout used through PYTHONPATH alone, or an install older than the group, has "
                "none: run `pip install -e .` in the checkout, or `import transforms` before the lookup (the `hsa` "
                "command loads them itself)")
        close = [n for n in reg if n.split(".")[0] == name.split(".")[0]] or list(reg)
        raise KeyError(f"unknown transform {name!r}; registered: {', '.join(close)}")
    return reg[name]


def modules_of(transform: Transform) -> list[str]:
    """The modules that define the transforms of a tree (combinators included), sorted: importing them in another
    process (a pool or Ray worker) registers every transform the tree names, whatever that process's entry points
    (:func:`import_modules`)."""
    out = {type(transform).__module__}
    if isinstance(transform, Combinator):
        for c in transform.children():
            out.update(modules_of(c))
    return sorted(out)


def import_modules(names: list[str] | tuple[str, ...]) -> None:
    """Import ``names`` (from :func:`modules_of`), skipping ``__main__``: a worker's half of :func:`modules_of`."""
    import importlib

    for name in names:
        if name != "__main__":
            importlib.import_module(name)


class Transform:
    """Base class of every transform: subclass as a frozen dataclass and register it.

    Subclasses set ``name`` (``"family.action"``), ``family`` and, when they change the
    task rather than preserve it, ``task_preserving = False``.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    task_preserving: ClassVar[bool] = True

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        """Draw the params of this transform for ``record`` (all randomness lives here). A transform that defines
        :meth:`sample_harness` instead gets this for free: its draw on the record's harness."""
        if on_harness(self):
            return self.sample_harness(HarnessView(record), Facts(record), rng)
        raise NotImplementedError(f"{type(self).__qualname__} defines neither sample nor sample_harness")

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        """Draw the params of this transform from the record's harness (tools, skill tool, skills, hooks, prompt:
        ``harness["tools"]``), asking anything else of the record through ``facts`` (``facts.ask(fn, ...)``,
        ``facts.ask_set(fn, ...)``: ``fn(record, ...)``, a module-level pure function). Define this or
        :meth:`sample`, not both. A transform that samples on the harness has its draw made once per harness-variant
        pool slot and taken by every record of the slot whose harness parts it read are the same and whose answers
        to its questions are the same; nothing to declare (docs/writing-transforms.md)."""
        raise NotImplementedError

    def apply(self, record: Record, params: dict) -> Record:
        """Apply ``params`` to ``record``; pure: returns a new record, never modifies its input. A transform that
        defines :meth:`mapping_steps` or :meth:`apply_harness` instead gets this for free: the record with its steps
        applied (:func:`hsa.step_apply.apply_new_steps`), then with the harness parts :meth:`apply_harness` gives."""
        steps = makes_steps(self)
        if steps:
            from hsa.step_apply import apply_new_steps

            record = apply_new_steps(record, self.mapping_steps(HarnessView(record), params))
        if applies_harness(self):
            out = dict(record)
            out.update(self.apply_harness(HarnessView(record), params))
            return out
        if steps:
            return record
        raise NotImplementedError(f"{type(self).__qualname__} defines none of apply, mapping_steps and apply_harness")

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        """The mapping steps ``params`` make on the record's harness, for a transform whose change is its steps: a
        rename of tools, skills or parameters (``{"op": "tools", "map": {old: new}}``), a value step, a structural
        parameter step (``{"op": "params", "kind": "regroup", ...}``). hsa applies them to the whole record with the
        mapping's own appliers (:func:`hsa.step_apply.apply_new_steps`: schemas, calls, tool results, every text, hook
        literals, hook payloads and events), so the variant means what its mapping says, and under a harness-variant
        pool does their work on the harness once per slot and carries each record's messages through them. Read
        ``harness`` only (no facts: the steps are a function of the harness and the params); raise ``ValueError`` when
        the params do not fit it (a tool that is not there). Define this or :meth:`apply`, not both; with
        :meth:`apply_harness` too, that runs after the steps, for what they do not say (an explanation added to a
        description)."""
        raise NotImplementedError

    def apply_harness(self, harness: HarnessView, params: dict) -> dict:
        """The harness parts that ``params`` change, new (``{"tools": [...]}``), from the record's harness: for a
        transform that changes the harness and nothing else, with no mapping step (an order, a wording, a
        description: the restore step puts them back). Pure: the parts it returns are new objects (or the harness's
        own, unchanged), never the harness's edited in place. Define this or :meth:`apply`, not both; with
        :meth:`sample_harness`, a harness-variant pool slot samples and applies it once for all its records. With
        :meth:`mapping_steps` it is given the harness after the steps."""
        raise NotImplementedError

    # -- helpers shared by every transform
    def config(self) -> dict:
        """The configuration as JSON (dataclass fields)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def to_dict(self) -> dict:
        return {"transform": self.name, **self.config()}

    def families(self) -> set[str]:
        return {self.family}

    def leaves(self) -> list[Transform]:
        return [self]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Transform):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def to_config(transform: Transform) -> dict:
    """Serialise a transform (or combinator tree) to plain JSON."""
    return transform.to_dict()


def from_config(config: dict) -> Transform:
    """Build a transform (or combinator tree) from :func:`to_config` output, with clear errors."""
    if not isinstance(config, dict) or "transform" not in config:
        raise ValueError(f"a transform config must be an object with a 'transform' key (got {config!r})")
    cls = get_transform(config["transform"])
    kwargs = {k: v for k, v in config.items() if k != "transform"}
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(kwargs) - set(fields))
    if unknown:
        raise ValueError(f"{config['transform']}: unknown option(s) {', '.join(unknown)}; "
                         f"known options: {', '.join(fields) or '(none)'}")
    for key in ("transforms", "child"):
        if key in kwargs:
            kwargs[key] = tuple(from_config(c) for c in kwargs[key]) if key == "transforms" else from_config(kwargs[key])
    for key, f in fields.items():
        if key in kwargs and isinstance(kwargs[key], list) and key not in ("transforms",):
            kwargs[key] = tuple(kwargs[key])
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{config['transform']}: {exc}") from None


# --------------------------------------------------------------------------- option checks


def check_probability(value: float, name: str = "p") -> None:
    """Raise ``ValueError`` unless ``value`` is a number within [0, 1] (use in ``__post_init__``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be within [0, 1] (got {value!r})")


def check_choices(field: str, values: tuple, allowed: tuple) -> None:
    """Raise ``ValueError`` unless ``values`` is a non-empty selection from ``allowed``."""
    if not values:
        raise ValueError(f"{field} must name at least one of {list(allowed)}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {field} {bad}; expected some of {list(allowed)}")


# --------------------------------------------------------------------------- running


class SlotRng(random.Random):
    """The rng of a variant drawn from a harness-variant pool slot (:mod:`hsa.pipeline`, ``--harness-pool``).

    It is seeded from (seed, digest of the record's harness, slot), so records that share a harness draw the
    same harness-level params in the same slot. Combinators draw from it directly (their draws depend on the
    recipe only); each harness-level leaf samples with its own rng seeded by one draw from it, so a leaf whose
    draws depend on the record (a fresh-name retry, a text it reads) cannot shift the draws of the leaves after
    it. Leaves of the ``trajectory`` family sample with ``trajectory``, the per-record rng of (seed, record id,
    variant index): the trajectory stays as varied as without a pool.

    ``plan`` is the slot's :class:`hsa.plans.SlotPlan` (from the plan table of :mod:`hsa.context`), which the harness-level
    leaves of the variant read and build (:func:`leaf_run`); None runs every leaf as a record leaf.
    """

    def __init__(self, seed: int, trajectory: random.Random, plan: SlotPlan | None = None):
        super().__init__(seed)
        self.trajectory = trajectory
        self.plan = plan
        self.cursor = 0  # the leaf runs drawn so far: the index of the next one in the plan
        self.source: Record | None = None  # the record the variant is made from (set by run)
        #: the answers the records of this variant gave to the samplers' questions (:class:`Answers`); the pipeline
        #: gives the variants of one source record one table
        self.answers = Answers()

    def leaf_run(self, t: Transform, seed: int) -> LeafRun | None:
        """The plan's entry of the next leaf run (``t`` drawn ``seed``), made on the first variant that reaches
        it; None without a plan."""
        plan = self.plan
        if plan is None:
            return None
        i = self.cursor
        self.cursor = i + 1
        runs = plan.runs
        if i < len(runs):
            found = runs[i]
            if found.is_for(t, seed):
                return found
            self.plan = None  # not this slot's sequence of leaf runs (a plan keyed wrong): record leaves from here
            return None
        from hsa.plans import LeafRun

        found = LeafRun(t, seed)
        runs.append(found)
        return found

    def for_leaf(self, t: Transform) -> random.Random:
        return self.trajectory if t.family == "trajectory" else random.Random(self.leaf_seed())

    def leaf_seed(self) -> int:
        return self.getrandbits(128)


def _run_leaf(t: Transform, record: Record, rng: random.Random, applied: list, skipped: list) -> Record:
    run = None  # the slot plan's entry of this leaf run (harness-level leaves under a pool)
    source = answers = None
    steps = makes_steps(t)
    if isinstance(rng, SlotRng):
        if t.family == "trajectory":
            rng = rng.trajectory
        else:
            seed = rng.leaf_seed()
            harness_draw = on_harness(t)
            if steps or harness_draw:
                run = rng.leaf_run(t, seed)
                source, answers = rng.source, rng.answers
            if harness_draw and run is not None and applies_harness(t) and not steps:
                return _run_on_harness(t, record, seed, run, source, applied, skipped, rng.answers)
            if harness_draw:
                return _run_reusing(t, record, seed, rng, applied, skipped, run)
            rng = random.Random(seed)
    try:
        params = t.sample(record, rng)
        if isinstance(params, Skip):
            skipped.append((t.name, params.reason))
            return record
        out = _apply_carried(t, record, params, run, source, answers) if run is not None and steps else \
            t.apply(record, params)
    except Exception as exc:
        _name_the_raiser(exc, t)
        raise
    applied.append(Applied(t.name, t.config(), params))
    return out


def _parts_read(keys: tuple[str, ...], record: Record, source: Record | None) -> list:
    """What a harness-level leaf reads of ``record``: each part as ``[value, is_source, exact key or None]``, where
    ``is_source`` says it is the source's own part of a key the harness digest pins (:data:`hsa.plans.DIGEST_KEYS`:
    every record of the plan has it equal) and the exact key (:func:`hsa.cache.exact_key`) is made when needed."""
    read = []
    for k in keys:
        value = record.get(k, ABSENT)
        read.append([value, pinned(k, value, source), None])
    return read


def _same_read(read: list, held: list, answers: Answers | None = None) -> bool:
    """Whether the parts read now are those a plan branch was made from: each the same object, both the source's
    part of a key the harness digest pins (one plan: equal), or exactly equal (their exact keys, made once; the
    parts read now keyed through ``answers``, :meth:`Answers.exact`, where given: the same part is read by every
    branch and leaf run it meets)."""
    for a, b in zip(read, held):
        if a[0] is b[0] or (a[1] and b[1]):
            continue
        if a[2] is None:
            a[2] = exact_key(a[0]) if answers is None else answers.exact(a[0])
        if b[2] is None:
            b[2] = exact_key(b[0])
        if a[2] != b[2]:
            return False
    return True


def _keep(branches: list, branch: list) -> None:
    """Add ``branch`` to a leaf run's branches, the oldest dropped past :data:`hsa.plans.BRANCHES`."""
    branches.append(branch)
    if len(branches) > BRANCHES:
        del branches[0]


def _name_the_raiser(exc: Exception, t: Transform) -> None:
    """Mark ``exc`` with the transform that raised it (the innermost leaf): the run's summary reports it."""
    if not hasattr(exc, "hsa_transform"):
        try:
            exc.hsa_transform = t.name  # type: ignore[attr-defined]
        except AttributeError:  # an exception type without a __dict__
            pass


def _run_on_harness(t: Transform, record: Record, seed: int, run: LeafRun, source: Record | None, applied: list,
                    skipped: list, answers: Answers | None = None) -> Record:
    """:func:`_run_leaf` of a leaf that samples and applies on the harness, under a pool: its params (or skip) and
    the harness parts it made, from the slot plan's leaf run ``run`` (:func:`_on_harness_branch`). The parts made
    are shared by the records that take them, read only."""
    try:
        branch, taken = _on_harness_branch(t, record, seed, run.harness, source, apply=True, answers=answers)
        run.taken += taken
        params, made = branch[3], branch[4]
        if isinstance(params, Skip):
            skipped.append((t.name, params.reason))
            return record
        out = dict(record)
        out.update(made)
    except Exception as exc:
        _name_the_raiser(exc, t)
        raise
    applied.append(Applied(t.name, t.config(), params))
    return out


def _run_reusing(t: Transform, record: Record, seed: int, slot: SlotRng, applied: list, skipped: list,
                 run: LeafRun | None = None) -> Record:
    """:func:`_run_leaf` of a leaf that samples on the harness, under a pool: its params taken from the draws the
    slot plan's entry ``run`` holds (:func:`sample_reusing`), else drawn; then applied as usual."""
    try:
        params = sample_reusing(t, record, seed, None if run is None else run.harness, slot.source, slot.answers)
        if isinstance(params, Skip):
            skipped.append((t.name, params.reason))
            return record
        out = _apply_carried(t, record, params, run, slot.source, slot.answers) \
            if run is not None and makes_steps(t) else t.apply(record, params)
    except Exception as exc:
        _name_the_raiser(exc, t)
        raise
    applied.append(Applied(t.name, t.config(), params))
    return out


def sample_reusing(t: Transform, record: Record, seed: int, drawn: list | None, source: Record | None = None,
                   answers: Answers | None = None) -> dict | Skip:
    """The params ``t.sample_harness`` draws for ``record`` with ``random.Random(seed)``, taken from ``drawn`` (the
    draws of this leaf run kept so far, :func:`_on_harness_branch`) when one of them fits ``record``, else drawn and
    kept there. The same params as a draw, without it: a draw is a function of the seed, the harness parts it read
    and the answers it got. ``drawn`` None: drawn, nothing kept. ``answers``: the answers ``record`` gave already
    (:class:`Answers`)."""
    if drawn is None:
        return t.sample_harness(HarnessView(record), Facts(record, answers=answers), random.Random(seed))
    return _on_harness_branch(t, record, seed, drawn, source, apply=False, answers=answers)[0][3]


def _on_harness_branch(t: Transform, record: Record, seed: int, branches: list, source: Record | None, *,
                       apply: bool, answers: Answers | None = None) -> tuple[list, bool]:
    """The branch of ``branches`` (a leaf run's: ``[keys read, parts read, questions, params or Skip, parts made or
    None]``, newest last) that ``record`` takes, and True; or a new one, sampled (and with ``apply`` applied) on
    ``record``'s harness, kept in ``branches`` (up to :data:`hsa.plans.BRANCHES`, the oldest dropped), and False.
    A record takes a branch when it has the harness parts the branch read alike (the same objects, both the
    source's part of a key the harness digest pins, or equal exactly) and answers the questions it asked alike.
    Each question is answered once per record, whatever the branches and the draw (``answers``)."""
    if answers is None:
        answers = Answers()
    for branch in reversed(branches):
        if _same_read(_parts_read(branch[0], record, source), branch[1], answers) and \
                _same_answers(record, branch[2], answers):
            return branch, True
    harness, facts = HarnessView(record), Facts(record, log=[], answers=answers)
    params = t.sample_harness(harness, facts, random.Random(seed))
    made = t.apply_harness(harness, params) if apply and not isinstance(params, Skip) else None
    keys = tuple(harness.read)  # what the apply read too
    questions = tuple((is_set, fn, args, dict(answer) if is_set else answer) for is_set, fn, args, answer in facts.log)
    branch = [keys, _parts_read(keys, record, source), questions, params, made]
    _keep(branches, branch)
    return branch, False


def _same_answers(record: Record, questions: tuple, answers: Answers) -> bool:
    """Whether ``record`` answers each recorded question as the record of the draw did: a value alike (same repr:
    types and order too, so a set or dict built in another order is a miss, never a wrong hit), each membership
    test answered alike."""
    for is_set, fn, args, answer in questions:
        value = answers.of(record, fn, args)
        if is_set:
            if any((x in value) != was for x, was in answer.items()):
                return False
        elif repr(value) != answer:
            return False
    return True


class NotHarnessError(LookupError):
    """A sampler on the harness read a key of the record that is not part of the harness."""


class HarnessView(Mapping):
    """A record's harness as :meth:`Transform.sample_harness` reads it: the record's harness keys
    (:data:`hsa.harness.HARNESS_KEYS`: tools, skills, skill tool, hooks, and the prompt, its section bodies included),
    read only, with the keys read recorded (``read``, in the order first read). Any other key (``messages``, ``meta``)
    raises :class:`NotHarnessError`: what the draw needs of the rest of the record it asks through :class:`Facts`,
    so that the draw can be reused for every record that has the same harness parts and answers alike."""

    __slots__ = ("_record", "read")

    def __init__(self, record: Record):
        self._record = record
        self.read: dict[str, None] = {}

    def _key(self, key: str) -> str:
        if key not in HARNESS_KEYS:
            raise NotHarnessError(
                f"{key!r} is not part of the harness ({', '.join(HARNESS_KEYS)}): a sample_harness that needs it "
                f"asks it of the record through facts.ask(fn, ...), fn a module-level function of the record "
                "(docs/writing-transforms.md)")
        self.read[key] = None
        return key

    def __getitem__(self, key: str) -> Any:
        return self._record[self._key(key)]  # type: ignore[literal-required]

    def get(self, key: str, default: Any = None) -> Any:
        return self._record.get(self._key(key), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._key(key) in self._record

    def __iter__(self):
        for k in HARNESS_KEYS:
            if k in self._record:
                self.read[k] = None
                yield k

    def __len__(self) -> int:
        return sum(k in self._record for k in HARNESS_KEYS)

    def __repr__(self) -> str:
        return f"HarnessView({', '.join(k for k in HARNESS_KEYS if k in self._record)})"


class Answers:
    """What records answered to the samplers' questions (``fn(record, *args)``, :class:`Facts`), each asked of one
    record object once: kept by the record's identity with the record itself (so the identity is never another
    record's), valid because a record is never changed once made (transforms return new records). The pipeline
    keeps one table for the variants of one source record: they start from the same record, and a leaf that skips
    hands the next leaf the record it was given."""

    __slots__ = ("_held", "_exact")

    def __init__(self):
        self._held: dict = {}
        self._exact: dict = {}  # id -> (the part, its exact key)

    def of(self, record: Record, fn: Callable[..., Any], args: tuple) -> Any:
        key = (id(record), fn, repr(args))
        held = self._held.get(key)
        if held is not None and held[0] is record:
            return held[1]
        value = fn(record, *args)
        self._held[key] = (record, value)
        return value

    def exact(self, part: Any) -> Any:
        """:func:`hsa.cache.exact_key` of a part of these records (a record's tools, its prompt), kept by the part's
        identity with the part itself, as the answers are (parts, like records, are never changed once made)."""
        held = self._exact.get(id(part))
        if held is not None and held[0] is part:
            return held[1]
        key = exact_key(part)
        self._exact[id(part)] = (part, key)
        return key


class Facts:
    """The questions :meth:`Transform.sample_harness` asks of the rest of a record (its texts, calls, ``meta``):
    ``ask(fn, *args)`` is ``fn(record, *args)``, a value; ``ask_set(fn, *args)`` a set the sampler only tests
    membership of (``name in taken``). ``fn`` is a module-level pure function of the record and ``args`` (JSON-like
    values); answers compare by ``repr``. Under a pool each question and its answer is kept with the draw, and a
    record that answers every one alike takes the draw without a new one (:func:`sample_reusing`)."""

    __slots__ = ("_record", "log", "_answers")

    def __init__(self, record: Record, log: list | None = None, answers: Answers | None = None):
        self._record = record
        self.log = log  # [(is_set, fn, args, answer)] while a pool keeps the draw; None: nothing recorded
        self._answers = answers  # what the record answered already (Answers), or None: each answer worked out

    def _answer(self, fn: Callable[..., Any], args: tuple) -> Any:
        if self._answers is None:
            return fn(self._record, *args)
        return self._answers.of(self._record, fn, args)

    def ask(self, fn: Callable[..., Any], *args: Any) -> Any:
        answer = self._answer(fn, args)
        if self.log is not None:
            self.log.append((False, fn, args, repr(answer)))
        return answer

    def ask_set(self, fn: Callable[..., Any], *args: Any) -> Any:
        items = self._answer(fn, args)
        if self.log is None:
            return items
        out = _AskedSet(items)
        self.log.append((True, fn, args, out.answers))
        return out


def on_harness(t: Transform) -> bool:
    """Whether ``t`` samples on the harness (:meth:`Transform.sample_harness`)."""
    return type(t).sample_harness is not Transform.sample_harness


def applies_harness(t: Transform) -> bool:
    """Whether ``t`` applies on the harness (:meth:`Transform.apply_harness`)."""
    return type(t).apply_harness is not Transform.apply_harness


def makes_steps(t: Transform) -> bool:
    """Whether ``t``'s change is the mapping steps it makes (:meth:`Transform.mapping_steps`)."""
    return type(t).mapping_steps is not Transform.mapping_steps


class _AskedSet:
    """A set's membership tests, recorded (``answers``: item -> whether it was in)."""

    __slots__ = ("items", "answers")

    def __init__(self, items):
        self.items = items
        self.answers: dict = {}

    def __contains__(self, x) -> bool:
        found = x in self.items
        self.answers[x] = found
        return found


def _apply_carried(t: Transform, record: Record, params: dict, run: LeafRun, source: Record | None = None,
                   answers: Answers | None = None) -> Record:
    """``t.apply(record, params)`` of a leaf that makes mapping steps (:meth:`Transform.mapping_steps`), under a
    pool: the harness parts and the new mapping steps taken from the slot plan's entry ``run`` (by params and the
    parts read, :func:`hsa.renames.step_parts`: the hooks too on a record with hooks and no hook events) and the
    messages carried through those steps. A branch seen once is only noted (a slot that serves one variant pays no check);
    from its second sighting on, what the apply gave is kept when it is that: the other keys as they were (same
    order; the notes too, so a hook sync that refused, and noted it, is never kept), the mapping the input's plus
    steps :func:`hsa.renames.carries`, and the messages exactly what :func:`hsa.renames.carry_messages` makes of the
    input's (with the names each step keeps whole, :func:`hsa.renames.carry_keeps`: a function of the parts read,
    so the same for every record that takes the branch). A kept branch's parts and steps are shared, read only
    (transforms never modify their input, and no mapping step is changed in place). ``answers``: the variant's
    :class:`Answers`, which key the parts read (:func:`_same_read`)."""
    from hsa import _json
    from hsa.renames import carries, carry_keeps, carry_messages, step_parts
    from hsa.step_carry import compile_carry

    if not carries(record, ()):
        return t.apply(record, params)
    parts_of = step_parts(record)
    try:
        key = (exact_key(params), parts_of)
    except (TypeError, ValueError):  # pragma: no cover - exact_key falls back to repr
        return t.apply(record, params)
    read = _parts_read(parts_of, record, source)
    branch = next((b for b in run.steps if b[0] == key and _same_read(read, b[1], answers)), None)
    if branch is not None and branch[2] is not None:
        run.taken += 1
        parts, steps, entries = branch[2]
        out = dict(record)
        out.update(parts)
        out["messages"] = carry_messages(record["messages"], steps, entries=entries)
        out["mapping"] = record["mapping"] + list(steps)
        return out
    out = t.apply(record, params)
    if branch is None:  # seen once: noted, not checked
        _keep(run.steps, [key, read, None])
        return out
    n = len(record["mapping"])
    steps = out["mapping"][n:]
    if list(out) == list(record) and len(out["mapping"]) >= n and carries(out, steps) and \
            all(a is b for a, b in zip(out["mapping"], record["mapping"])) and \
            all(out[k] is record[k] or _json.strict_equal(out[k], record[k])
                for k in out if k not in parts_of and k not in ("messages", "mapping")):
        try:  # the names each step keeps whole, where a renamed name is part of a longer one (from the parts read)
            entries = compile_carry(steps, carry_keeps(record, steps))
        except Exception:  # noqa: BLE001 - the steps applied whole did not apply to the harness alone: not kept
            return out
        if _same_messages(carry_messages(record["messages"], steps, entries=entries), out["messages"]):
            branch[2] = ({k: out[k] for k in parts_of if k in out}, tuple(steps), entries)
    return out


def _same_messages(a: list, b: list) -> bool:
    """``a`` and ``b`` the same exactly: types, values and key order (their reprs: C speed)."""
    return repr(a) == repr(b)


def config_key(t: Transform) -> bytes:
    """A digest of ``t``'s name and config, a leaf's or a whole recipe's (part of a slot plan's key,
    :mod:`hsa.plans`), kept per transform (frozen dataclasses: equal configs, one key)."""
    try:
        return _leaf_key_cached(t)
    except TypeError:  # a field that is not hashable (a dict option): no memo
        from hsa.cache import digest

        return digest(t.name, t.config())


@functools.lru_cache(maxsize=1024)
def _leaf_key_cached(t: Transform) -> bytes:
    from hsa.cache import digest

    return digest(t.name, t.config())


def run(transform: Transform, record: Record, rng: random.Random) -> tuple[Record, list[Applied], list[tuple[str, str]]]:
    """Sample and apply ``transform`` (a leaf or a combinator tree) to ``record``.

    Returns the new record, the leaf applications (the replay record) and the
    ``(transform, reason)`` pairs of the leaves that skipped. The new record's mapping holds a
    ``restore`` step where its other steps cannot give ``record`` back (:func:`hsa.renames.with_restore`),
    so canonicalizing it gives ``record`` exactly.
    """
    applied: list[Applied] = []
    skipped: list[tuple[str, str]] = []
    if isinstance(rng, SlotRng) and rng.source is None:
        rng.source = record
    out = _run(transform, record, rng, applied, skipped)
    if applied:
        out = restorable(record, out)
    return out, applied, skipped


def restorable(source: Record, variant: Record) -> Record:
    """``variant`` with the ``restore`` step that makes canonicalize give ``source`` back exactly (invariant 8)."""
    from hsa.renames import with_restore

    return with_restore(source, variant)


def _run(t: Transform, record: Record, rng: random.Random, applied: list, skipped: list) -> Record:
    if isinstance(t, Combinator):
        return t._run(record, rng, applied, skipped)
    return _run_leaf(t, record, rng, applied, skipped)


def replay(record: Record | dict, applications: list[dict]) -> Record:
    """Apply a replay record (a row's ``transforms``) to ``record`` with no randomness.

    ``record`` is an internal record (:func:`hsa.records.normalize`) or an input line as it is read
    (normalised first); the result is an internal record (``hsa.denormalize`` writes it back)."""
    if "_fmt" not in record:
        from hsa.records import normalize

        record = normalize(record)
    out = _replay(record, applications)
    return restorable(record, out) if applications else out


def _replay(record: Record, applications: list[dict]) -> Record:
    for entry in applications:
        t = from_config({"transform": entry["name"], **entry.get("config", {})})
        record = t.apply(record, entry["params"])
    return record


# --------------------------------------------------------------------------- combinators


class Combinator(Transform):
    """Base class of the combinators (:class:`Sequence`, :class:`OneOf`, :class:`SomeOf`, :class:`Sometimes`): a
    transform whose params are the leaf applications its children made. ``issubclass(cls, Combinator)`` tells
    them from the leaves of the registry."""

    family: ClassVar[str] = "meta"

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        applied: list[Applied] = []
        skipped: list = []
        self._run(record, rng, applied, skipped)
        return {"applied": [a.to_json() for a in applied]}

    def apply(self, record: Record, params: dict) -> Record:
        return _replay(record, params["applied"])

    def children(self) -> tuple[Transform, ...]:
        raise NotImplementedError

    def families(self) -> set[str]:
        out: set[str] = set()
        for c in self.children():
            out |= c.families()
        return out

    def leaves(self) -> list[Transform]:
        return [leaf for c in self.children() for leaf in c.leaves()]

    def _run(self, record, rng, applied, skipped):  # pragma: no cover - abstract
        raise NotImplementedError


@register
@dataclasses.dataclass(frozen=True)
class Sequence(Combinator):
    """Apply every child in order."""

    name: ClassVar[str] = "meta.sequence"
    transforms: tuple[Transform, ...] = ()

    def children(self):
        return self.transforms

    def _run(self, record, rng, applied, skipped):
        for t in self.transforms:
            record = _run(t, record, rng, applied, skipped)
        return record


@register
@dataclasses.dataclass(frozen=True)
class OneOf(Combinator):
    """Apply one child, drawn with ``weights`` (equal by default)."""

    name: ClassVar[str] = "meta.one_of"
    transforms: tuple[Transform, ...] = ()
    weights: tuple[float, ...] | None = None

    def __post_init__(self):
        if self.weights is not None:
            if len(self.weights) != len(self.transforms):
                raise ValueError(f"weights has {len(self.weights)} entries for {len(self.transforms)} transforms")
            if any(w < 0 for w in self.weights) or not sum(self.weights) > 0:
                raise ValueError(f"weights must be non-negative with a positive sum (got {list(self.weights)})")

    def children(self):
        return self.transforms

    def _run(self, record, rng, applied, skipped):
        if not self.transforms:
            return record
        weights = list(self.weights) if self.weights is not None else [1.0] * len(self.transforms)
        t = rng.choices(self.transforms, weights=weights, k=1)[0]
        return _run(t, record, rng, applied, skipped)


@register
@dataclasses.dataclass(frozen=True)
class SomeOf(Combinator):
    """Apply ``n`` distinct children drawn at random (an int, or ``[lo, hi]`` inclusive), in recipe order."""

    name: ClassVar[str] = "meta.some_of"
    transforms: tuple[Transform, ...] = ()
    n: int | tuple[int, int] = 1

    def __post_init__(self):
        lo, hi = self._bounds()
        if lo < 0 or hi < lo:
            raise ValueError(f"n must be a non-negative int or [lo, hi] with lo <= hi (got {self.n!r})")

    def _bounds(self) -> tuple[int, int]:
        if isinstance(self.n, int):
            return self.n, self.n
        lo, hi = self.n
        return int(lo), int(hi)

    def children(self):
        return self.transforms

    def _run(self, record, rng, applied, skipped):
        lo, hi = self._bounds()
        k = min(rng.randint(lo, hi), len(self.transforms))
        chosen = sorted(rng.sample(range(len(self.transforms)), k))
        for i in chosen:
            record = _run(self.transforms[i], record, rng, applied, skipped)
        return record


@register
@dataclasses.dataclass(frozen=True)
class Sometimes(Combinator):
    """Apply the child with probability ``p``."""

    name: ClassVar[str] = "meta.sometimes"
    child: Transform | None = None
    p: float = 0.5

    def __post_init__(self):
        check_probability(self.p)
        if self.child is None:
            raise ValueError("meta.sometimes needs a child: child")

    def children(self):
        return (self.child,)

    def _run(self, record, rng, applied, skipped):
        if rng.random() < self.p:
            return _run(self.child, record, rng, applied, skipped)
        return record


def without_families(t: Transform, families: set[str]) -> Transform | None:
    """``t`` with every leaf of the given families removed (None when nothing is left)."""
    if isinstance(t, (Sequence, OneOf, SomeOf)):
        kept, weights = [], []
        for i, c in enumerate(t.transforms):
            c2 = without_families(c, families)
            if c2 is not None:
                kept.append(c2)
                if isinstance(t, OneOf) and t.weights is not None:
                    weights.append(t.weights[i])
        if not kept:
            return None
        if isinstance(t, OneOf):
            return OneOf(tuple(kept), tuple(weights) if t.weights is not None else None)
        if isinstance(t, SomeOf):
            lo, hi = t._bounds()
            return SomeOf(tuple(kept), (min(lo, len(kept)), min(hi, len(kept))))
        return Sequence(tuple(kept))
    if isinstance(t, Sometimes):
        c2 = without_families(t.child, families)
        return None if c2 is None else Sometimes(c2, t.p)
    return None if t.family in families else t

