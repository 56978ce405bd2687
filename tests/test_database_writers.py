"""Two writers at once on the app database: every write transaction takes the write lock at BEGIN,
so a read-then-write (the chat store's "next position, then insert") waits its turn instead of
failing with "database is locked" when another thread committed in between (WAL snapshots)."""

from __future__ import annotations

import threading

from localqwen.storage.chat_store import ChatStore
from localqwen.storage.database import Database


def test_two_threads_append_to_one_session_without_locking_errors(tmp_path):
    database = Database(tmp_path / "app.db")
    store = ChatStore(database)
    session = store.create_session("chat")
    errors: list[BaseException] = []

    def write(name: str) -> None:
        try:
            for index in range(150):
                store.append(session, {"role": "user", "content": f"{name} {index}"})
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(name,)) for name in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    messages = store.messages(session)
    assert len(messages) == 450  # nothing lost, and positions stayed unique (the table's key)
    for name in "abc":  # each writer's messages kept their order
        mine = [m["content"] for m in messages if m["content"].startswith(name)]
        assert mine == [f"{name} {index}" for index in range(150)]
