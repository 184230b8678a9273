"""Whole-corpus throughput: ``stats`` and ``replay`` with ``--jobs 1`` and ``--jobs 2``, and the
peak memory of a worker, with the issue-17 targets.

* Throughput: the tau-bench and tau2 files of tests/data/traces/ (335 short conversations in 3
  files), through ``rules_compact.cli.main`` in this process (its output to /dev/null: parsing,
  the worker pool, computing and printing, not the interpreter's start), ``--repeats`` times
  each, ``--jobs 1`` and ``--jobs 2`` interleaved so that load that comes and goes hits both
  alike; the fastest run of each is kept.  Conversations per second per core is the
  ``--jobs 1`` rate (one core), and the ``--jobs 2`` rate over 2.  Beside it, the speed-up by
  CPU time (``--jobs 1``'s CPU time over the mean of ``--jobs 2``'s two workers, or the
  command's own when that is more): every cost of splitting the work included, the waits left
  out; on a loaded machine the timed ratio says more about the other processes.
* Memory: the largest trace files (the biggest tau-bench file and the biggest Claude Code
  session), each read and computed (stats, replay, diff of the default against
  keep-recent-results) by a spawned worker process; its peak resident set (``ru_maxrss``),
  the interpreter, the imports and the compiled rules included.

The load average is printed before and after, and a control: the speed-up 2 processes get on a
pure-Python busy loop. On a shared machine the ratios only mean something when the control is
near 2.  Beside each command, a second control: two ``--jobs 1`` runs at once, each in a
process of its own (forked, nothing shared or sent), as twice the work: the speed-up two
independent processes get on this very work, what ``--jobs 2`` can hope for (below 2 when
the two cores slow each other down through the caches and memory they share, or the forked
processes fault in their memory; above 2 when a fresh process collects less garbage than
this one, which has run the commands before).

Usage:
    python3 bench/corpus.py               # about a minute on 2 cores
    python3 bench/corpus.py --repeats 5 --check
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_compact import batch  # noqa: E402
from rules_compact.cli import main as cli  # noqa: E402
from speed import machine  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces"
SHORT = sorted(str(p) for p in [*TRACES.glob("tau-bench/*.json"), *TRACES.glob("tau2-bench/*.json")])
LARGEST = [TRACES / "tau-bench" / "gpt-4o-airline.json",
           TRACES / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]
SPEEDUP_TARGET = 1.8
MEMORY_TARGET_MB = 200


def cpu_seconds() -> tuple[float, float]:
    """CPU time of this process, and of its ended children (the workers, once the pool is shut down)."""
    return tuple(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                            resource.RUSAGE_CHILDREN)))


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall-clock seconds of one run of the command, and the CPU seconds of this process and of its workers."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        (mine, theirs), started = cpu_seconds(), time.perf_counter()
        code = cli(argv)
        elapsed, (mine_after, theirs_after) = time.perf_counter() - started, cpu_seconds()
    if code != 0:
        raise SystemExit(f"{' '.join(argv)}: exit code {code}")
    return elapsed, mine_after - mine, theirs_after - theirs


def peak_mb(command: str, path: str) -> tuple[float, int]:
    """In a fresh worker: the peak resident set (MB) after computing ``command``'s rows of ``path``."""
    task = task_of(command)
    result = batch.read_results(task, path)
    if result.error is not None:
        raise result.error
    return own_peak_mb(), len(result.results)


def own_peak_mb() -> float:
    """This process's peak resident set in MB: VmHWM on Linux (``ru_maxrss`` of a spawned process
    starts at its parent's peak: Linux keeps it across the exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def task_of(command: str) -> batch.Task:
    return {"stats": lambda: batch.Stats.of(["default"]),
            "replay": lambda: batch.Replays.of(["default"]),
            "diff": lambda: batch.Diff.of("default", "preset:keep-recent-results")}[command]()


def spin(n: int = 5_000_000) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def control_speedup() -> float:
    """What 2 processes gain here on pure computation, nothing shared: a busy loop twice in this
    process against once in each of 2 forked ones. Near 2 on idle cores; on a shared machine it
    says how much of a second core the other jobs leave."""
    started = time.perf_counter()
    spin(), spin()
    serial = time.perf_counter() - started
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.apply(spin, (10,))  # the workers are up
        started = time.perf_counter()
        pool.map(spin, [5_000_000, 5_000_000], chunksize=1)
        parallel = time.perf_counter() - started
    return serial / parallel


def _quiet(argv: list[str]) -> None:
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        cli(argv)


def pair_seconds(argv: list[str]) -> float:
    """Wall-clock seconds of two runs of the command at once, each alone in a process forked
    from this one: no work shared, nothing sent between them."""
    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    runs = [context.Process(target=_quiet, args=(argv,)) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    return time.perf_counter() - started


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement (default 3)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every target is met")
    args = parser.parse_args(argv)
    print(machine())
    print(f"load average (1/5/15 min) before: {load()}")
    conversations = sum(len(r.results) for r in batch.run(batch.Stats.of(["default"]), SHORT, jobs=1))
    print(f"throughput: {len(SHORT)} files, {conversations} conversations (tau-bench, tau2); "
          f"best of {args.repeats}")
    print(f"control: a busy loop on 2 processes runs x{control_speedup():.2f} as fast as on 1")
    missed = []
    for command in ("stats", "replay"):
        best = {1: float("inf"), 2: float("inf")}
        cpu = {1: float("inf"), 2: float("inf")}
        per_worker = float("inf")  # --jobs 2: the mean CPU time of a worker, or the command's when more
        pair = float("inf")  # two --jobs 1 runs at once
        for _ in range(args.repeats):
            for jobs in best:
                wall, mine, workers = timed([command, *SHORT, "--jobs", str(jobs)])
                best[jobs], cpu[jobs] = min(best[jobs], wall), min(cpu[jobs], mine + workers)
                if jobs == 2:
                    per_worker = min(per_worker, max(mine, workers / 2))
            pair = min(pair, pair_seconds([command, *SHORT, "--jobs", "1"]))
        rate = {jobs: conversations / seconds for jobs, seconds in best.items()}
        speedup = rate[2] / rate[1]
        verdict = "met" if speedup >= SPEEDUP_TARGET else "MISSED"
        print(f"  {command:<6}  --jobs 1: {best[1]:6.2f} s, {rate[1]:7,.0f} conversations/s (per core)   "
              f"--jobs 2: {best[2]:6.2f} s, {rate[2]:7,.0f} conversations/s ({rate[2] / 2:,.0f} per core)   "
              f"x{speedup:.2f} (target >= {SPEEDUP_TARGET}: {verdict}; x{cpu[1] / per_worker:.2f} by CPU time: "
              f"{cpu[1]:.2f} s on 1 process, {per_worker:.2f} s per worker of 2; CPU of all {cpu[2]:.2f} s); "
              f"two --jobs 1 runs at once: {pair:.2f} s, x{2 * best[1] / pair:.2f} (independent processes on this work)")
        if verdict != "met":
            missed.append(f"{command} speed-up")
    print(f"peak memory of a worker (spawned; target < {MEMORY_TARGET_MB} MB):")
    context = multiprocessing.get_context("spawn")
    for path in LARGEST:
        for command in ("stats", "replay", "diff"):
            with context.Pool(1) as pool:  # a fresh process for each: its peak is this file's
                mb, count = pool.apply(peak_mb, (command, str(path)))
            verdict = "met" if mb < MEMORY_TARGET_MB else "MISSED"
            print(f"  {path.relative_to(TRACES)} ({path.stat().st_size / 2**20:.1f} MB, {count} conversations) "
                  f"{command:<6}: {mb:6.1f} MB ({verdict})")
            if verdict != "met":
                missed.append(f"{command} memory on {path.name}")
    print(f"control: a busy loop on 2 processes runs x{control_speedup():.2f} as fast as on 1")
    print(f"load average (1/5/15 min) after: {load()}")
    if missed:
        print("missed: " + ", ".join(missed))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
