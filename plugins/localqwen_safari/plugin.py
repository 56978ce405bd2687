"""The Safari plugin: play a mission, generate expert training data, evaluate policies.

The world, missions, policies and scoring live in the sibling modules; this file turns forms into
event streams (``localqwen run safari play|generate|evaluate``, the TUI and the web view).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from localqwen.plugin_api import Context, Extensions, Form, Plugin, Requirements, action, field
from localqwen.plugin_api import events as ev

PolicyName = Literal["expert", "sweeper", "tour", "compass", "greedy", "random", "model"]
TeacherName = Literal["expert", "sweeper", "tour", "compass"]
KindName = Literal["find-one", "find-two"]


class PlayForm(Form):
    policy: PolicyName = field("expert", label="Policy",
                               help="Who plays: the expert, the sweeper, the tour, greedy, random or a model.")
    kind: KindName = field("find-one", label="Mission", help="find-one: one species; find-two: two, in order.")
    seed: int = field(7, label="Seed", ge=0, help="The world and targets; the same seed plays the same way.")
    missions: Path | None = field(None, label="Mission file", widget="file", advanced=True,
                                  help="A missions JSONL file; plays the mission named below instead of the seed.")
    mission_id: str = field("", label="Mission id", advanced=True, help="Which mission of the file (default: the first).")
    model: str = field("", label="Model", help="For --policy model: a Qwen3-VL (or text Qwen3) id or folder; "
                                               "empty = the configured default vision model.")
    adapter: Path | None = field(None, label="Adapter", widget="folder", help="For --policy model: an adapter folder.")
    max_new_tokens: int = field(256, label="Max reply tokens", ge=8, le=4096, advanced=True)
    output_dir: Path | None = field(None, label="Images folder", widget="folder", advanced=True,
                                    help="Where the view and map images and episode.jsonl go; "
                                         "empty = the plugin's outputs.")
    prompt: Literal["full", "compact"] = field("full", label="Prompt profile", advanced=True,
                                               help="For --policy model: what it was trained with (full or compact).")
    look: bool = field(False, label="Look first", advanced=True,
                       help="For --policy model: a model trained to look first (generate --look) is asked where "
                            "each target is before its reply.")
    route: bool = field(False, label="Route first", advanced=True,
                        help="For --policy model with --prompt compact: a model trained with the route asked first "
                             "(the learning bench's --ask-route, generate --route) is asked the way to the waypoint its "
                             "notepad heads for before its reply.")


class ReplayForm(Form):
    episode: Path = field(label="Episode file", widget="file",
                          help="An episode.jsonl that play saved (or the TUI / web view).")
    gif: Path | None = field(None, label="GIF file", help="Also export the episode as an animated GIF here.")
    frame_ms: int = field(800, label="GIF frame time (ms)", ge=20, le=10_000, advanced=True)


class GenerateForm(Form):
    episodes: int = field(2000, label="Episodes", ge=1, le=1_000_000)
    output_dir: Path | None = field(None, label="Output folder", widget="folder",
                                    help="dataset.jsonl, conversations.jsonl and images/; empty = the plugin's outputs.")
    kind: Literal["both", "find-one", "find-two"] = field("both", label="Missions", help="both = alternate kinds.")
    seed_start: int = field(100_000, label="First seed", ge=0, advanced=True,
                            help="Episode i uses seed first+i; keep it away from your evaluation seeds.")
    prompt: Literal["full", "compact"] = field("full", label="Prompt profile", advanced=True,
                                               help="Conversation rows with the full system prompt and tool schema, "
                                                    "or compact (one line, no schema) for a tiny model.")
    oversample: int = field(1, label="Target turns repeated", ge=1, le=100, advanced=True,
                            help="The training rows hold each turn with the target in sight or in reach this "
                                 "many times (most turns explore).")
    grounding: int = field(0, label="Questions per view", ge=0, le=10, advanced=True,
                           help="Training rows asking where an animal is in each turn's view "
                                "('Where is the lion?' -> 'The lion is 2 rows down and 3 cols right.').")
    grounding_apart: bool = field(False, label="Questions in their own file", advanced=True,
                                  help="Write the question rows to grounding.jsonl instead of among the replies' "
                                       "rows, to train them as a stage of their own first.")
    teacher: TeacherName = field("expert", label="Teacher", advanced=True,
                                 help="Whose turns: the expert (plans where to explore from all it has seen) or "
                                      "the sweeper (sweeps in rows; every decision rests on one turn's view and "
                                      "notepad, so a small model learns it more easily) or the tour (walks a fixed "
                                      "round of waypoints, the next one on its notepad) or the compass (the tour's "
                                      "round, each move read off the bearing, the open ways and the last move: the "
                                      "easiest to learn).")
    look: bool = field(False, label="Look rows", advanced=True,
                       help="For a model that looks before it replies: each reply's context ends with where the "
                            "targets are in view, and look rows ('Where is the lion?' before the view) follow it.")
    route: bool = field(False, label="Route lines", advanced=True,
                        help="With --prompt compact, for a model asked the route first: each reply's context holds "
                             "the way to the waypoint its notepad heads for ('Way to 6 down 5 right: I move right 4 "
                             "steps.'), as a perfect route answer gives it.")
    openings: bool = field(False, label="Openings in the Thought", advanced=True,
                           help="With --prompt compact: each Thought says how far each way is open before its move "
                                "('Open: up 3, down 0, left 4, right 1.'), read off the view; the model then "
                                "says them itself in play.")


class WarmupForm(Form):
    model: Path = field(label="Model folder", widget="folder",
                        help="A Qwen3-VL folder whose vision tower starts from scratch (e.g. a tiny one built from a config).")
    output_dir: Path | None = field(None, label="Output folder", widget="folder",
                                    help="Where the warmed-up model goes; empty = the plugin's outputs.")
    episodes: int = field(2000, label="Episodes", ge=1, le=1_000_000,
                          help="Expert episodes whose views it learns from (the same seeds generate uses).")
    steps: int = field(600, label="Steps", ge=1, le=1_000_000)
    learning_rate: float = field(2e-3, label="Learning rate", gt=0, advanced=True)
    seed_start: int = field(100_000, label="First seed", ge=0, advanced=True)


class DaggerForm(Form):
    model: Path = field(label="Model folder", widget="folder",
                        help="A safari model trained on expert episodes (a full fine-tune's folder).")
    data: Path = field(label="Expert data", widget="folder",
                       help="The folder generate wrote (conversations.jsonl) that the model was trained on; "
                            "every round trains on it beside the states the model reached.")
    output_dir: Path | None = field(None, label="Output folder", widget="folder",
                                    help="round-1/, round-2/, ...: each round's rows and model; "
                                         "empty = the plugin's outputs.")
    rounds: int = field(2, label="Rounds", ge=1, le=100)
    episodes: int = field(400, label="Missions per round", ge=1, le=1_000_000,
                          help="The model plays these (both kinds, alternating); the expert labels every state.")
    steps: int = field(2000, label="Training steps per round", ge=1, le=10_000_000)
    learning_rate: float = field(1e-3, label="Learning rate", gt=0, advanced=True)
    batch_size: int = field(8, label="Batch size", ge=1, le=4096, advanced=True)
    minutes: float = field(0.0, label="Minutes per round", ge=0, advanced=True,
                           help="A wall-clock budget for each round, playing included (0 = none).")
    seed_start: int = field(300_000, label="First seed", ge=0, advanced=True,
                            help="Round r plays seeds first+(r-1)*missions onwards; keep them away from "
                                 "the expert data's and your evaluation's seeds.")
    prompt: Literal["full", "compact"] = field("compact", label="Prompt profile", advanced=True,
                                               help="What the model was trained with.")
    max_new_tokens: int = field(160, label="Max reply tokens", ge=8, le=4096, advanced=True)
    teacher: TeacherName = field("expert", label="Teacher", advanced=True,
                                 help="Who labels the model's states: the teacher of its training data.")


class EvaluateForm(Form):
    policy: list[PolicyName] = field(default_factory=lambda: ["expert"], label="Policies",
                                     help="One or more (repeat --policy); each runs on the same missions.")
    compare: bool = field(False, label="Compare with all baselines",
                          help="Also run random, greedy, expert, sweeper and tour side by side.")
    kind: Literal["find-one", "find-two", "both"] = field("find-one", label="Mission kind")
    seeds: str = field("1000-1299", label="Seeds", help="e.g. 1000-1299 or 1,2,10-12 (generated missions).")
    missions: Path | None = field(None, label="Mission file", widget="file",
                                  help="A missions JSONL file instead of seeds; scored per kind.")
    model: str = field("", label="Model", help="For --policy model: a Qwen3-VL (or text Qwen3) id or folder; "
                                               "empty = the configured default vision model.")
    adapter: Path | None = field(None, label="Adapter", widget="folder", help="For --policy model: an adapter folder.")
    max_new_tokens: int = field(256, label="Max reply tokens", ge=8, le=4096, advanced=True)
    ablations: bool = field(False, label="Model ablations",
                            help="With the model: also run it with a blank image and with its notepad hidden.")
    prompt: Literal["full", "compact"] = field("full", label="Prompt profile", advanced=True,
                                               help="What the model was trained with: full (system prompt and "
                                                    "tool schema) or compact (one line, no schema).")
    look: bool = field(False, label="Look first", advanced=True,
                       help="For --policy model: a model trained to look first (generate --look) is asked where "
                            "each target is before its reply.")
    route: bool = field(False, label="Route first", advanced=True,
                        help="For --policy model with --prompt compact: a model trained with the route asked first "
                             "(the learning bench's --ask-route, generate --route) is asked the way to the waypoint its "
                             "notepad heads for before its reply.")
    batch_size: int = field(64, label="Episodes per batch", ge=1, le=4096, advanced=True,
                            help="The model plays this many episodes in lockstep, one batched generate per turn.")
    teacher: TeacherName = field("expert", label="Agreement with", advanced=True,
                                 help="Whose decision on the same state agreement is measured against: the "
                                      "expert, or the sweeper for a model trained on its turns.")


class Safari(Plugin):
    id = "safari"
    title = "Safari"
    description = "A seeded grid world where a vision agent finds animals with tool calls: play, make data, evaluate."
    requirements = Requirements(task="none")

    def register(self, extensions: Extensions) -> None:
        from localqwen_safari.dataset import register_data_source

        register_data_source(extensions)

    # -- play -------------------------------------------------------------------------------------
    @action(form=PlayForm, title="Play a mission", description="Watch a policy play one mission turn by turn.")
    def play(self, form: PlayForm, ctx: Context):
        from localqwen_safari.episode import Episode
        from localqwen_safari.episode_file import EPISODE_FILE, EpisodeLog
        from localqwen_safari.playing import play_turns
        from localqwen_safari.policies import get_policy
        from localqwen_safari.render import render_map

        mission = _pick_mission(form)
        out = (form.output_dir or ctx.outputs_dir / f"play-{mission.id}-{form.policy}").expanduser()
        out.mkdir(parents=True, exist_ok=True)
        policy = _model_policy(form, ctx, out / "model-views") if form.policy == "model" else get_policy(form.policy)
        episode = Episode.start(mission)
        log = EpisodeLog(mission, form.policy)
        yield ev.Log(message=f"{mission.id}: {mission.describe()} {form.policy} plays, "
                             f"{mission.max_turns} turns at most.")
        for turn in play_turns(episode, policy, render=True):
            ctx.cancel.raise_if_cancelled()
            log.add_turn(turn.decision.thought, turn.decision.calls, turn.runs, episode)
            step = f"turn-{turn.number}"
            yield ev.Step(step=step, title=f"Turn {turn.number}", detail=turn.context)
            view_path, map_path = out / f"view_{turn.number:02d}.png", out / f"map_{turn.number:02d}.png"
            assert turn.view is not None
            view_path.write_bytes(turn.view)
            map_path.write_bytes(render_map(episode))
            yield ev.Image(path=str(view_path), caption=f"Turn {turn.number}: the agent's view")
            yield ev.TextDelta(text=f"Thought: {turn.decision.thought}\n", step=step)
            for run in turn.runs:
                yield run.event()
            yield ev.Image(path=str(map_path), caption=f"After turn {turn.number}: the map and the path")
            yield ev.Step(step=step, title=f"Turn {turn.number}", status="finished",
                          detail="; ".join(run.result for run in turn.runs) or "no tool call")
        log.finish(episode)
        saved = log.save(out / EPISODE_FILE)
        yield ev.FileWritten(path=str(saved), description="the episode (replay with: localqwen run safari replay "
                                                          f"--episode {saved})")
        result = {"mission": mission.id, "kind": mission.kind, "targets": list(mission.targets),
                  "policy": form.policy, "success": episode.success, "outcome": episode.outcome,
                  "turns": episode.turn, "found": list(episode.found), "notepad": episode.notepad,
                  "path": [list(cell) for cell in episode.path], "images": str(out), "episode": str(saved)}
        yield ev.Done(result=result, summary=f"{form.policy} on {mission.id}: {episode.outcome} "
                                             f"after {episode.turn} turns")

    # -- replay -----------------------------------------------------------------------------------
    @action(form=ReplayForm, title="Replay an episode",
            description="Replay a saved episode turn by turn, checked against its world; optionally as a GIF.")
    def replay(self, form: ReplayForm, ctx: Context):
        from localqwen_safari.episode_file import load_episode
        from localqwen_safari.gif import write_gif
        from localqwen_safari.replay import replay

        log = load_episode(form.episode)
        frames = replay(log)
        out = ctx.outputs_dir / f"replay-{log.mission.id}-{log.policy}"
        out.mkdir(parents=True, exist_ok=True)
        yield ev.Log(message=f"{log.mission.id}: {log.mission.describe()} played by {log.policy}, "
                             f"{len(frames)} turns, consistent with its world.")
        for frame in frames:
            ctx.cancel.raise_if_cancelled()
            step = f"turn-{frame.turn}"
            yield ev.Step(step=step, title=f"Turn {frame.turn}", detail=frame.context)
            view_path, map_path = out / f"view_{frame.turn:02d}.png", out / f"map_{frame.turn:02d}.png"
            view_path.write_bytes(frame.view)
            map_path.write_bytes(frame.map)
            yield ev.Image(path=str(view_path), caption=f"Turn {frame.turn}: the agent's view")
            yield ev.TextDelta(text=f"Thought: {frame.thought}\n", step=step)
            for call in frame.calls:
                arguments = call["arguments"] if isinstance(call["arguments"], dict) else {"value": call["arguments"]}
                yield ev.ToolCall(name=call["name"], arguments=arguments, result=call["result"])
            yield ev.Image(path=str(map_path), caption=f"After turn {frame.turn}: the map and the path")
            yield ev.Step(step=step, title=f"Turn {frame.turn}", status="finished",
                          detail="; ".join(call["result"] for call in frame.calls) or "no tool call")
        result: dict[str, Any] = {"mission": log.mission.id, "policy": log.policy, "turns": len(frames),
                                  **(log.end or {}), "images": str(out)}
        if form.gif is not None:
            gif = write_gif(frames, form.gif, frame_ms=form.frame_ms)
            yield ev.FileWritten(path=str(gif), description=f"the episode as a GIF ({len(frames)} frames)")
            result["gif"] = str(gif)
        yield ev.Done(result=result, summary=f"replayed {log.mission.id} ({log.policy}): {result['outcome']} "
                                             f"after {len(frames)} turns")

    # -- generate ---------------------------------------------------------------------------------
    @action(form=GenerateForm, title="Generate training data",
            description="Expert episodes as dataset.jsonl + Qwen3-VL conversation rows with the tool schema.")
    def generate(self, form: GenerateForm, ctx: Context):
        from localqwen_safari.dataset import generate

        out = (form.output_dir or ctx.outputs_dir / "dataset").expanduser()
        summary = yield from _checked(generate(out, form.episodes, kind=form.kind, seed_start=form.seed_start,
                                                prompt=form.prompt, oversample=form.oversample,
                                                grounding=form.grounding, grounding_apart=form.grounding_apart,
                                                teacher=form.teacher, look=form.look, route=form.route,
                                                openings=form.openings), ctx)
        yield ev.FileWritten(path=summary["dataset"], description=f"{form.teacher} turns (seed format)")
        yield ev.FileWritten(path=summary["conversations"], description="Qwen3-VL conversation rows for localqwen train")
        if summary.get("grounding"):
            yield ev.FileWritten(path=summary["grounding"], description="question rows on the views, apart")
        yield ev.Done(result=summary, summary=f"{summary['episodes']} episodes, {summary['rows']} turns "
                                              f"({form.teacher} success {summary['teacher_success_rate']:.0%}) in {out}")

    # -- vision warm-up --------------------------------------------------------------------------
    @action(form=WarmupForm, title="Warm up a vision tower",
            description="Teach a from-scratch vision tower to read the view's cells before training on replies.")
    def warmup(self, form: WarmupForm, ctx: Context):
        from localqwen.plugin_api.background import events_from_thread
        from localqwen_safari.vision_warmup import warm_up_vision

        if problem := _not_a_model_folder(form.model):
            yield from problem
            return
        out = (form.output_dir or ctx.outputs_dir / f"warmup-{form.model.name}").expanduser()
        tracker = ev.ProgressTracker(form.steps, unit="steps", task="vision warm-up")

        def work(emit):
            def on_step(step: int, total: int, loss: float) -> None:
                ctx.cancel.raise_if_cancelled()
                if step % 10 == 0 or step == total:
                    emit(tracker.update(step, message=f"loss {loss:.4f}"))

            return warm_up_vision(form.model, out, episodes=form.episodes, steps=form.steps,
                                  learning_rate=form.learning_rate, seed_start=form.seed_start, on_step=on_step)

        yield ev.Log(message=f"collecting the views of {form.episodes} expert episodes")
        result = yield from events_from_thread(work, name="safari-vision-warmup")
        yield ev.FileWritten(path=str(result.model), description="the model with its vision tower warmed up; "
                                                                 "train it with method full and "
                                                                 "options {freeze_vision_tower = true}")
        yield ev.Done(result={"model": str(result.model), "steps": result.steps, "views": result.views,
                              "seconds": result.seconds, "final_loss": result.final_loss,
                              "cell_accuracy": result.cell_accuracy, "animal_recall": result.animal_recall},
                      summary=f"vision warm-up: {result.steps} steps on {result.views} views in {result.seconds:.0f} s; "
                              f"held-out cells right {result.cell_accuracy:.1%}, animal cells {result.animal_recall:.1%}")

    # -- DAgger ----------------------------------------------------------------------------------
    @action(form=DaggerForm, title="Train on its own games (DAgger)",
            description="The model plays, the expert labels every state it reached, and it trains on those rows.")
    def dagger(self, form: DaggerForm, ctx: Context):
        from localqwen.plugin_api.background import events_from_thread
        from localqwen_safari.dataset import CONVERSATIONS_FILE
        from localqwen_safari.learning import dagger_round

        if problem := _not_a_model_folder(form.model):
            yield from problem
            return
        if not (form.data / CONVERSATIONS_FILE).is_file():
            yield ev.Error(message=f"no {CONVERSATIONS_FILE} in {form.data} (run generate first)", field="data")
            yield ev.Done(status="failed", summary=f"no expert data in {form.data}")
            return
        out = (form.output_dir or ctx.outputs_dir / f"dagger-{form.model.name}").expanduser()
        model, folders, rounds = form.model, [form.data], []
        for number in range(1, form.rounds + 1):
            ctx.cancel.raise_if_cancelled()
            yield ev.Log(message=f"round {number} of {form.rounds}: the model plays {form.episodes} missions")

            def work(emit, model=model, folders=tuple(folders), number=number):
                def forward(event):
                    ctx.cancel.raise_if_cancelled()
                    # The training job's own Done closes a step of this action, not the action.
                    emit(ev.Log(message=f"round {number} training: {event.summary}")
                         if isinstance(event, ev.Done) else event)

                return dagger_round(model, folders, out / f"round-{number}", episodes=form.episodes,
                                    steps=form.steps, learning_rate=form.learning_rate,
                                    seed_start=form.seed_start + (number - 1) * form.episodes, prompt=form.prompt,
                                    max_new_tokens=form.max_new_tokens, batch_size=form.batch_size,
                                    minutes=form.minutes or None, on_progress=forward, teacher=form.teacher)

            run, rows = yield from events_from_thread(work, name=f"safari-dagger-{number}")
            folders.append(out / f"round-{number}" / "rows")
            model = run.model
            rounds.append({"round": number, "model": str(run.model), "steps": run.steps, "seconds": run.seconds,
                           "stopped_by_budget": run.stopped_by_budget, **rows})
            yield ev.Log(message=f"round {number}: the model won {rows['policy_success_rate']:.1%} of "
                                 f"{rows['episodes']} missions; trained {run.steps} steps on {rows['mixed_rows']} rows")
        yield ev.FileWritten(path=str(model), description="the model after the last round; evaluate it with "
                                                          f"--policy model --model {model} --prompt {form.prompt}")
        yield ev.Done(result={"model": str(model), "rounds": rounds},
                      summary=f"{len(rounds)} DAgger round(s); the model won "
                              + ", ".join(f"{r['policy_success_rate']:.0%}" for r in rounds)
                              + f" of its own games before each round's training; last model {model}")

    # -- evaluate ---------------------------------------------------------------------------------
    @action(form=EvaluateForm, title="Evaluate policies",
            description="Success (95% interval), turns, valid calls, expert agreement, Thought-Action consistency.")
    def evaluate(self, form: EvaluateForm, ctx: Context):
        from localqwen_safari.evaluation import OUTCOMES, Tally, evaluate_lockstep, play_scored
        from localqwen_safari.missions import KINDS, load_missions, mission_for_seed, parse_seeds
        from localqwen_safari.policies import POLICIES, get_teacher

        if form.missions is not None:
            missions = load_missions(form.missions)
        else:
            kinds = list(KINDS) if form.kind == "both" else [form.kind]
            seeds = parse_seeds(form.seeds)
            missions = [mission_for_seed(kind, seed) for kind in kinds for seed in seeds]
        names = list(dict.fromkeys(form.policy + (list(POLICIES) if form.compare else [])))
        policies: dict[str, Any] = {}
        for name in names:
            if name != "model":
                policies[name] = POLICIES[name]
                continue
            views = ctx.outputs_dir / "evaluate-model-views"
            policies["model"] = _model_policy(form, ctx, views)
            if form.ablations:
                policies["model (blank image)"] = _model_policy(form, ctx, views, blank_image=True)
                policies["model (notepad hidden)"] = _model_policy(form, ctx, views, hide_notepad=True)
        by_kind: dict[str, list[Any]] = {}
        for mission in missions:
            by_kind.setdefault(mission.kind, []).append(mission)
        teacher = get_teacher(form.teacher)
        tracker = ev.ProgressTracker(len(missions) * len(policies), unit="episodes", task="evaluate")
        runs = []
        for name, policy in policies.items():
            for kind, group in by_kind.items():
                started = time.monotonic()
                tally = Tally()
                if hasattr(policy, "decide"):  # the model: many episodes in lockstep, one batched generate a turn
                    for finished in evaluate_lockstep(policy, group, tally, batch_size=form.batch_size, teacher=teacher):
                        ctx.cancel.raise_if_cancelled()
                        yield tracker.advance(finished, message=f"{name} on {kind}")
                else:
                    for number, mission in enumerate(group, 1):
                        ctx.cancel.raise_if_cancelled()
                        play_scored(tally, policy, mission, teacher=teacher)
                        if number % 10 == 0 or number == len(group):
                            yield tracker.advance(10 if number % 10 == 0 else number % 10,
                                                  message=f"{name} on {kind}")
                runs.append({"policy": name, "kind": kind, **tally.metrics(),
                             "seconds": round(time.monotonic() - started, 2)})
        columns = ["policy", "kind", "episodes", "success_rate", "success_ci95", "avg_turns", "valid_tool_calls",
                   "action_agreement", "thought_consistency", "false_declare_rate"]
        yield ev.Table(title="Safari evaluation", columns=columns,
                       rows=[[run[c] if c != "success_ci95" else f"{run[c][0]:.2f}-{run[c][1]:.2f}" for c in columns]
                             for run in runs])
        yield ev.Table(title="Where the missions ended (episodes; the target sought at the end)",
                       columns=["policy", "kind", *OUTCOMES],
                       rows=[[run["policy"], run["kind"], *(run["outcomes"][name] for name in OUTCOMES)] for run in runs])
        result: dict[str, Any] = {"runs": runs, "missions": len(missions)}
        if len(runs) == 1:
            result.update({key: value for key, value in runs[0].items() if key not in result})
        best = ", ".join(f"{run['policy']}/{run['kind']} {run['success_rate']:.0%}" for run in runs)
        yield ev.Done(result=result, summary=f"success: {best}")


def _not_a_model_folder(folder: Path) -> list[Any]:
    """The events that end an action given a folder without a model (no config.json); [] for a model."""
    if (folder / "config.json").is_file():
        return []
    return [ev.Error(message=f"not a model folder (no config.json): {folder}", field="model"),
            ev.Done(status="failed", summary=f"not a model folder: {folder}")]


def _model_policy(form: PlayForm | EvaluateForm, ctx: Context, image_dir: Path, **ablation: bool) -> Any:
    """The engine-backed policy (loaded once per run; the engine is shared by its ablations)."""
    from localqwen_safari.model_policy import engine_policy

    return engine_policy(ctx, image_dir, model=form.model, adapter=str(form.adapter) if form.adapter else None,
                         prompt=form.prompt, max_new_tokens=form.max_new_tokens, look=form.look,
                         route=form.route, **ablation)


def _pick_mission(form: PlayForm) -> Any:
    from localqwen_safari.missions import load_missions, mission_for_seed

    if form.missions is None:
        return mission_for_seed(form.kind, form.seed)
    missions = load_missions(form.missions)
    if not form.mission_id:
        return missions[0]
    for mission in missions:
        if mission.id == form.mission_id:
            return mission
    raise ValueError(f"no mission {form.mission_id!r} in {form.missions} "
                     f"(ids: {', '.join(m.id for m in missions[:10])})")


def _checked(stream: Any, ctx: Context) -> Any:
    """Relay a generator's events, stopping between them on cancel; returns its return value."""
    while True:
        ctx.cancel.raise_if_cancelled()
        try:
            event = next(stream)
        except StopIteration as stop:
            return stop.value
        yield event
