"""The request bodies the API accepts (anything else is a 422)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo


def _not_blank(value: str, info: ValidationInfo) -> str:
    if not value.strip():
        raise ValueError(f"the {info.field_name} is empty")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]
"""Text with something in it besides whitespace."""


class MessageIn(BaseModel):
    """The body of a user message."""

    model_config = ConfigDict(extra="forbid")

    message: NonBlank


class TitleIn(BaseModel):
    """A session's new title."""

    model_config = ConfigDict(extra="forbid")

    title: str


class AnswerIn(BaseModel):
    """The human's answer to the agent's question."""

    model_config = ConfigDict(extra="forbid")

    answer: NonBlank
