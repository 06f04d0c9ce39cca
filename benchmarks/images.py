"""9. Image folders: the generated loader over real JPEG files vs a naive DataLoader.

The benchmark writes a few thousand JPEG files with Pillow (256 x 192, photo-like: a smooth
coloured field, noise and shapes; one folder per class) and trains the generated CNN on them
with the same hand-written loop in both runs, so only the loading differs. Both decode the
same way, through the generated `ImageFiles` dataset (Pillow decode at a reduced JPEG scale,
random resized crop, flip, standardisation): "generated" is `make_loader` with the workers and
threads `cpu_budget` picks; "naive" is `DataLoader(dataset, batch_size=64, shuffle=True)` in
the main process with torch's default threads. Waiting = time in `next(loader)` over the step.

Two image sizes for the CNN: 16 px, where decoding a batch costs more than training on it, and
32 px, where the two cost about the same. (At the default 64 px the default CNN takes over a
second a step on two cores: decoding is a few percent of it, and no loader can change much.)
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

TARGET_SPEEDUP, TARGET_WAIT = 1.4, 0.10
CLASSES = 10
WIDTH, HEIGHT = 256, 192
WORKLOADS = {"decode-bound": 16, "balanced": 32}  # data.image_size
LOADERS = {
    "naive": "`DataLoader(dataset, batch_size=64, shuffle=True)`",
    "generated": "`make_loader` + `cpu_budget`",
}


def write_images(root: Path, n: int, seed: int = 0) -> None:
    """`n` JPEG files in `root/<class>/`, each class with its own colours and shapes."""
    from PIL import Image, ImageDraw

    if (root / "done").exists():
        return
    rng = np.random.default_rng(seed)
    side = 768  # one texture, cropped differently for each image: writing stays fast
    yy, xx = np.mgrid[0:side, 0:side] / side
    texture = rng.normal(0, 18, (side, side, 3)).astype(np.float32)
    for i in range(n):
        label = i % CLASSES
        top, left = rng.integers(0, side - HEIGHT), rng.integers(0, side - WIDTH)
        y, x = (
            yy[top : top + HEIGHT, left : left + WIDTH],
            xx[top : top + HEIGHT, left : left + WIDTH],
        )
        field = np.stack(
            [np.sin(x * 6 + label), np.cos(y * 5 + 0.7 * label), np.sin((x + y) * 3 - label)], -1
        )
        pixels = (field * 80 + 128 + texture[top : top + HEIGHT, left : left + WIDTH]).clip(0, 255)
        image = Image.fromarray(pixels.astype(np.uint8))
        draw = ImageDraw.Draw(image)
        for _ in range(3):
            cx, cy, r = rng.integers(0, WIDTH), rng.integers(0, HEIGHT), rng.integers(10, 50)
            colour = tuple(int(c) for c in (np.array([40, 90, 200]) * (1 + label) % 256))
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
        folder = root / f"class{label}"
        folder.mkdir(parents=True, exist_ok=True)
        image.save(folder / f"{i:05d}.jpg", quality=90)
    (root / "done").write_text("")


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "classification")
    n, warmup, window, repeats = (160, 2, 4, 1) if quick else (3000, 8, 30, 3)
    root = work / f"images-{n}"
    write_images(root, n)
    rows, figures, loads = [], {}, {}
    for workload, size in WORKLOADS.items():
        spec = dict(work=str(work), project=str(project), package=package, source=str(root))
        spec |= dict(size=size, warmup=warmup, window=window)
        results = common.compare("images", spec, LOADERS, repeats)
        loads |= {f"{workload} {c}": runs for c, runs in results.items()}
        speedup = statistics.median(common.paired(results, "samples_per_s", "generated", "naive"))
        wait = {c: common.median(runs, "wait") for c, runs in results.items()}
        name = f"{workload} ({size} px)"
        for c, desc in LOADERS.items():
            first = results[c][0]
            rows.append(
                [name, f"{c}: {desc}", common.fmt(common.median(results[c], "samples_per_s"), 1),
                 f"{wait[c]:.0%}", f"{first['workers']:.0f} / {first['threads']:.0f}",
                 common.fmt(first["ms_per_sample"], 2)]
            )  # fmt: skip
        rows.append([name, "speed-up, generated / naive", common.fmt(speedup), "", "", ""])
        key = "decode" if size == 16 else "balanced"
        figures |= {f"{key}_speedup": speedup, f"{key}_generated_wait": wait["generated"]}
    notes = [
        f"{n} JPEG files of {WIDTH} x {HEIGHT} ({CLASSES} class folders, quality 90), written by "
        "the benchmark; the seeded split keeps 90% for training. ms / sample = the generated "
        "`seconds_per_sample` probe (decode, crop, flip, standardise) in the measuring process.",
        f"The generated CNN at its defaults, batch 64; {window} steps timed per run after "
        f"{warmup} warm-up steps (worker start-up falls in the warm-up), {repeats} interleaved "
        "run(s) per loader; speed-up = median over the rounds of the pair's ratio.",
        "The target is judged on the decode-bound size, the one a loader can speed up; the "
        "balanced one shows what the same defaults do when compute costs as much as decoding.",
        common.load_note(loads),
    ]
    met = (
        figures["decode_speedup"] >= TARGET_SPEEDUP
        and figures["decode_generated_wait"] < TARGET_WAIT
    )
    return common.Section(
        title="9. Image folders",
        target=f">= {TARGET_SPEEDUP}x the naive loader's samples/s over the same JPEG decoding, "
        f"< {TARGET_WAIT:.0%} of the step waiting for data",
        columns=["Workload", "Loader", "samples/s", "waiting", "workers / threads", "ms / sample"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    import torch

    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    cfg = project.config.load_config(
        [f"data.source={spec['source']}", f"data.image_size={spec['size']}",
         f"max_steps={clock.steps_needed}", "data.batch_size=64", "data.test_fraction=0"]
    )  # fmt: skip
    setup = common.same_setup(project, cfg, plain=spec["contender"] == "naive")
    dataset = setup.loader.dataset
    dataset = getattr(dataset, "dataset", dataset)  # the generated loader wraps it (SeededSamples)
    ms_per_sample = project.device.seconds_per_sample(dataset) * 1e3
    common.hand_written_loop(setup, clock)
    return {
        "samples_per_s": cfg.data.batch_size / clock.seconds_per_step(),
        "wait": clock.wait_fraction(),
        "workers": setup.loader.num_workers,
        "threads": torch.get_num_threads(),
        "ms_per_sample": ms_per_sample,
    }


if __name__ == "__main__":
    common.worker_main(measure)
