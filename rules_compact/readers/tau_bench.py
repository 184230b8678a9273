"""tau-bench results."""

from __future__ import annotations


from .base import Draft, message_list


def is_tau_bench_result(data: dict) -> bool:
    return isinstance(data.get("traj"), list) and "task_id" in data


def is_tau_bench_list(data: list) -> bool:
    return all(isinstance(r, dict) and isinstance(r.get("traj"), list) for r in data)


def tau_bench_draft(result: dict, i: int) -> Draft:
    messages = message_list(result.get("traj"), f"tau-bench result {i}: 'traj'")
    notes = []
    if isinstance(result.get("task_id"), (int, str)):
        notes.append(f"task {result['task_id']}" + (f", trial {result['trial']}"
                                                     if isinstance(result.get("trial"), int) else ""))
    return Draft(messages, "tau-bench", "openai", notes)
