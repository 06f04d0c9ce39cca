"""8. Corpora: preparing a large text file, and training on what was prepared.

Three measurements, each contender in a fresh interpreter, interleaved:

- Character tokenizer: the generated `prepare` (two passes: hash and count, then encode and
  write) over a large ASCII corpus, against a reference that does only the least any prepare
  must: one pass that reads, maps bytes through a 256-entry table and writes uint16 ids.
- Byte-level BPE: the generated `prepare tokenizer=bpe` against the bare `tokenizers` library
  over the same file: train on the same training text, then `encode_batch` over chunks of
  lines and write the ids (what a person writes by hand with that library).
- Training: the generated `train` on the built-in text and on the prepared large corpus; the
  time from process start to the first step, and the peak resident memory after a few steps.

The corpus is English-like ASCII text (Zipf-distributed made-up words), written by the
benchmark; it is in the page cache when prepared, as a file just written or read is.
"""

from __future__ import annotations

import importlib
import itertools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

TARGET_CHAR_MB_S = 100.0
TARGET_BPE_RATIO = 0.8
TARGET_STARTUP, TARGET_RSS = 1.2, 1.3
VOCAB_SIZE = 4096
CHUNK_BYTES = 8 << 20  # the bare BPE contender encodes this much text per encode_batch call
STEPS = 20  # training steps taken before the peak memory is read

PREPARE = {
    "char": "generated `prepare` (char): hash + count, then encode + write",
    "table": "reference: one pass of read, 256-entry byte table, write (no hash, no counts)",
}
BPE = {
    "bpe": "generated `prepare tokenizer=bpe`",
    "bare": "bare `tokenizers`: train, `encode_batch` over chunks of lines, write",
}
TRAIN = {"builtin": "built-in text", "corpus": "prepared large corpus (`data.source=DIR`)"}


def write_corpus(path: Path, nbytes: int, seed: int = 0) -> None:
    """`nbytes` of English-like ASCII lines: made-up words drawn with Zipf frequencies."""
    if path.exists() and path.stat().st_size == nbytes:
        return
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", np.uint8)
    letter_p = 1 / np.arange(1, 27)
    words = [
        bytes(rng.choice(letters, int(rng.integers(1, 11)), p=letter_p / letter_p.sum()))
        for _ in range(8000)
    ]
    zipf = 1 / np.arange(1, len(words) + 1)
    picks = rng.choice(len(words), min(2_000_000, nbytes // 4 + 16), p=zipf / zipf.sum())
    ends = np.flatnonzero(rng.random(len(picks)) < 0.08) + 1  # about 12 words a line
    lines = [
        b" ".join(words[w] for w in picks[a:b]).capitalize() + b".\n"
        for a, b in itertools.pairwise([0, *ends])
        if b > a
    ]
    block = b"".join(lines)  # about 14 MB; repeated (a corpus repeats its words anyway)
    tmp = path.with_suffix(".partial")
    with tmp.open("wb") as f:
        left = nbytes
        while left:
            left -= f.write(block[:left])
    tmp.replace(path)


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "language_model")
    char_mb, bpe_mb = (4, 1) if quick else (1024, 16)
    repeats = 1 if quick else 3
    data = work / "corpus-data"
    data.mkdir(exist_ok=True)
    big, small = data / f"corpus-{char_mb}MiB.txt", data / f"corpus-{bpe_mb}MiB.txt"
    write_corpus(big, char_mb << 20)
    write_corpus(small, bpe_mb << 20, seed=1)
    spec = dict(work=str(work), project=str(project), package=package, steps=3 if quick else STEPS)
    rows, figures, loads, notes = [], {}, {}, []

    # Characters
    results = common.compare("corpus", {**spec, "corpus": str(big)}, PREPARE, repeats, fresh=True)
    loads |= {f"prepare {c}": runs for c, runs in results.items()}
    what = f"prepare {char_mb} MiB, characters"
    rows += [_rate_row(what, desc, results[c]) for c, desc in PREPARE.items()]
    of_reference = statistics.median(common.paired(results, "mb_s", "char", "table"))
    rows.append([what, "generated / reference", f"{common.fmt(of_reference)}x", ""])
    figures |= {
        "char_mb_s": common.median(results["char"], "mb_s"),
        "char_of_reference": of_reference,
    }

    # BPE
    bpe_repeats = 1 if quick else 5  # the noisiest of the three: it keeps both cores busy
    results = common.compare("corpus", {**spec, "corpus": str(small)}, BPE, bpe_repeats, fresh=True)
    loads |= {f"prepare {c}": runs for c, runs in results.items()}
    what = f"prepare {bpe_mb} MiB, BPE {VOCAB_SIZE}"
    rows += [_rate_row(what, desc, results[c]) for c, desc in BPE.items()]
    bpe_ratio = statistics.median(common.paired(results, "mb_s", "bpe", "bare"))
    rows.append([what, "generated / bare", f"{common.fmt(bpe_ratio)}x", ""])
    figures["bpe_ratio"] = bpe_ratio

    # Training on what was prepared (prepared once, untimed, by the command a user runs)
    prepared = data / "prepared"
    if not (prepared / "meta.json").exists():
        subprocess.run(
            [sys.executable, "-m", f"{package}.prepare", str(big), f"out={prepared}"],
            cwd=project, env={**os.environ, "PYTHONPATH": str(project / "src")},
            check=True, capture_output=True, timeout=1800,
        )  # fmt: skip
    spec["corpus"] = str(prepared)
    results = common.compare("corpus", spec, TRAIN, repeats, fresh=True)
    loads |= {f"train {c}": runs for c, runs in results.items()}
    for c, desc in TRAIN.items():
        first = results[c][0]
        rows.append([f"train, {desc}", f"{first['windows']:,} windows",
                     f"start-up {common.fmt(common.median(results[c], 'startup_s'))} s",
                     f"peak RSS {common.median(results[c], 'rss_mb'):.0f} MB; "
                     f"{first['workers']:.0f} workers / {first['threads']:.0f} threads"]
                    )  # fmt: skip
    startup = statistics.median(common.paired(results, "startup_s", "corpus", "builtin"))
    rss = statistics.median(common.paired(results, "rss_mb", "corpus", "builtin"))
    rows.append(["train", "corpus / built-in", f"start-up {common.fmt(startup)}x",
                 f"peak RSS {common.fmt(rss)}x"])  # fmt: skip
    figures |= {"startup_ratio": startup, "rss_ratio": rss}

    notes += [
        f"Corpus: English-like ASCII text written by the benchmark ({char_mb} MiB for characters, "
        f"{bpe_mb} MiB for BPE, which encodes at a few MB/s); read from the page cache. MB/s = "
        "corpus bytes over the whole `prepare` call (both passes, hashing, the atomic rename; "
        "not the interpreter's imports, about 2 s for `python -m <package>.prepare`); "
        "CPU MB/s = the same bytes over the process's CPU seconds (all its threads).",
        f"BPE: vocab_size={VOCAB_SIZE}, both contenders learn from the same training text (the "
        "first 90%) and encode the whole file; ratio = median of the rounds' generated / bare.",
        f"Training: the generated `train` at its defaults, stopped after {spec['steps']} steps; "
        "start-up = process start to the first step (imports, data, model, the sampler's "
        "order); peak RSS = the process's maximum resident set at that point (the memory-mapped "
        "pages it touched included).",
        f"{repeats} interleaved run(s) per contender ({bpe_repeats} for BPE), each in a fresh "
        "interpreter.",
        common.load_note(loads),
    ]
    met = figures["char_mb_s"] >= TARGET_CHAR_MB_S and bpe_ratio >= TARGET_BPE_RATIO
    met &= startup <= TARGET_STARTUP and rss <= TARGET_RSS
    return common.Section(
        title="8. Corpora: prepare and train",
        target=f"char prepare >= {TARGET_CHAR_MB_S:.0f} MB/s; BPE >= {TARGET_BPE_RATIO}x bare "
        f"`tokenizers`; training on the prepared corpus: start-up <= {TARGET_STARTUP}x, peak RSS "
        f"<= {TARGET_RSS}x the built-in text's",
        columns=["Measurement", "Contender", "Result", "Detail"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )  # fmt: skip


def _rate_row(what: str, desc: str, runs: list[dict[str, float]]) -> list[str]:
    return [what, desc, f"{common.fmt(common.median(runs, 'mb_s'), 1)} MB/s",
            f"{common.fmt(common.median(runs, 'cpu_mb_s'), 1)} MB/s of CPU time, "
            f"{common.fmt(common.median(runs, 'seconds'), 1)} s"]  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def _process_age() -> float:
    """Seconds since this process started (Linux; elsewhere since the benchmark module loaded)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _LOADED


_LOADED = time.perf_counter()


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    contender = spec["contender"]
    if contender in TRAIN:
        return _measure_training(spec)
    corpus = Path(spec["corpus"])
    out = Path(spec["work"]) / f"prepared-{contender}-{os.getpid()}"
    shutil.rmtree(out, ignore_errors=True)
    if contender in ("char", "bpe"):  # imports are not the prepare's work
        common.import_project(spec)
        prepare = importlib.import_module(f"{spec['package']}.prepare")
    else:
        import tokenizers  # noqa: F401
    start, cpu = time.perf_counter(), time.process_time()
    try:
        if contender in ("char", "bpe"):
            tokenizer = "char" if contender == "char" else "bpe"
            prepare.prepare(
                [corpus], out, tokenizer=tokenizer, vocab_size=VOCAB_SIZE, progress=False
            )
        elif contender == "table":
            _reference_char(corpus, out)
        else:
            _bare_bpe(corpus, out)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        shutil.rmtree(out, ignore_errors=True)
    mb = corpus.stat().st_size / 1e6
    return {"seconds": seconds, "mb_s": mb / seconds, "cpu_mb_s": mb / cpu}


def _reference_char(corpus: Path, out: Path) -> None:
    """The floor for characters: read, one byte table, write (the table is the identity here:
    what it maps to does not change what it costs)."""
    out.mkdir()
    table = bytes(range(256))
    with corpus.open("rb") as f, (out / "train.bin").open("wb") as w:
        while block := f.read(CHUNK_BYTES):
            np.frombuffer(block.translate(table), np.uint8).astype(np.uint16).tofile(w)


def _bare_bpe(corpus: Path, out: Path) -> None:
    """What a person writes with `tokenizers` alone: train on the training text, then encode the
    file in chunks of lines with the batch API and write the ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out.mkdir()
    data = corpus.read_bytes()
    split = data.find(b"\n", int(len(data) * 0.9)) + 1
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    train_text = data[:split].decode()
    tokenizer.train_from_iterator(_chunks_of_lines(train_text), trainer=trainer)
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    with (out / "train.bin").open("wb") as w:
        for lines in _chunks_of_lines(data.decode()):
            ids = [i for e in encode(lines) for i in e.ids]
            np.array(ids, dtype=np.uint16).tofile(w)


def _chunks_of_lines(text: str) -> Iterator[list[str]]:
    for start in range(0, len(text), CHUNK_BYTES):
        yield text[start : start + CHUNK_BYTES].splitlines(keepends=True)


class _Enough(BaseException):
    """Raised from the training loop once the measurement is taken: stops the run there."""


def _measure_training(spec: dict[str, Any]) -> dict[str, Any]:
    project = common.import_project(spec)
    train = project.train
    original, state = train.train_step, {"steps": 0}
    result: dict[str, Any] = {}

    def timed_step(*a: Any, **kw: Any) -> Any:
        if state["steps"] == 0:
            result["startup_s"] = _process_age()
        state["steps"] += 1
        out = original(*a, **kw)
        if state["steps"] == spec["steps"]:
            result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            raise _Enough
        return out

    train.train_step = timed_step
    source = "builtin" if spec["contender"] == "builtin" else spec["corpus"]
    runs = Path(spec["work"]) / f"runs-{os.getpid()}"
    seen: dict[str, Any] = {}
    build, budget = train.build_datasets, train.cpu_budget

    def remember_data(*a: Any, **kw: Any) -> Any:
        seen["datasets"] = build(*a, **kw)
        return seen["datasets"]

    def remember_budget(*a: Any, **kw: Any) -> Any:
        seen["budget"] = budget(*a, **kw)
        return seen["budget"]

    train.build_datasets, train.cpu_budget = remember_data, remember_budget
    try:
        train.main([f"data.source={source}", f"runs_dir={runs}", "log_interval=1000"])
    except _Enough:
        pass
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    if "rss_mb" not in result:
        raise common.BenchmarkError(f"training stopped after {state['steps']} steps")
    return {
        **result,
        "windows": len(seen["datasets"].train),
        "workers": seen["budget"].num_workers,
        "threads": seen["budget"].threads,
    }


if __name__ == "__main__":
    common.worker_main(measure)
