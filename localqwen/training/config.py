"""The training job config: one TOML or YAML file that `localqwen train CONFIG` runs.

Every section forbids unknown keys, and errors name the key path plus a "did you mean" hint,
so a typo like ``learnig_rate`` fails before any model is loaded.
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from localqwen.atomic import atomic_write_text
from localqwen.training.methods import MethodName
from localqwen.vocabulary import toml_writer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(_Section):
    path: str = Field(description="Local model folder (or a hub id when online).")
    task: Literal["auto", "text", "vision"] = Field("auto", description="vision loads an image-text model.")
    trust_remote_code: bool = False


class DataSourceSection(_Section):
    name: str = Field(description="A registered data source (see localqwen.training.data_sources).")
    options: dict[str, Any] = Field(default_factory=dict)


class DataSection(_Section):
    train: str | None = Field(None, description="Training file or folder (.json, .jsonl, .csv, datasets folder, modelscope:ID).")
    eval: str | None = Field(None, description="Held-out file; when missing, eval_fraction of train is held out.")
    source: DataSourceSection | None = Field(None, description="Build the data with a registered generator instead.")
    eval_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    max_rows: int | None = Field(None, ge=1)
    skip_bad_rows: bool = Field(True, description="Drop rows that fail validation (they are reported); else stop.")

    @model_validator(mode="after")
    def _one_origin(self) -> DataSection:
        if not self.train and self.source is None:
            raise ValueError("give data.train (a file) or data.source (a registered data source)")
        return self


class MethodSection(_Section):
    name: MethodName = Field("lora", description="full, or an adapter method registered in localqwen.adapters.")
    options: dict[str, Any] = Field(default_factory=dict, description="Method options (rank, alpha, targets...).")


class TrainingSection(_Section):
    objective: Literal["sft", "dpo"] = "sft"
    epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, description="Stop after this many optimizer steps (-1: run all epochs).")
    batch_size: int = Field(4, ge=1)
    gradient_accumulation: int = Field(1, ge=1)
    learning_rate: float = Field(2e-4, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, ge=0)
    max_length: int = Field(1024, ge=8)
    batching: Literal["pad", "bucket", "pack"] = Field(
        "pad", description="pad: pad each batch (random batches); bucket: group similar token counts (less padding, "
        "but a batch then holds rows of one shape: keep pad for short templated rows); pack: join text rows up to "
        "max_length."
    )
    gradient_checkpointing: bool = False
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    seed: int = 42
    logging_steps: int = Field(1, ge=1)
    save_steps: int = Field(50, ge=1)
    save_total_limit: int = Field(2, ge=1)
    eval_steps: int | None = Field(None, ge=1, description="Evaluate every N steps (None: at the end only).")
    dpo_beta: float = Field(0.1, gt=0)
    optimizer: Literal["adamw_torch", "adamw_torch_fused", "sgd", "adafactor"] = "adamw_torch"
    dataloader_workers: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _batching_fits_objective(self) -> TrainingSection:
        # Buckets need each row's token count and packing joins rows: both are SFT's. TRL's DPO rows
        # carry no length (the sampler would fail after loading, asking for "input_ids").
        if self.objective == "dpo" and self.batching != "pad":
            raise ValueError(f"batching = '{self.batching}' is for SFT; use 'pad' with DPO")
        return self


class TrackingSection(_Section):
    swanlab: Literal["off", "local", "cloud"] = Field(
        "local", description="local keeps logs on this machine; cloud uploads (needs `swanlab login`)."
    )
    project: str = "localqwen"
    experiment: str | None = None


class JobConfig(_Section):
    name: str = "run"
    output_dir: str = Field(description="Checkpoints, progress.jsonl and the final model go here.")
    model: ModelSection
    data: DataSection
    method: MethodSection = Field(default_factory=lambda: MethodSection())
    training: TrainingSection = Field(default_factory=lambda: TrainingSection())
    tracking: TrackingSection = Field(default_factory=lambda: TrackingSection())

    # Relative paths in the file are relative to the file, not to wherever the CLI runs.
    base_dir: str | None = Field(None, exclude=True, description="Folder relative paths resolve against.")

    def resolve(self, value: str | None) -> Path | None:
        if value is None:
            return None
        path = Path(value).expanduser()
        if not path.is_absolute() and self.base_dir:
            path = Path(self.base_dir) / path
        return path

    @property
    def output_path(self) -> Path:
        path = self.resolve(self.output_dir)
        assert path is not None
        return path

    @property
    def progress_log(self) -> Path:
        return self.output_path / "progress.jsonl"


class JobConfigError(ValueError):
    """The job config cannot be used; the message lists every problem with its key path."""

    def __init__(self, path: Path | None, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        where = f"{path}: " if path else ""
        super().__init__(where + "; ".join(problems))


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names valid at ``loc`` (used to suggest the key that was meant)."""
    current: Any = model
    for part in loc[:-1]:
        field = current.model_fields.get(str(part)) if isinstance(current, type) else None
        if field is None:
            return []
        annotation = field.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    return list(current.model_fields)


def _describe(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        if err["type"] == "extra_forbidden":
            allowed = [k for k in _allowed_keys(JobConfig, loc) if k != "base_dir"]
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(allowed)})"
            problems.append(f"{key}: unknown key{hint}")
        elif err["type"] == "missing":
            problems.append(f"{key}: required key is missing")
        else:
            value = err.get("input")
            shown = f" (got {json.dumps(value, default=str)[:60]})" if not isinstance(value, dict) else ""
            problems.append(f"{key}: {err['msg']}{shown}")
    return problems


def parse_job_config(raw: dict[str, Any], *, path: Path | None = None) -> JobConfig:
    if not isinstance(raw, dict):
        raise JobConfigError(path, ["the file must hold a table/mapping of sections"])
    try:
        config = JobConfig.model_validate(raw)
    except ValidationError as exc:
        raise JobConfigError(path, _describe(exc)) from None
    if path is not None and config.base_dir is None:
        config.base_dir = str(path.resolve().parent)
    if config.model.trust_remote_code:
        # A job file cannot turn on running a model's own code by itself: only the user's config can.
        from localqwen.runtime.model_files import RemoteCodeRefusedError, check_remote_code

        local = config.resolve(config.model.path)
        try:
            check_remote_code(str(local) if local is not None and local.exists() else config.model.path)
        except RemoteCodeRefusedError as exc:
            raise JobConfigError(path, [f"model.trust_remote_code: {exc}"]) from None
    return config


def load_job_config(path: str | Path) -> JobConfig:
    """Read and validate a .toml / .yaml / .yml / .json job config."""
    path = Path(path)
    if not path.is_file():
        raise JobConfigError(path, ["file not found"])
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            raw = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            raw = yaml.safe_load(text) or {}
        elif suffix == ".json":
            raw = json.loads(text)
        else:
            raise JobConfigError(path, [f"unsupported config type '{suffix}' (use .toml, .yaml or .json)"])
    except JobConfigError:
        raise
    except Exception as exc:  # parser errors carry line numbers in their messages
        raise JobConfigError(path, [f"cannot parse {suffix[1:].upper()}: {exc}"]) from None
    return parse_job_config(raw, path=path)


def config_to_dict(config: JobConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", exclude={"base_dir"}, exclude_none=True)


def save_job_config(config: JobConfig, path: str | Path) -> Path:
    """Write the config as TOML (or YAML for .yaml/.yml), atomically."""
    path = Path(path)
    data = config_to_dict(config)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = toml_writer.dumps_toml(data, inline=("options",))  # options = {r = 8} stays on one line
    atomic_write_text(path, text)
    return path
