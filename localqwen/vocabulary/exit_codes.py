"""The process exit status for each way a run ends, shared by every command that runs work.

A ``Done`` event's status decides how ``localqwen run``, ``localqwen train`` and the job
runners' child processes exit, so a caller (a shell script, the process job runner) can tell
them apart without parsing output. 130 is the shell's code for a run stopped by Ctrl-C
(128 + SIGINT). Bad input never starts a run; the CLI exits 2 for it, as click does.
"""

from __future__ import annotations

EXIT_CODES: dict[str, int] = {"ok": 0, "failed": 1, "cancelled": 130}


def exit_code(status: str) -> int:
    """The exit status for a ``Done`` status ("ok", "failed" or "cancelled")."""
    try:
        return EXIT_CODES[status]
    except KeyError:
        raise ValueError(f"unknown Done status {status!r}; expected one of {sorted(EXIT_CODES)}") from None
