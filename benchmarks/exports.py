"""19. Shipping the model: each export of a trained checkpoint, checked and measured on the CPU.

    python benchmarks/exports.py [--tiny] [--work DIR]

The default classification model (the small CNN) and the default language model of a rendered
project are trained with the project's own command (`python -m PACKAGE.train`, its defaults:
enough epochs for `min_steps`), then exported by the project's own command four times:
`python -m PACKAGE.export best.pt OUT` (safetensors), `--format onnx`, `--format pt2` and
`--format onnx --quantize int8`, each command in a fresh interpreter as a user runs it.

One process per model then loads every contender side by side and measures them in interleaved
rounds (A B C D E, E D C B A, ...):

- eager: the safetensors export as the project loads it (`PACKAGE.export.load_exported`),
- torch.compile: that model under `torch.compile` (inductor, its defaults),
- pt2: `torch.export.load(model.pt2).module()`,
- ORT fp32 and ORT int8: the ONNX files in an onnxruntime `InferenceSession` (CPU), fed numpy.

For each: the median latency of one sample (batch 1), samples/s at batch 64, the file's size
and the accuracy on the test split (the share of targets ranked first: the class of an image,
the next token of every position of a text window), all on the same samples.
"""

from __future__ import annotations

import importlib
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common
from benchmarks.runtools import command

TARGET_LATENCY = 0.7  # ORT fp32's batch-1 latency over eager's, on the default image model
TARGET_DROP = 1.0  # points of test accuracy int8 may lose against fp32
THREADS = 2  # torch's intra-op threads and onnxruntime's, for every contender
TASKS = {"classification": "image", "language_model": "lm"}
# The export folders and the options of `python -m PACKAGE.export CHECKPOINT FOLDER ...`
FORMATS = {
    "safetensors": [],
    "onnx": ["--format", "onnx"],
    "pt2": ["--format", "pt2"],
    "int8": ["--format", "onnx", "--quantize", "int8"],
}
# Each contender and the export it runs
CONTENDERS = {
    "eager": "safetensors",
    "torch.compile": "safetensors",
    "pt2": "pt2",
    "ORT fp32": "onnx",
    "ORT int8": "int8",
}
# rounds x latency calls = 200 batch-1 calls per contender; rounds x batch calls at `batch`
FULL = dict(train_args=[], rounds=4, latency_calls=50, batch_calls=5, batch=64, samples=1024)
# --quick: 3 optimizer steps, one validation batch, few calls at batch 8, 32 test samples
QUICK = dict(
    train_args=["max_steps=3", "val_batches=1"],
    rounds=1,
    latency_calls=10,
    batch_calls=3,
    batch=8,
    samples=32,
)
WARMUP = 3  # untimed calls before each timed block (after each contender's own warm-up)


def trained_exports(work: Path, task: str, train_args: list[str]) -> dict[str, str]:
    """The default `task` project (rendered) trained by its `train` command, then exported in
    each format by its `export` command: the project, its package, and the exports' folder."""
    project, package = common.render(work, task)
    root = work / "exports" / task
    shutil.rmtree(root, ignore_errors=True)
    runs = root / "runs"
    command(project, package, "train", "device=cpu", f"runs_dir={runs}", "run_name=shipped",
            *train_args)  # fmt: skip
    checkpoint = runs / "shipped" / "checkpoints" / "best.pt"
    for folder, options in FORMATS.items():
        command(project, package, "export", str(checkpoint), str(root / folder), *options)
    return dict(project=str(project), package=package, root=str(root))


def run(work: Path, quick: bool) -> common.Section:
    sizes = QUICK if quick else FULL
    # --quick: the image model alone (a model costs a training run and four exports, each in a
    # fresh interpreter: about 37 s)
    measured_tasks = {"classification": TASKS["classification"]} if quick else TASKS
    # One command at a time: two side by side, each with torch's threads, ran slower than in turn
    tasks = {task: trained_exports(work, task, sizes["train_args"]) for task in measured_tasks}
    spec = dict(work=str(work), tasks=tasks, **sizes)
    results = common.compare("exports", spec, measured_tasks, 1, fresh=True)
    batch, rows, figures = sizes["batch"], [], {}
    for task, prefix in measured_tasks.items():
        measured = results[task][0]
        found = measured["contenders"]
        eager = found["eager"]
        for name, got in found.items():
            rows.append(
                [task, name, common.fmt(got["latency_ms"], 3),
                 common.fmt(got["latency_ms"] / eager["latency_ms"]),
                 common.fmt(got["samples_per_s"], 0),
                 common.fmt(got["samples_per_s"] / eager["samples_per_s"]),
                 common.fmt(100 * got["accuracy"]), common.fmt(got["mb"], 3),
                 common.fmt(got["first_s"])]
            )  # fmt: skip
        name = "" if task == "classification" else f"{prefix}_"
        ort, int8 = found["ORT fp32"], found["ORT int8"]
        for contender, key in (("torch.compile", "compile"), ("pt2", "pt2"), ("ORT fp32", "onnx"),
                               ("ORT int8", "int8")):  # fmt: skip
            figures[f"{name}{key}_latency_ratio"] = (
                found[contender]["latency_ms"] / eager["latency_ms"]
            )
            figures[f"{name}{key}_throughput_ratio"] = (
                found[contender]["samples_per_s"] / eager["samples_per_s"]
            )
        figures[f"{name}int8_accuracy_drop"] = 100 * (ort["accuracy"] - int8["accuracy"])
        figures[f"{name}int8_size_ratio"] = int8["mb"] / ort["mb"]
        figures[f"{name}eager_latency_ms"] = eager["latency_ms"]
    split = {task: f"{results[task][0]['samples']} {results[task][0]['split']}" for task in tasks}
    drops = [figures[k] for k in ("int8_accuracy_drop", "lm_int8_accuracy_drop") if k in figures]
    return common.Section(
        title="19. Exports: latency, throughput, size and accuracy",
        target=f"ONNX Runtime's batch-1 latency <= {TARGET_LATENCY}x eager's on the default "
        f"image model; int8 within {TARGET_DROP:.0f} point of fp32's test accuracy",
        columns=["Model (defaults)", "runs", "batch-1 latency ms", "x eager",
                 f"batch-{batch} samples/s", "x eager", "test accuracy %", "file MB",
                 "load + first call s"],
        rows=rows,
        figures=figures,
        met=figures["onnx_latency_ratio"] <= TARGET_LATENCY
        and all(drop <= TARGET_DROP for drop in drops),
        notes=[
            "Trained by `python -m PACKAGE.train device=cpu` at the defaults (built-in data; "
            "epochs=0: enough for min_steps=250)"
            + (f" plus {' '.join(QUICK['train_args'])}" if quick else "")
            + ", then exported from its best.pt by `python -m PACKAGE.export` four times "
            "(safetensors; --format onnx; --format pt2; --format onnx --quantize int8), every "
            "command in a fresh interpreter; each export checked itself against the checkpoint.",
            f"Measured in one fresh process per model, every contender loaded side by side: "
            f"torch.set_num_threads({THREADS}) and onnxruntime SessionOptions "
            f"intra_op_num_threads={THREADS}, inter_op_num_threads=1 (CPUExecutionProvider, "
            "default graph optimizations); torch contenders called under torch.inference_mode, "
            "ORT ones by `session.run` on numpy arrays. eager and torch.compile load the "
            "safetensors export (`PACKAGE.export.load_exported`), whose file size they show.",
            f"Latency: the median of {sizes['rounds'] * sizes['latency_calls']} batch-1 calls "
            f"({sizes['rounds']} interleaved round(s) of {sizes['latency_calls']}, order "
            f"reversed every other round, each block after {WARMUP} untimed calls); samples/s: "
            f"batch {batch} / the median of {sizes['rounds'] * sizes['batch_calls']} calls at "
            f"batch {batch}, in the same rounds. x eager: the contender's figure over eager's.",
            f"Accuracy on the same test samples for every contender (image model: "
            f"{split['classification']} images; language model: "
            f"{split.get('language_model', 'no')} windows, every position's next token), spread "
            "evenly over the split as `PACKAGE.export.spread` draws them and scored by "
            "`PACKAGE.export.accuracy`. int8 quantizes the linear layers (MatMul, Gemm) only: the "
            "CNN's convolutions stay fp32.",
            f"Figures: onnx_latency_ratio {common.fmt(figures['onnx_latency_ratio'], 3)} "
            f"(target <= {TARGET_LATENCY}); int8_accuracy_drop (points, fp32 - int8) "
            f"{', '.join(common.fmt(drop, 2) for drop in drops)} for the image and language "
            f"models (target <= {TARGET_DROP:.0f} for both).",
            "Load + first call: from reading the file to the first batch-1 answer, once "
            "(torch.compile's includes its compilation, with inductor's on-disk cache as the "
            "machine left it).",
            common.load_note(results),
        ],
    )  # fmt: skip


# ---- worker: every contender of one model, in one fresh process ------------------------------


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import onnxruntime
    import torch

    torch.set_num_threads(THREADS)
    task = spec["tasks"][spec["contender"]]
    common.import_project({**spec, **task})  # its src/ importable
    export = importlib.import_module(f"{task['package']}.export")
    folders = {name: Path(task["root"]) / name for name in FORMATS}
    files = {name: next(folder.glob("model.*")) for name, folder in folders.items()}

    def session(path: Path) -> Callable[[Any], Any]:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
        ort = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        name = ort.get_inputs()[0].name
        return lambda x: ort.run(None, {name: x})[0]

    loaders: dict[str, Callable[[], Callable[[Any], Any]]] = {
        "eager": lambda: export.load_exported(folders["safetensors"]),
        "torch.compile": lambda: torch.compile(export.load_exported(folders["safetensors"])),
        "pt2": lambda: torch.export.load(files["pt2"]).module(),
        "ORT fp32": lambda: session(files["onnx"]),
        "ORT int8": lambda: session(files["int8"]),
    }
    dataset, split = export.checked_split(export.read_exported(folders["safetensors"]))
    items = export.spread(dataset, spec["samples"])
    inputs = torch.stack([x for x, _ in items[: spec["batch"]]])  # (batch, ...)
    if len(inputs) < spec["batch"]:
        raise common.BenchmarkError(f"{len(items)} {split} samples, fewer than a batch")
    one, many = inputs[:1], inputs
    calls: dict[str, Callable[[Any], Any]] = {}
    feeds: dict[str, tuple[Any, Any]] = {}  # each contender's batch-1 and batch inputs
    found: dict[str, dict[str, float]] = {}
    for name, load in loaders.items():  # loaded outside inference mode, as a user loads it
        numpy = name.startswith("ORT")
        feeds[name] = (one.numpy(), many.numpy()) if numpy else (one, many)
        start = time.perf_counter()
        calls[name] = load()
        with torch.inference_mode():
            calls[name](feeds[name][0])
        found[name] = {"first_s": time.perf_counter() - start}
    with torch.inference_mode():
        for name in loaders:
            for x in feeds[name]:  # torch.compile compiles for each shape here
                for _ in range(WARMUP):
                    calls[name](x)

        def block(name: str) -> dict[str, list[float]]:
            return {
                "latency": timed(calls[name], feeds[name][0], spec["latency_calls"]),
                "batch": timed(calls[name], feeds[name][1], spec["batch_calls"]),
            }

        rounds = common.interleave(loaders, spec["rounds"], block)
        for name, got in rounds.items():
            call = calls[name]
            if name.startswith("ORT"):
                call = _as_torch(call)
            latency = [t for block_ in got for t in block_["latency"]]
            batch = [t for block_ in got for t in block_["batch"]]
            path = files[CONTENDERS[name]]
            found[name] |= {
                "latency_ms": statistics.median(latency) * 1e3,
                "samples_per_s": spec["batch"] / statistics.median(batch),
                "accuracy": export.accuracy(call, items),
                "mb": path.stat().st_size / 1e6,
            }
    return {"contenders": found, "samples": len(items), "split": split}


def timed(call: Callable[[Any], Any], x: Any, calls: int) -> list[float]:
    """Seconds of each of `calls` calls of `call(x)`, after WARMUP untimed ones."""
    for _ in range(WARMUP):
        call(x)
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        call(x)
        seconds.append(time.perf_counter() - start)
    return seconds


def _as_torch(call: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An onnxruntime call on numpy arrays as a call on tensors (for `export.accuracy`)."""
    import torch

    return lambda x: torch.from_numpy(call(x.numpy()))


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):  # a worker: python -m ... SPEC_JSON
        common.worker_main(measure)
    else:
        common.script_main(__doc__, run, "exports")
