"""The TUI's command palette (Ctrl+P) offers what the home screen's plugin cards offer: each card's
chat, wizard, actions and custom view, titled "Plugin › button". Textual pilot with the real
trainer plugin (it has a wizard) and the real RAG plugin (it has a chat)."""

from __future__ import annotations

import pytest
from test_frontends_tui import async_test, home_ready, wait_for
from textual.command import CommandList, CommandPalette
from textual.widgets import Button, Label

from localqwen.app import Workbench
from localqwen.tui.app import LocalQwenApp
from localqwen.tui.screens.home import HomeScreen
from localqwen.tui.screens.wizard import WizardScreen

SIZE = (130, 44)


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.setenv("LOCALQWEN_PLUGINS", "trainer,rag")  # a wizard and a chat; the others only slow the home
    return LocalQwenApp(Workbench.create())


def home_entries(screen) -> list[str]:
    """Every button of every plugin card, as "Plugin › button"."""
    entries = []
    for card in screen.query(".plugin-card"):
        title = str(card.query_one(".plugin-title", Label).render())
        entries += [f"{title} › {button.label}" for button in card.query(".plugin-actions Button").results(Button)]
    return entries


def first_hit(palette) -> str:
    commands = palette.query_one(CommandList)
    if not commands.option_count or commands.highlighted != 0:
        return ""
    return str(commands.get_option_at_index(0).hit.text)


@async_test
async def test_palette_offers_the_home_entries_and_wizard_opens_the_trainer_wizard(app):
    async with app.run_test(size=SIZE) as pilot:
        await home_ready(pilot, app)
        home = home_entries(app.screen)
        palette = [command.title for command in app.get_system_commands(app.screen) if " › " in command.title]
        assert palette == home  # the same entries, in the cards' order
        assert {"Trainer › Wizard", "Documents and multi-agent RAG › Chat", "Trainer › Wizard status"} <= set(home)

        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"wizard")
        # Ahead of "Trainer › Wizard status", which matches "wizard" just as well.
        await wait_for(pilot, lambda: first_hit(app.screen) == "Trainer › Wizard")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen))
        assert app.screen.plugin.id == "trainer" and app.current_mode == "home"
        await pilot.press("escape")  # the wizard sits over the home screen, as when opened from its card
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.click("#wizard-trainer")  # the card's button opens the same screen the same way
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen))
