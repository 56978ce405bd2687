"""llama.cpp's HF -> GGUF converter, made available without a llama.cpp checkout.

``convert_hf_to_gguf.py`` (with its ``conversion`` package and ``gguf-py``) is not in any wheel,
but it ships in the llama-cpp-python source distribution, the same one the ``llama`` extra builds
the engine from. On first use (or at ``make setup``) ``ensure_converter`` has pip fetch exactly the
installed version's sdist (pip serves it from its cache when it has it) and unpacks only those
files (~2 MB) into ``<venv>/share/localqwen/llama.cpp-<version>/``: next to the library it matches,
shared by every LocalQwen home, removed with the environment, and offline from then on. Where the
environment is read-only it goes to the app cache instead.

``LLAMA_CPP_DIR`` (a llama.cpp checkout) overrides all of this.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

OVERRIDE_ENV = "LLAMA_CPP_DIR"
SCRIPT = "convert_hf_to_gguf.py"
DISTRIBUTION = "llama-cpp-python"
# What the converter needs from the sdist's vendor/llama.cpp/ (everything else is C++ sources).
_WANTED = (SCRIPT, "conversion/", "gguf-py/gguf/", "LICENSE")
FETCH_TIMEOUT_S = 900.0


class ConverterNotFound(RuntimeError):
    """The converter is not here and could not be fetched; the message says what to do."""


def installed_version() -> str | None:
    """The installed llama-cpp-python version (the converter must match the library that loads its output)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


def candidate_dirs(version: str) -> list[Path]:
    """Where an unpacked converter for ``version`` is looked for, in order (the first writable one is
    where ``fetch_converter`` puts it)."""
    from localqwen.paths import app_paths

    folder = f"llama.cpp-{version}"
    return [Path(sys.prefix) / "share" / "localqwen" / folder, app_paths().cache_dir / "llama.cpp-converter" / folder]


def is_converter_dir(path: Path) -> bool:
    return (path / SCRIPT).is_file() and (path / "gguf-py" / "gguf").is_dir()


def find_converter() -> Path | None:
    """The folder holding convert_hf_to_gguf.py: $LLAMA_CPP_DIR, else the unpacked copy for the
    installed llama-cpp-python; None when there is none yet."""
    override = os.environ.get(OVERRIDE_ENV)
    if override:
        path = Path(override).expanduser()
        if not (path / SCRIPT).is_file():
            raise ConverterNotFound(f"{OVERRIDE_ENV}={override} has no {SCRIPT}; point it at a llama.cpp "
                                    f"checkout, or unset it to use the converter from llama-cpp-python")
        return path
    version = installed_version()
    if version is None:
        return None
    return next((d for d in candidate_dirs(version) if is_converter_dir(d)), None)


def ensure_converter(*, log: Callable[[str], None] | None = None) -> Path:
    """The converter folder, fetched and unpacked first when it is missing.

    Raises ConverterNotFound with the next step when llama-cpp-python is missing or the source
    distribution cannot be had (offline on first use)."""
    found = find_converter()
    if found is not None:
        return found
    version = installed_version()
    if version is None:
        raise ConverterNotFound("GGUF export needs llama-cpp-python (its source distribution carries llama.cpp's "
                                "converter): pip install 'localqwen[llama]'")
    return fetch_converter(version, log=log)


def fetch_converter(version: str, *, log: Callable[[str], None] | None = None) -> Path:
    """Download llama-cpp-python==``version``'s sdist with pip and unpack the converter from it."""
    say = log or (lambda message: None)
    with tempfile.TemporaryDirectory(prefix="lq-llama-sdist-") as tmp:
        say(f"fetching llama.cpp's converter from the llama-cpp-python {version} source distribution (once)...")
        command = [sys.executable, "-m", "pip", "download", f"{DISTRIBUTION}=={version}", "--no-deps",
                   "--no-binary", ":all:", "--dest", tmp, "--quiet", "--disable-pip-version-check"]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            completed = None
        archives = sorted(Path(tmp).glob("*.tar.gz"))
        if completed is None or completed.returncode != 0 or not archives:
            lines = [] if completed is None else (completed.stderr or completed.stdout).strip().splitlines()
            detail = "timed out" if completed is None else (lines[-1][:300] if lines else "")  # pip's ERROR line
            raise ConverterNotFound(
                f"GGUF export needs llama.cpp's {SCRIPT}, taken from the llama-cpp-python {version} source "
                f"distribution, and pip could not fetch it ({detail or 'no archive'}). Run "
                f"`python -m localqwen.training.llama_converter` once while online (`make setup` does), "
                f"or set {OVERRIDE_ENV} to a llama.cpp checkout.")
        return unpack_converter(archives[0], version)


def unpack_converter(archive: Path, version: str) -> Path:
    """Extract the converter's files from the sdist into the first writable candidate folder."""
    errors = []
    for target in candidate_dirs(version):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=target.parent))
        except OSError as exc:
            errors.append(f"{target.parent}: {exc}")
            continue
        try:
            _extract(archive, staging)
            if not is_converter_dir(staging):
                raise ConverterNotFound(f"{archive.name} has no vendor/llama.cpp/{SCRIPT} (a changed layout?); "
                                        f"set {OVERRIDE_ENV} to a llama.cpp checkout")
            try:
                staging.rename(target)  # atomic: a concurrent unpack of the same version simply loses
            except OSError:
                if not is_converter_dir(target):
                    raise
            return target
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    raise ConverterNotFound("cannot unpack llama.cpp's converter anywhere: " + "; ".join(errors))


def _extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        members = []
        for member in tar.getmembers():
            parts = member.name.split("/", 3)  # llama_cpp_python-X/vendor/llama.cpp/<rest>
            if len(parts) < 4 or parts[1:3] != ["vendor", "llama.cpp"]:
                continue
            rest = parts[3]
            if any(rest == w or (w.endswith("/") and rest.startswith(w)) for w in _WANTED):
                member.name = rest
                members.append(member)
        # The "data" filter refuses absolute paths, ".." and links leaving dest: such an archive is
        # not the real sdist, so nothing of it is used.
        try:
            tar.extractall(dest, members=members, filter="data")
        except tarfile.FilterError as exc:
            raise ConverterNotFound(f"{archive.name} holds an unsafe path ({exc}); not using it") from None


def main() -> int:
    """`python -m localqwen.training.llama_converter`: make the converter available now (setup step)."""
    try:
        path = ensure_converter(log=lambda message: print(message, file=sys.stderr))
    except ConverterNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
