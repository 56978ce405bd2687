"""The Gradio web view: the Blocks built without launching and their handlers called directly,
the launch rules, a launched server driven through gradio_client and plain HTTP, and a real
headless Chromium (Debian's chromium + chromedriver through Selenium)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from web_process import start_web, stop_web, worker_port

from localqwen.app import Workbench
from localqwen.web.server import WebConfigError, choose_port, parse_auth, plan_launch

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).parent / "support"
DOCS = ROOT / "docs" / "screenshots"
ONLY = "testplug,showcase,broken_import,broken_register,chat,parrot"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """The web app built once for the handler tests, with its own LOCALQWEN_HOME."""
    from install_plugins import write_distribution

    home = tmp_path_factory.mktemp("web_home")
    site = home / "site"
    write_distribution(site)
    write_distribution(site, name="lqf-showcase", entry_points={"showcase": "lqf_showcase.plugin:ShowcasePlugin"})
    saved = {k: os.environ.get(k) for k in ("LOCALQWEN_HOME", "LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "LOCALQWEN_PLUGINS",
                                            "LANG")}
    os.environ.update(LOCALQWEN_HOME=str(home), LOCALQWEN_NO_THIRD_PARTY_PLUGINS="0", LOCALQWEN_PLUGINS=ONLY,
                      LANG="en_US.UTF-8")
    sys.path.insert(0, str(site))
    import importlib

    importlib.invalidate_caches()
    from localqwen.web.app import build_web_app

    app = build_web_app(Workbench.create())
    yield app
    sys.path.remove(str(site))
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def _keep_module_home(request, monkeypatch):
    # The autouse isolated_home fixture gives each test a new LOCALQWEN_HOME; the handler tests
    # share the module's web app, so they keep its home.
    if "web" in request.fixturenames:
        home = request.getfixturevalue("web").bench.paths.data_dir.parent
        monkeypatch.setenv("LOCALQWEN_HOME", str(home))


def _defaults(panel):
    return [f.spec.default for f in panel.fields]


def test_every_plugin_gets_a_tab_and_failures_are_listed(web):
    assert {"testplug-echo", "testplug-slow", "testplug-fail", "showcase-everything", "showcase-generate"} <= set(web.actions)
    config = web.blocks.get_config_file()
    labels = {c.get("props", {}).get("label") for c in config["components"]}
    assert {"Text *", "Repeat", "Picture", "Folder", "Tags"} <= labels
    from localqwen.web.app import home_markdown

    text = home_markdown(web.bench, web.bench.host.load_all())
    assert "broken_register" in text and "missing frobnicator" in text
    assert "Bespoke view of Showcase" in str(config)  # the plugin's own web.py hook


def test_run_handler_streams_and_validates(web):
    panel = web.actions["testplug-echo"]
    frames = list(panel.run("hello", 3, True, "stars", None))
    last = frames[-1]
    job_id, _form_error, status, progress, text = last[:5]
    assert "done" in status and "3 lines" in status
    assert text.startswith("* HELLO *\n* HELLO *\n* HELLO *")
    assert "3/3 line" in progress and "width:100.0%" in progress
    assert last[6]["value"]["data"][2] == [2, "* HELLO *"]
    assert last[8]["value"] == [str(web.bench.paths.outputs_dir / "testplug" / "echo.txt")]
    assert web.bench.services.jobs.record(job_id).status == "ok"
    # Invalid input: the messages go next to their fields, nothing runs.
    frames = list(panel.run("", 9, False, "plain", None))
    errors = frames[-1][-5:]
    assert "required" in errors[0]["value"].lower() and errors[0]["visible"]
    assert "less than or equal to 5" in errors[1]["value"]
    assert errors[2]["visible"] is False


def test_every_event_kind_reaches_the_page(web):
    panel = web.actions["showcase-everything"]
    last = list(panel.run(*_defaults(panel)))[-1]
    status, progress, text, gallery, table, plot, files = last[2:9]
    assert "showcase finished" in status
    assert "✅ Prepare (0.01s)" in text and "Tool call: lookup" in text and "this is only a showcase" in text
    assert gallery["value"][0][1] == "a gradient"
    loss = plot["value"].axes[0]  # one chart per quantity: loss first
    assert loss.get_title().startswith("loss") and list(loss.get_lines()[0].get_ydata()) == [1.0, 0.5, pytest.approx(1 / 3)]
    assert files["value"][0].endswith("report.txt")
    assert table["visible"]


def test_uploaded_paths_must_come_from_the_upload_folders(web, tmp_path):
    panel = web.actions["showcase-everything"]
    values = _defaults(panel)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    values[[f.spec.name for f in panel.fields].index("document")] = str(outside)
    last = list(panel.run(*values))[-1]
    assert "outside the allowed folders" in last[1]["value"]


def test_cancel_handler_stops_the_job(web):
    panel = web.actions["testplug-slow"]
    stream = panel.run(5000, 0.01)
    first = next(stream)
    job_id = first[0]
    assert "Cancelling" in panel.cancel(job_id)
    last = list(stream)[-1]
    assert "cancelled" in last[2]
    marker = web.bench.paths.outputs_dir / "testplug" / "slow.state"
    assert marker.read_text().endswith("cancelled")


def test_chat_handlers_render_a_plugin_chat_with_no_frontend_code(web):
    chat = web.chat
    assert [value for _, value in chat.plugin_choices()] == ["chat", "parrot"]  # the plain chat first
    assert "tab-parrot" not in str(web.blocks.get_config_file())  # a plugin that only chats has no form tab
    sessions, shown, problem = chat.pick_plugin("parrot")
    session = sessions["value"]
    assert shown == [] and problem == "Repeats what you say after looking it up; for the chat-view tests."
    frames = list(chat.send({"text": "hello", "files": []}, "parrot", session))
    messages = frames[-1][0]
    assert messages[0] == {"role": "user", "content": "hello"}
    panel, tool, answer = messages[1:]
    assert panel["metadata"]["title"] == "✅ Listening" and panel["metadata"]["duration"] == 0.01
    assert panel["content"] == "Turn 1: 1 words heard."
    assert tool["metadata"]["title"] == "🔧 Tool call: lookup" and "→ 0 earlier messages" in tool["content"]
    assert answer == {"role": "assistant", "content": "Polly says: hello"}
    assert frames[-1][2].startswith("done")
    assert chat.conversations.store("parrot").metadata(session) == {"turns": 1}
    side = chat.panel("parrot", session)  # the plugin's side panel, asked again after the turn
    assert side["visible"] and "**This chat**" in side["value"] and "| turns | 1 |" in side["value"]
    assert chat.panel("chat", chat.conversations.latest_or_new_session("chat"))["visible"] is False
    # Reopened, the session shows the same blocks: step panel (with its text) and tool call included.
    assert chat.show("parrot", session) == messages
    assert len(list(chat.regenerate("parrot", session))[-1][0]) == 4
    assert chat.conversations.store("parrot").metadata(session) == {"turns": 2}
    # Stop keeps the part already said.
    stopped = False
    for frame in chat.send({"text": "count 500", "files": []}, "parrot", session):
        if not stopped and "1 2 3" in str(frame[0][-1]["content"]):
            stopped = chat.stop(session).startswith("⏹")
    assert stopped
    assert "cancelled" in frame[2]
    saved = chat.conversations.entries("parrot", session)[-1].message["content"]
    assert saved.startswith("1 2 3") and len(saved.split()) < 500
    # Sessions belong to their plugin: the plain chat's picker never offers this one.
    assert session not in [value for _, value in chat.session_choices("chat")]
    frames = list(chat.send({"text": "hi", "files": []}, "chat", session))
    assert "no chat session" in frames[-1][2]
    assert chat.clear("parrot", session) == ([], "")
    assert chat.conversations.entries("parrot", session) == []


def test_chat_a_second_tab_cannot_start_a_turn_while_one_answers(web):
    """Two tabs (or Enter twice) on one session: the second question is refused and kept in its box,
    Clear is refused too, and Stop still stops the answer under way (its token is not replaced)."""
    chat = web.chat
    session = chat.conversations.new_session("parrot")
    refused = cleared = stopped = None
    for frame in chat.send({"text": "count 500", "files": []}, "parrot", session):
        if refused is None and "1 2" in str(frame[0][-1]["content"]):
            refused = list(chat.send({"text": "second question", "files": []}, "parrot", session))
            cleared = chat.clear("parrot", session)
            again = list(chat.regenerate("parrot", session))
            stopped = chat.stop(session)
    assert refused is not None and len(refused) == 1
    shown, box, status, _ = refused[0]
    assert "still answering" in status and box == {"__type__": "update"}  # the typed question stays
    assert [m["content"] for m in shown] == ["count 500"]
    assert "still answering" in cleared[1] and cleared[0][0]["content"] == "count 500"
    assert "still answering" in again[0][2]
    assert stopped.startswith("⏹") and "cancelled" in frame[2]
    entries = chat.conversations.entries("parrot", session)
    assert [e.message["role"] for e in entries] == ["user", "assistant"]
    assert len(entries[1].message["content"].split()) < 500
    assert not chat.conversations.answering(session)


def test_chat_a_turn_begun_at_the_last_ones_done_keeps_its_stop(web):
    """The session is free at an answer's Done; a turn begun then (another tab) is not refused, and
    the first tab's page finishing afterwards does not take the new turn's Stop away."""
    chat = web.chat
    session = chat.conversations.new_session("parrot")
    first = chat.send({"text": "hello", "files": []}, "parrot", session)
    for frame in first:
        if frame[2].startswith("done"):  # the answer's Done has arrived; this page has not finished yet
            break
    assert not chat.conversations.answering(session)
    second = chat.send({"text": "count 500", "files": []}, "parrot", session)
    assert "still answering" not in next(second)[2]
    list(first)  # the first page finishes now
    stopped = chat.stop(session)
    frames = list(second)
    assert stopped.startswith("⏹") and "cancelled" in frames[-1][2]
    assert len(chat.conversations.entries("parrot", session)[-1].message["content"].split()) < 500


def test_chat_handlers_plain_chat_and_images(web, monkeypatch):
    from scripted_engine import ScriptedEngine

    from localqwen.runtime.engine.base import ToolCall

    engine = ScriptedEngine("Hi there.", tool_calls=[ToolCall("search", {"q": "cats"})])
    monkeypatch.setattr(web.bench.services, "engine", lambda model=None, **kwargs: engine)
    session_update, shown = web.chat.new_session("chat")
    session = session_update["value"]
    frames = list(web.chat.send({"text": "hello", "files": []}, "chat", session))
    messages = frames[-1][0]
    assert messages[0] == {"role": "user", "content": "hello"}
    assert messages[1] == {"role": "assistant", "content": "Hi there."}
    assert messages[2]["metadata"]["title"].startswith("🔧 Tool call: search")
    assert web.chat.show("chat", session) == messages  # reopened: the same blocks in the same order
    # An image attachment: one from the upload folder is kept (copied into uploads), others refused.
    from lqf_showcase.plugin import write_png

    uploaded = write_png(web.upload_roots[0] / "cat.png")
    frames = list(web.chat.send({"text": "what is it?", "files": [{"path": str(uploaded)}]}, "chat", session))
    assert frames[-1][0][3]["content"]["path"].startswith(str(web.bench.paths.uploads_dir))
    outside = write_png(web.bench.paths.data_dir / "private.png")
    frames = list(web.chat.send({"text": "and this?", "files": [str(outside)]}, "chat", session))
    assert "outside the allowed folders" in frames[-1][2]
    # The parrot shows a sent image back as an Image event: served, since it is in the uploads folder.
    parrot = web.chat.conversations.new_session("parrot")
    frames = list(web.chat.send({"text": "look", "files": [str(uploaded)]}, "parrot", parrot))
    images = [m["content"]["path"] for m in frames[-1][0] if isinstance(m["content"], dict)]
    assert len(images) == 2 and images[0] == images[1]


def test_answer_messages_render_every_chat_block(tmp_path):
    """Events -> Chatbot messages, each block where it first appeared (no Gradio needed)."""
    from lqf_showcase.plugin import write_png

    from localqwen.plugin_api import events as ev
    from localqwen.web.chat_messages import AnswerMessages

    inside = write_png(tmp_path / "a.png")
    view = AnswerMessages(allowed_roots=[tmp_path])
    for event in [ev.Step(step="s", title="Search"), ev.TextDelta(text="found 2", step="s"),
                  ev.Step(step="s", title="Search", status="failed", elapsed_s=0.5), ev.TextDelta(text="Answer "),
                  ev.Table(columns=["a", "b|c"], rows=[[1, "x|y"]], title="T"), ev.TextDelta(text="text."),
                  ev.Image(path=str(inside), caption="cap"), ev.Image(path="/etc/passwd"),
                  ev.Warning(message="careful"), ev.Error(message="boom"), ev.Done(status="failed")]:
        view.add(event)
    assert view.messages() == [
        {"role": "assistant", "content": "found 2", "metadata": {"title": "❌ Search", "status": "done", "duration": 0.5}},
        {"role": "assistant", "content": "Answer text."},
        {"role": "assistant", "content": "**T**\n\n| a | b\\|c |\n|---|---|\n| 1 | x\\|y |"},
        {"role": "assistant", "content": {"path": str(inside), "alt_text": "cap"}},
        {"role": "assistant", "content": "🖼 `/etc/passwd`"},  # outside the served folders: named only
        {"role": "assistant", "content": "⚠️ careful"},
        {"role": "assistant", "content": "❌ boom"},
    ]
    assert view.done.status == "failed"


def test_launch_rules():
    assert plan_launch(port=choose_port("127.0.0.1", 20000)).host == "127.0.0.1"
    with pytest.raises(WebConfigError, match="--auth"):
        plan_launch(listen=True)
    with pytest.raises(WebConfigError, match="--auth"):
        plan_launch(share=True)
    with pytest.raises(WebConfigError, match="--auth"):
        plan_launch(host="192.168.1.10")
    assert plan_launch(listen=True, auth="me:pw", port=choose_port("0.0.0.0", 20100)).host == "0.0.0.0"
    assert parse_auth("me:p:w") == ("me", "p:w")
    with pytest.raises(WebConfigError):
        parse_auth("nopassword")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert choose_port("127.0.0.1", taken) > taken


# -- a launched server -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``localqwen web`` in a subprocess, as a user starts it."""
    from install_plugins import write_distribution

    home = tmp_path_factory.mktemp("served_home")
    site = home / "site"
    write_distribution(site)
    write_distribution(site, name="lqf-showcase", entry_points={"showcase": "lqf_showcase.plugin:ShowcasePlugin"})
    env = {"LOCALQWEN_HOME": str(home), "LOCALQWEN_NO_THIRD_PARTY_PLUGINS": "0", "LOCALQWEN_PLUGINS": ONLY,
           "PYTHONPATH": os.pathsep.join([str(site), str(SUPPORT), str(ROOT / "tests" / "support")])}
    port = choose_port("127.0.0.1", worker_port(17860))
    with socket.socket() as blocker:  # the wanted port is busy: the server must move on
        blocker.bind(("127.0.0.1", port))
        view = start_web(env, "--max-upload", "1mb", base_port=port, exact_port=True)
    assert any("is busy" in line for line in view.lines)
    yield {"url": view.url, "home": home, "lines": view.lines}
    stop_web(view)


def test_gradio_client_runs_the_test_plugin(server):
    from gradio_client import Client

    assert server["url"].startswith("http://127.0.0.1:")
    client = Client(server["url"], verbose=False)
    result = client.predict("from the client", 2, False, "plain", None, api_name="/run_testplug_echo")
    status, _progress, text = result[1], result[2], result[3]
    assert "done" in status and text.startswith("from the client\nfrom the client")
    failed = client.predict("boom", api_name="/run_testplug_fail")
    assert "failed" in failed[1] and "boom" in failed[3]
    # The jobs tab lists both runs (from SQLite) and reopens one.
    import sqlite3

    with sqlite3.connect(server["home"] / "data" / "localqwen.sqlite3") as db:
        rows = db.execute("SELECT id, title, status FROM jobs ORDER BY created_at").fetchall()
    assert [(title, status) for _, title, status in rows][-2:] == [("Test plugin › Echo", "ok"),
                                                                    ("Test plugin › Fail", "failed")]
    status, _progress, output = client.predict(rows[-2][0], api_name="/job_open")
    assert "done" in status and "from the client" in output
    # Settings: the language is saved to the config file.
    assert "Reload" in client.predict("zh", api_name="/settings_language")
    assert 'language = "zh"' in (server["home"] / "config" / "config.toml").read_text(encoding="utf-8")


def test_gradio_client_chats_with_the_test_plugin(server):
    from gradio_client import Client

    client = Client(server["url"], verbose=False)
    sessions, shown, problem = client.predict("parrot", api_name="/chat_plugin")
    session = sessions["value"] if isinstance(sessions, dict) else sessions
    assert problem.startswith("Repeats what you say") and shown == []
    messages, _box, status, _sessions = client.predict({"text": "hello client", "files": []}, "parrot", session,
                                                      api_name="/chat_send")
    assert status.startswith("done")
    texts = [m["content"] if isinstance(m["content"], str) else m["content"] for m in messages]
    assert texts[0] == [{"type": "text", "text": "hello client"}] or texts[0] == "hello client"
    assert any("Tool call: lookup" in str(m.get("metadata")) for m in messages)
    assert "Polly says: hello client" in str(messages[-1]["content"])
    # The session is in SQLite under the plugin's own name, with the metadata the plugin kept.
    import json
    import sqlite3

    with sqlite3.connect(server["home"] / "data" / "localqwen.sqlite3") as db:
        row = db.execute("SELECT plugin_id, metadata FROM chat_sessions WHERE id = ?", (session,)).fetchone()
    assert row[0] == "parrot" and json.loads(row[1]) == {"turns": 1}


def test_files_outside_the_allowed_folders_are_refused(server):
    import httpx

    url = server["url"].rstrip("/")
    home = server["home"]
    secret = home / "data" / "secret.txt"
    secret.write_text("do not serve me", encoding="utf-8")
    served = home / "data" / "outputs" / "testplug" / "served.txt"
    served.parent.mkdir(parents=True, exist_ok=True)
    served.write_text("fine to serve", encoding="utf-8")
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[app]\n", encoding="utf-8")
    for refused in (secret, config, Path("/etc/passwd"), home / "data" / "outputs" / ".." / "secret.txt"):
        response = httpx.get(f"{url}/gradio_api/file={refused}")
        assert response.status_code in (403, 404), (refused, response.status_code)
        assert "do not serve me" not in response.text
    response = httpx.get(f"{url}/gradio_api/file={served}")
    assert response.status_code == 200 and response.text == "fine to serve"


def test_uploads_over_the_limit_are_refused(server):
    import httpx

    url = server["url"].rstrip("/")
    small = httpx.post(f"{url}/gradio_api/upload", files={"files": ("note.txt", b"x" * 1000)})
    assert small.status_code == 200
    uploaded = Path(small.json()[0])
    assert (server["home"] / "cache" / "gradio") in uploaded.parents  # the app's own cache folder
    big = httpx.post(f"{url}/gradio_api/upload", files={"files": ("big.bin", b"x" * 2_000_000)})
    assert big.status_code == 413


def test_exposed_listening_without_auth_is_refused():
    result = subprocess.run([sys.executable, "-m", "localqwen.cli.main", "web", "--listen"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--auth" in result.stderr


@pytest.mark.browser
@pytest.mark.slow
def test_real_browser_runs_the_test_plugin(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    assert server["url"].startswith("http://127.0.0.1:")
    driver.get(server["url"])
    wait = WebDriverWait(driver, 60)
    tab = wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][contains(., 'Test plugin')]")))
    tab.click()
    box = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#field-text textarea")))
    box.send_keys("hello browser")
    driver.find_element(By.ID, "run-testplug-echo").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status-testplug-echo"), "done"))
    output = driver.find_element(By.ID, "output-testplug-echo").text
    assert "hello browser" in output
    shot = tmp_path / "web_echo.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("LOCALQWEN_UPDATE_SNAPSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS / "web_echo.png")
        # A README picture of every event kind (the showcase plugin's "Everything" action).
        driver.find_element(By.XPATH, "//button[@role='tab'][contains(., 'Showcase')]").click()
        wait.until(ec.element_to_be_clickable((By.ID, "run-showcase-everything"))).click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status-showcase-everything"), "done"))
        time.sleep(1)  # let the plot and the gallery draw
        driver.save_screenshot(str(DOCS / "web_events.png"))


@pytest.mark.browser
@pytest.mark.slow
def test_real_browser_chats_with_the_test_plugin(server, browser, tmp_path):
    """Pick the test chat plugin, send, see the streamed answer and its tool-call block."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    driver.get(server["url"])
    wait = WebDriverWait(driver, 60)
    wait.until(ec.element_to_be_clickable((By.XPATH, "//button[@role='tab'][normalize-space()='Chat']"))).click()
    picker = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "#chat-plugin input")))
    assert picker.get_attribute("value") == "Chat"  # the plain model chat first
    picker.click()
    wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "li[role='option'][aria-label='Parrot']"))).click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#chat-plugin input").get_attribute("value") == "Parrot")
    # The picker's handler opens the plugin's latest session and says what the plugin does.
    wait.until(ec.text_to_be_present_in_element((By.ID, "chat-status"), "Repeats what you say"))
    box = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "#chat-input textarea")))
    box.send_keys("hello browser", Keys.ENTER)
    wait.until(ec.text_to_be_present_in_element((By.ID, "chat-log"), "Polly says: hello browser"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "chat-status"), "done"))
    log = driver.find_element(By.ID, "chat-log").text
    assert "Tool call: lookup" in log and "Listening" in log
    shot = tmp_path / "web_chat.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("LOCALQWEN_UPDATE_SNAPSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS / "web_chat.png")
