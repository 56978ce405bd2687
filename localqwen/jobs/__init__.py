"""Jobs: long work that outlives the view that started it.

- ``store``: the SQLite job records and the JSON-lines event logs, orphan marking.
- ``job``: a live job (events, progress, cancel) and :func:`paced` for views that follow one.
- ``thread_runner``: runs an event stream in a thread; ``process_runner``: runs a command that
  prints JSON-lines events. Both end every stream with exactly one ``Done`` (``finish_once``).
- ``manager``: :class:`JobManager`, which starts, records and finds jobs, and
  :func:`run_in_background` for an unrecorded stream a view follows.
"""

from localqwen.jobs.job import Job, paced
from localqwen.jobs.manager import JobManager, run_in_background
from localqwen.jobs.process_runner import command_events
from localqwen.jobs.store import JobRecord

__all__ = ["Job", "JobManager", "JobRecord", "command_events", "paced", "run_in_background"]
