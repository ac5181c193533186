"""An image folder, looked at before a run and by ``tfxline init``: its classes (one sub-folder
each), the files that are not images, and the formats and sizes of those that are (read from the
files' headers with Pillow: no decoding, thousands of files a second).

The pre-flight check (``check``) refuses a folder the ExampleGen could not learn from: no images,
one class, or under ``data.bad_images: fail`` an image TensorFlow does not decode, named (its
decoding is the Trainer's: components/image_example_gen.decodes).
"""
from __future__ import annotations

import collections
import dataclasses
import os
import statistics
from typing import Dict, List, Sequence, Tuple

from tfxline.pipeline.data.check import DataError
from tfxline.transforms.image_files import IMAGE_EXTENSIONS, is_image_name

NAMED = 5  # files named in a line


@dataclasses.dataclass
class Folder:
    """What an image folder holds."""
    images: List[str]
    ignored: List[str]          # files whose names are not images
    classes: Dict[str, int]     # class (folder name) -> images
    formats: Dict[str, int]     # JPEG, PNG, ... -> images (Pillow's names; "damaged" when it cannot read the header)
    sizes: List[Tuple[int, int]]  # (width, height) of each readable image

    @property
    def median_side(self) -> int:
        """The median of the images' shorter sides (0 when none was readable)."""
        return int(statistics.median(min(s) for s in self.sizes)) if self.sizes else 0

    def describe(self) -> str:
        formats = ", ".join(f"{n} {name}" for name, n in sorted(self.formats.items(), key=lambda kv: -kv[1]))
        if not self.sizes:
            return formats
        widths, heights = [w for w, _ in self.sizes], [h for _, h in self.sizes]
        return (f"{formats}; {min(widths)}-{max(widths)} x {min(heights)}-{max(heights)} pixels "
                f"(median shorter side {self.median_side})")


def scan(files: Sequence[str]) -> Folder:
    """The folder's files (a pattern's matches, ``<class>/<file>``) sorted into images and others,
    the images' classes, formats and sizes."""
    from PIL import Image

    images = [f for f in files if is_image_name(f)]
    formats: Dict[str, int] = collections.Counter()
    sizes = []
    for path in images:
        try:
            with Image.open(path) as im:
                formats[im.format or "unknown"] += 1
                sizes.append(im.size)
        except (OSError, ValueError):
            formats["damaged"] += 1  # left out by the run (data.bad_images)
    classes = collections.Counter(os.path.basename(os.path.dirname(f)) for f in images)
    return Folder(images, [f for f in files if not is_image_name(f)], dict(sorted(classes.items())),
                  dict(formats), sizes)


def check(files: Sequence[str], root: str, bad_images: str = "skip") -> Folder:
    """The pre-flight check of an image folder (raises DataError, one line with the fix)."""
    folder = scan(files)
    if not folder.images:
        raise DataError(f"{root} holds no images ({', '.join(IMAGE_EXTENSIONS)}) one folder down; put each "
                        "class's images in a sub-folder named for the class (e.g. cats/1.jpg, dogs/2.png)")
    if len(folder.classes) < 2:
        raise DataError(f"{root} holds one class folder ({next(iter(folder.classes))}); a classifier needs two or "
                        "more: add a sub-folder of images for each other class")
    if bad_images == "fail":
        from tfxline.components.image_example_gen import decodes

        bad = []
        for path in folder.images:
            with open(path, "rb") as f:
                if not decodes(f.read()):
                    bad.append(path)
        if bad:
            raise DataError(f"{len(bad)} image(s) in {root} do not decode: {', '.join(bad[:NAMED])}"
                            f"{' ...' if len(bad) > NAMED else ''}; remove or replace them, or set "
                            "data.bad_images: skip to leave them out")
    return folder
