"""A stand-in for the metadata an install of this checkout writes, for tests that load transforms through the
``hsa.transforms`` entry-point group.

The shared environment may hold an install of another checkout (or one older than the group); a folder with an
``hsa`` dist-info whose entry_points.txt is this checkout's pyproject.toml, put first on ``PYTHONPATH``, is what
``importlib.metadata`` then reads (it takes the first distribution of a name along ``sys.path``), before and after
the environment is reinstalled.
"""

from __future__ import annotations

import os
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def entry_points_txt(groups: dict[str, dict[str, str]]) -> str:
    out = []
    for group, entries in groups.items():
        out.append(f"[{group}]")
        out += [f"{name} = {value}" for name, value in entries.items()]
        out.append("")
    return "\n".join(out)


def dist_info(folder: Path, name: str, version: str, groups: dict[str, dict[str, str]]) -> Path:
    """Write ``folder/<name>-<version>.dist-info`` declaring ``groups``; return ``folder``."""
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points_txt(groups), encoding="utf-8")
    return folder


def installed_checkout(folder: Path) -> Path:
    """``folder`` holding the dist-info an install of this checkout would have (its entry points only)."""
    project = pyproject()["project"]
    groups = dict(project.get("entry-points", {}))
    if project.get("scripts"):
        groups["console_scripts"] = project["scripts"]
    return dist_info(folder, project["name"], project["version"], groups)


def env_with(*paths: Path) -> dict[str, str]:
    """``os.environ`` with ``paths``, then this checkout, first on ``PYTHONPATH``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)])}
