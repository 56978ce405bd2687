from pathlib import Path

import pytest

from localqwen.atomic import atomic_open, atomic_write_text
from localqwen.config import ConfigError, default_config_text, load_config, parse_config_text
from localqwen.paths import PathOutsideRoot, app_paths, ensure_within, resolve_inside


def test_home_relocates_every_dir(isolated_home):
    paths = app_paths()
    for directory in (paths.config_dir, paths.data_dir, paths.cache_dir):
        assert Path(isolated_home) in directory.parents


def test_missing_config_gives_defaults(tmp_path):
    config, error = load_config(tmp_path / "none.toml")
    assert error is None and config.runtime.hub == "huggingface"


def test_corrupt_config_names_file_and_line(tmp_path):
    file = tmp_path / "config.toml"
    file.write_text('[app]\nlanguage = "en"\n[runtime\noffline = true\n')
    config, error = load_config(file)
    assert config.app.language == "auto"  # defaults, so the app can start
    assert error is not None and error.line == 3 and str(file) in str(error)
    with pytest.raises(ConfigError):
        load_config(file, strict=True)


def test_wrong_key_is_reported_with_line(tmp_path):
    with pytest.raises(ConfigError) as info:
        parse_config_text('[runtime]\nhub = "github"\n', tmp_path / "c.toml")
    assert info.value.line == 2 and "runtime.hub" in info.value.message


def test_default_config_text_parses_back(tmp_path):
    config = parse_config_text(default_config_text(), tmp_path / "c.toml")
    assert config.runtime.offline is False


def test_atomic_write_keeps_old_file_on_crash(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write_text(target, "good")
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("crash")
    assert target.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_untrusted_paths_cannot_escape(tmp_path):
    assert resolve_inside(tmp_path, "a/b.png") == tmp_path.resolve() / "a" / "b.png"
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(PathOutsideRoot):
            resolve_inside(tmp_path, bad)
    (tmp_path / "link").symlink_to("/etc")
    with pytest.raises(PathOutsideRoot):
        resolve_inside(tmp_path, "link/passwd")
    with pytest.raises(PathOutsideRoot):
        ensure_within([tmp_path], "/etc/hosts")


def test_database_migrations_apply_once(tmp_path):
    from localqwen.storage.database import Database

    db = Database(tmp_path / "db.sqlite3")
    migrations = ["CREATE TABLE t (x INTEGER)", "ALTER TABLE t ADD COLUMN y TEXT"]
    assert db.migrate("demo", migrations) == 2
    assert db.migrate("demo", migrations) == 2  # re-running applies nothing
    with db.connect() as conn:
        conn.execute("INSERT INTO t (x, y) VALUES (1, 'a')")
    with pytest.raises(RuntimeError), db.connect() as conn:
        conn.execute("INSERT INTO t (x, y) VALUES (2, 'b')")
        raise RuntimeError("rolled back")
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1
