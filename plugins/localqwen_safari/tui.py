"""The Safari plugin's own TUI screen (the ``open_view`` hook): watch a policy play step by step,
replay a saved episode, export it as a GIF, or play a mission with the keyboard.

Watching: space plays / pauses, ``.`` and ``,`` step forward and back, ``+`` / ``-`` change the
speed. A model plays live: each turn shows as soon as the model has played it (the viewer waits at
the newest turn), and Stop ends the game. Playing: the arrows move one step, ``f`` declares the
current target found, ``d`` declares done, ``n`` writes the notepad (sent with the next turn). The
game logic lives in ``human.py`` / ``replay.py`` / ``watching.py``; this file only draws and
forwards keys.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Button, Footer, Input, Label, Select, Static

from localqwen.tui.widgets.image_block import half_block_strips
from localqwen.vocabulary.cancel import Cancelled, CancelToken
from localqwen_safari.human import HumanPlay, HumanState
from localqwen_safari.replay import Frame
from localqwen_safari.watching import PROFILES, WATCHABLE, LiveGame, ModelChoice, profile_fields, turns_so_far

SPEEDS = (2.0, 1.0, 0.5, 0.25, 0.1)  # seconds per turn while playing
VIEW_CELL_PX, MAP_CELL_PX = 16, 8  # render.py's sizes: one cell of the view / map image


def cell_strips(png: bytes, cell_px: int, columns_per_cell: int) -> list[Strip]:
    """A rendered picture at one colour per world cell (its centre pixel, so the path and animal
    marks survive), drawn with the TUI's half-block images: ``columns_per_cell`` wide, half as tall."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        image = image.convert("RGB")
        cols, rows = image.width // cell_px, image.height // cell_px
        cells = Image.new("RGB", (cols, rows))
        for r in range(rows):
            for c in range(cols):
                cells.putpixel((c, r), image.getpixel((c * cell_px + cell_px // 2, r * cell_px + cell_px // 2)))
    width = cols * columns_per_cell
    big = cells.resize((width, rows * columns_per_cell), Image.Resampling.NEAREST)
    buffer = io.BytesIO()
    big.save(buffer, format="PNG")
    buffer.seek(0)
    return half_block_strips(buffer, width)  # type: ignore[arg-type]  # PIL opens a file object too


class CellPicture(Widget):
    """A view or map image that is redrawn each turn."""

    DEFAULT_CSS = "CellPicture { height: auto; width: auto; }"

    def __init__(self, cell_px: int, columns_per_cell: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell_px, self.columns_per_cell = cell_px, columns_per_cell
        self.strips: list[Strip] = []

    def show(self, png: bytes) -> None:
        self.strips = cell_strips(png, self.cell_px, self.columns_per_cell)
        self.styles.height = len(self.strips)
        self.styles.width = self.strips[0].cell_length if self.strips else 0
        self.refresh(layout=True)

    def render_line(self, y: int) -> Strip:
        return self.strips[y] if y < len(self.strips) else Strip.blank(self.size.width)


class SafariScreen(Screen[None]):
    CSS = """
    SafariScreen #controls { height: auto; }
    SafariScreen #controls Select { width: 16; }
    SafariScreen #controls Input { width: 12; }
    SafariScreen #controls #episode-path { width: 1fr; }
    SafariScreen #controls Button { min-width: 8; }
    SafariScreen #left { width: 1fr; }
    SafariScreen #words { height: 1fr; }
    SafariScreen #map { margin-left: 1; }
    SafariScreen #notepad-input { display: none; }
    SafariScreen #notepad-input.editing { display: block; }
    SafariScreen #model-controls { height: auto; display: none; }
    SafariScreen #model-controls.shown { display: block; }
    SafariScreen #model-controls #model { width: 2fr; }
    SafariScreen #model-controls #adapter { width: 1fr; }
    SafariScreen #model-controls #max-tokens { width: 10; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("space", "toggle_play", "Play/pause"),
        Binding("full_stop", "step(1)", "Step"),
        Binding("comma", "step(-1)", "Back a turn"),
        Binding("plus,equals_sign", "speed(1)", "Faster"),
        Binding("minus", "speed(-1)", "Slower"),
        Binding("up", "move('up')", "Up", show=False),
        Binding("down", "move('down')", "Down", show=False),
        Binding("left", "move('left')", "Left", show=False),
        Binding("right", "move('right')", "Right", show=False),
        Binding("f", "declare_found", "Found"),
        Binding("d", "declare_done", "Done"),
        Binding("n", "notepad", "Notepad"),
    ]
    WATCH_ACTIONS = {"toggle_play", "step", "speed"}
    HUMAN_ACTIONS = {"move", "declare_found", "declare_done", "notepad"}

    def __init__(self, plugin: Any, outputs_dir: Path) -> None:
        super().__init__()
        self.plugin = plugin
        self.outputs_dir = outputs_dir
        self.frames: list[Frame] = []
        self.index = 0
        self.playing = False
        self.speed = 1  # index into SPEEDS
        self.source = ""  # what the frames show, for the GIF's name
        self.note = ""  # where the frames came from, shown under the turn's status
        self.game: HumanPlay | None = None
        self.gif_path: Path | None = None  # the last GIF written
        self.live = False  # a game is still being played: more frames will come
        self._timer: Any = None
        self._cancel: Any = None  # the live game's cancel token
        self._generation = 0  # frames from a game that was replaced are dropped

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Label(Text("Safari: watch, replay, play", style="bold"), id="title")
        with Horizontal(id="controls"):
            yield Select([(name, name) for name in WATCHABLE], value="expert", allow_blank=False, id="policy")
            yield Select([("find-one", "find-one"), ("find-two", "find-two")], value="find-one", allow_blank=False,
                         id="kind")
            yield Input("7", type="integer", placeholder="seed", id="seed")
            yield Button("Watch", id="watch", variant="primary")
            yield Button("Play by hand", id="play-human", variant="success")
            yield Input(placeholder="episode.jsonl to replay", id="episode-path")
            yield Button("Open", id="open")
            yield Button("GIF", id="gif")
        with Horizontal(id="model-controls"):  # shown for the model policy
            yield Input(placeholder="model id or folder (empty: the configured vision model)", id="model")
            yield Input(placeholder="adapter folder (optional)", id="adapter")
            yield Select(list(PROFILES), value="full", allow_blank=False, id="prompt")
            yield Input("256", type="integer", placeholder="reply tokens", id="max-tokens")
            yield Button("Stop", id="stop", variant="error")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield CellPicture(VIEW_CELL_PX, 4, id="view")
                yield Input(placeholder="notepad text, Enter to keep it (sent with your next turn)", id="notepad-input")
                with VerticalScroll(id="words"):
                    yield Static("Pick a policy and a seed and press Watch, open a saved episode, or Play by hand.",
                                 id="status")
                    yield Static("", id="thought")
                    yield Static("", id="calls")
                    yield Static("", id="notepad")
            yield CellPicture(MAP_CELL_PX, 2, id="map")
        yield Footer()

    @property
    def mode(self) -> str:
        if self.game is not None and not self.game.done:
            return "human"
        return "watch" if self.frames else "idle"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Watch keys only while watching, game keys only while playing (the footer follows)."""
        if action in self.WATCH_ACTIONS:
            return self.mode == "watch"
        if action in self.HUMAN_ACTIONS:
            return self.mode == "human"
        return True

    def on_unmount(self) -> None:
        self._stop_timer()
        self._stop_live()

    # -- watching ----------------------------------------------------------------------------------
    @on(Select.Changed, "#policy")
    def _policy_changed(self, event: Select.Changed) -> None:
        self.query_one("#model-controls").set_class(event.value == "model", "shown")

    @on(Button.Pressed, "#watch")
    def _watch_pressed(self) -> None:
        try:
            seed = int(self.query_one("#seed", Input).value or "0")
            tokens = int(self.query_one("#max-tokens", Input).value or "256")
        except ValueError:
            self._say("The seed and the reply tokens must be whole numbers.", error=True)
            return
        if not 8 <= tokens <= 4096:
            self._say("Reply tokens must be between 8 and 4096.", error=True)
            return
        policy, kind = str(self.query_one("#policy", Select).value), str(self.query_one("#kind", Select).value)
        choice = ModelChoice(model=self.query_one("#model", Input).value.strip(),
                             adapter=self.query_one("#adapter", Input).value.strip(), max_new_tokens=tokens,
                             **profile_fields(str(self.query_one("#prompt", Select).value)))
        who = f"the model ({choice.describe()})" if policy == "model" else policy
        self._stop_live()
        self.playing = False
        self._stop_timer()
        self.frames, self.index, self.game = [], 0, None  # the new game's first turn starts the viewer
        self.refresh_bindings()
        self.live = True
        self._cancel = CancelToken()
        self._say(f"{who} is playing {kind} seed {seed}…" + (" (loading the model first)" if policy == "model" else ""))
        self._play_live(self._generation, self._cancel, policy, kind, seed, choice)

    @on(Button.Pressed, "#stop")
    def _stop_pressed(self) -> None:
        if self.live:
            self._stop_live()
            self._show_end(None, "stopped: the game was not saved")

    def _stop_live(self) -> None:
        """End the live game, if any: its thread stops after the turn it is on, and whatever it
        still sends is dropped (the generation moves on)."""
        if self._cancel is not None:
            self._cancel.cancel("stopped from the Safari screen")
            self._cancel = None
        self._generation += 1
        self.live = False

    @work(thread=True, group="safari-live")
    def _play_live(self, generation: int, cancel: Any, policy: str, kind: str, seed: int, choice: ModelChoice) -> None:
        """Play in this thread; each frame goes to the screen as soon as the turn is played."""
        from localqwen_safari.missions import mission_for_seed

        context = self.app.bench.context(self.plugin.id, cancel) if policy == "model" else None
        game = LiveGame(mission_for_seed(kind, seed), policy, self.outputs_dir, context=context, model=choice)
        try:
            for frame in game.frames():
                self.app.call_from_thread(self._add_frame, generation, frame, game.source)
        except Cancelled:
            return
        except Exception as exc:  # a missing model, a broken adapter, out of memory: said, not raised
            self.app.call_from_thread(self._live_ended, generation, None, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._live_ended, generation, game.saved, "")

    def _add_frame(self, generation: int, frame: Frame, source: str) -> None:
        if generation != self._generation:
            return  # a replaced or stopped game's late turn
        if not self.frames:
            self.load_frames([frame], source)  # the status line says it plays live while it does
            self.live = True
            return
        self.frames.append(frame)  # the timer moves on to it (it waits at the newest turn while live)
        self._show_frame()

    def _live_ended(self, generation: int, saved: Path | None, problem: str) -> None:
        if generation != self._generation:
            return
        self.live = False
        self._cancel = None
        self._show_end(saved, problem)

    def _show_end(self, saved: Path | None, problem: str) -> None:
        if problem and not self.frames:
            self._say(problem, error=True)
            return
        self.note = f"saved {saved}" if saved else problem
        self.refresh_bindings()
        self._show_frame()

    @on(Button.Pressed, "#open")
    def _open_pressed(self) -> None:
        self._stop_live()
        path = self.query_one("#episode-path", Input).value.strip()
        if not path:
            self._say("Type the path of an episode.jsonl (play saves one in its output folder).", error=True)
            return
        self._replay_file(path)

    @work(thread=True, exclusive=True, group="safari-load")
    def _replay_file(self, path: str) -> None:
        from localqwen_safari.episode_file import load_episode
        from localqwen_safari.replay import replay

        try:
            log = load_episode(path)
            frames = replay(log)
        except ValueError as exc:
            self.app.call_from_thread(self._refuse, str(exc))
            return
        self.app.call_from_thread(self.load_frames, frames, f"{log.mission.id}-{log.policy}",
                                  f"replaying {Path(path).name} ({log.policy}), checked against its world")

    def load_frames(self, frames: list[Frame], source: str, note: str = "") -> None:
        """Show ``frames`` from the first turn, playing at the current speed."""
        self.game = None
        self.live = False
        self.frames, self.index, self.source, self.note = frames, 0, source, note
        self._show_frame()
        self.playing = True
        self._restart_timer()
        self.refresh_bindings()
        self.set_focus(None)  # the watch keys go to the screen, not to a field

    def _show_frame(self) -> None:
        frame = self.frames[self.index]
        self.query_one("#view", CellPicture).show(frame.view)
        self.query_one("#map", CellPicture).show(frame.map)
        state = "playing" if self.playing else "paused"
        lines = [f"{frame.mission}", f"{frame.status()} · {state} · {SPEEDS[self.speed]:g} s/turn"]
        note = f"playing live: {turns_so_far(len(self.frames))} (Stop ends the game)" if self.live else self.note
        self._say("\n".join(lines + ([note] if note else [])))
        self.query_one("#thought", Static).update(Text("Thought: " + (frame.thought or "(none)")))
        self.query_one("#calls", Static).update(Text("\n".join("› " + line for line in frame.call_lines())))
        self.query_one("#notepad", Static).update(Text("Notepad: " + (frame.notepad or "(empty)")))

    def _restart_timer(self) -> None:
        self._stop_timer()
        if self.playing:
            self._timer = self.set_interval(SPEEDS[self.speed], self._tick)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _tick(self) -> None:
        if self.index + 1 >= len(self.frames) and self.live:
            return  # waiting at the newest turn for the next one
        if self.index + 1 >= len(self.frames):
            self.playing = False
            self._stop_timer()
        else:
            self.index += 1
        self._show_frame()

    def action_toggle_play(self) -> None:
        if not self.frames:
            return
        if not self.playing and self.index + 1 >= len(self.frames):
            self.index = 0  # play again from the start
        self.playing = not self.playing
        self._restart_timer()
        self._show_frame()

    def action_step(self, delta: int) -> None:
        if not self.frames:
            return
        self.playing = False
        self._stop_timer()
        self.index = max(0, min(len(self.frames) - 1, self.index + delta))
        self._show_frame()

    def action_speed(self, delta: int) -> None:
        self.speed = max(0, min(len(SPEEDS) - 1, self.speed + delta))
        self._restart_timer()
        if self.frames:
            self._show_frame()

    @on(Button.Pressed, "#gif")
    def _gif_pressed(self) -> None:
        if not self.frames:
            self._say("Nothing to export yet: watch, open or finish a game first.", error=True)
            return
        if self.live:
            self._say("The game is still being played: export it when it ends (or Stop it).", error=True)
            return
        self._export_gif(list(self.frames), self.outputs_dir / f"{self.source}.gif")

    @work(thread=True, exclusive=True, group="safari-gif")
    def _export_gif(self, frames: list[Frame], path: Path) -> None:
        """About 65 ms a frame: off the UI thread so playback and keys stay live."""
        from localqwen_safari.gif import write_gif

        written = write_gif(frames, path)
        self.app.call_from_thread(self._gif_written, written, len(frames))

    def _gif_written(self, path: Path, frames: int) -> None:
        self.gif_path = path
        self.notify(f"GIF with {frames} frames written: {path}")

    # -- playing by hand ---------------------------------------------------------------------------
    @on(Button.Pressed, "#play-human")
    def _play_human_pressed(self) -> None:
        try:
            seed = int(self.query_one("#seed", Input).value or "0")
        except ValueError:
            self._say("The seed must be a whole number.", error=True)
            return
        self.start_game(HumanPlay.for_seed(str(self.query_one("#kind", Select).value), seed))

    def start_game(self, game: HumanPlay) -> None:
        self._stop_live()
        self.playing = False
        self._stop_timer()
        self.frames, self.index, self.game = [], 0, game
        self._show_state(game.state())
        self.refresh_bindings()
        self.set_focus(None)  # the arrows go to the game

    def _show_state(self, state: HumanState) -> None:
        self.query_one("#view", CellPicture).show(state.view)
        self.query_one("#map", CellPicture).show(state.map)
        keys = "arrows: move 1 · f: found · d: done · n: notepad"
        self._say(f"{state.mission}\n{state.status()}\n" + ("" if state.done else keys))
        self.query_one("#thought", Static).update("")
        self.query_one("#calls", Static).update(Text("\n".join("› " + line for line in state.results)))
        pending = f"\n(sent with your next turn: {state.pending_notepad})" if state.pending_notepad is not None else ""
        self.query_one("#notepad", Static).update(Text("Notepad: " + (state.notepad or "(empty)") + pending))

    def _game_turn(self, action: str, text: str = "") -> None:
        if self.game is None or self.game.done:
            return
        state = self.game.apply(action, text)
        self._show_state(state)
        if state.done:
            self._game_over(self.game)

    def _game_over(self, game: HumanPlay) -> None:
        """Save the game as an episode; its frames can then be stepped through and exported."""
        mission = game.episode.mission.id
        path = game.save(self.outputs_dir / f"human-{mission}.jsonl")
        self.frames, self.index, self.source = game.frames, len(game.frames) - 1, f"{mission}-human"
        self.note = f"{game.episode.outcome}: saved {path} (step through it with , and ., or export a GIF)"
        self.refresh_bindings()
        self.notify(f"{game.episode.outcome}: saved {path}")
        self._show_frame()

    def action_move(self, direction: str) -> None:
        self._game_turn(direction)

    def action_declare_found(self) -> None:
        self._game_turn("found")

    def action_declare_done(self) -> None:
        self._game_turn("done")

    def action_notepad(self) -> None:
        field = self.query_one("#notepad-input", Input)
        field.value = self.game.episode.notepad if self.game is not None else ""
        field.add_class("editing")
        field.focus()

    @on(Input.Submitted, "#notepad-input")
    def _notepad_written(self, event: Input.Submitted) -> None:
        event.input.remove_class("editing")
        if self.game is not None and not self.game.done:
            self._game_turn("notepad", event.value)
        self.set_focus(None)

    # -- shared ------------------------------------------------------------------------------------
    def action_back(self) -> None:
        field = self.query_one("#notepad-input", Input)
        if field.has_class("editing"):  # escape leaves the notepad field first
            field.remove_class("editing")
            self.set_focus(None)
            return
        self.app.pop_screen()

    def _refuse(self, message: str) -> None:
        """Show why a file cannot be replayed; playback stops so the message stays."""
        self.playing = False
        self._stop_timer()
        self._say(message, error=True)

    def _say(self, text: str, *, error: bool = False) -> None:
        self.query_one("#status", Static).update(Text(text, style="bold red" if error else ""))


def open_view(app: Any, plugin: Any) -> Screen[None]:
    """The TUI's hook: the Safari screen, writing its episodes and GIFs to the plugin's outputs."""
    outputs = Path(app.bench.paths.outputs_dir) / plugin.id
    outputs.mkdir(parents=True, exist_ok=True)
    return SafariScreen(plugin, outputs)
