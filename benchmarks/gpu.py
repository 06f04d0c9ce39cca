"""6. The language model at a GPU size: eager fp32 vs bf16 autocast vs bf16 + torch.compile.

    python benchmarks/gpu.py          # on a CUDA GPU: n_layer=6, n_embd=384, block 256, batch 64
    python benchmarks/gpu.py --tiny   # anywhere, CPU included: a tiny config that proves it runs

Each mode trains the generated model with the generated `train_step` (clipping and the NaN
guard included) on a fixed random batch, in its own process, so the figure is the model's step
and nothing of the data pipeline. MFU is samples/s x the generated `train_flops_per_sample` (counted
on the model) over the GPU's dense peak in the mode's precision from the generated `PEAK_TFLOPS`
table: fp32 (or tf32, where torch allows it) for eager fp32, bf16 for the others.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

MODES = ["fp32", "bf16", "bf16+compile"]
SIZES = {
    "gpu": dict(n_layer=6, n_embd=384, n_head=6, block_size=256, batch=64, warmup=10, window=50),
    "tiny": dict(n_layer=1, n_embd=32, n_head=2, block_size=32, batch=8, warmup=2, window=5),
}
VOCAB = 65  # characters, as in a Shakespeare-sized corpus


def run(work: Path, quick: bool, size: str | None = None) -> common.Section:
    import torch

    on_gpu = torch.cuda.is_available()
    size = size or ("gpu" if on_gpu and not quick else "tiny")
    project, package = common.render(work, "language_model", name="bench_lm_bf16", amp="bf16")
    spec = {"work": str(work), "project": str(project), "package": package, "size": size}
    results = common.compare("gpu", spec, MODES, repeats=1)
    runs = {mode: runs[0] for mode, runs in results.items()}
    base = runs["fp32"]["tokens_per_s"]
    rows = [
        [mode, common.fmt(r["tokens_per_s"], 0), common.fmt(r["tokens_per_s"] / base, 2),
         f"{r['mfu']:.1%}" if math.isfinite(r["mfu"]) else "n/a", common.fmt(r["ms_per_step"], 1),
         common.fmt(r["peak_mem_gb"], 2), common.fmt(r["first_step_s"], 1)]
        for mode, r in runs.items()
    ]  # fmt: skip
    shape = SIZES[size]
    notes = [
        f"Device: {runs['fp32']['device']}. n_layer={shape['n_layer']}, n_embd={shape['n_embd']}, "
        f"n_head={shape['n_head']}, block_size={shape['block_size']}, batch {shape['batch']}: "
        f"{runs['fp32']['params'] / 1e6:.2f} M parameters. {shape['window']} steps timed after "
        f"{shape['warmup']} warm-up steps; the first step, compilation included, is shown apart.",
        common.load_note(results),
    ]
    if not on_gpu:
        notes.append(
            "No CUDA GPU here: the tiny config on the CPU proves the benchmark runs; these are "
            "not GPU figures, and MFU needs a GPU's peak. On a GPU: `python benchmarks/gpu.py`."
        )
    figures = {f"{mode}_tokens_per_s": r["tokens_per_s"] for mode, r in runs.items()}
    figures |= {f"{mode}_mfu": r["mfu"] for mode, r in runs.items() if math.isfinite(r["mfu"])}
    return common.Section(
        title="6. Language model at GPU size (benchmarks/gpu.py)",
        target="report tokens/s and MFU; on a GPU, the whole benchmark in < 5 min",
        columns=["Mode", "tokens/s", "x fp32", "MFU", "ms/step", "peak GB", "first step s"],
        rows=rows,
        figures=figures,
        met=None,
        notes=notes,
    )


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import importlib

    import torch

    project = common.import_project(spec)
    throughput = importlib.import_module(f"{spec['package']}.engine.record.throughput")
    shape, mode = SIZES[spec["size"]], spec["contender"]
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    sizes = [f"model.{key}={shape[key]}" for key in ("n_layer", "n_embd", "n_head")]
    cfg = project.config.load_config([*sizes, f"data.block_size={shape['block_size']}"])
    torch.manual_seed(0)
    info = {"vocab_size": VOCAB, "block_size": shape["block_size"]}
    model = project.model.build_model(cfg.model, project.data_info.TextInfo.from_dict(info)).to(
        device
    )
    params = sum(p.numel() for p in model.parameters())
    optimizer = project.optim.build_optimizer(model, cfg.optim)
    precision = importlib.import_module(f"{spec['package']}.runtime.precision").Precision(
        device, enabled=mode != "fp32"
    )
    step_model = torch.compile(model) if mode.endswith("compile") else model
    x, y = torch.randint(VOCAB, (2, shape["batch"], shape["block_size"]), device=device)
    clock = common.StepClock(shape["warmup"], shape["window"])
    first = time.perf_counter()
    for step in range(1, clock.steps_needed + 1):
        if cuda and step in (2, clock.start, clock.stop):
            torch.cuda.synchronize()  # the clock must read finished work, not queued kernels
        if step == 2:
            first = time.perf_counter() - first
        clock.tick()
        if step < clock.stop:
            grad_clip = cfg.optim.grad_clip
            project.step.train_step(step_model, optimizer, [(x, y)], device, grad_clip, precision)
    tokens_per_s = shape["batch"] * shape["block_size"] / clock.seconds_per_step()
    with torch.device("meta"):  # counted on a twin: nothing computed
        twin = project.model.build_model(cfg.model, project.data_info.TextInfo.from_dict(info))
        sample = torch.zeros(1, shape["block_size"], dtype=torch.long)
    flops = throughput.train_flops_per_sample(twin, sample) / shape["block_size"]  # per token
    computes_in = throughput.float32_precision(device) if mode == "fp32" else "bf16"
    peak = throughput.peak_flops(device, computes_in, cfg.peak_tflops)
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "params": params,
        "tokens_per_s": tokens_per_s,
        "ms_per_step": clock.seconds_per_step() * 1e3,
        "mfu": tokens_per_s * flops / peak if peak else math.nan,
        "peak_mem_gb": torch.cuda.max_memory_allocated(device) / 1e9 if cuda else math.nan,
        "first_step_s": first,
    }


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("{"):  # a worker: `gpu.py SPEC_JSON`
        common.worker_main(measure)
    else:
        common.script_main(__doc__, run, "gpu")
