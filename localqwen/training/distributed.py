"""Work that only one process of an `accelerate launch` job may do (building a job's data files).

Every rank runs the same ``localqwen train`` command; a ``[data.source]`` builder writing its files
into ``output_dir/data`` from two processes at once would interleave the writes and a rank could
read a half-written file. :func:`on_main_process` runs the builder on rank 0 only; the other ranks
wait for it and get its result (a path), or its failure, so no rank hangs when it fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def on_main_process(build: Callable[[], T]) -> T:
    """``build()`` once for the whole job; in a single process it simply runs."""
    if "LOCAL_RANK" not in os.environ:  # not under accelerate launch / torchrun
        return build()
    import torch
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    # Joins the job's process group as the Trainer will (``use_cpu`` without CUDA, so gloo on CPUs;
    # a plain PartialState() would see no GPU and stay a lone process); the Trainer reuses this state.
    state = PartialState(cpu=not torch.cuda.is_available())
    leave_process_group_at_exit()
    if state.num_processes == 1:
        return build()
    outcome: list[Any] = [None]  # rank 0 fills it with ("ok", result) or ("failed", message)
    failure: BaseException | None = None
    if state.is_main_process:
        try:
            outcome = [("ok", build())]
        except Exception as exc:  # noqa: BLE001 - the other ranks must hear of it, then it is re-raised
            failure = exc
            outcome = [("failed", f"{type(exc).__name__}: {exc}")]
    broadcast_object_list(outcome, from_process=0)
    kind, value = outcome[0]
    if failure is not None:
        raise failure
    if kind == "failed":
        raise RuntimeError(f"the main process could not build the job's data: {value}")
    return value  # type: ignore[no-any-return]


def leave_process_group(*, wait: bool = True) -> None:
    """End this rank's part in the job's process group, if it joined one.

    A rank that reaches interpreter exit with its gloo group still open can abort there
    ("terminate called without an active exception", SIGABRT: gloo's worker threads still hold
    tensors when Python is torn down), failing a job that did its work; torch does not close the
    group by itself (pytorch/pytorch#190489). ``wait`` first lets every rank finish its last save."""
    if "LOCAL_RANK" not in os.environ:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        if wait:
            dist.barrier()
        dist.destroy_process_group()


def leave_process_group_at_exit() -> None:
    """Close the process group at exit however this rank ends (an error included: no barrier then,
    since a rank that failed never reaches it). Registered once per process."""
    global _AT_EXIT
    if not _AT_EXIT and "LOCAL_RANK" in os.environ:
        import atexit

        atexit.register(leave_process_group, wait=False)
        _AT_EXIT = True


_AT_EXIT = False
