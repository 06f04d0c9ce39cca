"""3. Data pipeline: the generated DataLoader defaults vs `DataLoader(dataset, batch_size=...)`.

The dataset does about 1 ms of real numpy work per sample (a stand-in for decoding and
augmentation); the generated CNN trains on it with the same hand-written loop in both runs, so
only the loader and torch's thread count differ. "generated" is `make_loader` with the workers
and threads `cpu_budget` picks; "naive" is a plain DataLoader in the main process with torch's
default threads. Waiting = time spent in `next(loader)` over the step time.

Two workloads: on 3x16x16 images (the generated default size) loading a batch costs more than
training on it, which is what workers are for; on 3x32x32 the CNN's compute costs more than
the loading, and shows what the defaults cost when compute dominates.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from benchmarks import common

BATCH = 64
TARGET_SPEEDUP, TARGET_WAIT = 1.4, 0.10
WORK_MS = 1.0  # per sample
WORKLOADS = {"data-bound": 16, "compute-bound": 32}  # image side
LOADERS = {
    "naive": "`DataLoader(dataset, batch_size=64, shuffle=True)`",
    "generated": "`make_loader` + `cpu_budget`",
}


class SlowImages(Dataset):
    """3 x side x side images that each cost about `WORK_MS` of CPU to produce."""

    def __init__(self, n: int, side: int, rounds: int) -> None:
        self.n, self.side, self.rounds = n, side, rounds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key: Any) -> tuple[torch.Tensor, torch.Tensor]:
        index = key[1] if isinstance(key, tuple) else key  # the generated sampler yields (epoch, i)
        shape = (3, self.side, self.side)
        image = np.random.default_rng(index).standard_normal(shape, dtype=np.float32)
        for _ in range(self.rounds):
            image = np.tanh(image * 1.01 + 0.01)
        return torch.from_numpy(image), torch.tensor(index % 10)


def calibrate(side: int) -> tuple[int, float]:
    """Rounds of work that cost about WORK_MS per sample here, and the ms per sample they cost."""
    common.wait_for_quiet()  # a busy machine would make the work look dearer than it is
    _ms_per_sample(side, 1)  # warm up
    r0, r1 = 50, 150
    m0, m1 = _ms_per_sample(side, r0), _ms_per_sample(side, r1)
    for _ in range(2):  # secant steps towards WORK_MS
        slope = (m1 - m0) / (r1 - r0)  # ms per round
        # Proportional where two noisy timings give no usable slope; bounded either way, so a
        # stall between two timings cannot make one sample cost minutes
        r = round(r1 + (WORK_MS - m1) / slope) if slope > 0 else round(r1 * WORK_MS / max(m1, 1e-3))
        r = min(max(1, r), 10 * r1)
        r0, m0, r1, m1 = r1, m1, r, _ms_per_sample(side, r)
    return r1, m1


def _ms_per_sample(side: int, rounds: int, n: int = 200) -> float:
    dataset = SlowImages(n, side, rounds)
    start = time.process_time()  # CPU time: other processes on the machine do not inflate it
    for i in range(n):
        dataset[i]
    return (time.process_time() - start) / n * 1e3


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "classification")
    warmup, window, repeats = (2, 4, 1) if quick else (8, 30, 3)
    rows, figures, loads, notes = [], {}, {}, []
    for workload, side in WORKLOADS.items():
        rounds, per_sample_ms = calibrate(side)
        spec = dict(work=str(work), project=str(project), package=package, rounds=rounds)
        spec |= dict(side=side, warmup=warmup, window=window)
        results = common.compare("dataloading", spec, LOADERS, repeats)
        loads |= {f"{workload} {c}": runs for c, runs in results.items()}
        speedups = common.paired(results, "samples_per_s", "generated", "naive")
        wait = {c: common.median(runs, "wait") for c, runs in results.items()}
        name = f"{workload} (3x{side}x{side})"
        for c, desc in LOADERS.items():
            first = results[c][0]
            rows.append(
                [name, f"{c}: {desc}", common.fmt(common.median(results[c], "samples_per_s"), 1),
                 f"{wait[c]:.0%}", f"{first['workers']:.0f} / {first['threads']:.0f}"]
            )  # fmt: skip
        speedup = statistics.median(speedups)
        rows.append([name, "speed-up, generated / naive", common.fmt(speedup, 2), "", ""])
        key = workload.replace("-", "_")
        figures |= {f"{key}_speedup": speedup, f"{key}_generated_wait": wait["generated"]}
        notes.append(f"{name}: {per_sample_ms:.2f} ms of CPU per sample ({rounds} rounds of tanh).")
    notes += [
        f"The generated CNN at its defaults, batch {BATCH}; {window} steps timed per run after "
        f"{warmup} warm-up steps, {repeats} interleaved run(s) per loader; speed-up = median over "
        "the rounds of the pair's ratio.",
        "The target is judged on the data-bound workload, the one a loader can speed up. When "
        "compute alone can keep both cores busy, hiding the loading takes cores from compute.",
        common.load_note(loads),
    ]
    met = figures["data_bound_speedup"] >= TARGET_SPEEDUP
    met &= figures["data_bound_generated_wait"] < TARGET_WAIT
    if not quick and not met and figures["data_bound_generated_wait"] >= TARGET_WAIT:
        notes.append(
            f"Missed: with the workers / threads above, the data-bound run still waits "
            f"{figures['data_bound_generated_wait']:.0%} of each step, so loading, not compute, "
            "sets its pace: the loader needs more workers than compute has threads."
        )
    return common.Section(
        title="3. Data pipeline",
        target=f">= {TARGET_SPEEDUP}x the naive loader's samples/s, < {TARGET_WAIT:.0%} of the "
        "step waiting for data",
        columns=["Workload", "Loader", "samples/s", "waiting", "workers / threads"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    from types import SimpleNamespace

    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    steps, side = clock.steps_needed, spec["side"]
    dataset = SlowImages(steps * BATCH, side, spec["rounds"])
    cfg = project.config.load_config(["data.batch_size=64"])  # the size chosen before 0 chose it
    device = torch.device("cpu")
    if spec["contender"] == "generated":
        workers, threads = project.device.cpu_budget(
            device, cfg.data.num_workers, cfg.threads, dataset
        )
        torch.set_num_threads(threads)
        sampler = project.sampling.ResumableSampler(len(dataset), batch_size=BATCH, seed=0)
        loader = project.loading.make_loader(
            dataset, sampler, num_workers=workers, device=device, seed=0
        )
    else:
        workers = 0
        loader = DataLoader(dataset, batch_size=BATCH, shuffle=True)
    torch.manual_seed(0)
    info = project.data_info.ImageInfo.from_dict(
        {"in_channels": 3, "image_size": side, "num_classes": 10}
    )
    model = project.model.build_model(cfg.model, info)
    optimizer = project.optim.build_optimizer(model, cfg.optim)
    setup = SimpleNamespace(
        model=model, optimizer=optimizer, loader=loader, loss_fn=project.loss.loss_fn,
        scheduler=project.optim.build_scheduler(optimizer, cfg.optim, steps),
        grad_clip=cfg.optim.grad_clip, steps=steps,
    )  # fmt: skip
    common.hand_written_loop(setup, clock)
    return {
        "samples_per_s": BATCH / clock.seconds_per_step(),
        "wait": clock.wait_fraction(),
        "workers": workers,
        "threads": torch.get_num_threads(),
    }


if __name__ == "__main__":
    common.worker_main(measure)
