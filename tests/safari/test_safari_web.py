"""The Safari web view: its page is built into the real Gradio app through the plugin's
``build_tab`` hook, and its handlers (watch, step, play/tick, upload replay, GIF, play by buttons)
are called the way Gradio calls them."""

from __future__ import annotations

import pytest
from localqwen_safari.web import SafariWeb


def test_the_page_is_part_of_the_web_app(monkeypatch):
    from localqwen.app import Workbench
    from localqwen.web.app import build_web_app

    monkeypatch.setenv("LOCALQWEN_PLUGINS", "safari")
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    web = build_web_app(Workbench.create())
    ids = {c.get("props", {}).get("elem_id") for c in web.blocks.get_config_file()["components"]}
    assert {"safari-watch", "safari-view", "safari-map", "safari-play", "safari-step", "safari-speed", "safari-gif",
            "safari-episode", "safari-human-up", "safari-human-found", "safari-human-done",
            "safari-human-note", "safari-model", "safari-adapter", "safari-max-tokens", "safari-stop"} <= ids
    assert "safari-replay" in web.actions  # the generated form for the replay action sits beside it
    # The viewer's events, and the hand-played game's, each run one at a time: a timer beat begun
    # before Pause must not write "playing" back after it, nor two quick clicks move one game at once.
    elem_ids = {c["id"]: c.get("props", {}).get("elem_id") for c in web.blocks.get_config_file()["components"]}
    groups: dict[str, set] = {}
    for fn in web.blocks.fns.values():
        for block, event in fn.targets:
            key = "safari-tick" if event == "tick" and fn.name == "tick" else elem_ids.get(block)
            if key:
                groups.setdefault(key, set()).add((fn.concurrency_id, fn.concurrency_limit))
    viewer = ["safari-tick", "safari-play", "safari-pause", "safari-step", "safari-back", "safari-episode"]
    human = ["safari-start", "safari-human-up", "safari-human-left", "safari-human-found", "safari-human-keep"]
    assert all(groups[key] == {("safari-viewer", 1)} for key in viewer), {key: groups.get(key) for key in viewer}
    assert all(groups[key] == {("safari-human", 1)} for key in human), {key: groups.get(key) for key in human}


def test_watch_step_play_to_the_end_gif_and_replay_an_upload(tmp_path):
    from PIL import Image

    web = SafariWeb(tmp_path)
    [(viewer, view, world_map, words, timer)] = list(web.watch("expert", "find-one", 7))  # one update: played at once
    turns = len(viewer["frames"])
    assert viewer["index"] == 0 and timer["active"] is True
    assert view.size == (320, 320) and world_map.size == (512, 512)
    assert "Turn 1/25" in words and "**Thought:**" in words and "move(" in words
    viewer, *_, words, timer = web.step(viewer, 1)
    assert viewer["index"] == 1 and not viewer["playing"] and timer["active"] is False and "paused" in words
    viewer, *_ = web.step(viewer, -5)
    assert viewer["index"] == 0
    viewer, *_, timer = web.play(viewer)
    while viewer["playing"]:  # what the timer's ticks do
        viewer, *_, timer = web.tick(viewer)
    assert viewer["index"] == turns - 1 and timer["active"] is False
    assert web.speed(0.3) == {"__type__": "update", "value": 0.3}
    gif = web.gif(viewer)
    with Image.open(gif) as image:
        assert image.n_frames == turns
    saved = tmp_path / "watch-find-one-7-expert.jsonl"
    replayed, *_ = web.open_file(str(saved), None)
    assert [f.calls for f in replayed["frames"]] == [f.calls for f in viewer["frames"]]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(saved.read_text().replace('"turn": 2', '"turn": 9'))
    kept, view, _, words, timer = web.open_file(str(broken), replayed)
    assert "broken.jsonl line 3: 'turn' is 9, expected 2" in words and kept["frames"] == replayed["frames"]
    assert view == {"__type__": "update"} and timer["active"] is False


def test_a_model_plays_live_turn_by_turn_and_its_game_replays(tmp_path, tiny_qwen3_vl_path):
    """A real (tiny, untrained) Qwen3-VL plays through the app's engine: the page gets one update
    per turn as it is played, the last one names the saved episode, and that episode replays.
    A model that cannot load is said on the page and keeps what was shown."""
    from localqwen.app import Workbench
    from localqwen.vocabulary.cancel import CancelToken

    bench = Workbench.create()
    web = SafariWeb(tmp_path, context=lambda: bench.context("safari", CancelToken()))
    updates = list(web.watch("model", "find-one", 7, str(tiny_qwen3_vl_path), "", "full", 8, None))
    *live, (viewer, view, world_map, words, timer) = updates
    turns = len(viewer["frames"])
    assert turns == 25 and len(live) == turns  # one update per turn while it plays, then the end
    assert [len(update[0]["frames"]) for update in live] == list(range(1, turns + 1))
    assert "is playing: 1 turn so far" in live[0][3] and "is playing: 3 turns so far" in live[2][3] and "Turn 3/25" in live[2][3]
    assert viewer["index"] == turns - 1 and timer["active"] is False and "out of turns" in words
    saved = tmp_path / "watch-find-one-7-model.jsonl"
    assert f"saved {saved}" in words
    assert all(len(list((tmp_path / "model-views").glob(f"*_t{n:02d}.png"))) == 1 for n in (1, turns))
    replayed, *_ = web.open_file(str(saved), None)
    assert [f.calls for f in replayed["frames"]] == [f.calls for f in viewer["frames"]]

    [(kept, view, _, words, timer)] = list(web.watch("model", "find-one", 7, str(tmp_path / "no-such-model"), "",
                                                     "full", 8, viewer))
    assert kept["frames"] == viewer["frames"] and view == {"__type__": "update"} and "⚠️" in words
    assert "no-such-model" in words and timer["active"] is False
    [(_, _, _, words, _)] = list(SafariWeb(tmp_path).watch("model", "find-one", 7))
    assert "cannot load models" in words


def test_play_a_mission_with_the_buttons(tmp_path, short_walk):
    import gradio as gr

    seed, steps = short_walk
    web = SafariWeb(tmp_path)
    game, *_, words = web.game_action(None, "up")
    assert "Start a mission first" in words
    game, view, world_map, words = web.start_game("find-one", seed)
    assert "Turn 0/25" in words
    game, *_, words = web.game_action(game, "notepad", "on my way")
    assert "sent with your next turn: on my way" in words
    for step in steps:
        game, view, world_map, words = web.game_action(game, step)
    assert game.episode.notepad == "on my way" and f"Turn {len(steps)}/25" in words
    game, *_, words = web.game_action(game, "found")
    game, *_, words = web.game_action(game, "done")
    assert game.done and "success: saved" in words
    assert (tmp_path / f"human-find-one-{seed}.jsonl").is_file()
    _, *_, words = web.game_action(game, "up")
    assert "The mission is over" in words
    assert web.game_gif(game).endswith(".gif")
    with pytest.raises(gr.Error):
        web.gif(None)


@pytest.mark.browser
@pytest.mark.slow
def test_real_browser_watches_steps_and_plays(browser):
    """``localqwen web`` as a user starts it, driven by headless Chromium: the timer really
    advances the turns, Step pauses, and a button plays a turn."""
    import time

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
    from web_process import served_web

    driver = browser
    driver.set_window_size(1400, 1200)
    with served_web({"LOCALQWEN_PLUGINS": "safari"}, base_port=17960) as view:
        driver.get(view.url)
        wait = WebDriverWait(driver, 60)

        def words(element_id: str) -> str:
            return driver.find_element(By.ID, element_id).text

        wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Safari')]"))).click()
        wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Custom view')]"))).click()
        wait.until(ec.element_to_be_clickable((By.ID, "safari-watch"))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), "Turn 1/25"))
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), "Turn 3/25"))  # the timer plays
        driver.find_element(By.ID, "safari-pause").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), "paused"))
        time.sleep(0.5)
        turn = int(words("safari-words").split("Turn ")[1].split("/")[0])
        driver.find_element(By.ID, "safari-step").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), f"Turn {turn + 1}/25"))
        driver.find_element(By.XPATH, "//button[@role='tab'][contains(., 'Play by hand')]").click()
        wait.until(ec.element_to_be_clickable((By.ID, "safari-start"))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-human-words"), "Turn 0/25"))
        driver.find_element(By.ID, "safari-human-up").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-human-words"), "Turn 1/25"))


@pytest.mark.browser
@pytest.mark.slow
def test_real_browser_watches_a_model_play_live(browser, tiny_qwen3_vl_path):
    """Picking ``model`` shows its fields; a real (tiny, untrained) Qwen3-VL then plays in the
    served page, its turns arriving one by one, and the finished game is saved."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
    from web_process import served_web

    driver = browser
    driver.set_window_size(1400, 1200)
    with served_web({"LOCALQWEN_PLUGINS": "safari"}, base_port=17980) as view:
        driver.get(view.url)
        wait = WebDriverWait(driver, 90)
        wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Safari')]"))).click()
        wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Custom view')]"))).click()
        assert not driver.find_elements(By.CSS_SELECTOR, "#safari-model textarea, #safari-model input")
        choice = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "#safari-policy input")))
        choice.click()
        choice.send_keys(Keys.CONTROL, "a")
        choice.send_keys("model", Keys.ENTER)
        model = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#safari-model textarea, #safari-model input")))
        model.send_keys(str(tiny_qwen3_vl_path))
        tokens = driver.find_element(By.CSS_SELECTOR, "#safari-max-tokens input")
        tokens.send_keys(Keys.CONTROL, "a")
        tokens.send_keys("8")
        driver.find_element(By.ID, "safari-watch").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), "so far"))  # a turn, while it plays
        wait.until(ec.text_to_be_present_in_element((By.ID, "safari-words"), "saved "))
        words = driver.find_element(By.ID, "safari-words").text
        assert "Turn 25/25" in words and "out of turns" in words and "watch-find-one-7-model.jsonl" in words
