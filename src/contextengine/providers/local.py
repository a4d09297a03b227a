"""The embedded local engine (R13.1): a GGUF model run in-process by llama-cpp-python.

Each request is rendered to one prompt in the model's own turn format, read from the chat
template in the GGUF file (``contextengine.local.templates``); its tool mask is enforced at
decode time by a GBNF grammar (R2.3). The context size is the session's ``context_window``,
capped at the length the model was trained for (``local_n_ctx``). The engine keeps the KV cache of
its last sequence and re-evaluates only the tokens after the longest common prefix, so an
append-only session pays for the new tokens only; with ``ram_cache_bytes`` it also keeps
saved states of earlier sequences, so sessions that alternate each find their own prefix.
``Usage.cached_tokens`` is the number of KV positions the engine kept, read from its own
bookkeeping when it starts evaluating, not estimated.
"""

from __future__ import annotations

import codecs
import ctypes
import functools
import threading
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextengine.context.request import Request
from contextengine.errors import ConfigError, ProviderError
from contextengine.local.chat_format import parse_reply, visible_text
from contextengine.local.grammar import mask_grammar
from contextengine.local.templates import format_for_template
from contextengine.providers.base import StreamingProvider
from contextengine.providers.wire import ProviderSettings
from contextengine.types import FinishReason, ModelReply, ReplyDone, ReplyEvent, TextDelta, Usage

INSTALL_HINT = "pip install 'contextengine[local]'"


class LlamaCppProvider(StreamingProvider):
    """Answers requests with a local GGUF model.

    ``n_ctx`` is the engine's context size (``None``: the model's training length).
    ``chat_format`` is one of ``templates.FORMAT_NAMES`` (``auto``: from the model's template).
    ``seed`` makes sampling reproducible: call ``n`` samples with seed ``seed + n``.
    ``ram_cache_bytes`` > 0 keeps saved engine states (LlamaRAMCache) up to that size.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int | None = None,
        chat_format: str = "auto",
        ram_cache_bytes: int = 0,
        seed: int = 0,
        max_tokens: int = 512,
        temperature: float = 0.7,
        top_p: float = 0.95,
        n_threads: int | None = None,
        model: str | None = None,
    ) -> None:
        path = Path(model_path)
        if not path.is_file():
            raise ConfigError(f"local model file not found: {path}")
        llama_cpp = _import_llama_cpp()
        self.model = model or path.stem
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self._seed = seed
        self._calls = 0
        self._lock = threading.Lock()
        try:
            self._llama: Any = _metered_llama_class()(
                model_path=str(path),
                n_ctx=n_ctx or 0,
                n_threads=n_threads,
                seed=seed,
                verbose=False,
            )
        except ValueError as exc:
            raise ProviderError(f"cannot load local model {path}: {exc}") from exc
        self._llama_cpp = llama_cpp
        self._vocab = llama_cpp.llama_model_get_vocab(self._llama.model)
        metadata = self._llama.metadata
        self.chat_template: str | None = metadata.get("tokenizer.chat_template")
        eos = self._llama.token_eos()
        self.chat_format = format_for_template(
            self.chat_template,
            chat_format,
            eos_token=self._llama.detokenize([eos], special=True).decode() if eos >= 0 else "",
            architecture=metadata.get("general.architecture", ""),
        )
        if ram_cache_bytes > 0:
            self._llama.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=ram_cache_bytes))

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (for tokenizing and engine counters)."""
        return self._llama

    def render_prompt(self, request: Request) -> str:
        """The request as this model's prompt text."""
        return self.chat_format.render_prompt(request)

    def tokenize(self, text: str) -> list[int]:
        """The model's tokens for ``text`` (special tokens parsed, BOS as the model wants)."""
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Generate a reply under the request's mask; stream visible text, then the reply."""
        try:
            grammar_text = mask_grammar(request.mask, request.tool_names)
        except ValueError as exc:
            raise ProviderError(str(exc)) from None
        with self._lock:
            yield from self._generate(request, grammar_text)

    def _generate(self, request: Request, grammar_text: str | None) -> Iterator[ReplyEvent]:
        llama = self._llama
        tokens = self._prompt_tokens(request)
        budget = min(self.max_tokens, llama.n_ctx() - len(tokens))
        llama.set_seed(self._seed + self._calls)
        self._calls += 1
        started = time.monotonic()
        self._restore_from_cache(tokens)
        llama.start_metering()
        sampled = yield from self._sample(tokens, _grammar(grammar_text), budget)
        if llama.cache is not None:
            llama.cache[tokens + sampled.completion] = llama.save_state()
        parsed = parse_reply(sampled.text, id_prefix=f"call_{uuid.uuid4().hex[:12]}")
        reason: FinishReason = (
            "length"
            if sampled.finish == "length"
            else "tool_calls"
            if parsed.tool_calls
            else "stop"
        )
        usage = Usage(
            input_tokens=len(tokens),
            cached_tokens=llama.reused_tokens,
            output_tokens=sampled.count,
            latency_s=time.monotonic() - started,
            model=self.model,
        )
        yield ReplyDone(
            ModelReply(
                content=parsed.content,
                tool_calls=parsed.tool_calls,
                usage=usage,
                finish_reason=reason,
            )
        )

    def _prompt_tokens(self, request: Request) -> list[int]:
        """The rendered request's tokens; ``ProviderError`` when they fill the context."""
        tokens = self.tokenize(self.render_prompt(request))
        n_ctx = self._llama.n_ctx()
        if len(tokens) >= n_ctx:
            raise ProviderError(
                f"the prompt has {len(tokens)} tokens, more than the context window "
                f"(n_ctx={n_ctx}) of {self.model}"
            )
        return tokens

    def _sample(
        self, tokens: list[int], grammar: Any, budget: int
    ) -> Generator[ReplyEvent, None, _Sampled]:
        """Sample up to ``budget`` tokens after ``tokens``, yielding the visible text as it
        grows (reasoning and tool-call markup hidden)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        completion: list[int] = []
        text, shown, finish = "", "", "length"
        sampled = 0
        try:
            for token in self._llama.generate(
                tokens, temp=self.temperature, top_p=self.top_p, grammar=grammar
            ):
                sampled += 1
                if self._llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                completion.append(token)
                text += decoder.decode(self._piece(token))
                visible = visible_text(text)
                if len(visible) > len(shown):
                    yield TextDelta(visible[len(shown) :])
                    shown = visible
                if sampled >= budget:
                    break
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(f"{self.model}: llama.cpp failed: {exc}") from exc
        text += decoder.decode(b"", final=True)
        return _Sampled(text, completion, sampled, finish)

    def _restore_from_cache(self, tokens: list[int]) -> None:
        """Load the RAM-cache state sharing the longest prefix with ``tokens``, when it
        shares more than the engine's current sequence (what ``create_completion`` does)."""
        llama = self._llama
        if llama.cache is None:
            return
        try:
            state = llama.cache[tokens]
        except KeyError:
            return
        prefix = llama.longest_token_prefix
        saved = prefix(state.input_ids[: state.n_tokens].tolist(), tokens)
        if saved > prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens):
            llama.load_state(state)

    def _piece(self, token: int) -> bytes:
        """The token's bytes (control tokens give none); no fixed 32-byte limit."""
        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            n = self._llama_cpp.llama_token_to_piece(self._vocab, token, buffer, size, 0, False)
            if n >= 0:
                return buffer.raw[:n]
            size = -n


def local_n_ctx(model_path: str | Path, context_window: int) -> int:
    """The engine's context size for a session: ``context_window``, capped at the context
    length the model was trained for (read from the GGUF header, no weights loaded)."""
    trained = _trained_context(Path(model_path))
    return min(context_window, trained) if trained else context_window


def _trained_context(path: Path) -> int | None:
    try:
        from gguf import GGUFReader

        fields = GGUFReader(path).fields
        arch = fields["general.architecture"].contents()
        return int(fields[f"{arch}.context_length"].contents())
    except (ImportError, OSError, KeyError, ValueError):
        return None


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise ProviderError(
            f"the local engine needs llama-cpp-python, which is not installed: {INSTALL_HINT}"
        ) from None
    return llama_cpp


@functools.cache
def _metered_llama_class() -> type:
    """``llama_cpp.Llama`` that records how many KV positions a generation reused.

    ``Llama.generate`` trims the KV cache to the reusable prefix (after restoring a RAM-cache
    state, if one shares a longer prefix) and only then calls ``eval`` for the rest, so the
    engine's position count at the first ``eval`` is exactly the number of reused tokens.
    """
    llama_cpp = _import_llama_cpp()

    class MeteredLlama(llama_cpp.Llama):  # type: ignore[name-defined]
        reused_tokens: int = 0
        _metering: bool = False

        def start_metering(self) -> None:
            self.reused_tokens = 0
            self._metering = True

        def eval(self, tokens: Any) -> None:
            if self._metering:
                self._metering = False
                self.reused_tokens = self.n_tokens
            super().eval(tokens)

    return MeteredLlama


@dataclass(frozen=True)
class _Sampled:
    """What one sampling produced: its text, its tokens (EOG not counted), how many were
    sampled, and why it stopped."""

    text: str
    completion: list[int]
    count: int
    finish: str


def _grammar(text: str | None) -> Any:
    """The compiled GBNF grammar of ``text`` (``None``: sampling is unconstrained)."""
    if text is None:
        return None
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(text, verbose=False)


def from_settings(settings: ProviderSettings) -> LlamaCppProvider:
    """The ``local`` provider of ``make_provider``: ``model`` is the GGUF path; the engine's
    context is the session's window, capped at the model's trained length."""
    window = settings.context_window
    n_ctx = local_n_ctx(settings.model, window) if window is not None else None
    generation = settings.generation
    fields: dict[str, Any] = {}  # the in-process engine has no reasoning effort
    if generation.max_tokens is not None:
        fields["max_tokens"] = generation.max_tokens
    if generation.temperature is not None:
        fields["temperature"] = generation.temperature
    return LlamaCppProvider(settings.model, n_ctx=n_ctx, **fields)
