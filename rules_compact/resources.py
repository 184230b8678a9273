"""Files bundled with the package: the JSON Schema, the default rules and presets."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

__all__ = ["data_path", "bundled_rules", "bundled_name", "shown_source", "preset_names", "SHORT_NAMES"]

PACKAGE = Path(__file__).resolve().parent
#: The bundled files addressed by a bare name, as ``default`` is (``preset:NAME`` works for the presets too).
SHORT_NAMES = {"default": "default.yaml", "default-recoverable": "presets/default-recoverable.yaml"}


def data_path(kind: str) -> Path:
    """``rules`` or ``schemas``: inside an installed wheel, else in the source checkout."""
    installed = PACKAGE / "_data" / kind
    return installed if installed.is_dir() else PACKAGE.parent / kind


def bundled_rules(name: str) -> Path | None:
    """``default``, ``default-recoverable`` or ``preset:NAME`` to a bundled file; None if the name is not one."""
    if name in SHORT_NAMES:
        return data_path("rules") / SHORT_NAMES[name]
    if name.startswith("preset:"):
        return data_path("rules") / "presets" / f"{name[len('preset:'):]}.yaml"
    return None


@lru_cache(maxsize=256)
def bundled_name(path: str) -> str | None:
    """``default`` or ``preset:NAME`` for the path of a bundled rule file; None for any other."""
    folder = data_path("rules")
    try:
        resolved = Path(path).resolve()
    except (OSError, ValueError):
        return None
    if resolved == (folder / "default.yaml").resolve():
        return "default"
    if resolved.parent == (folder / "presets").resolve() and resolved.suffix == ".yaml":
        return f"preset:{resolved.stem}"
    return None


def shown_source(path: str) -> str:
    """A rule file as a person reads it: a bundled one as ``default`` / ``preset:NAME`` (never
    its installed path), one under the working folder relative to it, any other as given."""
    bundled = bundled_name(path)
    if bundled is not None:
        return bundled
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        return path if relative.startswith("..") else relative
    return path


def preset_names() -> list[str]:
    folder = data_path("rules") / "presets"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
