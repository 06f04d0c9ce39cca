"""Small image folders of both kinds, built offline: what the default command must learn whether
colour carries the class or is noise (issue 59, item 3).

    python -m benchmarks.smallfolders OUT_DIR [--only NAME]

writes `OUT_DIR/<set>/{train,val,test}/<class>/<n>.png|jpg`: TRAIN images a class for training
(the size of folder the issue names, 30-40 a class), VAL for validation and a larger TEST split,
so that the test accuracy moves by less than a point per mistake. Seeded: a rerun writes the
same files; a set whose folder holds a `done` marker is skipped.

- `shapes`  circle, square and triangle in random colours on random backgrounds (48 px JPEG,
  `imagesets.draw_shape`): the class is the outline, colour is noise.
- `shapes64` the same drawn at 64 px (read at 64, four stages, where `shapes` is read at 32).
- `tints`   the same three outlines drawn at random, the class a colour (red, green or blue,
  each channel jittered by up to 40) on random backgrounds (48 px JPEG): the class is the
  colour, the outline is noise.
- `photos`  crops of three real colour photos (scikit-learn's `load_sample_images`: china and
  flower; scikit-image's coffee), cut as `imagesets.photos` does (64 px JPEG; test crops from
  cells no training crop touches): the class is largely colour and texture.
- `digits`  the scans 0, 1 and 2 of scikit-learn's `load_digits` (8x8 greys saved as 32x32 PNG,
  as RESULTS section 18 did): real scans with no colour at all.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from benchmarks.imagesets import SHAPES, draw_shape, needs

SEED = 59
TRAIN, VAL, TEST = 30, 6, 30  # images a class
SIDE = 48
TINTS = {"red": (220, 40, 40), "green": (40, 200, 40), "blue": (40, 60, 220)}

Item = tuple[str, str, object]  # (split, class, PIL image)


def parts() -> Iterable[str]:
    return ["train"] * TRAIN + ["val"] * VAL + ["test"] * TEST


def shapes(side: int = SIDE) -> Iterable[Item]:
    rng = np.random.default_rng(SEED)
    for name in SHAPES:
        for part in parts():
            yield part, name, draw_shape(name, side, rng)


def tints() -> Iterable[Item]:
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(SEED + 1)
    for name, tint in TINTS.items():
        for part in parts():
            colour = np.clip(np.array(tint) + rng.integers(-40, 41, 3), 0, 255)
            background = rng.integers(0, 256, 3)
            while np.abs(colour - background).sum() < 160:  # keep the shape visible
                background = rng.integers(0, 256, 3)
            image = Image.new("RGB", (SIDE, SIDE), tuple(int(v) for v in background))
            radius = rng.uniform(0.15, 0.4) * SIDE
            cx, cy = rng.uniform(radius, SIDE - radius, 2)
            fill = tuple(int(v) for v in colour)
            outline = SHAPES[rng.integers(len(SHAPES))]
            draw = ImageDraw.Draw(image)
            if outline == "circle":
                draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=fill)
            else:
                corners, turn = (4 if outline == "square" else 3), rng.uniform(0, 2 * math.pi)
                angles = [turn + 2 * math.pi * j / corners for j in range(corners)]
                points = [(cx + radius * math.cos(a), cy + radius * math.sin(a)) for a in angles]
                draw.polygon(points, fill=fill)
            yield part, name, image


def photos() -> Iterable[Item]:
    from PIL import Image

    sample = needs("sklearn.datasets", "scikit-learn").load_sample_images()
    sources = {Path(f).stem: img for f, img in zip(sample.filenames, sample.images, strict=True)}
    sources["coffee"] = needs("skimage.data", "scikit-image").coffee()
    rng = np.random.default_rng(SEED + 2)
    grid = 4
    for name, pixels in sources.items():
        photo = Image.fromarray(pixels[..., :3])
        cell_w, cell_h = photo.width // grid, photo.height // grid
        cells = [(r, c) for r in range(grid) for c in range(grid)]
        for part in parts():
            mine = [(r, c) for r, c in cells if ((r + c) % 4 == 0) == (part != "train")]
            r, c = mine[rng.integers(len(mine))]
            side = int(rng.uniform(0.5, 1.0) * min(cell_w, cell_h))
            x = c * cell_w + int(rng.integers(cell_w - side + 1))
            y = r * cell_h + int(rng.integers(cell_h - side + 1))
            box = (x, y, x + side, y + side)
            yield part, name, photo.resize((64, 64), Image.Resampling.BILINEAR, box=box)


def digits() -> Iterable[Item]:
    from PIL import Image

    data = needs("sklearn.datasets", "scikit-learn").load_digits()
    for digit in (0, 1, 2):
        scans = data.images[data.target == digit]
        for part, pixels in zip(parts(), scans, strict=False):
            image = Image.fromarray(np.rint(pixels * 255 / 16).astype(np.uint8), "L")
            yield part, str(digit), image.resize((32, 32), Image.Resampling.BILINEAR)


SETS: dict[str, tuple[Callable[[], Iterable[Item]], str]] = {
    "shapes": (shapes, "jpg"),
    "shapes64": (lambda: shapes(64), "jpg"),
    "tints": (tints, "jpg"),
    "photos": (photos, "jpg"),
    "digits": (digits, "png"),
}


def build(out: Path, name: str) -> Path:
    make, suffix = SETS[name]
    root = out / name
    if (root / "done").exists():
        return root
    counts: dict[str, int] = {}
    for part, label, image in make():
        folder = root / part / label
        folder.mkdir(parents=True, exist_ok=True)
        counts[part] = counts.get(part, 0) + 1
        image.save(folder / f"{counts[part]:05d}.{suffix}", quality=90)  # PNG ignores quality
    (root / "done").write_text(f"{counts}\n")
    return root


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", choices=sorted(SETS), action="append")
    args = parser.parse_args(argv)
    for name in args.only or SETS:
        print(name, build(args.out, name))


if __name__ == "__main__":
    main()
