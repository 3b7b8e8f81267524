"""The schema of ``.expertise/config.yaml`` (pydantic v2). ``config`` reads most files without it, and
asks it when unsure: it coerces what it may and names the setting at fault."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from expertise_kit.plainconfig import DEFAULT_CORE_FILES_MAX, DEFAULT_RETIRE_DAYS
from expertise_kit.vocab import DEFAULT_LINE_CAP, DEFAULT_RETENTION_DAYS

__all__ = ["ConfigModel"]


class _DomainRulesModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keywords: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    extend: bool = True
    description: str = ""


def _reflect_mode(value: Any) -> Any:
    # `reflect: no` or `false` (YAML 1.1 habits) mean off; `true` the default mode.
    if isinstance(value, bool):
        return "failures" if value else "off"
    return value


class ConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line_cap: int = Field(DEFAULT_LINE_CAP, ge=50, le=100_000)
    failure_retention_days: int = Field(DEFAULT_RETENTION_DAYS, ge=1, le=36_500)
    core_files_max: int = Field(DEFAULT_CORE_FILES_MAX, ge=0, le=1000)
    shared_layer: bool = True  # before `shared`: false is `shared: off`
    shared: Literal["on", "read", "off"] | None = None
    shared_retire_days: int = Field(DEFAULT_RETIRE_DAYS, ge=0, le=36_500)
    reflect: Annotated[Literal["off", "failures", "always"], BeforeValidator(_reflect_mode)] = "off"
    domains: dict[str, _DomainRulesModel] = Field(default_factory=dict)

    @field_validator("shared", mode="before")
    @classmethod
    def _booleans(cls, value: Any) -> Any:
        return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value


