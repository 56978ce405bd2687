"""The ``model`` policy: any engine (transformers, llama.cpp, remote) plays through native tool calls.

Each turn: render the view, ask the model with the system prompt, the view (an image for a vision
model, the same cells as text rows for a text-only one) and the context, with the four tool
schemas offered the way the runtime's tool loop offers them; the engine parses Qwen's
``<tool_call>`` blocks, and :meth:`Episode.play_turn` checks each call against its schema with the
tool loop's :func:`~localqwen.runtime.tool_loop.run_tool`. A reply without a usable call is a
wasted turn; bad arguments become error results the model reads next turn. Nothing it writes
can crash the episode.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen_safari.episode import VIEW, Episode, tool_schemas
from localqwen_safari.policies import Decision
from localqwen_safari.prompts import system_prompt
from localqwen_safari.render import render_view
from localqwen_safari.world import SPECIES_LETTER

if TYPE_CHECKING:
    from localqwen.plugin_api import Context
    from localqwen.runtime.engine.base import Engine, GenerationSettings
    from localqwen.vocabulary.cancel import CancelToken

TEXT_VIEW_NOTE = ("Your view as text rows (. land, ~ water, # rock, x outside the map, Z L E G animals, "
                  "@ you):")


def text_view(episode: Episode) -> str:
    """The view's cells as characters, for engines that cannot see images."""
    top, left = episode.view_origin()
    rows = []
    for r in range(top, top + VIEW):
        line = ""
        for c in range(left, left + VIEW):
            animal = episode.world.animal_at((r, c))
            if (r, c) == episode.position:
                line += "@"
            elif not episode.world.inside((r, c)):
                line += "x"
            elif animal is not None:
                line += SPECIES_LETTER[animal.species]
            else:
                line += episode.world.ground((r, c))
        rows.append(line)
    return "\n".join(rows)


def model_messages(episode: Episode, *, image: str | None, hide_notepad: bool = False,
                   prompt: str = "full") -> list[dict[str, Any]]:
    """The conversation the model answers on one turn (the same shape the training rows have)."""
    context = episode.context_text(show_notepad=not hide_notepad) if prompt == "full" else \
        episode.compact_context(show_notepad=not hide_notepad)
    if image is not None:
        user: Any = [{"type": "image", "image": image}, {"type": "text", "text": context}]
    else:
        user = f"{TEXT_VIEW_NOTE}\n{text_view(episode)}\n{context}"
    return [{"role": "system", "content": system_prompt(prompt)}, {"role": "user", "content": user}]


class ModelPolicy:
    """A policy backed by an engine. ``blank_image`` and ``hide_notepad`` are the two ablations:
    does it use its eyes, does it use its memory? ``prompt`` is the prompt profile the model was
    trained with (``full``: system prompt and tool schema; ``compact``: one line, no schema).

    Called on one episode it is a plain :data:`~localqwen_safari.policies.Policy`;
    :meth:`decide` answers many episodes' turns with one batched ``chat_batch`` (one left-padded
    ``generate`` on a transformers engine), which is what makes evaluating hundreds of episodes
    in lockstep affordable (see :func:`localqwen_safari.evaluation.evaluate_lockstep`)."""

    def __init__(self, engine: Engine, image_dir: Path, *, settings: GenerationSettings | None = None,
                 cancel: CancelToken | None = None, blank_image: bool = False, hide_notepad: bool = False,
                 prompt: str = "full", keep_replies: bool = True) -> None:
        system_prompt(prompt)  # an unknown profile fails here, before any episode
        self.engine = engine
        self.image_dir = Path(image_dir)
        self.settings = settings
        self.cancel = cancel
        self.blank_image = blank_image
        self.hide_notepad = hide_notepad
        self.prompt = prompt
        self.tools = tool_schemas() if prompt == "full" else None
        self.keep_replies = keep_replies
        self.replies: list[str] = []  # raw reply texts, for inspection

    def __call__(self, episode: Episode) -> Decision:
        return self.decide([episode])[0]

    def decide(self, episodes: list[Episode]) -> list[Decision]:
        """Each episode's decision for its current turn, all asked in one batch."""
        conversations = [model_messages(episode, image=self._view_file(episode), hide_notepad=self.hide_notepad,
                                        prompt=self.prompt) for episode in episodes]
        if len(conversations) == 1:
            results = [self.engine.chat(conversations[0], tools=self.tools, settings=self.settings,
                                        cancel=self.cancel)]
        else:
            results = self.engine.chat_batch(conversations, tools=self.tools, settings=self.settings,
                                             cancel=self.cancel)
        decisions = []
        for result in results:
            if self.keep_replies:
                self.replies.append(result.text)
            thought = result.text.strip().removeprefix("Thought:").strip()
            decisions.append(Decision(thought, [(call.name, dict(call.arguments)) for call in result.tool_calls]))
        return decisions

    def _view_file(self, episode: Episode) -> str | None:
        """The view as a PNG file for a vision engine (None: a text engine reads it as text rows)."""
        if not self.engine.supports_images:
            return None
        self.image_dir.mkdir(parents=True, exist_ok=True)
        path = self.image_dir / f"{episode.mission.id}_t{episode.turn + 1:02d}.png"
        path.write_bytes(render_view(episode, blank=self.blank_image))
        return str(path)


def engine_policy(ctx: Context, image_dir: Path, *, model: str = "", adapter: str | None = None,
                  prompt: str = "full", max_new_tokens: int = 256, **ablation: bool) -> ModelPolicy:
    """A :class:`ModelPolicy` on the engine ``ctx`` loads for ``model`` (empty: the configured
    vision model) with ``adapter``; what the CLI, the TUI and the web view all play with. A text-only
    Qwen3 plays too: it reads the view as text rows (:func:`text_view`)."""
    from localqwen.runtime.engine import GenerationSettings

    try:
        engine = ctx.engine(model or None, adapter=adapter or None, task="vision")
    except ValueError as exc:
        if not model or "is a text model" not in str(exc):
            raise
        engine = ctx.engine(model, adapter=adapter or None, task="text")
    return ModelPolicy(engine, image_dir, settings=GenerationSettings(max_new_tokens=max_new_tokens),
                       cancel=ctx.cancel, prompt=prompt, keep_replies=False, **ablation)
