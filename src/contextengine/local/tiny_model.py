"""A tiny random-weight Llama model built locally and deterministically (tests, benchmarks, demos).

The same model is written twice: a Hugging Face folder (``config.json``, ``model.safetensors``,
``tokenizer.json``, ``tokenizer_config.json``) for servers such as vLLM, and one GGUF file for
llama.cpp, written directly with ``gguf.GGUFWriter`` (llama.cpp's converter rejects a custom
BPE tokenizer). Nothing is downloaded: the byte-level BPE tokenizer is trained here on a
generated corpus of ChatML/tool-call text, so the chat format's markers are cheap tokens.
The weights are random, so the model's text is noise; what it is good for is exercising the
real engines (loading, tokenizing, prefix caching, grammar-constrained decoding) in seconds.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextengine.canonical import canonical_json
from contextengine.errors import ConfigError
from contextengine.local.chat_format import (
    END_OF_TEXT,
    IM_END,
    IM_START,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    render_turns,
)
from contextengine.untrusted import JSONObject

GGUF_NAME = "tiny-llama.gguf"
HF_DIRNAME = "hf"
CONTROL_TOKENS = (END_OF_TEXT, IM_START, IM_END)
TOOL_TOKENS = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE)
MAX_TOKEN_CHARS = 16
"""llama-cpp-python detokenizes each token through a 32-byte buffer; 16 keeps every token
well inside it (a byte-level character is at most 2 UTF-8 bytes)."""

CHAT_TEMPLATE = (
    "{% set ns = namespace(system_done=false) %}"
    "{% if tools %}<|im_start|>system\n"
    "{% if messages and messages[0].role == 'system' %}"
    "{{ messages[0].content }}{{ '\\n\\n' }}{% set ns.system_done = true %}{% endif %}"
    "# Tools\n\nYou can call the functions below. Each signature is a JSON object inside "
    "<tools></tools>:\n<tools>"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools>\n\n"
    "To call a function, reply with one JSON object inside <tool_call></tool_call> tags:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    "<|im_end|>{{ '\\n' }}{% endif %}"
    "{% for message in messages %}"
    "{% if loop.first and ns.system_done %}"
    "{% elif message.role == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ message.content }}\n</tool_response>"
    "<|im_end|>{{ '\\n' }}"
    "{% elif message.role == 'assistant' %}"
    "<|im_start|>assistant\n{{ message.content or '' }}"
    "{% for call in message.tool_calls or [] %}"
    "{% if message.content or not loop.first %}{{ '\\n' }}{% endif %}"
    '<tool_call>\n{"name": "{{ call.function.name }}", "arguments": '
    "{% if call.function.arguments is string %}{{ call.function.arguments }}"
    "{% else %}{{ call.function.arguments | tojson }}{% endif %}}\n</tool_call>"
    "{% endfor %}<|im_end|>{{ '\\n' }}"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>{{ '\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The same ChatML/Hermes format as ``chat_format``, for engines that render prompts
themselves (vLLM, llama.cpp's server). Tool JSON spacing follows the engine's ``tojson``."""


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny model; the defaults give about 4 million parameters."""

    vocab_size: int = 2048
    hidden_size: int = 256
    intermediate_size: int = 768
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    context_length: int = 4096
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    init_std: float = 0.02

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads


@dataclass(frozen=True)
class TinyModel:
    """Where a built tiny model lives, and its shape."""

    hf_dir: Path
    gguf_path: Path
    config: TinyModelConfig
    vocab_size: int
    n_params: int


def build_tiny_model(
    out_dir: Path, seed: int = 0, config: TinyModelConfig | None = None
) -> TinyModel:
    """Build the model into ``out_dir`` (``hf/`` and ``tiny-llama.gguf``); same seed, same bytes.

    The tokenizer does not depend on ``seed``; the weights do.
    """
    config = config or TinyModelConfig()
    if config.hidden_size % config.num_heads or config.num_heads % config.num_kv_heads:
        raise ConfigError(
            f"hidden_size {config.hidden_size} must split into {config.num_heads} heads, "
            f"and the heads into {config.num_kv_heads} key/value groups"
        )
    out_dir = Path(out_dir)
    hf_dir = out_dir / HF_DIRNAME
    hf_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(config.vocab_size)
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    weights = _random_weights(config, vocab_size, seed)
    _write_hf(hf_dir, tokenizer, weights, config, vocab_size)
    gguf_path = out_dir / GGUF_NAME
    _write_gguf(gguf_path, tokenizer, weights, config, vocab_size, seed)
    return TinyModel(
        hf_dir=hf_dir,
        gguf_path=gguf_path,
        config=config,
        vocab_size=vocab_size,
        n_params=sum(w.size for w in weights.values()),
    )


def train_tokenizer(vocab_size: int = 2048) -> Any:
    """A byte-level BPE tokenizer trained on ``corpus()``; returns a ``tokenizers.Tokenizer``.

    ChatML markers are special (control) tokens; ``<tool_call>`` and ``</tool_call>`` are
    ordinary added tokens, as in Qwen's tokenizer, so tool-call parsers can find them.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[*CONTROL_TOKENS, *TOOL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=MAX_TOKEN_CHARS,
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    spec = json.loads(tokenizer.to_str())
    for added in spec["added_tokens"]:
        added["special"] = added["content"] in CONTROL_TOKENS
    return Tokenizer.from_str(json.dumps(spec))


_WORD_TEXT = (
    "the a an and or not of to in on at for with from by as is are was be this that it we you "
    "they file line lines read write edit list search find error test tests run build fix add "
    "remove update change check open close save load start stop step plan task done next first "
    "last new old value name path text data code function class method module package import "
    "return true false none null self def if else for while try except raise yield async await "
    "print result output input user assistant system tool tools call calls answer question why "
    "how what when where which because then now here there good bad small large fast slow cache "
    "prefix token tokens context window memory summary note todo progress findings session agent "
    "model request reply stream grammar mask allowed json string number object array key main "
    "src lib docs readme config yaml toml python rust shell command exit status passed failed "
    "warning info debug trace time date size count index offset limit total ok yes no maybe"
)
_WORDS = tuple(_WORD_TEXT.split())
_TOOL_NAMES = (
    "file_read",
    "file_write",
    "file_edit",
    "file_ls",
    "file_glob",
    "file_grep",
    "shell_exec",
    "todo_write",
    "memory_update",
    "web_fetch",
)


def corpus(lines: int = 3000) -> list[str]:
    """The fixed training text: prose, code, paths, JSON and rendered ChatML conversations."""
    rng = random.Random(20240601)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."

    def path() -> str:
        parts = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
        return "/".join(parts) + rng.choice((".py", ".md", ".json", ".txt", ".toml"))

    def arguments() -> JSONObject:
        return {"path": path(), "start": rng.randint(1, 400), "pattern": rng.choice(_WORDS)}

    out: list[str] = []
    for k in range(lines):
        kind = k % 4
        if kind == 0:
            out.append(" ".join(sentence(rng.randint(4, 12)) for _ in range(3)))
        elif kind == 1:
            name = rng.choice(_WORDS)
            out.append(
                f"def {name}(self, {rng.choice(_WORDS)}):\n    return {rng.randint(0, 99)}\n"
            )
        elif kind == 2:
            out.append(canonical_json(arguments()) + " " + path())
        else:
            tool = rng.choice(_TOOL_NAMES)
            call = {"function": {"arguments": canonical_json(arguments()), "name": tool}}
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": sentence(8)},
                {"role": "user", "content": sentence(10)},
                {"role": "assistant", "content": sentence(5), "tool_calls": [call]},
                {"role": "tool", "content": sentence(12)},
                {"role": "assistant", "content": sentence(7)},
            ]
            tools = [{"type": "function", "function": {"name": tool, "description": sentence(6)}}]
            out.append("".join(render_turns(tools, messages)))
    return out


def _random_weights(config: TinyModelConfig, vocab_size: int, seed: int) -> dict[str, np.ndarray]:
    """Hugging Face ``LlamaForCausalLM`` tensors: normal(0, init_std) matrices, unit norms."""
    d, ff, hd = config.hidden_size, config.intermediate_size, config.head_dim
    kv = config.num_kv_heads * hd
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (vocab_size, d),
        "model.norm.weight": (d,),
        "lm_head.weight": (vocab_size, d),
    }
    for i in range(config.num_layers):
        p = f"model.layers.{i}."
        shapes |= {
            p + "input_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (d, d),
            p + "self_attn.k_proj.weight": (kv, d),
            p + "self_attn.v_proj.weight": (kv, d),
            p + "self_attn.o_proj.weight": (d, d),
            p + "post_attention_layernorm.weight": (d,),
            p + "mlp.gate_proj.weight": (ff, d),
            p + "mlp.up_proj.weight": (ff, d),
            p + "mlp.down_proj.weight": (d, ff),
        }
    rng = np.random.default_rng(seed)
    weights = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if len(shape) == 1:
            weights[name] = np.ones(shape, dtype=np.float32)
        else:
            weights[name] = rng.normal(0.0, config.init_std, shape).astype(np.float32)
    return weights


def _write_hf(
    hf_dir: Path,
    tokenizer: Any,
    weights: dict[str, np.ndarray],
    config: TinyModelConfig,
    vocab_size: int,
) -> None:
    from safetensors.numpy import save_file

    ids = {t: tokenizer.token_to_id(t) for t in CONTROL_TOKENS}
    hf_config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": config.context_length,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "initializer_range": config.init_std,
        "bos_token_id": ids[END_OF_TEXT],
        "eos_token_id": ids[IM_END],
        "pad_token_id": ids[END_OF_TEXT],
        "torch_dtype": "float32",
        "use_cache": True,
    }
    generation_config = {
        "bos_token_id": ids[END_OF_TEXT],
        "eos_token_id": [ids[IM_END], ids[END_OF_TEXT]],
        "pad_token_id": ids[END_OF_TEXT],
    }
    tokenizer_config: JSONObject = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": END_OF_TEXT,
        "unk_token": None,
        "model_max_length": config.context_length,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    _write_json(hf_dir / "config.json", hf_config)
    _write_json(hf_dir / "generation_config.json", generation_config)
    _write_json(hf_dir / "tokenizer_config.json", tokenizer_config)
    (hf_dir / "tokenizer.json").write_text(tokenizer.to_str(pretty=True), encoding="utf-8")
    save_file(weights, str(hf_dir / "model.safetensors"), metadata={"format": "pt"})


def _write_gguf(
    path: Path,
    tokenizer: Any,
    weights: dict[str, np.ndarray],
    config: TinyModelConfig,
    vocab_size: int,
    seed: int,
) -> None:
    import gguf

    spec = json.loads(tokenizer.to_str())
    by_id = {i: t for t, i in tokenizer.get_vocab(with_added_tokens=True).items()}
    tokens = [by_id[i] for i in range(vocab_size)]
    types = [
        gguf.TokenType.CONTROL
        if t in CONTROL_TOKENS
        else gguf.TokenType.USER_DEFINED
        if t in TOOL_TOKENS
        else gguf.TokenType.NORMAL
        for t in tokens
    ]
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"tiny-llama-seed{seed}")
    writer.add_vocab_size(vocab_size)
    writer.add_context_length(config.context_length)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_block_count(config.num_layers)
    writer.add_head_count(config.num_heads)
    writer.add_head_count_kv(config.num_kv_heads)
    writer.add_rope_dimension_count(config.head_dim)
    writer.add_rope_freq_base(config.rope_theta)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokenizer.token_to_id(END_OF_TEXT))
    writer.add_eos_token_id(tokenizer.token_to_id(IM_END))
    writer.add_pad_token_id(tokenizer.token_to_id(END_OF_TEXT))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, tensor in _gguf_tensors(weights, config):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _gguf_tensors(
    weights: dict[str, np.ndarray], config: TinyModelConfig
) -> list[tuple[str, np.ndarray]]:
    """GGUF names, with q/k rows reordered: llama.cpp's Llama rotates adjacent pairs of
    each head, Hugging Face's rotates the two halves; the reordering makes them one model."""
    out = [
        ("token_embd.weight", weights["model.embed_tokens.weight"]),
        ("output_norm.weight", weights["model.norm.weight"]),
        ("output.weight", weights["lm_head.weight"]),
    ]
    names = {
        "input_layernorm": "attn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "post_attention_layernorm": "ffn_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for i in range(config.num_layers):
        for hf, gg in names.items():
            tensor = weights[f"model.layers.{i}.{hf}.weight"]
            if gg == "attn_q":
                tensor = _halves_to_pairs(tensor, config.num_heads)
            elif gg == "attn_k":
                tensor = _halves_to_pairs(tensor, config.num_kv_heads)
            out.append((f"blk.{i}.{gg}.weight", tensor))
    return out


def _halves_to_pairs(weight: np.ndarray, heads: int) -> np.ndarray:
    """Reorder each head's output rows from (first half, second half) to interleaved pairs."""
    rows, cols = weight.shape
    half = rows // heads // 2
    return np.ascontiguousarray(
        weight.reshape(heads, 2, half, cols).swapaxes(1, 2).reshape(rows, cols)
    )


def _write_json(path: Path, value: JSONObject) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
