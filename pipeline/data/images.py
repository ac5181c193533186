"""An image folder (or a CSV of image paths and classes), looked at before a run and by ``tfxline
init``: its classes (one sub-folder each, or the CSV's label column), the files that are not
images, and the formats and sizes of those that are (read from the files' headers with Pillow: no
decoding, thousands of files a second).

The pre-flight check (``check``) refuses a folder the ExampleGen could not learn from: no images,
one class, or under ``data.bad_images: fail`` an image TensorFlow does not decode, named (its
decoding is the Trainer's: components/image_example_gen.decodes).
"""
from __future__ import annotations

import collections
import dataclasses
import statistics
from typing import Dict, List, Sequence, Tuple

from tfxline.pipeline.data.check import DataError
from tfxline.transforms.image_files import IMAGE_EXTENSIONS, is_image_name  # noqa: F401 - init reads them here

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


def scan(files: Sequence[str], image_column: str = "image", label_column: str = "label") -> Folder:
    """The folder's files (a pattern's matches, ``<class>/<file>``) sorted into images and others,
    or a CSV's rows (its image paths and classes); the images' classes, formats and sizes."""
    from PIL import Image

    from tfxline.components.image_example_gen import class_of, csv_entries

    tables = [f for f in files if f.lower().endswith(".csv")]
    try:
        entries = ([e for t in tables for e in csv_entries(t, image_column, label_column)] if tables else
                   [(f, class_of(f), {}) for f in files if is_image_name(f)])
    except ValueError as e:
        raise DataError(str(e)) from None
    images = [path for path, _, _ in entries]
    formats: Dict[str, int] = collections.Counter()
    sizes = []
    for path in images:
        try:
            with Image.open(path) as im:
                formats[im.format or "unknown"] += 1
                sizes.append(im.size)
        except FileNotFoundError:
            raise DataError(f"{path} does not exist (named in {', '.join(tables)}); fix the path or remove the "
                            "row") from None
        except (OSError, ValueError):
            formats["damaged"] += 1  # left out by the run (data.bad_images)
    classes = collections.Counter(label for _, label, _ in entries)
    ignored = [] if tables else [f for f in files if not is_image_name(f)]
    return Folder(images, ignored, dict(sorted(classes.items())), dict(formats), sizes)


def check(files: Sequence[str], root: str, bad_images: str = "skip", image_column: str = "image",
          label_column: str = "label") -> Folder:
    """The pre-flight check of an image folder or a CSV of image paths (raises DataError, one line
    with the fix)."""
    folder = scan(files, image_column, label_column)
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
