"""Turn formats of the embedded engine, chosen from the model's own chat template.

A GGUF file carries its chat template (``tokenizer.chat_template``, a Jinja2 program).
``format_for_template`` picks the named format that template belongs to (ChatML, Gemma),
and renders any other template itself with Jinja2 (``JinjaFormat``). A file without a
template (base models) gets the named format of its architecture (``general.architecture``). All formats wrap the
same text (``chat_format.text_messages``: tools in the system text, calls and results as
tagged text), so the mask grammar and the reply parser work with every model.

Named formats render one turn per message, so an append-only request renders to an
append-only prompt (the engine's KV prefix survives). The Gemma format is also lenient
where Gemma's template is strict: tool results are user turns, so two user turns may follow
each other, which the template refuses (its roles must alternate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from contextengine.context.request import Request
from contextengine.errors import ConfigError, ProviderError
from contextengine.local import chat_format
from contextengine.local.chat_format import text_messages

START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"
FORMAT_NAMES: tuple[str, ...] = ("auto", "chatml", "gemma", "jinja")
"""``auto``: the named format of the model's template, else ``jinja``; ``jinja``: render
the model's template with Jinja2."""

Turns = Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], list[str]]


@dataclass(frozen=True)
class TurnFormat:
    """A named format: one turn per message, then the model's generation prompt."""

    name: str
    render_turns: Turns
    generation_prompt: str

    def render_prompt(self, request: Request) -> str:
        """The request as one prompt, ending with the generation prompt."""
        turns = self.render_turns(request.tools, request.messages)
        return "".join(turns) + self.generation_prompt


def gemma_turns(
    tools: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Gemma turns (``user`` / ``model``), one per message of ``text_messages``, contents
    trimmed as Gemma's template does; the system text opens the first turn after it,
    followed by a blank line, since Gemma has no system role."""
    plain = text_messages(tools, messages)
    prefix = ""
    if plain and plain[0]["role"] == "system":
        prefix = plain[0]["content"] + "\n\n"
        plain = plain[1:] or [{"role": "user", "content": ""}]
    turns = []
    for message in plain:
        role = "model" if message["role"] == "assistant" else "user"
        body = prefix + message["content"].strip()
        turns.append(f"{START_OF_TURN}{role}\n{body}{END_OF_TURN}\n")
        prefix = ""
    return turns


CHATML = TurnFormat("chatml", chat_format.render_turns, chat_format.GENERATION_PROMPT)
GEMMA = TurnFormat("gemma", gemma_turns, f"{START_OF_TURN}model\n")
NAMED_FORMATS: dict[str, TurnFormat] = {f.name: f for f in (CHATML, GEMMA)}


class JinjaFormat:
    """The model's own template rendered with Jinja2 (sandboxed, as Hugging Face does) over
    ``text_messages``; no ``tools`` are passed, since they are already in the system text.

    The BOS token renders as nothing: the engine's tokenizer adds it as the model wants.
    """

    name = "jinja"

    def __init__(self, source: str, eos_token: str = "") -> None:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except TemplateError as exc:
            raise ProviderError(f"the model's chat template does not parse: {exc}") from None
        self._eos_token = eos_token

    def render_prompt(self, request: Request) -> str:
        """The request rendered by the template, with its generation prompt."""
        from jinja2 import TemplateError

        try:
            return self._template.render(
                messages=text_messages(request.tools, request.messages),
                add_generation_prompt=True,
                bos_token="",
                eos_token=self._eos_token,
            )
        except TemplateError as exc:
            raise ProviderError(f"the model's chat template failed: {exc}") from None


PromptFormat = TurnFormat | JinjaFormat


def format_for_template(
    template: str | None, name: str = "auto", eos_token: str = "", architecture: str = ""
) -> PromptFormat:
    """The format called ``name`` (one of ``FORMAT_NAMES``) for a model whose chat template
    is ``template``. A model without one (base models, such as Gemma 3 270M) gets, under
    ``auto``, the named format of its ``architecture``'s family, and ChatML otherwise."""
    if name in NAMED_FORMATS:
        return NAMED_FORMATS[name]
    if name not in FORMAT_NAMES:
        raise ConfigError(f"unknown chat format {name!r}; known: {', '.join(FORMAT_NAMES)}")
    if template is None:
        if name == "jinja":
            raise ProviderError("chat format 'jinja' needs a chat template in the model file")
        return GEMMA if architecture.startswith("gemma") else CHATML
    if name == "auto":
        if START_OF_TURN in template:
            return GEMMA
        if chat_format.IM_START in template:
            return CHATML
    return JinjaFormat(template, eos_token)


def _raise_exception(message: str) -> NoReturn:
    from jinja2 import TemplateError

    raise TemplateError(message)
