"""8. Corpora: preparing a large text file, and training on what was prepared.

Three measurements, each contender in a fresh interpreter, interleaved:

- Character tokenizer: the generated `prepare` (two passes: hash and count, then encode and
  write) over a large corpus, against a reference that does only the least any prepare
  must: one pass that reads, maps bytes through a 256-entry table and writes uint16 ids.
- Byte-level BPE: the generated `prepare tokenizer=bpe` against the bare `tokenizers` library
  over the same file: train on a sample of the same size, then `encode_batch` over chunks of
  lines and write the ids (what a person writes by hand with that library).
- Training: the generated `train` on the built-in text and on the prepared large corpus; the
  time from process start to the first step, and the peak resident memory after a few steps.

The corpus is real text at 1 GiB for both tokenizers: the text files that the standard library
and the installed packages ship (sources, docs, translation catalogs), deduplicated and repeated
to size (`write_real_corpus`), so non-ASCII characters turn up in nearly every block as they do
in real source code. It is in the page cache when prepared, as a file just written or read is.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import common

TARGET_CHAR_MB_S = 100.0
TARGET_BPE_RATIO = 0.8
TARGET_STARTUP, TARGET_RSS = 1.2, 1.3
VOCAB_SIZE = 4096
CHUNK_BYTES = 8 << 20  # the bare BPE contender encodes this much text per encode_batch call
BPE_SAMPLE_BYTES = 64 << 20  # BPE merges are learned from this much text (as the generated prepare)
STEPS = 20  # training steps taken before the peak memory is read

PREPARE = {
    "char": "generated `prepare` (char): hash + count, then encode + write",
    "table": "reference: one pass of read, 256-entry byte table, write (no hash, no counts)",
}
BPE = {
    "bpe": "generated `prepare tokenizer=bpe`",
    "bare": "bare `tokenizers`: train on a same-size sample, `encode_batch` chunks of lines, write",
}
TRAIN = {"builtin": "built-in text", "corpus": "prepared large corpus (`data.source=DIR`)"}


TEXT_SUFFIXES = {".py", ".pyi", ".txt", ".rst", ".md", ".po", ".pot", ".html", ".json", ".csv",
                 ".xml", ".js", ".css", ".cfg", ".toml", ".yaml", ".yml", ".ini", ".c",
                 ".h"}  # fmt: skip


def real_text_files() -> Iterator[Path]:
    """The text files that the standard library and the installed packages ship (sources,
    docs, translation catalogs, Unicode test data), in path order."""
    paths = sysconfig.get_paths()
    roots = sorted({Path(paths[key]).resolve() for key in ("stdlib", "purelib", "platlib")})
    roots = [r for r in roots if not any(o != r and o in r.parents for o in roots)]  # no overlaps
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                path = Path(folder, name)
                if path.suffix in TEXT_SUFFIXES and not path.is_symlink():
                    yield path


def write_real_corpus(path: Path, nbytes: int) -> dict[str, Any]:
    """`nbytes` of real text: every distinct UTF-8 file `real_text_files` finds, joined, and the
    whole repeated if it is smaller than `nbytes` (cut at a line end). Returns what the text
    holds (cached beside the corpus): its unique size, distinct characters, non-ASCII share."""
    stats_path = path.with_suffix(".json")
    if path.exists() and path.stat().st_size == nbytes and stats_path.exists():
        return json.loads(stats_path.read_text())
    seen, parts, files, size = set(), [], 0, 0
    for file in real_text_files():
        if size >= nbytes:
            break
        try:
            data = file.read_bytes()
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):  # unreadable, or not UTF-8: not text to tokenize
            continue
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if data and digest not in seen:
            seen.add(digest)
            parts.append(data if data.endswith(b"\n") else data + b"\n")
            files += 1
            size += len(parts[-1])
    unique = b"".join(parts)
    del parts
    data = np.frombuffer(unique, np.uint8)
    high = data[data >= 0x80].tobytes()  # all non-ASCII characters, whole, in order
    every_byte = torch.frombuffer(bytearray(unique), dtype=torch.uint8)
    ascii_seen = torch.bincount(every_byte, minlength=256)
    stats = {
        "files": files,
        "unique_bytes": len(unique),
        "distinct_chars": int(ascii_seen[:128].count_nonzero()) + len(set(high.decode("utf-8"))),
        "non_ascii_share": len(high) / len(unique),
        "repeats": nbytes / len(unique),
    }
    tmp = path.with_suffix(".partial")
    with tmp.open("wb") as f:
        left = nbytes
        while left > len(unique):
            left -= f.write(unique)
        cut = unique.rfind(b"\n", 0, left) + 1 or left  # whole lines, the last one padded
        f.write(unique[:cut] + b"\n" * (left - cut))
    with tmp.open("rb") as f:  # how many of the blocks a prepare reads hold non-ASCII text
        blocks = [not block.isascii() for block in iter(lambda: f.read(CHUNK_BYTES), b"")]
    stats["blocks_with_non_ascii"] = f"{sum(blocks)} of {len(blocks)}"
    tmp.replace(path)
    stats_path.write_text(json.dumps(stats))
    return stats


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "language_model")
    char_mb = 1 if quick else 1024  # --quick: enough text for every step to run, and no more
    # BPE encodes at a few MB/s of CPU: 1 GiB is minutes a run on a quiet machine but can pass
    # the worker's time limit on a busy one, where CORPUS_BPE_MIB measures less (the table says)
    bpe_mb = min(char_mb, int(os.environ.get("CORPUS_BPE_MIB", char_mb)))
    repeats = 1 if quick else 3
    data = work / "corpus-data"
    data.mkdir(exist_ok=True)
    big, small = data / f"real-{char_mb}MiB.txt", data / f"real-{bpe_mb}MiB.txt"
    text = write_real_corpus(big, char_mb << 20)
    write_real_corpus(small, bpe_mb << 20)  # the same text, cut shorter
    print(f"corpus: {char_mb} MiB of real text from {text['files']:,} distinct files "
          f"({text['unique_bytes'] / 1e6:.0f} MB unique, x{text['repeats']:.2f}), "
          f"{text['distinct_chars']:,} distinct characters, "
          f"{text['non_ascii_share']:.3%} of the bytes non-ASCII", flush=True)  # fmt: skip
    spec = dict(work=str(work), project=str(project), package=package, steps=1 if quick else STEPS)
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
    bpe_repeats = 1  # minutes a run at 1 GB: one round each, interleaved
    results = common.compare("corpus", {**spec, "corpus": str(small)}, BPE, bpe_repeats, fresh=True)
    loads |= {f"prepare {c}": runs for c, runs in results.items()}
    what = f"prepare {bpe_mb} MiB, BPE {VOCAB_SIZE}"
    rows += [_rate_row(what, desc, results[c]) for c, desc in BPE.items()]
    bpe_ratio = statistics.median(common.paired(results, "mb_s", "bpe", "bare"))
    rows.append([what, "generated / bare", f"{common.fmt(bpe_ratio)}x", ""])
    figures |= {"bpe_mb_s": common.median(results["bpe"], "mb_s"), "bpe_ratio": bpe_ratio}

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
        f"Corpus ({char_mb} MiB; the BPE rows use its first {bpe_mb} MiB): real text, every "
        "distinct UTF-8 text file (.py, .rst, .txt, .po, .json, ...) that the standard library "
        f"and the installed packages ship: {text['files']:,} files, "
        f"{text['unique_bytes'] / 1e6:.0f} MB unique, {text['distinct_chars']:,} distinct "
        f"characters, {text['non_ascii_share']:.3%} of the bytes non-ASCII (but in "
        f"{text['blocks_with_non_ascii']} of its 8 MiB blocks), the whole taken "
        f"{text['repeats']:.2f} times to make the size (`write_real_corpus`); read from the "
        "page cache. MB/s = corpus bytes over the whole `prepare` call (both passes, hashing, the "
        "fsync and atomic rename; not the interpreter's imports, about 2 s for "
        "`python -m <package>.prepare`); CPU MB/s = the same bytes over the process's CPU "
        "seconds (all its threads).",
        f"BPE: vocab_size={VOCAB_SIZE}; both contenders learn the merges from the same "
        f"{BPE_SAMPLE_BYTES >> 20} MiB sample of the training text (the first 90%), 8 MiB blocks "
        "spread evenly over it, then encode the whole file in 8 MiB chunks of lines with "
        "`encode_batch` (both cores) and write the ids; ratio = generated / bare, one "
        "interleaved round each.",
        f"Training: the generated `train` at its defaults, stopped after {spec['steps']} steps; "
        "start-up = process start to the first step (imports, data, model, the sampler's "
        "order); peak RSS = the process's maximum resident set at that point (the memory-mapped "
        "pages it touched included). The corpus's vocabulary is its "
        f"{text['distinct_chars']:,} characters against the built-in text's few dozen, so the "
        "model's embedding and output layer, and its logits (data.batch_size x block_size x "
        "vocabulary floats, several alive in a step), are that much larger: at the defaults that, "
        "not the memory-mapped data, is most of the peak RSS difference.",
        f"{repeats} interleaved run(s) per contender for characters and training, "
        f"{bpe_repeats} for BPE, each in a fresh interpreter.",
        common.load_note(loads),
    ]
    met = figures["char_mb_s"] >= TARGET_CHAR_MB_S and bpe_ratio >= TARGET_BPE_RATIO
    met &= startup <= TARGET_STARTUP and rss <= TARGET_RSS
    met &= bpe_mb == char_mb  # a BPE figure on less text does not show the target met
    return common.Section(
        title="8. Corpora: prepare and train",
        target=f"char prepare >= {TARGET_CHAR_MB_S:.0f} MB/s; BPE >= {TARGET_BPE_RATIO}x bare "
        f"`tokenizers` (both on 1 GiB of real, non-ASCII text); training on the prepared "
        f"corpus: start-up <= {TARGET_STARTUP}x, peak RSS "
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
        sample = importlib.import_module(f"{spec['package']}.data.corpus").BPE_SAMPLE_BYTES
        assert sample == BPE_SAMPLE_BYTES, "the bare contender must learn from as much text"
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
    """What a person writes with `tokenizers` alone: train on a sample of the training text,
    then encode the file in chunks of lines with the batch API and write the ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out.mkdir()
    train_bytes = int(corpus.stat().st_size * 0.9)
    every = max(1, round(train_bytes / BPE_SAMPLE_BYTES))  # take one block in `every`
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    sample = itertools.islice(_chunks_of_lines(corpus), 0, train_bytes // CHUNK_BYTES, every)
    tokenizer.train_from_iterator(sample, trainer=trainer)
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    with (out / "train.bin").open("wb") as w:
        for lines in _chunks_of_lines(corpus):
            ids = itertools.chain.from_iterable(e.ids for e in encode(lines))
            np.fromiter(ids, dtype=np.uint16).tofile(w)


def _chunks_of_lines(corpus: Path) -> Iterator[list[str]]:
    """The file's lines, about CHUNK_BYTES of them at a time."""
    with corpus.open("rb") as f:
        carry = b""
        while block := f.read(CHUNK_BYTES):
            data = carry + block
            cut = data.rfind(b"\n") + 1 or len(data)
            carry = data[cut:]
            yield data[:cut].decode("utf-8").splitlines(keepends=True)
        if carry:
            yield carry.decode("utf-8").splitlines(keepends=True)


class _Enough(BaseException):
    """Raised from the training loop once the measurement is taken: stops the run there."""


def _measure_training(spec: dict[str, Any]) -> dict[str, Any]:
    project = common.import_project(spec)
    train = project.loop
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
        train.run([f"data.source={source}", f"runs_dir={runs}", "log_interval=1000"])
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
