# Two commands a fresh machine needs:  `make run`  and  `make test`.
# Both create .venv when it is missing and install what they need.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# torch/torchvision are pinned to the releases this kind of machine has on disk.
PIP_INSTALL := $(BIN)/pip install --constraint constraints.txt
# llama.cpp built for any x86-64 CPU with AVX2, not with -march=native: a native build on an
# AMX-capable Xeon (Sapphire Rapids) repacks Q4_K weights into AMX buffers and segfaults on the
# first decode (ggml-org/llama.cpp#20824; seen here 2026-12-03 with llama-cpp-python 0.3.36), and a
# native build would not run on another CPU anyway (the desktop build ships it). Built first, without
# pip's cache, so a native wheel cached earlier is not reused; the version is left to pyproject's
# `llama` extra, and the flags stay set for the project's install in case that one rebuilds it.
LLAMA_CMAKE_ARGS := $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON,)

.PHONY: setup run test test-fast lint bench browser clean desktop desktop-smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip wheel setuptools

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(PIP_INSTALL) torch==2.14.1 torchvision==0.29.1
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP_INSTALL) --no-cache-dir llama-cpp-python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP_INSTALL) -e '.[all,test]'
	# llama.cpp's GGUF converter, unpacked from the installed llama-cpp-python's sdist (export works offline after)
	-$(BIN)/python -m localqwen.training.llama_converter
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/localqwen

# Debian's chromium + chromedriver for the real-browser test (needs root or sudo).
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; \
	fi

test: setup browser
	$(BIN)/ruff check localqwen plugins tests bench
	$(BIN)/mypy
	# one process per core (pytest-xdist), long tests handed to whichever is free; the slowest listed:
	# the suite must stay under 15 minutes
	$(BIN)/python -m pytest -q -n auto --dist worksteal --durations=30

# Skips the slow end-to-end tests; CI runs everything.
test-fast: setup
	$(BIN)/python -m pytest -q -n auto --dist worksteal -m "not slow"

lint: setup
	$(BIN)/ruff check localqwen plugins tests bench
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/run_all.py

# The desktop app: a one-folder PyInstaller build in dist/localqwen/ (README "Desktop app").
$(BIN)/pyinstaller: | $(STAMP)
	$(PIP_INSTALL) 'pyinstaller>=6'

desktop: setup $(BIN)/pyinstaller
	$(BIN)/pyinstaller packaging/localqwen.spec --noconfirm --log-level WARN --distpath dist --workpath build/desktop

# Runs the built app the ways a user does (fresh home, offline): CI runs it after the tests.
desktop-smoke: desktop browser
	$(BIN)/python packaging/smoke_test.py

clean:
	rm -rf $(VENV) build dist *.egg-info
