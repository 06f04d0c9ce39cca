"""1. Per-step framework overhead: the generated loop vs a hand-written one vs Lightning.

The model is `Flatten + Linear(3072, 10)` on 3x32x32 images, so a step costs almost nothing and
what each framework adds per step is not lost in noise. Every contender trains the same model
with the same optimizer, schedule and clipping over the same DataLoader (the generated
`make_loader`; `num_workers=0` so loading runs in line, augmentation off so a batch is cheap)
on one torch thread; they differ in the loop only. The generated loop runs with its defaults:
progress and metrics every `log_interval` steps, the NaN guard, checkpoint bookkeeping.
"""

from __future__ import annotations

import math
import operator
import statistics
import warnings
from pathlib import Path
from typing import Any

from benchmarks import common

BATCH = 16  # small: the loop is measured, and 1000+ steps of one epoch stay small in memory
BUDGET_MS = 0.25  # the target: at most this much added per step
CONTENDERS = ["hand-written", "generated", "lightning-lean", "lightning-defaults"]
DESCRIPTIONS = {
    "hand-written": "for-loop: forward, backward, clip, AdamW, schedule",
    "generated": "`train(cfg)`, defaults on (progress, metrics, NaN guard, checkpoints)",
    "lightning-lean": "`Trainer`: logger, checkpointing, progress bar, model summary off",
    "lightning-defaults": "`Trainer` defaults + `self.log(prog_bar=True)`",
}


def tiny_model() -> Any:
    from torch import nn

    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))


def write_images(path: Path, n: int) -> None:
    """`n` random 3x32x32 8-bit images with labels, as the generated data module reads them."""
    import numpy as np

    if path.exists():
        return
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
    np.savez(path, images=images, labels=rng.integers(0, 10, size=n))


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "classification")
    warmup, window, repeats = (5, 40, 1) if quick else (50, 1000, 5)
    steps = common.StepClock(warmup, window).steps_needed
    images = work / f"images-{steps}.npz"
    # One epoch holds the whole window: an epoch's end (validation, checkpoint) is not per-step
    write_images(images, n=math.ceil(steps * BATCH / 0.9) + BATCH)
    contenders = [c for c in CONTENDERS if common.has_module("lightning") or "lightning" not in c]
    spec = dict(work=str(work), project=str(project), package=package, images=str(images))
    spec |= dict(warmup=warmup, window=window)
    results = common.compare("overhead", spec, contenders, repeats)
    base = "hand-written"

    def vs_base(key: str, how=operator.sub) -> dict[str, list[float]]:
        return {c: common.paired(results, key, c, base, how) for c in results}

    ms = {c: common.median(runs, "ms_per_step") for c, runs in results.items()}
    added, added_cpu = vs_base("ms_per_step"), vs_base("cpu_ms_per_step")
    ratio = vs_base("ms_per_step", operator.truediv)
    median = statistics.median
    rows = [
        [f"{c}: {DESCRIPTIONS[c]}", common.fmt(ms[c], 3), f"{median(added[c]):+.3f}",
         common.middle_half(added[c]), common.fmt(median(ratio[c]), 3),
         f"{median(added_cpu[c]):+.3f}"]
        for c in contenders
    ]  # fmt: skip
    figures = {f"{c.replace('-', '_')}_added_ms": median(added[c]) for c in contenders[1:]}
    figures["hand_written_ms"] = ms[base]
    generated = figures["generated_added_ms"]
    lean = figures.get("lightning_lean_added_ms", math.inf)
    notes = [
        f"{window} steps timed per run after {warmup} warm-up steps, batch {BATCH}, {repeats} "
        "interleaved run(s) per contender. Added = median over the rounds of the difference to "
        "the hand-written run of the same round; middle half = its interquartile range.",
        "Timed from the start of step N to the start of step N + window: start-up, validation "
        "and the last checkpoint fall outside. Added CPU = the main thread's CPU time per step "
        "over hand-written's: a cross-check that leaves out time spent descheduled.",
        common.load_note(results),
    ]
    if not common.has_module("lightning"):
        notes.append("Lightning is not installed (`pip install -e '.[bench]'`): no Lightning rows.")
    return common.Section(
        title="1. Per-step framework overhead",
        target=f"generated adds < {BUDGET_MS} ms/step to hand-written, < half Lightning-lean's",
        columns=["Contender", "ms/step", "added ms/step", "added, middle half", "x hand-written",
                 "added CPU ms/step"],
        rows=rows,
        figures=figures,
        met=generated < min(BUDGET_MS, lean / 2),
        notes=notes,
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    run_dir = Path(spec["work"]) / "runs"
    args = [
        f"data.source={spec['images']}",
        "data.test_fraction=0",  # the images are sized for a validation share alone
        f"data.batch_size={BATCH}",
        "data.num_workers=0",
        "threads=1",  # a near-zero model gains nothing from a second thread, only noise
        "epochs=1",
        f"max_steps={clock.steps_needed}",
        f"runs_dir={run_dir}",
        f"run_name={spec['contender']}-{Path(spec['out']).stem}",
    ]
    real_build_datasets = project.loop.build_datasets

    def without_augmentation(cfg: Any) -> Any:
        datasets = real_build_datasets(cfg)
        datasets.train.augment = False  # a cheap batch: the loop, not the data, is measured
        return datasets

    project.loop.build_datasets = without_augmentation
    project.loop.build_model = lambda cfg, info: tiny_model()
    contender = spec["contender"]
    if contender == "generated":
        common.run_generated(project, args, clock)
    else:
        setup = common.same_setup(project, project.config.load_config(args))
        if contender == "hand-written":
            common.hand_written_loop(setup, clock)
        else:
            fit_lightning(
                setup, clock, lean=contender == "lightning-lean", root=run_dir / contender
            )
    return {
        "ms_per_step": clock.seconds_per_step() * 1e3,
        "cpu_ms_per_step": clock.cpu_seconds_per_step() * 1e3,
    }


def fit_lightning(setup: Any, clock: common.StepClock, *, lean: bool, root: Path) -> None:
    """The same model, optimizer, schedule, clipping and DataLoader under Lightning's Trainer."""
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = setup.model

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            clock.tick()
            x, y = batch
            loss = setup.loss_fn(self.model(x), y)
            if not lean:
                self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self) -> Any:
            scheduler = {"scheduler": setup.scheduler, "interval": "step"}
            return {"optimizer": setup.optimizer, "lr_scheduler": scheduler}

    off = dict(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    warnings.filterwarnings("ignore")  # "the dataloader does not have many workers", on purpose
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        max_steps=setup.steps,
        gradient_clip_val=setup.grad_clip,
        num_sanity_val_steps=0,
        default_root_dir=root,
        **(off if lean else {}),
    )
    trainer.fit(Module(), train_dataloaders=setup.loader)


if __name__ == "__main__":
    common.worker_main(measure)
