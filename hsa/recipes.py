"""Recipes: serialisable trees of transforms, in YAML or JSON, with a version envelope.

A recipe file is ``{"__version__": 1, "transform": <transform config>}``; a bare
transform config (or a list of them, read as a sequence) is accepted too. Built-in
recipes live in ``hsa/recipes/*.yaml`` and are loaded by name.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from hsa import _yaml
from hsa.transform import Sequence, Transform, from_config, to_config, without_families

__all__ = ["RECIPE_VERSION", "load_recipe", "save_recipe", "recipe_to_dict", "recipe_from_dict",
           "builtin_recipes", "hold_out"]

RECIPE_VERSION = 1


def builtin_recipes() -> dict[str, str]:
    """Built-in recipe names and the first comment line of each (its summary)."""
    out = {}
    for entry in sorted(resources.files("hsa").joinpath("recipes").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            first = entry.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
            out[entry.name[:-5]] = first
    return out


def recipe_from_dict(data: Any, *, source: str = "recipe") -> Transform:
    """Build a recipe from its JSON form (envelope, bare config or list of configs)."""
    if isinstance(data, list):
        return Sequence(tuple(from_config(c) for c in data))
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a recipe is an object or a list of transforms (got {type(data).__name__})")
    if "__version__" in data:
        version = data["__version__"]
        if version != RECIPE_VERSION:
            raise ValueError(f"{source}: recipe version {version!r} is not supported (this hsa reads {RECIPE_VERSION})")
        if "transform" not in data:
            raise ValueError(f"{source}: the envelope has no 'transform' key")
        data = data["transform"]
    try:
        return from_config(data)
    except (KeyError, ValueError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise ValueError(f"{source}: {msg}") from None


def recipe_to_dict(recipe: Transform) -> dict:
    """The versioned JSON form of ``recipe``."""
    return {"__version__": RECIPE_VERSION, "transform": to_config(recipe)}


def load_recipe(name_or_path: str | Path) -> Transform:
    """Load a built-in recipe by name, or a YAML / JSON recipe file by path."""
    import yaml

    text: str
    source = str(name_or_path)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        if not path.exists():
            raise FileNotFoundError(f"recipe file {path} does not exist; built-in recipes: "
                                    f"{', '.join(builtin_recipes())}")
        text = path.read_text(encoding="utf-8")
    else:
        res = resources.files("hsa").joinpath("recipes", f"{name_or_path}.yaml")
        if not res.is_file():
            raise ValueError(f"unknown recipe {name_or_path!r}: not a file and not a built-in recipe "
                             f"({', '.join(builtin_recipes())})")
        text = res.read_text(encoding="utf-8")
        source = f"built-in recipe {name_or_path!r}"
    try:
        data = json.loads(text) if path.suffix == ".json" else _yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{source}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    return recipe_from_dict(data, source=source)


def save_recipe(recipe: Transform, path: str | Path) -> None:
    """Write ``recipe`` as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
    import yaml

    path = Path(path)
    data = recipe_to_dict(recipe)
    if path.suffix in (".yaml", ".yml"):
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    else:
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def hold_out(recipe: Transform, families: set[str] | list[str]) -> Transform:
    """``recipe`` without any transform of ``families`` (an empty sequence when nothing is left)."""
    from hsa.transform import FAMILIES

    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown family {unknown}; families: {', '.join(FAMILIES)}")
    kept = without_families(recipe, set(families))
    return kept if kept is not None else Sequence(())
