"""Whole corpora: ``--jobs``, ``--table``, ``--scheduler`` and the ``rules_compact.batch`` API.

What a user notices: the text of ``stats``, ``replay`` and ``diff`` is the same with any number
of workers and on Dask; the rows in a table are the library's numbers; a rule file reaches a
fresh worker as text; Ctrl-C stops the workers; the progress bar only shows on a terminal.
The Dask test runs a LocalCluster of 2 in-process workers (a few seconds)."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

from conftest import ROOT, TRACES
from rules_compact import batch, load_rules
from rules_compact.analysis import conversation_stats
from rules_compact.cli import main
from rules_compact.cli.output import Progress
from rules_compact.documents import read_conversations_from
from rules_compact.errors import InputError
from rules_compact.plugins import PluginError, hookimpl, use_plugins

# small real logs of six formats; resolver_mock_output holds several conversations
FILES = [TRACES / p for p in (
    "codex/legacy-response-records.jsonl",
    "claude-code/agent-acompact-e1f845.jsonl",
    "openhands/resolver_mock_output.jsonl",
    "codex/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
    "claude-code/agent-a7be2f0.messages.json",
    "openhands/basic_gui_mode.json",
    "swe-agent/pydicom__pydicom-1458.traj",
)]
COMMANDS = {
    "stats": ["stats", *FILES],
    "replay": ["replay", *FILES, "--compare", "preset:keep-recent-results", "--cache-expiry"],
    "diff": ["diff", "default", "preset:observation-masking", *FILES, "--all"],
}

EXTENDING = """\
version: 1
name: keep-five
extends: base.yaml
rules:
  - {name: keep-recent, match: {age: {unit: tool_results, lt: 5}}, action: keep, before: clear}
"""
BASE = """\
version: 1
name: base
rules:
  - {name: clear, match: {role: tool}, action: placeholder}
"""


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.fixture(scope="module")
def fresh():
    """A worker process that shares no memory with this one (spawned, not forked)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        yield pool


@pytest.fixture(scope="module")
def serial():
    """Each command's output with --jobs 1."""
    out = {}
    for name, argv in COMMANDS.items():
        buffer = io.StringIO()
        stdout, sys.stdout = sys.stdout, buffer
        try:
            assert main([str(a) for a in argv] + ["--jobs", "1"]) == 0
        finally:
            sys.stdout = stdout
        out[name] = buffer.getvalue()
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_workers_print_what_one_process_prints(capsys, serial, command):
    rc, out, err = run(capsys, *COMMANDS[command], "--jobs", "3")
    assert rc == 0, err
    assert out == serial[command]
    names = [line for line in out.splitlines() if any(str(f) in line for f in FILES)]
    assert len(names) >= len(FILES)  # every file, in input order
    assert [next(i for i, f in enumerate(FILES) if str(f) in line) for line in names] == \
        sorted(next(i for i, f in enumerate(FILES) if str(f) in line) for line in names)


def test_table_rows_are_the_librarys_numbers_and_the_json_lines(capsys, tmp_path):
    table = tmp_path / "rows.jsonl"
    rc, out, err = run(capsys, "stats", *FILES, "--jobs", "2", "--table", table)
    assert rc == 0, err
    rows = [json.loads(line) for line in table.read_text(encoding="utf-8").splitlines()]
    rules = [load_rules("default")]
    expected = []
    for path in FILES:
        for conv in read_conversations_from(str(path)):
            stats = conversation_stats(conv.name, conv.messages, rules, conv.format)
            expected.append((conv.name, stats.messages, stats.tool_results, stats.report.tokens_before,
                             stats.report.tokens_after, {r: t for r, t in stats.saved_by_rule.items() if t}))
    assert [(r["conversation"], r["messages"], r["tool_results"], r["tokens_before"], r["tokens_after"],
             r["saved_by_rule"]) for r in rows] == expected
    assert f"total ({len(rows)})" in out  # the text is printed as well
    rc, out, err = run(capsys, "stats", *FILES, "--json")
    assert rc == 0, err
    assert [json.loads(line) for line in out.splitlines()] == rows


@pytest.mark.parametrize("command", ["stats", "replay", "diff"])
def test_parquet_table_holds_the_jsonl_rows(capsys, tmp_path, command):
    pq = pytest.importorskip("pyarrow.parquet")
    argv = [a for a in COMMANDS[command] if a not in FILES] + FILES[:5]
    if command == "stats":  # a preset that compacts these short files (the default leaves them: too short to pay back)
        argv += ["-r", "preset:observation-masking"]
    rc, _, err = run(capsys, *argv, "--table", tmp_path / "rows.jsonl")
    assert rc == 0, err
    rc, _, err = run(capsys, *argv, "--table", tmp_path / "rows.parquet")
    assert rc == 0, err
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    parquet = pq.read_table(tmp_path / "rows.parquet").to_pylist()
    if command == "stats":  # a map column reads back as (key, value) pairs
        assert any(r["saved_by_rule"] for r in rows) and not all(r["saved_by_rule"] for r in rows)
        parquet = [{**r, "saved_by_rule": dict(r["saved_by_rule"])} for r in parquet]
    assert parquet == rows


def test_parquet_table_writes_a_name_that_is_not_utf8_escaped_as_jsonl_does(capsys, tmp_path):
    """One input named with a byte that is not UTF-8 made Parquet refuse the whole table."""
    pq = pytest.importorskip("pyarrow.parquet")
    odd = os.path.join(os.fsencode(tmp_path), b"run-\xff.json")
    with open(odd, "wb") as fh:
        fh.write(FILES[4].read_bytes())
    argv = ["stats", FILES[5], os.fsdecode(odd), "--jobs", "1"]
    rc, _, err = run(capsys, *argv, "--table", tmp_path / "rows.jsonl")
    assert rc == 0, err
    rc, _, err = run(capsys, *argv, "--table", tmp_path / "rows.parquet")
    assert rc == 0, err
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    parquet = [{**r, "saved_by_rule": dict(r["saved_by_rule"])} for r in pq.read_table(tmp_path / "rows.parquet").to_pylist()]
    assert rows[1]["conversation"] == os.fsdecode(odd)  # the JSON escape \udcff reads back as the name
    assert [r["conversation"] for r in parquet] == [str(FILES[5]), f"{tmp_path}/run-\\udcff.json"]
    assert [{**r, "conversation": None} for r in parquet] == [{**r, "conversation": None} for r in rows]


# files of many conversations: tau2 (20), OpenHands gorilla output (100), resolver_mock_output (2)
MANY = [TRACES / p for p in (
    "tau2-bench/2025-08-10T02-44-06_telecom_gpt-4o_user_gpt-4o.json",
    "openhands/gorilla-output_gpt-4o-2024-05-13_hf.jsonl",
    "openhands/resolver_mock_output.jsonl",
)]
SPLIT = {
    "stats": ["stats", MANY[0], FILES[0], MANY[1], FILES[4], MANY[2]],
    "replay": ["replay", MANY[0], FILES[0], MANY[1], MANY[2], "--compare", "preset:keep-recent-results"],
    "diff": ["diff", "default", "preset:observation-masking", MANY[1], FILES[0], MANY[0]],
}


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of about 40 messages: each file of MANY but the last splits into several."""
    monkeypatch.setattr(batch.files, "CHUNK_MESSAGES", 40)


@pytest.mark.parametrize("command", sorted(SPLIT))
def test_files_of_many_conversations_spread_over_workers_print_the_same(capsys, tmp_path, small_chunks, command):
    outputs = []
    for jobs in ("1", "2", "3"):
        table = tmp_path / f"rows-{jobs}.jsonl"
        rc, out, err = run(capsys, *SPLIT[command], "--jobs", jobs, "--table", table)
        assert rc == 0, err
        outputs.append((out, err, table.read_text(encoding="utf-8")))
        rc, out, err = run(capsys, *SPLIT[command], "--jobs", jobs, "--json")
        assert rc == 0, err
        outputs.append((out, err))
    assert outputs[0::2] == [outputs[0]] * 3 and outputs[1::2] == [outputs[1]] * 3
    names = [json.loads(line)["conversation"] for line in outputs[1][0].splitlines()]
    expected = [conv.name for path in SPLIT[command] if path in MANY or path in FILES
                for conv in read_conversations_from(str(path))]
    assert list(dict.fromkeys(names)) == expected  # every conversation, in input order


def test_the_chunks_spill_to_a_folder_that_is_gone_when_the_command_ends(capsys, monkeypatch, tmp_path, small_chunks):
    """Split files' chunks wait in a spill folder, not in the command's process; it is removed
    at the end, after a bad file too."""
    made = []

    def spill_folder():
        made.append(tempfile.mkdtemp(dir=tmp_path))
        return batch.files.Spill(made[-1])

    monkeypatch.setattr(batch.local, "spill_folder", spill_folder)
    spilled = []
    opened = batch.local.Workers._open

    def note_spill(self, file):
        opened(self, file)
        if file.split is not None:
            spilled.append((file.split.spill, os.path.getsize(file.split.spill), len(file.split.chunks)))

    monkeypatch.setattr(batch.local.Workers, "_open", note_spill)
    rc, out, err = run(capsys, "stats", MANY[0], tmp_path / "missing.json", MANY[1], "--jobs", "2", "--json")
    assert rc == 2 and len(out.splitlines()) == 120
    assert len(made) == 1 and len(spilled) == 2
    assert all(os.path.dirname(name) == made[0] and size > 0 and chunks > 1 for name, size, chunks in spilled)
    assert list(tmp_path.iterdir()) == []


def test_stdin_among_files_is_read_by_the_command_and_spread_alike(capsys, monkeypatch, small_chunks):
    data = MANY[1].read_bytes()
    outputs = []
    for jobs in ("1", "2"):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        rc, out, err = run(capsys, "stats", MANY[0], "-", FILES[0], "--jobs", jobs, "--json")
        assert rc == 0, err
        outputs.append(out)
    names = [json.loads(line)["conversation"] for line in outputs[1].splitlines()]
    assert outputs[0] == outputs[1] and names[20:120] == [f"<stdin>#{i}" for i in range(1, 101)]


@dataclass(frozen=True)
class Pids(batch.Task):
    """Which process computed each conversation; the conversations named in ``fail`` fail."""

    format: str | None = None
    fail: tuple[str, ...] = ()

    def compute(self, conversation, fmt=None):
        if conversation.name in self.fail:
            raise InputError(f"{conversation.name}: cannot compute")
        return conversation.name, os.getpid()

    def records(self, result):
        return [{"conversation": result[0], "pid": result[1]}]


def test_a_file_of_many_conversations_is_computed_by_every_process():
    path = str(TRACES / "tau-bench" / "gpt-4o-airline.json")  # 200 conversations, 5,308 messages
    result, = batch.run(Pids(), [path], jobs=2)
    assert [name for name, _ in result.results] == [f"{path}#{i}" for i in range(1, 201)]
    assert len({pid for _, pid in result.results}) == 2


@pytest.mark.parametrize("fail", [("#1",), ("#93", "#57")])
def test_a_conversation_that_fails_in_a_chunk_fails_its_file_as_with_one_process(small_chunks, fail):
    paths = [str(p) for p in (MANY[1], FILES[0], MANY[0])]
    task = Pids(fail=tuple(paths[0] + name for name in fail))
    alone, spread = (list(batch.run(task, paths, jobs=jobs)) for jobs in (1, 2))
    assert [(r.path, str(r.error), r.warnings, [name for name, _ in r.results]) for r in spread] == \
        [(r.path, str(r.error), r.warnings, [name for name, _ in r.results]) for r in alone]
    assert str(spread[0].error) == f"{paths[0]}{min(fail)}: cannot compute" and spread[0].results == ()
    assert len(spread[2].results) == 20


def test_warnings_and_errors_of_split_files_are_printed_as_with_one_process(capsys, tmp_path, small_chunks):
    messages = json.loads((TRACES / "claude-code" / "agent-a7be2f0.messages.json").read_text(encoding="utf-8"))
    bodies = tmp_path / "bodies.jsonl"  # 6 Anthropic request bodies: a warning each with --format openai
    bodies.write_text("".join(json.dumps({"model": "m", "messages": messages}) + "\n" for _ in range(6)),
                      encoding="utf-8")
    paths = [MANY[1], bodies, FILES[4], MANY[0], FILES[0]]
    for forced, lines in (("openai", 8), ("anthropic", 2)):  # 7 warnings and an error; 2 errors
        results = [run(capsys, "stats", *paths, "--format", forced, "--jobs", jobs) for jobs in ("1", "2")]
        assert results[0] == results[1]
        assert results[0][2].count("the content looks like") == lines


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_number(capsys, jobs):
    rc, out, err = run(capsys, "stats", FILES[0], "--jobs", jobs)
    assert rc == 2 and out == "" and "--jobs: expected a number of processes, 1 or more" in err


def test_bad_files_are_skipped_alike_with_workers(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    argv = ["stats", FILES[0], bad, FILES[1], tmp_path / "*.none", FILES[2]]
    results = [run(capsys, *argv, "--jobs", jobs) for jobs in ("1", "3")]
    assert results[0] == results[1]
    rc, out, err = results[0]
    assert rc == 2 and f"total ({len(out.splitlines()) - 2})" in out
    assert [line.split(": ")[2] for line in err.splitlines()] == [f"{bad}:1:2", f"{tmp_path / '*.none'}", "2 of 5 inputs failed and are left out of the results above"]


def test_warnings_from_workers_are_printed_once_in_order(capsys, tmp_path):
    anthropic = TRACES / "claude-code" / "agent-a7be2f0.messages.json"
    paths = [anthropic, FILES[2], anthropic]
    rc, out, err = run(capsys, "stats", *paths, "--format", "openai", "--jobs", "2")
    assert rc == 0, err
    assert err.count("--format openai finds") == 2 and err.count(str(anthropic)) == 2


def test_rule_source_is_rebuilt_from_text_in_a_fresh_process(tmp_path, fresh):
    (tmp_path / "base.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "keep.yaml").write_text(EXTENDING, encoding="utf-8")
    task = batch.Stats.of([str(tmp_path / "keep.yaml")])
    expected = task.file_rows(str(FILES[4]))
    (tmp_path / "base.yaml").unlink()  # the worker never reads the files: it has their text
    (tmp_path / "keep.yaml").unlink()
    assert fresh.apply(batch.Task.file_rows, (pickle.loads(pickle.dumps(task)), str(FILES[4]))) == expected
    assert set(expected[0]["saved_by_rule"]) == {"clear"}


class Summaries:
    """A plugin declaring a tool."""

    __version__ = "2.0"

    @hookimpl
    def rules_compact_tools(self):
        return [{"name": "*", "compact": False}]


def test_a_worker_without_the_plugins_refuses_to_compute(fresh):
    with use_plugins([Summaries()]):
        task = batch.Stats.of(["default"])
        assert ("Summaries", "2.0") in task.passes[0].plugins
    result = fresh.apply(batch.read_results, (task, str(FILES[4])))
    assert isinstance(result.error, PluginError) and result.results == ()
    assert "lacks plugin Summaries 2.0" in str(result.error)


def test_text_rows_read_one_request_body_per_line():
    messages = json.loads((TRACES / "claude-code" / "agent-a7be2f0.messages.json").read_text(encoding="utf-8"))
    task = batch.Stats.of(["default"])
    line = json.dumps({"model": "m", "messages": messages}) + "\n"
    row, = task.text_rows(line, "fleet.jsonl:1")
    stats = conversation_stats("x", messages, [load_rules("default")], "anthropic")
    assert (row["conversation"], row["tokens_after"]) == ("fleet.jsonl:1", stats.report.tokens_after)


def test_progress_bar_only_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    shown, hidden = Terminal(), io.StringIO()
    for stream in (shown, hidden):
        bar = Progress([100, 300], stream)
        bar.advance(3)
        bar.advance(5)
        bar.close()
    assert hidden.getvalue() == ""
    last = shown.getvalue().split("\r")[-1]
    assert last.startswith("[" + "#" * 30 + "] 2/2 files, 8 conversations, ") and "/s, 0:00 left" in last
    first = shown.getvalue().split("\r")[1]
    assert first.startswith("[" + "#" * 7 + "." * 23 + "] 1/2 files, 3 conversations")  # a quarter of the bytes


def test_on_a_dask_cluster_the_output_is_the_same(capsys, serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        for command in ("stats", "diff"):
            rc, out, err = run(capsys, *COMMANDS[command], "--scheduler", cluster.scheduler_address)
            assert rc == 0, err
            assert out == serial[command]
        with distributed.Client(cluster) as client:
            import dask.bag as db

            task = batch.Stats.of(["default"])
            rows = db.from_sequence([str(f) for f in FILES], npartitions=2).map(task.file_rows).flatten()
            names = [r["conversation"] for r in client.compute(rows).result()]
    assert names == [line.split()[0] for line in serial["stats"].splitlines()[1:-1]]


def test_scheduler_that_cannot_be_reached_is_one_error_line(capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(batch.cluster, "CONNECT_TIMEOUT", "0.5s")
    rc, out, err = run(capsys, "stats", FILES[0], "--scheduler", "tcp://127.0.0.1:9")
    assert rc == 2 and out == "" and err.startswith("rules-compact: error: --scheduler tcp://127.0.0.1:9: cannot connect")
    assert len(err.splitlines()) == 1


@pytest.mark.skipif(os.name != "posix", reason="process groups and signals")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_workers(sig):
    files = sorted(str(p) for p in TRACES.rglob("*.json*"))
    proc = subprocess.Popen([sys.executable, "-m", "rules_compact", "replay", *files, "--jobs", "2"],  # 2 workers
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    workers: list[str] = []
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline:  # until both workers are busy
        time.sleep(0.2)
        workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    os.killpg(proc.pid, sig)  # as Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig and err == b""
    assert len(workers) == 2
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout == b""


def _started(pid: int) -> str | None:
    """When a running process started (to tell it from a later one of the same pid); None when
    it is gone (a zombie, dead but not yet reaped, is)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return None if fields[0] == "Z" else fields[19]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, forked workers and file locks")
def test_a_killed_command_leaves_no_worker_and_the_next_run_removes_its_spill_folder():
    """SIGKILL gives the command no chance to stop its workers or remove its spill folder: the
    workers end by themselves, and the next run removes the folder (but not a live run's)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "rules_compact", "replay", "--jobs", "2"]
    # the command hands FILES[0] to a worker, then reads stdin itself, which never ends
    proc = subprocess.Popen([*command, FILES[0], "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    root, workers, folders = batch.files.spill_root(), {}, []

    def alive() -> list[int]:
        return [pid for pid, start in workers.items() if start is not None and _started(pid) == start]

    try:
        deadline = time.monotonic() + 60
        while (len(workers) < 2 or not folders) and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            workers = {int(pid): _started(int(pid)) for pid in pids}
            folders = [name for name in os.listdir(root) if name.startswith(f"rules-compact-{proc.pid}-")]
        assert len(workers) == 2 and len(folders) == 1
        folder = os.path.join(root, folders[0])
        subprocess.run([*command, FILES[0]], stdout=subprocess.DEVNULL, cwd=ROOT, env=env, check=True)
        assert os.path.isdir(folder)  # another run leaves a live run's folder alone
        proc.kill()
        proc.wait(30)
        deadline = time.monotonic() + 30
        while alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert alive() == []
        # the next run removes it: this one, or any other run of this user's on the machine that
        # started since (another test's, under xdist), which makes "not removed yet" a race
        subprocess.run([*command, FILES[0]], stdout=subprocess.DEVNULL, cwd=ROOT, env=env, check=True)
        assert not os.path.exists(folder)
    finally:
        proc.kill()
        proc.stdin.close()
        for pid in alive():  # only when the test failed
            os.kill(pid, signal.SIGKILL)
