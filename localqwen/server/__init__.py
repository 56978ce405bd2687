"""``localqwen serve``: the OpenAI-compatible API, a fourth frontend over the plugin API.

One job per module: ``plan`` (host, port, key: what may be served), ``guard`` (key, Host header,
body size), ``errors`` (OpenAI's error shape), ``queues`` (one generation at a time per engine,
a bounded wait), ``threads`` (a blocking event stream read from asyncio, cancelled when the client
leaves), ``wire`` (OpenAI messages to the engine's and back), ``catalog`` (which models are
served), ``model_chat`` / ``plugin_chat`` / ``embeddings`` (the work), ``app`` (the routes) and
``run`` (uvicorn). Starlette and uvicorn are imported only when the server is built.
"""
