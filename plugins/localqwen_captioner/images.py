"""Finding and safely opening images for captioning.

Every problem with one file (corrupt, truncated, a decompression bomb, not an image at all)
becomes an :class:`ImageLoadError` with a message a person can act on, so a batch records it
and moves on. Animated images (GIF, APNG, WebP) are captioned from their first frame with a
warning; CMYK, palette and alpha images are converted to RGB (alpha over white).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")


class ImageLoadError(Exception):
    """One image could not be used; ``reason`` is a short machine-readable kind."""

    def __init__(self, path: Path, reason: str, message: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(message)


@dataclass
class LoadedImage:
    path: Path
    image: PILImage
    original_size: tuple[int, int]
    warnings: list[str] = field(default_factory=list)


def find_images(source: Path, *, recursive: bool = True,
                extensions: tuple[str, ...] = IMAGE_EXTENSIONS) -> list[Path]:
    """One image file, or every file under a folder whose extension looks like an image, sorted.

    Hidden files and folders (``.thumbnails``, ``.DS_Store``...) are skipped.
    """
    source = Path(source).expanduser()
    if not source.exists():
        raise FileNotFoundError(f"no such file or folder: {source}")
    wanted = tuple(ext.lower() for ext in extensions)
    if source.is_file():
        return [source]
    pattern = source.rglob("*") if recursive else source.glob("*")
    found = []
    for path in pattern:
        relative = path.relative_to(source)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and path.suffix.lower() in wanted:
            found.append(path)
    return sorted(found)


def default_max_pixels() -> int:
    """PIL's own decompression-bomb limit (about 89 megapixels unless changed)."""
    from PIL import Image

    return int(Image.MAX_IMAGE_PIXELS or 0) or 89_478_485


def load_image(path: Path, *, max_side: int | None = None, max_pixels: int | None = None) -> LoadedImage:
    """Open ``path`` as an RGB image, optionally shrunk so its longer side is at most ``max_side``.

    Raises :class:`ImageLoadError` for anything that is not a usable image.
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    limit = max_pixels or default_max_pixels()
    notes: list[str] = []
    if not path.is_file():
        raise ImageLoadError(path, "missing", f"{path.name}: file not found")
    if path.stat().st_size == 0:
        raise ImageLoadError(path, "empty", f"{path.name}: the file is empty")
    try:
        with warnings.catch_warnings():
            # We check the size against our own limit below, with a clearer message than PIL's.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as opened:
                width, height = opened.size
                if width * height > limit:
                    raise _bomb_error(path, width, height, limit)
                frames = getattr(opened, "n_frames", 1)
                if frames > 1:
                    opened.seek(0)
                    notes.append(f"animated image with {frames} frames: captioned from the first frame")
                opened.load()
                image = _to_rgb(opened)
    except ImageLoadError:
        raise
    except Image.DecompressionBombError:
        # PIL refuses at open time when the image is over twice its limit; report it like ours.
        raise ImageLoadError(path, "too_large",
                             f"{path.name}: the image is far larger than the {limit / 1e6:.0f} megapixel "
                             "limit (possible decompression bomb); refused") from None
    except UnidentifiedImageError:
        raise ImageLoadError(path, "not_an_image",
                             f"{path.name}: not a recognised image (the content does not match any image "
                             f"format, despite the {path.suffix or 'missing'} extension)") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        text = str(exc)
        if "truncated" in text.lower():
            raise ImageLoadError(path, "truncated",
                                 f"{path.name}: the image file is truncated (incomplete download or copy?)") from None
        raise ImageLoadError(path, "corrupt", f"{path.name}: the image data is corrupt ({text or type(exc).__name__})") from None
    original = image.size
    if max_side and max(image.size) > max_side:
        image.thumbnail((max_side, max_side), Image.Resampling.BICUBIC)
    return LoadedImage(path=path, image=image, original_size=original, warnings=notes)


def _bomb_error(path: Path, width: int, height: int, limit: int) -> ImageLoadError:
    return ImageLoadError(
        path, "too_large",
        f"{path.name}: {width}x{height} is {width * height / 1e6:.0f} megapixels, over the "
        f"{limit / 1e6:.0f} megapixel limit (possible decompression bomb); refused",
    )


def _to_rgb(image: PILImage) -> PILImage:
    """Any mode to RGB. Transparent pixels become white, as most viewers show them."""
    from PIL import Image

    if image.mode == "RGB":
        return image.copy()
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA"):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    # CMYK, YCbCr, L, I;16, 1, P without transparency: PIL converts these correctly.
    if image.mode.startswith("I;16") or image.mode in ("I", "F"):
        image = image.point(lambda value: value / 256).convert("L")
    return image.convert("RGB")


def write_preview(path: Path, target: Path, *, max_side: int = 512) -> Path:
    """A small JPEG copy of ``path`` at ``target`` (kept if already there).

    The web view serves only files under LocalQwen's own folders, so galleries show these
    previews rather than the user's originals. Raises :class:`ImageLoadError` like :func:`load_image`.
    """
    from localqwen.atomic import atomic_open

    if target.exists():
        return target
    image = load_image(path, max_side=max_side).image
    with atomic_open(target, "wb", encoding=None) as handle:
        image.save(handle, "JPEG", quality=85)
    return target
