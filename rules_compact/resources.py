"""Files bundled with the package: the JSON Schema, the default rules and presets."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_path", "bundled_rules", "bundled_name", "preset_names"]

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


def bundled_name(file: str) -> str | None:
    """A bundled rule file's name (``default``, ``preset:NAME``); None for any other file."""
    path, rules = Path(file).resolve(), data_path("rules").resolve()
    if path == rules / "default.yaml":
        return "default"
    return f"preset:{path.stem}" if path.parent == rules / "presets" and path.suffix == ".yaml" else None


def preset_names() -> list[str]:
    folder = data_path("rules") / "presets"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
