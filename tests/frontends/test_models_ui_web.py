"""Issue 17 in the launched web view (``localqwen web`` in a subprocess, driven with gradio_client):
generation settings and the answering model in the chat (a real tiny Qwen3), model pickers with
hub-cache models and checked paths, the knowledge base as a list, Gradio's status words
translated, and the Jobs help in web words."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from web_process import served_web

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_qwen3_path):
    home = tmp_path_factory.mktemp("models_ui_web")
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(f'[plugins.chat]\nmodel = "{tiny_qwen3_path}"\n')
    cache = home / "hf"
    snapshot = cache / "models--someone--tiny-chat" / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    for file in tiny_qwen3_path.iterdir():
        if file.is_file():
            os.symlink(file.resolve(), snapshot / file.name)
    env = {"LOCALQWEN_HOME": str(home), "LOCALQWEN_PLUGINS": "chat,rag", "HF_HUB_CACHE": str(cache),
           "MODELSCOPE_CACHE": str(home / "ms")}
    # A knowledge base made before the page is built: the forms must offer it. Made in this process
    # (the server reads it from the home folder), not in another interpreter: ~13 CPU-s less.
    from localqwen.app import Workbench

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALQWEN_HOME", str(home))
        patch.setenv("LOCALQWEN_PLUGINS", env["LOCALQWEN_PLUGINS"])
        Workbench.create().services.retrieval.create("notes")
    with served_web(env, base_port=18960) as view:
        yield {"url": view.url, "home": home, "snapshot": snapshot}


def _components(config: dict) -> dict[str, dict]:
    return {c["props"].get("elem_id"): c for c in config["components"] if c.get("props", {}).get("elem_id")}


@pytest.mark.slow
def test_web_view_models_generation_lists_and_words(served, tiny_qwen3_path):
    from gradio_client import Client

    config = httpx.get(served["url"].rstrip("/") + "/config", timeout=30).json()
    # Gradio's status tracker looks these up; without them it shows "common.complete".
    assert config["i18n_translations"]["en"]["common.complete"] == "done"
    assert config["i18n_translations"]["zh"]["common.complete"] == "完成"
    components = _components(config)
    texts = " ".join(str(c["props"].get("value", "")) for c in config["components"])
    assert "press Open" in texts and "Enter opens one" not in texts
    # The knowledge base is a list of the existing ones (and a new name can still be typed).
    kb = components["field-knowledge_base"]["props"]
    assert [choice[1] for choice in kb["choices"]] == ["default", "notes"] and kb["allow_custom_value"]
    # The chat model picker: catalog ids and the model found in the hub cache.
    picker = [choice[1] for choice in components["model-for-chat"]["props"]["choices"]]
    assert "qwen3-0.6b" in picker and str(served["snapshot"]) in picker

    client = Client(served["url"], verbose=False)
    # A typed path that is not a model is refused with the reason; a real one is saved.
    refused = client.predict(str(served["home"]), api_name="/model_for_rag")
    assert "has no config.json" in refused
    assert "rag" in client.predict(str(tiny_qwen3_path), api_name="/model_for_rag")
    assert str(tiny_qwen3_path) in (served["home"] / "config" / "config.toml").read_text()
    # A model that is downloading already (here: its lock held by this process, as the CLI's would be)
    # is said on the button's status line, and no second job starts.
    from localqwen.storage.file_lock import FileLock

    busy = FileLock(served["home"] / "data" / "models" / ".downloading" / "huggingface_qwen3-0.6b.lock")
    assert busy.acquire(blocking=False)
    try:
        said = client.predict("qwen3-0.6b", api_name="/models_download")
    finally:
        busy.release()
    assert said == f"qwen3-0.6b is already downloading (pid {os.getpid()} on {os.uname().nodename}); see Jobs."
    # Chat: max tokens reach the engine, and the status says which model answered.
    sessions, _shown, _about = client.predict("chat", api_name="/chat_plugin")
    session = sessions["value"] if isinstance(sessions, dict) else sessions
    _messages, _box, status, _sessions = client.predict({"text": "hello", "files": []}, "chat", session, 3, None,
                                                        api_name="/chat_send")
    assert status.startswith("done") and "3 generated tokens" in status, status
    assert f"by {tiny_qwen3_path.name} (transformers, cpu)" in status
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="greater than maximum"):  # the field's own bounds, before the handler
        client.predict({"text": "again", "files": []}, "chat", session, 3, 7, api_name="/chat_send")
