"""The router's evaluation suite: real medical queries (KUAKE-QIC, labelled ``medical``), MedQA USMLE
clinical vignettes (``complex``) and the chit-chat below (``chat``, written for this project in
Chinese and English; some of it uses words close to health talk on purpose), scored by macro-F1.

The data is read from ``../shared/data`` (relative to the repository root) or a folder given."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localqwen_medical.router import INTENTS, Route, is_vignette, route

# Written for this suite: greetings, thanks, small talk, everyday requests; zh and en.
CHIT_CHAT: tuple[str, ...] = (
    "你好", "您好，请问你是谁？", "早上好呀", "晚安，明天见", "谢谢你的帮助！", "太感谢了，说得很清楚",
    "再见啦", "今天天气怎么样？", "明天上海会下雨吗", "给我讲个笑话吧", "好无聊啊，陪我聊聊天", "哈哈哈，太好笑了",
    "你吃饭了吗？", "周末有什么好玩的推荐吗", "推荐一部好看的电影", "最近有什么好听的音乐", "我想去云南旅游，有什么建议",
    "推荐一本适合睡前读的小说", "帮我把这句话翻译成英文：很高兴认识你", "写一首关于春天的诗", "孩子的数学作业不会做，怎么辅导",
    "Python 怎么读取一个文件", "这段代码为什么报错", "现在几点了", "今天星期几", "怎么给妈妈准备生日惊喜", "有什么好玩的手机游戏",
    "红烧肉怎么做好吃", "推荐一个简单的菜谱", "你叫什么名字", "你会说中文吗", "我今天升职了，好开心", "怎么学好英语",
    "北京有哪些好玩的景点", "帮我起个猫咪的名字", "电脑开不了机怎么办", "我想买一台新手机，预算三千", "怎么养多肉植物",
    "今天股市怎么样", "明天要考试了好紧张", "你能做什么", "我们聊聊宇宙吧", "周末去爬山还是看展览", "如何提高写作能力",
    "这个周末下雨吗", "给我讲个睡前故事", "你觉得猫和狗哪个更可爱", "怎么做一杯好喝的咖啡", "去日本旅游要办签证吗",
    "辞职信怎么写",
    "Hello!", "Hi there, how are you?", "Good morning!", "Good night, talk tomorrow", "Thanks a lot for your help",
    "Thank you, that was clear", "Bye for now", "What's the weather like today?", "Will it rain in London tomorrow?",
    "Tell me a joke", "I'm bored, let's chat", "Haha that's funny", "Who are you?", "What's your name?",
    "Can you recommend a good movie?", "Any good music for a road trip?", "I want to travel to Japan, any tips?",
    "Recommend a book for the weekend", "Translate 'nice to meet you' into French", "Write a short poem about the sea",
    "How do I read a file in Python?", "Why does my code throw a KeyError?", "What time is it in Tokyo?",
    "What day is it today?", "Ideas for my dad's birthday present?", "What's a fun board game for four people?",
    "Give me a recipe for banana bread", "How do I make pancakes fluffy?", "What can you do?", "Nice to meet you",
    "Tell me about yourself", "I got promoted today!", "How can I improve my English writing?",
    "What should I do this weekend?", "Help me name my new puppy", "My laptop won't turn on, what should I do?",
    "Which phone should I buy under 500 dollars?", "How often should I water a cactus?", "How did the stock market do today?",
    "I have an exam tomorrow and I'm nervous", "Let's talk about space", "Hiking or a museum this Saturday?",
    "Tell me a bedtime story", "Cats or dogs, which are cuter?", "How do I make a good cup of coffee?",
    "Do I need a visa to visit Canada?", "How do I write a resignation letter?", "What's the capital of Australia?",
    "Explain how a rainbow forms", "How do airplanes stay in the air?",
)


@dataclass
class SuiteItem:
    text: str
    label: str  # chat | medical | complex
    source: str  # kuake-qic | medqa | chit-chat


def default_data_dir() -> Path:
    """``../shared/data`` next to the repository this plugin runs from."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def load_suite(data_dir: str | Path | None = None, *, per_class: int = 100) -> list[SuiteItem]:
    """``per_class`` items of each label (KUAKE-QIC has 100; MedQA vignettes are the first ones)."""
    root = Path(data_dir) if data_dir else default_data_dir()
    kuake = root / "huatuogpt_eval" / "KUAKE-QIC_100.json"
    medqa = root / "medqa_us" / "phrases_no_exclude_test.jsonl"
    for path in (kuake, medqa):
        if not path.is_file():
            raise FileNotFoundError(f"router suite data missing: {path} (see ../shared/data/README.md, or pass --data-dir)")
    items = [SuiteItem(row["query"], "medical", "kuake-qic") for row in json.loads(kuake.read_text("utf-8"))][:per_class]
    vignettes = []
    with medqa.open(encoding="utf-8") as handle:
        for line in handle:
            question = json.loads(line)["question"]
            if is_vignette(question):
                vignettes.append(SuiteItem(question, "complex", "medqa"))
            if len(vignettes) >= per_class:
                break
    items += vignettes
    items += [SuiteItem(text, "chat", "chit-chat") for text in CHIT_CHAT[:per_class]]
    return items


def macro_f1(gold: list[str], predicted: list[str], labels: tuple[str, ...] = INTENTS) -> dict[str, Any]:
    """Per-label precision, recall, F1, the macro-F1 and the confusion matrix (gold -> predicted)."""
    per_label = {}
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[label] = {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
                            "support": sum(g == label for g in gold)}
    confusion = {g: {p: sum(a == g and b == p for a, b in zip(gold, predicted, strict=True)) for p in labels}
                 for g in labels}
    return {"macro_f1": round(sum(v["f1"] for v in per_label.values()) / len(labels), 4),
            "per_label": per_label, "confusion": confusion}


def evaluate_router(items: list[SuiteItem], llm: Any = None,
                    progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Route every item (rules only when ``llm`` is None) and score the result."""
    start = time.perf_counter()
    routes: list[Route] = []
    for index, item in enumerate(items):
        routes.append(route(item.text, llm))
        if progress:
            progress(index + 1, len(items))
    predicted = [r.intent for r in routes]
    report = macro_f1([i.label for i in items], predicted)
    report["items"] = len(items)
    report["router"] = "model" if llm is not None else "rules"
    report["seconds"] = round(time.perf_counter() - start, 2)
    report["errors"] = [{"text": item.text[:120], "gold": item.label, "predicted": r.intent, "reason": r.reason}
                        for item, r in zip(items, routes, strict=True) if r.intent != item.label]
    return report
