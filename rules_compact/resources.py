"""Files bundled with the package: the JSON Schema, the default rules and presets."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_path", "bundled_rules", "preset_names"]

PACKAGE = Path(__file__).resolve().parent


def data_path(kind: str) -> Path:
    """``rules`` or ``schemas``: inside an installed wheel, else in the source checkout."""
    installed = PACKAGE / "_data" / kind
    return installed if installed.is_dir() else PACKAGE.parent / kind


def bundled_rules(name: str) -> Path | None:
    """``default`` or ``preset:NAME`` to a bundled file; None if the name is not one."""
    if name == "default":
        return data_path("rules") / "default.yaml"
    if name.startswith("preset:"):
        return data_path("rules") / "presets" / f"{name[len('preset:'):]}.yaml"
    return None


def preset_names() -> list[str]:
    folder = data_path("rules") / "presets"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
