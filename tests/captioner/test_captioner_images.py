"""Safe image loading: every broken file gets a clear, specific error; odd formats still caption."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from captioner_support import COCO_MINI, needs_coco
from localqwen_captioner.images import ImageLoadError, find_images, load_image


def _save(image, path: Path, **options) -> Path:
    image.save(path, **options)
    return path


@needs_coco
def test_real_coco_jpeg_loads_as_rgb_and_shrinks():
    path = sorted((COCO_MINI / "val2017").glob("*.jpg"))[0]
    loaded = load_image(path, max_side=224)
    assert loaded.image.mode == "RGB"
    assert max(loaded.image.size) == 224 and max(loaded.original_size) > 224
    assert loaded.warnings == []


def test_cmyk_is_converted_to_rgb_with_the_right_colour(tmp_path):
    from PIL import Image

    path = _save(Image.new("CMYK", (40, 30), (0, 255, 255, 0)), tmp_path / "red.jpg", quality=95)
    loaded = load_image(path)
    assert loaded.image.mode == "RGB"
    red, green, blue = loaded.image.getpixel((20, 15))
    assert red > 200 and green < 60 and blue < 60


def test_transparent_png_gets_a_white_background(tmp_path):
    from PIL import Image

    path = _save(Image.new("RGBA", (10, 10), (0, 0, 0, 0)), tmp_path / "clear.png")
    assert load_image(path).image.getpixel((5, 5)) == (255, 255, 255)


@pytest.mark.parametrize("mode", ["L", "P", "1", "I;16", "LA"])
def test_other_modes_become_rgb(tmp_path, mode):
    from PIL import Image

    path = _save(Image.new(mode, (8, 8)), tmp_path / f"img_{mode.replace(';', '')}.png")
    assert load_image(path).image.mode == "RGB"


def test_animated_gif_uses_first_frame_with_a_warning(tmp_path):
    from PIL import Image

    frames = [Image.new("RGB", (16, 16), colour) for colour in ("red", "blue", "green")]
    path = tmp_path / "anim.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=50, loop=0)
    loaded = load_image(path)
    assert loaded.warnings and "3 frames" in loaded.warnings[0] and "first frame" in loaded.warnings[0]
    red, green, blue = loaded.image.getpixel((8, 8))
    assert red > 200 and blue < 60


def test_truncated_jpeg_is_reported_as_truncated(tmp_path):
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((256, 256), 64).convert("RGB").save(buffer, "JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason == "truncated" and "truncated" in str(info.value)


def test_text_file_with_image_extension_is_not_an_image(tmp_path):
    path = tmp_path / "notes.png"
    path.write_text("this is not a picture", encoding="utf-8")
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason == "not_an_image" and ".png extension" in str(info.value)


def test_empty_file_is_reported_as_empty(tmp_path):
    path = tmp_path / "empty.jpg"
    path.touch()
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason == "empty"


def test_corrupt_png_body_is_reported_as_corrupt(tmp_path):
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((64, 64), 64).convert("RGB").save(buffer, "PNG")
    data = bytearray(buffer.getvalue())
    data[60:200] = b"\x00" * 140  # smash the compressed image data, keep the header
    path = tmp_path / "smashed.png"
    path.write_bytes(bytes(data))
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason in ("corrupt", "truncated")
    assert "smashed.png" in str(info.value)


def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    from PIL import Image

    # A 1-bit 12000x12000 PNG is tiny on disk but 144 megapixels once decoded.
    path = _save(Image.new("1", (12_000, 12_000)), tmp_path / "bomb.png", optimize=True)
    assert path.stat().st_size < 100_000
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason == "too_large" and "decompression bomb" in str(info.value)
    # A lower limit than PIL's default also applies.
    small = _save(Image.new("RGB", (100, 100)), tmp_path / "small.png")
    with pytest.raises(ImageLoadError, match="over the 0 megapixel limit"):
        load_image(small, max_pixels=5_000)


def test_bomb_far_over_pil_limit_is_refused_too(tmp_path):
    from PIL import Image

    path = _save(Image.new("1", (20_000, 20_000)), tmp_path / "huge.png", optimize=True)
    with pytest.raises(ImageLoadError) as info:
        load_image(path)
    assert info.value.reason == "too_large"


def test_find_images_recurses_by_extension_and_skips_hidden(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".cache").mkdir()
    for name in ("one.JPG", "a/two.png", "a/b/three.webp", "a/readme.txt", ".cache/four.jpg", "a/.hidden.png"):
        (tmp_path / name).write_bytes(b"x")
    found = [p.relative_to(tmp_path).as_posix() for p in find_images(tmp_path)]
    assert found == ["a/b/three.webp", "a/two.png", "one.JPG"]
    assert [p.name for p in find_images(tmp_path, recursive=False)] == ["one.JPG"]
    assert find_images(tmp_path / "one.JPG") == [tmp_path / "one.JPG"]
    with pytest.raises(FileNotFoundError):
        find_images(tmp_path / "nope")
