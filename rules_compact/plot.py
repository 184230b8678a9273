"""``replay --plot``: prompt tokens per round for each rule set (matplotlib, an optional extra)."""

from __future__ import annotations

from typing import Sequence

from .errors import InputError

__all__ = ["plot_rounds", "pyplot_for"]


def pyplot_for(path: str):
    """matplotlib's pyplot, for writing ``path``; InputError when ``path`` is not a .png or .svg
    file or matplotlib is missing (``replay`` checks this before replaying)."""
    if not path.lower().endswith((".png", ".svg")):
        raise InputError(f"{path}: --plot writes .png or .svg files")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'rules-compact[plot]'") from None
    return plt


def plot_rounds(replays: Sequence, path: str, title: str = "") -> None:
    """Draw one line per rule set; the file type follows the extension (.png or .svg)."""
    plt = pyplot_for(path)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for r in replays:
        ax.plot(range(1, r.rounds + 1), r.prompt_tokens, label=r.label, linewidth=1.4)
    ax.set_xlabel("round")
    ax.set_ylabel("prompt tokens (estimated)")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
