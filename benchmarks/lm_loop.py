"""22. The default language model's trainer against a nanoGPT-style loop of the same model.

The trainer is the generated `train` with every default (`python -m PKG.train`, run in-process
through `main`): its sampler and DataLoader, the CPU budget it picks, progress, metrics, the NaN
guard. The hand-written contender is the loop nanoGPT's `train.py` is: random windows cut from
the same token array (no DataLoader), the same model built by the project's `build_model`,
AdamW over the same decay / no-decay groups with torch's own choice of kernel, the learning rate
set by hand each step, gradient clipping, `loss.item()` every `log_interval` steps; same batch,
block size, seed and torch threads.

Both are timed in steady state: the steps of the first epoch after a warm-up (the epoch's end,
with its evaluation and checkpoint, falls outside the window). Each run is a new interpreter, as
a user's is, with glibc's malloc left as a user's process finds it. The figure is hand-written
ms/step / trainer ms/step, paired round by round: >= 1.0 means the trainer is at least as fast.

    python benchmarks/lm_loop.py           # one benchmark alone, its table printed
"""

from __future__ import annotations

import math
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

TARGET = 1.0
CONTENDERS = ["hand-written", "trainer"]
COLUMNS = ["contender", "ms/step (window mean)", "median step, ms", "CPU ms/step",
           "page faults/step", "setup"]  # fmt: skip
# (warm-up steps, timed steps): the built-in text makes 53 steps an epoch at the chosen batch of
# 64, and the window stays inside it. The first 5-8 steps of a process run slower (allocator)
WARMUP, WINDOW = 10, 40
REPEATS = 5
# --quick: the fewest steps a median needs, one validation batch, forked children
QUICK = dict(warmup=1, window=2, args=["val_batches=1"])


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "language_model")
    repeats = 1 if quick else REPEATS
    spec = dict(work=str(work), project=str(project), package=package)
    spec |= dict(warmup=WARMUP, window=WINDOW, args=[])
    if quick:
        spec |= QUICK
    results = common.compare("lm_loop", spec, CONTENDERS, repeats, fresh=not quick)
    ratios = common.paired(results, "ms_per_step", "hand-written", "trainer")
    median_ratios = common.paired(results, "median_step_ms", "hand-written", "trainer")
    ms = {c: common.median(runs, "ms_per_step") for c, runs in results.items()}
    step_ms = {c: common.median(runs, "median_step_ms") for c, runs in results.items()}
    ratio = statistics.median(ratios)
    faults = {c: common.median(runs, "faults_per_step") for c, runs in results.items()}
    cpu = {c: common.median(runs, "cpu_ms_per_step") for c, runs in results.items()}
    setup = {c: f"{runs[0]['batch']:.0f} x {runs[0]['block']:.0f} tokens, "
                f"{runs[0]['workers']:.0f} workers / {runs[0]['threads']:.0f} threads"
             for c, runs in results.items()}  # fmt: skip
    rows = [
        [
            c,
            common.fmt(ms[c], 1),
            common.fmt(step_ms[c], 1),
            common.fmt(cpu[c], 1),
            common.fmt(faults[c], 0),
            setup[c],
        ]
        for c in CONTENDERS
    ]
    rows.append(
        ["ratio, hand-written / trainer", common.fmt(ratio, 3),
         common.fmt(statistics.median(median_ratios), 3), "", "",
         "rounds: " + ", ".join(common.fmt(r, 3) for r in ratios)]
    )  # fmt: skip
    return common.Section(
        title="22. The language model's trainer against a nanoGPT-style loop (issue 59, item 9)",
        target=f"hand-written ms/step / trainer ms/step >= {TARGET}",
        columns=COLUMNS,
        rows=rows,
        figures={
            "ratio": ratio,
            "median_step_ratio": statistics.median(median_ratios),
            "hand_written_ms": ms["hand-written"],
            "trainer_ms": ms["trainer"],
        },
        met=ratio >= TARGET,
        notes=[
            f"{spec['window']} steps timed after {spec['warmup']} warm-up steps, inside the first "
            f"epoch of the built-in text; {repeats} interleaved round(s), each contender in a new "
            "interpreter. "
            "Ratio = median over the rounds of hand-written / trainer in the same round; the "
            "median-step ratio is a cross-check blind to the machine's rare long stalls.",
            common.load_note(results),
        ],
    )


# ---- worker -------------------------------------------------------------------------------


class FaultClock(common.StepClock):
    """A step clock that also counts the page faults of the window: a step that gets its
    activations from fresh pages (malloc handing memory back and taking it again) shows here."""

    faults = cpu = math.nan

    def tick(self) -> None:
        super().tick()
        if self.calls in (self.start, self.stop):
            flt, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
            if self.calls == self.start:
                self.faults, self.cpu = flt, cpu
            else:
                self.faults = (flt - self.faults) / self.window
                self.cpu = (cpu - self.cpu) / self.window  # every thread's, loader workers' not


def measure(spec: dict[str, Any]) -> dict[str, float]:
    import torch

    project = common.import_project(spec)
    clock = FaultClock(spec["warmup"], spec["window"])
    args = [
        *spec["args"],
        f"max_steps={clock.steps_needed}",
        f"runs_dir={Path(spec['work']) / 'runs'}",
        f"run_name={spec['contender']}-{Path(spec['out']).stem}",
    ]
    if spec["contender"] == "trainer":
        loader = common.run_generated_loader(project, args, clock)
        workers, batch = loader.num_workers, loader.batch_size
    else:
        workers, batch = 0, nanogpt_loop(project, project.config.load_config(args), clock)
    block = project.config.load_config(args).data.block_size
    return {
        "ms_per_step": 1e3 * clock.seconds_per_step(),
        "median_step_ms": 1e3 * clock.median_step_seconds(),
        "faults_per_step": clock.faults,
        "cpu_ms_per_step": 1e3 * clock.cpu,
        "batch": batch,
        "block": block,
        "workers": workers,
        "threads": torch.get_num_threads(),
    }


def nanogpt_loop(project: Any, cfg: Any, clock: FaultClock) -> int:
    """nanoGPT's `train.py` loop on the project's model and tokens; returns the batch size."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    device = torch.device("cpu")
    torch.manual_seed(cfg.seed)
    datasets = project.data.build_datasets(cfg.data)
    cfg, _ = project.loading.with_batch_size(cfg, len(datasets.train), 1)  # the trainer's choice
    budget = project.device.cpu_budget(device, cfg.data.num_workers, cfg.threads, datasets.train)
    threads = budget[1]
    torch.set_num_threads(threads)
    data = np.asarray(datasets.train.tokens)
    batch, block = cfg.data.batch_size, cfg.data.block_size

    def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy(data[i : i + block].astype(np.int64)) for i in ix])
        y = torch.stack(
            [torch.from_numpy(data[i + 1 : i + block + 1].astype(np.int64)) for i in ix]
        )
        return x, y

    model = project.model.build_model(cfg.model, datasets.info).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.optim.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    optim = cfg.optim
    optimizer = torch.optim.AdamW(groups, lr=optim.lr, betas=(optim.beta1, optim.beta2))
    steps = clock.steps_needed
    warmup = max(1, steps // 10)

    def get_lr(it: int) -> float:
        if it < warmup:
            return optim.lr * (it + 1) / warmup
        ratio = (it - warmup) / max(1, steps - warmup)
        return optim.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * ratio)))

    model.train()
    for it in range(steps):
        clock.tick()
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it)
        x, y = get_batch()
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        if optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if it % cfg.log_interval == 0:
            print(f"iter {it}: loss {loss.item():.4f}, {time.perf_counter():.3f}", flush=True)
    return batch


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):  # a worker, started by `compare`
        common.worker_main(measure)
    else:
        common.script_main(__doc__, run, "lm-loop")
