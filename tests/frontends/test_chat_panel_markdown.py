"""The web side panel shows plugin data as typed: Markdown in a cell is escaped, rows are padded."""

from localqwen.vocabulary import events as ev
from localqwen.web.chat_panel import panel_markdown


def test_cells_are_escaped_and_rows_fit_the_columns():
    table = ev.Table(title="Profile *of* me", columns=["field", "value"],
                     rows=[["allergies", "penicillin | **sulfa**\nnew line"], ["age"]])
    text = panel_markdown([table])
    assert text.splitlines()[0] == r"**Profile \*of\* me**"
    assert r"| allergies | penicillin \| \*\*sulfa\*\* new line |" in text
    assert "| age |  |" in text
    assert panel_markdown([]) == ""
