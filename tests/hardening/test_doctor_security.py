"""`localqwen doctor` states what is protected, with the user's own trust list (its "security"
block, also under "security" in ``doctor --json``)."""

from __future__ import annotations

from localqwen.cli.doctor_cmd import security_report
from localqwen.config import load_config


def test_doctor_states_the_protections_and_the_trusted_models(isolated_home):
    config_file = isolated_home / "config" / "config.toml"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text('[runtime]\ntrust_remote_code = ["Qwen/Qwen3-4B"]\n')
    config, error = load_config(config_file)
    assert error is None
    security = security_report(config)
    assert set(security) == {"models", "model code", "GGUF", "web view and API", "documents", "two processes",
                             "outputs"}
    assert "(now: Qwen/Qwen3-4B)" in security["model code"]
    assert "pickle" in security["models"] and "DNS rebinding" in security["web view and API"]
    config_file.write_text("")
    assert "(now: none)" in security_report(load_config(config_file)[0])["model code"]
