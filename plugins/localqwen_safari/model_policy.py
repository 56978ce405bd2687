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
from localqwen_safari.look import look_conversation, look_targets, pinned, with_look
from localqwen_safari.policies import Decision
from localqwen_safari.prompts import compact_user, system_prompt
from localqwen_safari.render import render_view
from localqwen_safari.route import (
    ROUTE_TOKENS,
    route_goal,
    route_line,
    route_messages,
    route_question,
    with_route,
)
from localqwen_safari.world import SPECIES_LETTER

if TYPE_CHECKING:
    from localqwen.plugin_api import Context
    from localqwen.runtime.engine.base import Engine, GenerationSettings
    from localqwen.vocabulary.cancel import CancelToken

LOOK_TOKENS = 24  # "The giraffe is 4 rows down and 4 cols right." is 14 tokens of the tiny model's tokenizer
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
                   prompt: str = "full", look: str = "", route: str = "") -> list[dict[str, Any]]:
    """The conversation the model answers on one turn (the same shape the training rows have);
    ``look``: what its look said this turn (look.py), the context's last line; ``route``: what its
    route stage said (route.py), the line before the compact context's last."""
    context = episode.context_text(show_notepad=not hide_notepad) if prompt == "full" else \
        episode.compact_context(show_notepad=not hide_notepad)
    context = with_look(with_route(context, route), look)
    if image is not None:
        user: Any = compact_user(image, context) if prompt == "compact" else \
            [{"type": "image", "image": image}, {"type": "text", "text": context}]
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
    in lockstep affordable (see :func:`localqwen_safari.evaluation.evaluate_lockstep`).

    ``look``: the model was trained to look before it replies (look.py); each turn it is first asked
    where each target not yet found is, and its answers end the reply's context.

    ``route``: the model was trained with the route asked first (route.py, compact profile): each
    turn it is first asked the way to the waypoint its notepad says it heads for, and its answer is a
    line of the reply's context. With the notepad hidden nothing is asked (the waypoint is read off it)."""

    def __init__(self, engine: Engine, image_dir: Path, *, settings: GenerationSettings | None = None,
                 cancel: CancelToken | None = None, blank_image: bool = False, hide_notepad: bool = False,
                 prompt: str = "full", keep_replies: bool = True, look: bool = False, route: bool = False) -> None:
        system_prompt(prompt)  # an unknown profile fails here, before any episode
        if look and not engine.supports_images:
            raise ValueError("the look stage asks about the view image; this engine reads the view as text, "
                             "so play it without --look")
        if route and (prompt != "compact" or not engine.supports_images):
            raise ValueError("the route stage is a question on the view image in the compact profile: play it "
                             "with a vision model and --prompt compact")
        self.look = look
        self.route = route
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
        self.looks: list[str] = []  # the look lines the replies were given (with ``look``)
        self.routes: list[str] = []  # the route lines the replies were given (with ``route``)

    def __call__(self, episode: Episode) -> Decision:
        return self.decide([episode])[0]

    def decide(self, episodes: list[Episode]) -> list[Decision]:
        """Each episode's decision for its current turn, all asked in one batch."""
        views = [self._view_file(episode) for episode in episodes]
        looks = self._looks(episodes, views) if self.look else [""] * len(episodes)
        routes = self._routes(episodes, views) if self.route and not self.hide_notepad else [""] * len(episodes)
        conversations = [model_messages(episode, image=view, hide_notepad=self.hide_notepad, prompt=self.prompt,
                                        look=look, route=route)
                         for episode, view, look, route in zip(episodes, views, looks, routes, strict=True)]
        results = self._ask(conversations, tools=self.tools, settings=self.settings)
        decisions = []
        for result in results:
            if self.keep_replies:
                self.replies.append(result.text)
            thought = result.text.strip().removeprefix("Thought:").strip()
            decisions.append(Decision(thought, [(call.name, dict(call.arguments)) for call in result.tool_calls]))
        return decisions

    def _ask(self, conversations: list[list[dict[str, Any]]], *, tools: list[dict[str, Any]] | None,
             settings: GenerationSettings | None) -> list[Any]:
        if len(conversations) == 1:
            return [self.engine.chat(conversations[0], tools=tools, settings=settings, cancel=self.cancel)]
        return self.engine.chat_batch(conversations, tools=tools, settings=settings, cancel=self.cancel)

    def _looks(self, episodes: list[Episode], views: list[str | None]) -> list[str]:
        """Each episode's look line: the model's answer to "Where is the <target>?" for each target
        not yet found, all episodes' questions in one batch, each answer pinned to its map cell."""
        from dataclasses import replace

        from localqwen.runtime.engine import GenerationSettings

        asks = [(number, species) for number, episode in enumerate(episodes) for species in look_targets(episode)]
        answers: list[list[str]] = [[] for _ in episodes]
        if asks:
            short = replace(self.settings or GenerationSettings(), max_new_tokens=LOOK_TOKENS)
            results = self._ask([look_conversation(str(views[number]), species, self.prompt) for number, species in asks],
                                tools=None, settings=short)
            for (number, _), result in zip(asks, results, strict=True):
                said = pinned(result.text.strip(), episodes[number].position)
                if said:  # an empty answer adds nothing (no blank "Look:" line)
                    answers[number].append(said)
        lines = [" ".join(said) for said in answers]
        if self.keep_replies:
            self.looks.extend(lines)
        return lines

    def _routes(self, episodes: list[Episode], views: list[str | None]) -> list[str]:
        """Each episode's route line: the model's answer to "Way to <bearing>?" for the waypoint its
        notepad says it heads for (route.route_goal), all in one batch; "" where there is none or
        the answer states no single move."""
        from dataclasses import replace

        from localqwen.runtime.engine import GenerationSettings

        asks = [(number, goal) for number, episode in enumerate(episodes)
                if (goal := route_goal(episode)) is not None]
        lines = [""] * len(episodes)
        if asks:
            short = replace(self.settings or GenerationSettings(), max_new_tokens=ROUTE_TOKENS)
            results = self._ask([route_messages(str(views[number]), route_question(episodes[number].position, goal))
                                 for number, goal in asks], tools=None, settings=short)
            for (number, goal), result in zip(asks, results, strict=True):
                lines[number] = route_line(episodes[number].position, goal, result.text.strip())
        if self.keep_replies:
            self.routes.extend(lines)
        return lines

    def _view_file(self, episode: Episode) -> str | None:
        """The view as a PNG file for a vision engine (None: a text engine reads it as text rows)."""
        if not self.engine.supports_images:
            return None
        self.image_dir.mkdir(parents=True, exist_ok=True)
        path = self.image_dir / f"{episode.mission.id}_t{episode.turn + 1:02d}.png"
        path.write_bytes(render_view(episode, blank=self.blank_image))
        return str(path)


def engine_policy(ctx: Context, image_dir: Path, *, model: str = "", adapter: str | None = None,
                  prompt: str = "full", max_new_tokens: int = 256, look: bool = False, route: bool = False,
                  **ablation: bool) -> ModelPolicy:
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
                       cancel=ctx.cancel, prompt=prompt, keep_replies=False, look=look, route=route,
                       **ablation)
