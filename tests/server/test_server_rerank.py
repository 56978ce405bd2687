"""``POST /v1/rerank`` on the real server with a tiny cross-encoder built at test time: the order and
scores are the cross-encoder's own, ``index`` points into the request, and bad requests get 400/404."""

from __future__ import annotations

import httpx
import pytest

DOCUMENTS = ["The night train to Vienna leaves at ten.", "Vitamin D helps the body absorb calcium.",
             {"text": "Bones need calcium from food."}, "at ten"]
QUERY = "what helps absorb calcium"


@pytest.fixture
def rerank_api(start_api, tiny_cross_encoder):
    api = start_api(f'[plugins.rag]\nreranker = "{tiny_cross_encoder}"\n')
    return api, api.url + "/rerank", str(tiny_cross_encoder)


@pytest.mark.slow  # ~40-60 s on a busy 2-core machine: torch, transformers and sentence-transformers load
def test_rerank_orders_by_the_cross_encoder(rerank_api):
    from sentence_transformers import CrossEncoder

    api, url, model = rerank_api
    answer = httpx.post(url, json={"model": model, "query": QUERY, "documents": DOCUMENTS, "top_n": 3}, timeout=60)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    texts = [d["text"] if isinstance(d, dict) else d for d in DOCUMENTS]
    expected = [float(x) for x in CrossEncoder(model).predict([(QUERY, t) for t in texts])]
    best = sorted(range(len(texts)), key=lambda i: expected[i], reverse=True)[:3]
    assert [r["index"] for r in body["results"]] == best
    assert [r["relevance_score"] for r in body["results"]] == pytest.approx([expected[i] for i in best], abs=1e-5)
    assert [r["document"]["text"] for r in body["results"]] == [texts[i] for i in best]
    assert body["model"] == model and body["usage"]["total_tokens"] > 0

    bare = httpx.post(url, json={"model": model, "query": QUERY, "documents": texts, "return_documents": False},
                      timeout=60).json()
    assert len(bare["results"]) == 4 and all("document" not in r for r in bare["results"])


@pytest.mark.parametrize(("change", "status", "param"), [
    ({"model": "someone/else"}, 404, "model"),
    ({"model": None}, 400, "model"),
    ({"query": "  "}, 400, "query"),
    ({"documents": []}, 400, "documents"),
    ({"documents": ["ok", {"txt": "no"}]}, 400, "documents"),
    ({"top_n": 0}, 400, "top_n"),
    ({"return_documents": "yes"}, 400, "return_documents"),
])
def test_bad_rerank_requests_are_named(start_api, tmp_path, change, status, param):
    # Requests are checked before any model loads, so a configured folder that is not there is enough.
    model = str(tmp_path / "not-built")
    api = start_api(f'[plugins.rag]\nreranker = "{model}"\n')
    body = {"model": model, "query": QUERY, "documents": ["a", "b"], **change}
    answer = httpx.post(api.url + "/rerank", json=body, timeout=30)
    assert answer.status_code == status
    assert answer.json()["error"]["param"] == param


def test_a_reranker_that_cannot_load_is_a_503(start_api, tmp_path):
    model = str(tmp_path / "not-built")
    api = start_api(f'[plugins.rag]\nreranker = "{model}"\n')
    answer = httpx.post(api.url + "/rerank", json={"model": model, "query": QUERY, "documents": ["a"]}, timeout=60)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "model_unavailable" and "not-built" in answer.json()["error"]["message"]
