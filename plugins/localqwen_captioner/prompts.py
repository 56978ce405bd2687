"""Caption prompt presets. ``custom`` means "use the text the user typed"."""

from __future__ import annotations

from localqwen_captioner.coco import COCO_PROMPT

PRESETS: dict[str, str] = {
    "short": "Describe this image in one short sentence.",
    "detailed": "Describe this image in detail: the main subjects, what they are doing, the setting, "
                "colours, lighting and any text that is visible.",
    # The seed project trained with this exact prompt; an adapter trained on COCO JSON expects it.
    "coco": COCO_PROMPT,
    "tags": "List the objects, attributes and scene of this image as comma-separated tags, "
            "most important first. Output only the tags.",
    "chinese": "用一句简洁的中文描述这张图片。",
}
PRESET_NAMES = [*PRESETS, "custom"]


def resolve_prompt(preset: str, custom: str = "") -> str:
    """The prompt text for a preset; a non-empty custom prompt wins over any preset."""
    if custom.strip():
        return custom.strip()
    if preset == "custom":
        raise ValueError("the 'custom' preset needs a custom prompt")
    try:
        return PRESETS[preset]
    except KeyError:
        raise ValueError(f"unknown prompt preset '{preset}' (known: {', '.join(PRESET_NAMES)})") from None
