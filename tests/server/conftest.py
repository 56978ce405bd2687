"""The real API server on a free loopback port, in a thread of the test process, per test."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class RunningApi:
    url: str  # ends in /v1, as the openai client wants it
    port: int
    bench: Any
    key: str = ""

    def client(self, **options: Any) -> Any:
        import openai

        return openai.OpenAI(base_url=self.url, api_key=options.pop("api_key", self.key or "unused"),
                             max_retries=0, timeout=options.pop("timeout", 60), **options)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(home: Path, text: str) -> None:
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text, encoding="utf-8")


@pytest.fixture
def start_api(isolated_home) -> Iterator[Callable[..., RunningApi]]:
    """``start_api(config_text, **plan options)``: a fresh workbench served on 127.0.0.1."""
    from localqwen.app import Workbench
    from localqwen.server.plan import plan_serve
    from localqwen.server.run import ServerThread

    running: list[ServerThread] = []

    def start(config_text: str = "", **options: Any) -> RunningApi:
        if config_text:
            write_config(isolated_home, config_text)
        bench = Workbench.create()
        plan = plan_serve(port=free_port(), **options)
        running.append(ServerThread(bench, plan).start())
        return RunningApi(plan.url, plan.port, bench, plan.api_key)

    yield start
    for server in running:
        server.stop()


@pytest.fixture
def tiny_config(tiny_qwen3_path) -> str:
    return f'[plugins.chat]\nmodel = "{tiny_qwen3_path}"\nmax_new_tokens = 8\n'


RERANK_WORDS = ["what", "helps", "absorb", "calcium", "vitamin", "d", "the", "body", "from", "food", "night", "train",
                "to", "vienna", "leaves", "at", "ten", "bones"]


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    """A tiny random BERT cross-encoder over :data:`RERANK_WORDS`, saved as a folder (no hub)."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny_ce"), RERANK_WORDS)


def build_tiny_cross_encoder(path: Path, words: list[str]) -> Path:
    """A tiny random BERT cross-encoder with a local WordPiece vocabulary (as tests/rag builds one)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words))]
    (path / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path
