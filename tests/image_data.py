"""Image folders made offline, for the image tests and benches: scikit-learn's bundled digits
(1,797 8x8 images) rendered as PNG and JPEG files of mixed sizes, crops of its two sample photos
(real 427x640 JPEGs) as two more classes, and the files a real folder has beside its images: a
text file, a macOS ``.DS_Store`` and a truncated JPEG.

    python -m tests.image_data OUT_DIR [--limit N]
"""
from __future__ import annotations

import argparse
import io
import os
from typing import Dict, Optional

import numpy as np

TRUNCATED = "truncated.jpg"


def _save(image, path: str, fmt: str) -> None:
    image.save(path, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))


def digits_folder(root: str, *, limit: Optional[int] = None, seed: int = 0, photos: bool = True,
                  strays: bool = True, names: Optional[Dict[int, str]] = None, start: int = 0) -> Dict[str, int]:
    """Write ``root/<class>/<n>.png|jpg``: each digit upscaled to a side from 24 to 40 pixels, every
    third one as JPEG (grayscale and RGB mixed); with ``photos``, 24 random crops of each sample
    photo (64-160 pixels, JPEG) as classes ``china`` and ``flower``; with ``strays``, a
    ``notes.txt``, a ``.DS_Store`` and a truncated JPEG in class 0's folder. ``start``: the first
    digit rendered (a held-out set starts after a training folder's). Returns the images per class."""
    from PIL import Image
    from sklearn.datasets import load_digits, load_sample_images

    rng = np.random.default_rng(seed)
    digits = load_digits()
    count = len(digits.images) if limit is None else min(start + limit, len(digits.images))
    counts: Dict[str, int] = {}
    for i in range(start, count):
        label = (names or {}).get(int(digits.target[i]), str(digits.target[i]))
        folder = os.path.join(root, label)
        os.makedirs(folder, exist_ok=True)
        pixels = (255 - digits.images[i] * (255 / 16)).astype(np.uint8)  # dark ink on white
        side = int(rng.integers(24, 41))
        image = Image.fromarray(pixels, mode="L").resize((side, side), Image.BILINEAR)
        if i % 2:
            image = image.convert("RGB")
        fmt = "JPEG" if i % 3 == 0 else "PNG"
        _save(image, os.path.join(folder, f"{i:04d}.{'jpg' if fmt == 'JPEG' else 'png'}"), fmt)
        counts[label] = counts.get(label, 0) + 1
    if photos:
        for name, photo in zip(("china", "flower"), load_sample_images().images):
            folder = os.path.join(root, name)
            os.makedirs(folder, exist_ok=True)
            for j in range(24):
                side = int(rng.integers(64, 161))
                y, x = int(rng.integers(0, photo.shape[0] - side)), int(rng.integers(0, photo.shape[1] - side))
                _save(Image.fromarray(photo[y:y + side, x:x + side]), os.path.join(folder, f"{j:03d}.jpg"), "JPEG")
            counts[name] = 24
    if strays:
        first = os.path.join(root, (names or {}).get(0, "0"))
        os.makedirs(first, exist_ok=True)
        with open(os.path.join(first, "notes.txt"), "w") as f:
            f.write("scanned by hand\n")
        with open(os.path.join(first, ".DS_Store"), "wb") as f:
            f.write(b"\0\0\0\1Bud1" + bytes(64))
        buffer = io.BytesIO()
        _save(Image.fromarray(np.full((64, 64, 3), 128, np.uint8)), buffer, "JPEG")
        with open(os.path.join(first, TRUNCATED), "wb") as f:
            f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    counts = digits_folder(args.out, limit=args.limit)
    print(f"{sum(counts.values())} images in {len(counts)} classes under {args.out}")


if __name__ == "__main__":
    main()
