"""3. Data pipeline: the generated DataLoader defaults vs `DataLoader(dataset, batch_size=...)`.

The dataset does about 1 ms of real numpy work per sample (a stand-in for decoding and
augmentation), and the generated CNN trains on it with the same hand-written loop in both runs;
only the loader and torch's thread count differ. "generated" is `make_loader` with the workers
and threads `cpu_budget` picks; "naive" is a plain DataLoader in the main process with torch's
default threads. Waiting = time spent in `next(loader)` over the step time.
"""

from __future__ import annotations

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
LOADERS = {
    "naive": "`DataLoader(dataset, batch_size=64, shuffle=True)`",
    "generated": "`make_loader` + `cpu_budget`",
}


class SlowImages(Dataset):
    """3x32x32 images that each cost about `WORK_MS` of CPU to produce."""

    def __init__(self, n: int, rounds: int) -> None:
        self.n, self.rounds = n, rounds

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key: Any) -> tuple[torch.Tensor, torch.Tensor]:
        index = key[1] if isinstance(key, tuple) else key  # the generated sampler yields (epoch, i)
        image = np.random.default_rng(index).standard_normal((3, 32, 32), dtype=np.float32)
        for _ in range(self.rounds):
            image = np.tanh(image * 1.01 + 0.01)
        return torch.from_numpy(image), torch.tensor(index % 10)


def calibrate() -> tuple[int, float]:
    """Rounds of work that cost about WORK_MS per sample here, and the ms per sample they cost."""
    common.wait_for_quiet()  # a busy machine would make the work look dearer than it is
    _ms_per_sample(1)  # warm up
    low, high = _ms_per_sample(50), _ms_per_sample(150)
    per_round = max((high - low) / 100, 1e-6)
    rounds = max(1, round(50 + (WORK_MS - low) / per_round))
    return rounds, _ms_per_sample(rounds)


def _ms_per_sample(rounds: int, n: int = 200) -> float:
    dataset = SlowImages(n, rounds)
    start = time.process_time()  # CPU time: other processes on the machine do not inflate it
    for i in range(n):
        dataset[i]
    return (time.process_time() - start) / n * 1e3


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "classification")
    rounds, per_sample_ms = calibrate()
    warmup, window, repeats = (2, 4, 1) if quick else (4, 30, 3)
    spec = dict(work=str(work), project=str(project), package=package, rounds=rounds)
    spec |= dict(warmup=warmup, window=window)
    results = common.compare("dataloading", spec, LOADERS, repeats)
    rate = {c: common.median(runs, "samples_per_s") for c, runs in results.items()}
    wait = {c: common.median(runs, "wait") for c, runs in results.items()}
    speedup = rate["generated"] / rate["naive"]
    rows = [
        [f"{c}: {desc}", common.fmt(rate[c], 1), f"{wait[c]:.0%}",
         common.spread(results[c], "samples_per_s"),
         f"{results[c][0]['workers']:.0f} / {results[c][0]['threads']:.0f}"]
        for c, desc in LOADERS.items()
    ]  # fmt: skip
    rows.append(["speed-up (generated / naive)", common.fmt(speedup, 2), "", "", ""])
    return common.Section(
        title="3. Data pipeline",
        target=f">= {TARGET_SPEEDUP}x the naive loader's samples/s, < {TARGET_WAIT:.0%} of the "
        "step waiting for data",
        columns=["Loader", "samples/s", "waiting", "spread", "workers / threads"],
        rows=rows,
        figures={"speedup": speedup, **{f"{c}_wait": wait[c] for c in LOADERS}},
        met=speedup >= TARGET_SPEEDUP and wait["generated"] < TARGET_WAIT,
        notes=[
            f"Per-sample work: {per_sample_ms:.2f} ms of CPU ({rounds} rounds of numpy tanh on "
            f"3x32x32). The generated CNN at its defaults on 3x32x32 inputs, batch {BATCH}.",
            f"{window} steps timed per run after {warmup} warm-up steps, {repeats} interleaved "
            "run(s) per loader; spread = min-max samples/s over the runs.",
            common.load_note(results),
        ],
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    from types import SimpleNamespace

    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    steps = clock.steps_needed
    dataset = SlowImages(steps * BATCH, spec["rounds"])
    cfg = project.config.load_config([])
    device = torch.device("cpu")
    if spec["contender"] == "generated":
        workers, threads = project.device.cpu_budget(device, cfg.data.num_workers, cfg.threads)
        torch.set_num_threads(threads)
        sampler = project.sampling.ResumableSampler(len(dataset), batch_size=BATCH, seed=cfg.seed)
        loader = project.loading.make_loader(
            dataset, sampler, num_workers=workers, device=device, seed=0
        )
    else:
        workers = 0
        loader = DataLoader(dataset, batch_size=BATCH, shuffle=True)
    torch.manual_seed(0)
    model = project.model.build_model(
        cfg.model, {"in_channels": 3, "image_size": 32, "num_classes": 10}
    )
    optimizer = project.train.build_optimizer(model, cfg.optim)
    setup = SimpleNamespace(
        model=model,
        optimizer=optimizer,
        loader=loader,
        loss_fn=project.model.loss_fn,
        scheduler=project.train.build_scheduler(optimizer, cfg.optim, steps),
        grad_clip=cfg.optim.grad_clip,
        steps=steps,
    )
    common.hand_written_loop(setup, clock)
    return {
        "samples_per_s": BATCH / clock.seconds_per_step(),
        "wait": clock.wait_fraction(),
        "workers": workers,
        "threads": torch.get_num_threads(),
    }


if __name__ == "__main__":
    common.worker_main(measure)
