"""The Safari plugin's own web view (the ``build_tab`` hook): watch a policy step by step with
play / pause / step / speed (a model live, turn by turn as it plays), replay an uploaded episode,
download it as a GIF, and play a mission with buttons.

The handlers are methods of :class:`SafariWeb` taking and returning plain values (the tests call
them directly); :func:`build_tab` only wires them to Gradio components. Each browser session
keeps its frames and its game in ``gr.State``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from localqwen_safari.human import HumanPlay, HumanState
from localqwen_safari.replay import Frame
from localqwen_safari.watching import PROFILES, WATCHABLE, LiveGame, ModelChoice, profile_fields, turns_so_far

SCALE = 2  # the pictures are small (160 and 256 px): doubled, pixel for pixel, for the page


def picture(png: bytes) -> Any:
    """A rendered PNG as a PIL image, enlarged without smoothing (cells stay sharp)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").resize((image.width * SCALE, image.height * SCALE), Image.Resampling.NEAREST)


def frame_markdown(frame: Frame, *, playing: bool = False, note: str = "") -> str:
    state = "playing" if playing else "paused"
    calls = "\n".join(f"- `{line}`" for line in frame.call_lines())
    lines = [f"**{frame.mission}** {frame.status()} · {state}", "", f"**Thought:** {frame.thought or '(none)'}", "",
             calls, "", f"**Notepad:** {frame.notepad or '(empty)'}"]
    return "\n".join(lines + ([f"\n_{note}_"] if note else []))


def game_markdown(state: HumanState, note: str = "") -> str:
    results = "\n".join(f"- `{line}`" for line in state.results) or "- (no turn yet)"
    pending = f" _(sent with your next turn: {state.pending_notepad})_" if state.pending_notepad is not None else ""
    lines = [f"**{state.mission}** {state.status()}", "", results, "",
             f"**Notepad:** {state.notepad or '(empty)'}{pending}"]
    return "\n".join(lines + ([f"\n_{note}_"] if note else []))


class SafariWeb:
    """The page's handlers. A viewer state is a dict: frames, index, source (for file names),
    note (where the frames came from) and playing."""

    def __init__(self, outputs_dir: Path, context: Callable[[], Any] | None = None) -> None:
        self.outputs_dir = Path(outputs_dir)
        self.context = context  # makes the app's Context (loads the model's engine); None: scripted only

    # -- watching and replaying --------------------------------------------------------------------
    def watch(self, policy: str, kind: str, seed: float | int | None, model: str | None = "",
              adapter: str | None = "", prompt: str | None = "full", max_new_tokens: float | int | None = 256,
              viewer: dict[str, Any] | None = None) -> Iterator[tuple[Any, ...]]:
        """Play ``policy`` on the seed's mission (saved as an episode) and show it: a scripted game
        from its first turn once played (in a blink); a model's turn by turn while it plays (each
        turn takes it a while), the page following the newest. A model that cannot load, or a
        failure mid-game, is said where the turn's text goes and keeps what was shown."""
        from localqwen_safari.missions import mission_for_seed

        choice = ModelChoice(model=(model or "").strip(), adapter=(adapter or "").strip(),
                             max_new_tokens=int(max_new_tokens or 256), **profile_fields(prompt or "full"))
        if policy == "model" and self.context is None:
            yield self._problem(viewer, "This page cannot load models (no app context).")
            return
        if not 8 <= choice.max_new_tokens <= 4096:
            yield self._problem(viewer, "Reply tokens must be between 8 and 4096.")
            return
        game = LiveGame(mission_for_seed(kind, int(seed or 0)), policy, self.outputs_dir,
                        context=self.context() if policy == "model" else None, model=choice)
        frames: list[Frame] = []

        def at_last_turn(note: str) -> dict[str, Any]:
            """The viewer paused on the newest turn (a model's game is watched as it is played)."""
            return {"frames": list(frames), "index": len(frames) - 1, "source": game.source, "note": note,
                    "playing": False}

        try:
            for frame in game.frames():
                frames.append(frame)
                if policy == "model":
                    live = at_last_turn(f"the model ({choice.describe()}) is playing: {turns_so_far(len(frames))}")
                    yield (live, *self._shown(live), self._timer(False))
        except Exception as exc:  # a missing model, a broken adapter, out of memory: said, not raised
            yield self._problem(at_last_turn("") if frames else viewer, f"{type(exc).__name__}: {exc}")
            return
        if policy == "model":
            done = at_last_turn(f"saved {game.saved}")
            yield (done, *self._shown(done), self._timer(False))
            return
        yield self._start({"frames": frames, "index": 0, "source": game.source, "note": f"saved {game.saved}",
                           "playing": True})

    def open_file(self, path: str | None, viewer: dict[str, Any] | None) -> tuple[Any, ...]:
        """Replay an uploaded episode file; a bad one leaves the current frames and says why."""
        from localqwen_safari.episode_file import load_episode
        from localqwen_safari.replay import replay

        if not path:
            return self._problem(viewer, "Upload an episode.jsonl first.")
        try:
            log = load_episode(path)
            frames = replay(log)
        except ValueError as exc:
            return self._problem(viewer, str(exc))
        return self._start({"frames": frames, "index": 0, "source": f"{log.mission.id}-{log.policy}",
                            "note": f"replaying {Path(path).name} ({log.policy}), checked against its world",
                            "playing": True})

    def step(self, viewer: dict[str, Any] | None, delta: int) -> tuple[Any, ...]:
        """One turn forward or back; pauses."""
        if not viewer or not viewer["frames"]:
            return self._problem(viewer, "Nothing to show yet: watch a policy or open an episode.")
        viewer = {**viewer, "playing": False,
                  "index": max(0, min(len(viewer["frames"]) - 1, viewer["index"] + delta))}
        return (viewer, *self._shown(viewer), self._timer(False))

    def tick(self, viewer: dict[str, Any] | None) -> tuple[Any, ...]:
        """The timer's beat: the next turn, stopping at the last one."""
        if not viewer or not viewer["frames"] or not viewer["playing"]:
            return (viewer, *self._unchanged(), self._timer(False))
        last = len(viewer["frames"]) - 1
        viewer = {**viewer, "index": min(last, viewer["index"] + 1)}
        viewer["playing"] = viewer["index"] < last
        return (viewer, *self._shown(viewer), self._timer(viewer["playing"]))

    def play(self, viewer: dict[str, Any] | None) -> tuple[Any, ...]:
        if not viewer or not viewer["frames"]:
            return self._problem(viewer, "Nothing to play yet: watch a policy or open an episode.")
        index = 0 if viewer["index"] >= len(viewer["frames"]) - 1 else viewer["index"]  # at the end: again
        viewer = {**viewer, "index": index, "playing": True}
        return (viewer, *self._shown(viewer), self._timer(True))

    def pause(self, viewer: dict[str, Any] | None) -> tuple[Any, ...]:
        if not viewer or not viewer["frames"]:
            return (viewer, *self._unchanged(), self._timer(False))
        viewer = {**viewer, "playing": False}
        return (viewer, *self._shown(viewer), self._timer(False))

    def speed(self, seconds: float) -> Any:
        import gradio as gr

        return gr.update(value=max(0.05, float(seconds)))

    def gif(self, viewer: dict[str, Any] | None) -> str:
        """Write the shown episode as a GIF and hand its path to the download."""
        import gradio as gr

        from localqwen_safari.gif import write_gif

        if not viewer or not viewer["frames"]:
            raise gr.Error("Nothing to export yet: watch a policy or open an episode.")
        return str(write_gif(viewer["frames"], self.outputs_dir / f"{viewer['source']}.gif"))

    def _start(self, viewer: dict[str, Any]) -> tuple[Any, ...]:
        return (viewer, *self._shown(viewer), self._timer(True))

    def _shown(self, viewer: dict[str, Any]) -> tuple[Any, Any, str]:
        frame = viewer["frames"][viewer["index"]]
        return (picture(frame.view), picture(frame.map),
                frame_markdown(frame, playing=viewer["playing"], note=viewer["note"]))

    def _problem(self, viewer: dict[str, Any] | None, message: str) -> tuple[Any, ...]:
        """Keep what is shown, stop playing, and put the message where the turn's text goes."""
        import gradio as gr

        if viewer:
            viewer = {**viewer, "playing": False}
        return (viewer, gr.update(), gr.update(), f"⚠️ {message}", self._timer(False))

    def _unchanged(self) -> tuple[Any, Any, Any]:
        import gradio as gr

        return gr.update(), gr.update(), gr.update()

    def _timer(self, active: bool) -> Any:
        import gradio as gr

        return gr.update(active=active)

    # -- playing by hand ---------------------------------------------------------------------------
    def start_game(self, kind: str, seed: float | int | None) -> tuple[Any, ...]:
        game = HumanPlay.for_seed(kind, int(seed or 0))
        state = game.state()
        return game, picture(state.view), picture(state.map), game_markdown(state, "Use the buttons; each is a turn.")

    def game_action(self, game: HumanPlay | None, action: str, text: str = "") -> tuple[Any, ...]:
        """A button: up / down / left / right / found / done, or notepad with ``text``."""
        import gradio as gr

        if game is None:
            return game, gr.update(), gr.update(), "⚠️ Start a mission first."
        if game.done:
            return game, gr.update(), gr.update(), game_markdown(game.state(), "The mission is over: start a new one.")
        state = game.apply(action, text)
        note = ""
        if state.done:
            self.outputs_dir.mkdir(parents=True, exist_ok=True)
            saved = game.save(self.outputs_dir / f"human-{game.episode.mission.id}.jsonl")
            note = f"{state.outcome}: saved {saved}"
        return game, picture(state.view), picture(state.map), game_markdown(state, note)

    def game_gif(self, game: HumanPlay | None) -> str:
        import gradio as gr

        from localqwen_safari.gif import write_gif

        if game is None or not game.frames:
            raise gr.Error("Play a few turns first.")
        return str(write_gif(game.frames, self.outputs_dir / f"human-{game.episode.mission.id}.gif"))


def build_tab(plugin: Any, bench: Any) -> None:
    """The web view's hook: the Safari page inside the plugin's tab."""
    import gradio as gr

    from localqwen.vocabulary.cancel import CancelToken

    web = SafariWeb(Path(bench.paths.outputs_dir) / plugin.id, context=lambda: bench.context(plugin.id, CancelToken()))
    with gr.Tabs():
        with gr.Tab("Watch and replay", id="safari-watch-tab"):
            viewer = gr.State(None)
            with gr.Row():
                policy = gr.Dropdown(list(WATCHABLE), value="expert", label="Policy", elem_id="safari-policy")
                kind = gr.Dropdown(["find-one", "find-two"], value="find-one", label="Mission", elem_id="safari-kind")
                seed = gr.Number(7, precision=0, minimum=0, label="Seed", elem_id="safari-seed")
                watch = gr.Button("Watch", variant="primary", elem_id="safari-watch")
                upload = gr.File(label="Replay a saved episode (episode.jsonl)", file_types=[".jsonl"],
                                 type="filepath", elem_id="safari-episode")
            with gr.Row(visible=False) as model_row:  # for the model policy
                model = gr.Textbox(label="Model (id or folder; empty: the configured vision model)",
                                   elem_id="safari-model")
                adapter = gr.Textbox(label="Adapter folder (optional)", elem_id="safari-adapter")
                prompt = gr.Dropdown([(label, value) for label, value in PROFILES], value="full", label="Prompt profile",
                                     elem_id="safari-prompt")
                tokens = gr.Number(256, precision=0, minimum=8, maximum=4096, label="Reply tokens",
                                   elem_id="safari-max-tokens")
                stop = gr.Button("Stop", variant="stop", elem_id="safari-stop")
            with gr.Row():
                view = gr.Image(label="The agent's view", type="pil", interactive=False, elem_id="safari-view")
                world_map = gr.Image(label="The map and the path", type="pil", interactive=False, elem_id="safari-map")
                words = gr.Markdown("Pick a policy and a seed and press Watch, or upload a saved episode.",
                                    elem_id="safari-words")
            with gr.Row():
                back = gr.Button("◀ Step back", elem_id="safari-back")
                play = gr.Button("▶ Play", elem_id="safari-play")
                pause = gr.Button("Pause", elem_id="safari-pause")
                forward = gr.Button("Step ▶", elem_id="safari-step")
                speed = gr.Slider(0.1, 2.0, value=1.0, step=0.1, label="Seconds per turn", elem_id="safari-speed")
                gif = gr.Button("GIF", elem_id="safari-gif")
                gif_file = gr.File(label="GIF download", interactive=False, elem_id="safari-gif-file")
            timer = gr.Timer(1.0, active=False)
            shown = [viewer, view, world_map, words, timer]
            policy.change(lambda name: gr.update(visible=name == "model"), [policy], [model_row])
            # a model's turns stream in: a small spinner, not an overlay hiding them
            watching = watch.click(web.watch, [policy, kind, seed, model, adapter, prompt, tokens, viewer], shown,
                                   show_progress="minimal")
            stop.click(None, cancels=[watching])
            # The viewer's own events run one at a time, in order: a timer beat that began before
            # Pause could otherwise read "playing", write it back after Pause and play on (the
            # likely cause of a browser test, on a loaded machine, not finding Step's turn).
            one_at_a_time = {"concurrency_id": "safari-viewer", "concurrency_limit": 1}
            upload.upload(web.open_file, [upload, viewer], shown, **one_at_a_time)
            back.click(lambda v: web.step(v, -1), [viewer], shown, **one_at_a_time)
            forward.click(lambda v: web.step(v, 1), [viewer], shown, **one_at_a_time)
            play.click(web.play, [viewer], shown, **one_at_a_time)
            pause.click(web.pause, [viewer], shown, **one_at_a_time)
            timer.tick(web.tick, [viewer], shown, show_progress="hidden", **one_at_a_time)
            speed.change(web.speed, [speed], [timer])
            gif.click(web.gif, [viewer], [gif_file])
        with gr.Tab("Play by hand", id="safari-human-tab"):
            game = gr.State(None)
            with gr.Row():
                human_kind = gr.Dropdown(["find-one", "find-two"], value="find-one", label="Mission",
                                         elem_id="safari-human-kind")
                human_seed = gr.Number(7, precision=0, minimum=0, label="Seed", elem_id="safari-human-seed")
                start = gr.Button("Start", variant="primary", elem_id="safari-start")
            with gr.Row():
                human_view = gr.Image(label="Your view", type="pil", interactive=False, elem_id="safari-human-view")
                human_map = gr.Image(label="The map and your path", type="pil", interactive=False,
                                     elem_id="safari-human-map")
                human_words = gr.Markdown("Start a mission, then move one step per turn.", elem_id="safari-human-words")
            outputs = [game, human_view, human_map, human_words]
            # one game, changed in place by each button: its events run one at a time, in order (two
            # quick clicks would otherwise move it from two threads at once)
            one_move_at_a_time = {"concurrency_id": "safari-human", "concurrency_limit": 1}
            start.click(web.start_game, [human_kind, human_seed], outputs, **one_move_at_a_time)
            with gr.Row():
                for action, label in (("left", "← Left"), ("up", "↑ Up"), ("down", "↓ Down"), ("right", "→ Right"),
                                      ("found", "Declare found"), ("done", "Declare done")):
                    button = gr.Button(label, elem_id=f"safari-human-{action}")
                    button.click(lambda g, a=action: web.game_action(g, a), [game], outputs, **one_move_at_a_time)
            with gr.Row():
                note = gr.Textbox(label="Notepad (sent with your next turn)", elem_id="safari-human-note")
                keep = gr.Button("Keep note", elem_id="safari-human-keep")
                keep.click(lambda g, text: web.game_action(g, "notepad", text), [game, note], outputs,
                           **one_move_at_a_time)
                human_gif = gr.Button("GIF of my game", elem_id="safari-human-gif")
                human_gif_file = gr.File(label="GIF download", interactive=False, elem_id="safari-human-gif-file")
                human_gif.click(web.game_gif, [game], [human_gif_file], **one_move_at_a_time)
