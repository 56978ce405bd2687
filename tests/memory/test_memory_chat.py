"""The memory chat through Conversations (what every chat view calls), with the real tiny Qwen3,
MiniLM vectors, LanceDB and the SQLite chat store. The random tiny model never writes valid JSON,
so extraction takes the retry path and keeps the raw turn, counted."""

from __future__ import annotations

from localqwen.app import Workbench
from localqwen.plugin_api import events


def test_memory_chat_recalls_commands_and_forget(tiny_qwen3_path):
    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    bench.paths.config_file.write_text(f'[plugins.memory]\nmodel = "{tiny_qwen3_path}"\nmax_new_tokens = 16\n'
                                       'extraction_max_new_tokens = 32\n', encoding="utf-8")
    bench = Workbench.create()
    chats = bench.conversations
    session = chats.new_session("memory")
    first = list(chats.send("memory", session, "My sister Ann lives in Porto and plays the cello."))
    assert first[-1].status == "ok", first
    assert any(isinstance(e, events.Step) and e.title == "recall: text" for e in first)
    plugin = bench.host.get("memory")
    assert plugin._background().wait(300)
    second = list(chats.send("memory", session, "Where does Ann live?"))
    recall = next(e for e in second if isinstance(e, events.Step) and e.title == "recall: text")
    assert "Porto" in recall.detail  # the raw turn of the first message was recalled
    warnings = [e for e in second if isinstance(e, events.Warning)]
    assert warnings and "kept the raw turn" in warnings[0].message
    store = plugin._store(bench.context("memory"))
    counters = store.stats()["counters"]
    assert counters["extraction_parse_failed"] >= 1 and counters["extraction_raw_fallback"] >= 1
    summary, latest = chats.panel("memory", session)  # the side panel every chat view shows
    assert dict(map(tuple, summary.rows))["extractions that kept only the raw turn"] >= 1
    column = {name: index for index, name in enumerate(latest.columns)}
    assert any("Porto" in row[column["memory"]] and "pending" in row[column["consolidation"]] for row in latest.rows)
    listed = list(chats.send("memory", session, "/memories"))
    table = next(e for e in listed if isinstance(e, events.Table))
    porto = next(row for row in table.rows if "Porto" in row[2])
    assert porto[column["source"]] == f"session {session}, message 0" and "pending" in porto[column["consolidation"]]
    forgot = list(chats.send("memory", session, f"/forget {porto[0]}"))
    assert forgot[-1].status == "ok" and "Forgotten memory" in forgot[-1].summary
    assert porto[0] not in {h.memory.id for h in store.search("Ann Porto cello", k=10)}
    persona = list(chats.send("memory", session, "/persona work"))
    assert chats.store("memory").metadata(session)["persona"] == "work" and persona[-1].status == "ok"
    bad = list(chats.send("memory", session, "/nonsense"))
    assert bad[-1].status == "failed"
