"""Watch any policy play live: a mission's frames as each turn is played, for the TUI and the web view.

A scripted policy plays a whole mission in a blink; a model takes from a fraction of a second (a
tiny one) to half a minute (Qwen3-VL-2B on a CPU) per turn, so the viewers show each turn as soon as
it is played instead of waiting for the end. The game is saved as an episode once it is over, so it
replays later like any other. Stopping (the token) ends the game between turns; nothing is saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen_safari.missions import Mission
from localqwen_safari.replay import Frame, record_play

if TYPE_CHECKING:
    from localqwen.plugin_api import Context
    from localqwen_safari.policies import Policy

SCRIPTED = ("expert", "sweeper", "tour", "compass", "greedy", "random")
WATCHABLE = (*SCRIPTED, "model")


# The TUI's and the web view's "prompt profile" choices: a profile, and whether the model looks first
# (look.py) or is asked the route first (route.py).
PROFILES = (("full prompt", "full"), ("compact prompt", "compact"), ("compact prompt, looks first", "compact+look"),
            ("compact prompt, asks the route first", "compact+route"))


def profile_fields(value: str) -> dict[str, Any]:
    """A profile choice ("compact+look") as :class:`ModelChoice`'s fields: the prompt profile and
    the look and route flags."""
    prompt, _, stage = (value or "full").partition("+")
    return {"prompt": prompt, "look": stage == "look", "route": stage == "route"}


@dataclass(frozen=True)
class ModelChoice:
    """Which model plays (the ``model`` policy), as the CLI's ``--model``, ``--adapter``,
    ``--prompt`` and ``--max-new-tokens`` say it."""

    model: str = ""  # an id or a folder; empty: the configured vision model
    adapter: str = ""  # an adapter folder; empty: none
    prompt: str = "full"  # the prompt profile it was trained with
    max_new_tokens: int = 256
    look: bool = False  # trained to look first (look.py; the CLI's --look)
    route: bool = False  # trained to be asked the route first (route.py; the CLI's --route)

    def describe(self) -> str:
        name = Path(self.model).name if self.model else "the configured vision model"
        return name + (f" + {Path(self.adapter).name}" if self.adapter else "")


def turns_so_far(count: int) -> str:
    return f"{count} turn{'s' * (count != 1)} so far"


class LiveGame:
    """One mission played by one policy, frame by frame (:meth:`frames`); ``saved`` is the episode
    file once the game is over. ``context`` is needed for the model (it loads the engine) and
    carries the cancel token that stops the game between turns."""

    def __init__(self, mission: Mission, policy_name: str, outputs_dir: Path, *, context: Context | None = None,
                 model: ModelChoice | None = None) -> None:
        if policy_name not in WATCHABLE:
            raise ValueError(f"unknown policy {policy_name!r} (one of {', '.join(WATCHABLE)})")
        if policy_name == "model" and context is None:
            raise ValueError("the model policy needs the app's context to load its engine")
        self.mission = mission
        self.policy_name = policy_name
        self.outputs_dir = Path(outputs_dir)
        self.context = context
        self.model = model or ModelChoice()
        self.saved: Path | None = None

    @property
    def source(self) -> str:
        """The game's name in file names (episode, GIF)."""
        return f"{self.mission.id}-{self.policy_name}"

    def frames(self) -> Iterator[Frame]:
        """Each turn's frame as soon as it is played (the model's engine loads before the first)."""
        policy = self._policy()
        self.outputs_dir.mkdir(parents=True, exist_ok=True)
        for frame, log in record_play(self.mission, policy, self.policy_name):
            if self.context is not None:
                self.context.cancel.raise_if_cancelled()
            if frame.done:
                self.saved = log.save(self.outputs_dir / f"watch-{self.source}.jsonl")
            yield frame

    def _policy(self) -> Policy:
        from localqwen_safari.policies import get_policy

        if self.policy_name != "model":
            return get_policy(self.policy_name)
        from localqwen_safari.model_policy import engine_policy

        assert self.context is not None
        choice = self.model
        return engine_policy(self.context, self.outputs_dir / "model-views", model=choice.model,
                             adapter=choice.adapter or None, prompt=choice.prompt,
                             max_new_tokens=choice.max_new_tokens, look=choice.look, route=choice.route)
