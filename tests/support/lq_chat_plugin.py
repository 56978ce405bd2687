"""A chat plugin of about forty lines with no frontend code, registered like a third-party plugin.

Every chat view (the TUI chat screen, the web chat tab, ``localqwen chat``) must render it from its
events alone: a step panel with its own text, a tool call with its result, an image when one is
sent, a streamed answer, a counter kept in the session's metadata and shown in the side panel, and a
stop that is honoured.
"""

from __future__ import annotations

from localqwen.plugin_api import ChatRequest, Context, Plugin, Requirements, chat, chat_panel
from localqwen.plugin_api import events as ev


class ParrotChat(Plugin):
    id = "parrot"
    title = "Parrot"
    description = "Repeats what you say after looking it up; for the chat-view tests."
    requirements = Requirements(task="none")

    @chat
    def respond(self, request: ChatRequest, ctx: Context):
        turn = request.metadata.get("turns", 0) + 1
        request.metadata["turns"] = turn  # the host saves it with the session
        yield ev.Step(step="listen", title="Listening")
        yield ev.TextDelta(text=f"Turn {turn}: {len(request.text.split())} words heard.", step="listen")
        yield ev.Step(step="listen", title="Listening", status="finished", elapsed_s=0.01)
        yield ev.ToolCall(name="lookup", arguments={"query": request.text},
                          result=f"{len(request.history)} earlier messages")
        for image in request.images:
            yield ev.Image(path=image, caption="what you sent")
        # "count N" answers slowly, word by word, so a stop can land in the middle.
        words = request.text.split()
        count = int(words[1]) if len(words) == 2 and words[0] == "count" and words[1].isdigit() else 0
        answer = [str(n) for n in range(1, count + 1)] or ["Polly", "says:", request.text]
        for index, word in enumerate(answer):
            if ctx.cancel.wait(0.02 if count else 0):  # stop pressed: end here, what was said is kept
                yield ev.Done(status="cancelled", summary="stopped")
                return
            yield ev.TextDelta(text=word if index == 0 else " " + word)
        yield ev.Done(summary=f"turn {turn}")

    @chat_panel
    def panel(self, metadata: dict, ctx: Context) -> list[ev.Table]:
        return [ev.Table(title="This chat", columns=["what", "value"], rows=[["turns", metadata.get("turns", 0)]])]
