"""The serve rules: the API key, --listen, the Host header, the body limit, the queue, local images only,
a client that leaves, and errors in OpenAI's shape."""

from __future__ import annotations

import threading
import time

import pytest


def test_a_key_is_required_when_set(start_api, test_plugins):
    import openai

    api = start_api(api_key="s3cret-key-123")
    with pytest.raises(openai.AuthenticationError) as caught:
        api.client(api_key="wrong-key-999").models.list()
    assert caught.value.status_code == 401 and caught.value.body["code"] == "invalid_api_key"
    import httpx

    assert httpx.get(f"{api.url}/models").status_code == 401  # no Authorization header at all
    assert httpx.get(f"http://127.0.0.1:{api.port}/health").status_code == 401
    answer = api.client().chat.completions.create(model="localqwen/parrot",
                                                  messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "Polly says: hi"


def test_listening_on_the_network_needs_a_key(tmp_path):
    from typer.testing import CliRunner

    from localqwen.cli.main import app
    from localqwen.server.plan import ServeConfigError, plan_serve

    with pytest.raises(ServeConfigError, match="--api-key"):
        plan_serve(listen=True)
    with pytest.raises(ServeConfigError, match="--api-key"):
        plan_serve(host="192.168.1.20")
    assert plan_serve(listen=True, api_key="long-enough-key").host == "0.0.0.0"
    key_file = tmp_path / "key"
    key_file.write_text("from-a-file-123\n")
    assert plan_serve(listen=True, api_key_file=key_file).api_key == "from-a-file-123"
    with pytest.raises(ServeConfigError, match="at least 8"):
        plan_serve(api_key="short")

    result = CliRunner().invoke(app, ["serve", "--listen"])
    assert result.exit_code == 2 and "--api-key" in result.output


def test_a_request_for_another_host_name_is_refused(start_api):
    import httpx

    api = start_api()
    rebinding = httpx.get(f"http://127.0.0.1:{api.port}/v1/models", headers={"Host": "evil.example:8765"})
    assert rebinding.status_code == 421
    assert rebinding.json()["error"]["code"] == "host_not_allowed"
    for host in (f"localhost:{api.port}", f"127.0.0.1:{api.port}", f"[::1]:{api.port}"):
        assert httpx.get(f"http://127.0.0.1:{api.port}/health", headers={"Host": host}).status_code == 200
    assert "access-control-allow-origin" not in httpx.get(
        f"http://127.0.0.1:{api.port}/health", headers={"Origin": "http://evil.example"}).headers


def test_an_oversized_body_is_refused(start_api, test_plugins):
    import httpx
    import openai

    api = start_api(max_body=64 * 1024)
    with pytest.raises(openai.APIStatusError) as caught:
        api.client().chat.completions.create(model="localqwen/parrot",
                                             messages=[{"role": "user", "content": "x " * 40_000}])
    assert caught.value.status_code == 413 and caught.value.body["code"] == "body_too_large"

    def chunked():  # no Content-Length: the limit is counted while reading
        for _ in range(20):
            yield b"x" * 8192

    refused = httpx.post(f"{api.url}/chat/completions", content=chunked(), headers={"Content-Type": "application/json"})
    assert refused.status_code == 413


def test_a_full_queue_answers_429_with_retry_after(start_api, test_plugins):
    import openai

    api = start_api(max_waiting=0)
    client = api.client()
    answers: list[str] = []
    slow = threading.Thread(target=lambda: answers.append(client.chat.completions.create(
        model="localqwen/parrot", messages=[{"role": "user", "content": "count 40"}]).choices[0].message.content))
    slow.start()
    time.sleep(0.4)  # the parrot counts to 40 in ~0.8 s
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="localqwen/parrot", messages=[{"role": "user", "content": "hi"}])
    assert int(caught.value.response.headers["Retry-After"]) >= 1
    assert caught.value.body["code"] == "queue_full"
    slow.join(30)
    assert answers == [" ".join(str(n) for n in range(1, 41))]
    # The engine is free again.
    assert client.chat.completions.create(model="localqwen/parrot", messages=[{"role": "user", "content": "hi"}])


def test_a_client_that_leaves_stops_its_generation(start_api, test_plugins):

    api = start_api(max_waiting=0)
    client = api.client()
    stream = client.chat.completions.create(model="localqwen/parrot", stream=True,
                                            messages=[{"role": "user", "content": "count 1000"}])  # ~20 s
    seen = ""
    for chunk in stream:
        seen += (chunk.choices[0].delta.content or "") if chunk.choices else ""
        if len(seen.split()) >= 3:
            break
    stream.close()
    assert_engine_freed(client)  # the cancelled generation frees the queue in well under its 20 s


def test_images_are_never_fetched_and_paths_stay_inside_the_allowed_folders(start_api, test_plugins, tmp_path):
    import openai

    api = start_api()
    client = api.client()

    def ask(url: str):
        return client.chat.completions.create(model="localqwen/parrot", messages=[{"role": "user", "content": [
            {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": url}}]}])

    with pytest.raises(openai.BadRequestError) as caught:
        ask("http://127.0.0.1:9/cat.png")
    assert caught.value.body["code"] == "image_not_local"
    outside = tmp_path / "cat.png"
    outside.write_bytes(b"\x89PNG")
    with pytest.raises(openai.BadRequestError) as caught:
        ask(str(outside))
    assert caught.value.body["code"] == "image_outside_allowed_folders"
    inside = api.bench.paths.uploads_dir / "cat.png"
    inside.parent.mkdir(parents=True, exist_ok=True)
    inside.write_bytes(b"\x89PNG")
    for reference in (str(inside), inside.as_uri()):
        image = next(e for e in ask(reference).model_extra["localqwen_events"] if e["kind"] == "image")
        assert image["path"] == str(inside.resolve())


def test_errors_come_in_openai_shape(start_api):
    import httpx
    import openai

    api = start_api()
    with pytest.raises(openai.NotFoundError) as caught:
        api.client().chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["code"] == "model_not_found" and "localqwen/chat" in caught.value.body["message"]
    bad = httpx.post(f"{api.url}/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and set(bad.json()["error"]) == {"message", "type", "param", "code"}
    missing = httpx.get(f"{api.url}/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "invalid_request_error"


def test_a_client_that_leaves_a_non_streamed_answer_stops_it_too(start_api, test_plugins):
    import httpx

    api = start_api(max_waiting=0)
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
        httpx.post(f"{api.url}/chat/completions", timeout=0.5,
                   json={"model": "localqwen/parrot", "messages": [{"role": "user", "content": "count 1000"}]})
    assert_engine_freed(api.client())


def assert_engine_freed(client) -> None:
    """A new request gets an answer within 5 s: the client that left no longer holds the engine."""
    import openai

    started = time.monotonic()
    while True:
        try:
            answer = client.chat.completions.create(model="localqwen/parrot",
                                                    messages=[{"role": "user", "content": "hi"}])
            break
        except openai.RateLimitError:
            assert time.monotonic() - started < 5, "the left generation still holds the engine"
            time.sleep(0.1)
    assert answer.choices[0].message.content == "Polly says: hi"
