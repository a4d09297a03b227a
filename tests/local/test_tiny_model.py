"""The tiny model builder: deterministic files that llama.cpp and Hugging Face tooling read alike."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from contextengine import (
    AssistantEntry,
    ContextBuilder,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.canonical import canonical_json
from contextengine.local.chat_format import render_prompt
from contextengine.local.tiny_model import MAX_TOKEN_CHARS, TinyModelConfig, build_tiny_model

llama_cpp = pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed (pip install 'contextengine[local]')"
)
pytestmark = pytest.mark.local_engine

TEXTS = [
    '<|im_start|>system\nYou read files.<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "file_read"}\n</tool_call><|im_end|>\n',
    "def main(self, path):\n    return open(path).read()  # 42\n",
    "  naïve café ✓ 漢字 🎉 \t\ttabs\n\n\nblank lines   ",
]


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_bytes_other_seed_other_weights_same_tokenizer(tiny_model, tmp_path):
    again = build_tiny_model(tmp_path / "again", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "tokenizer_config.json"):
        assert _digest(again.hf_dir / name) == _digest(tiny_model.hf_dir / name)
    assert _digest(again.gguf_path) == _digest(tiny_model.gguf_path)
    assert _digest(other.hf_dir / "model.safetensors") != _digest(
        tiny_model.hf_dir / "model.safetensors"
    )
    assert _digest(other.hf_dir / "tokenizer.json") == _digest(tiny_model.hf_dir / "tokenizer.json")


def test_model_is_small(tiny_model):
    assert 3_000_000 < tiny_model.n_params < 6_000_000
    assert tiny_model.gguf_path.stat().st_size < 24 * 2**20


def test_gguf_loads_and_generates(tiny_model):
    llm = llama_cpp.Llama(str(tiny_model.gguf_path), n_ctx=512, verbose=False)
    assert llm.n_vocab() == tiny_model.vocab_size
    out = llm.create_completion(
        "<|im_start|>user\nhello<|im_end|>\n", max_tokens=8, temperature=0.8, seed=3
    )
    assert out["usage"]["completion_tokens"] >= 1
    assert llm.token_eos() == llm.tokenize(b"<|im_end|>", add_bos=False, special=True)[0]


def test_llama_cpp_and_hf_tokenizers_agree(tiny_model):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(tiny_model.hf_dir / "tokenizer.json"))
    llm = llama_cpp.Llama(str(tiny_model.gguf_path), vocab_only=True, verbose=False)
    for text in TEXTS:
        ids = hf.encode(text).ids
        assert llm.tokenize(text.encode(), add_bos=True, special=True) == ids
        assert hf.decode(ids, skip_special_tokens=False) == text


def test_tokens_fit_llama_cpp_python_detokenize_buffer(tiny_model):
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(tiny_model.hf_dir / "tokenizer.json")).get_vocab()
    assert max(len(token) for token in vocab) <= MAX_TOKEN_CHARS


def test_hf_folder_is_a_llama_checkpoint_a_server_can_load(tiny_model):
    from safetensors import safe_open
    from tokenizers import Tokenizer

    config = json.loads((tiny_model.hf_dir / "config.json").read_text())
    required = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_act": "silu",
        "tie_word_embeddings": False,
    }
    assert {k: config[k] for k in required} == required
    numeric = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta"]  # fmt: skip
    assert all(isinstance(config[k], int | float) and config[k] > 0 for k in numeric)
    assert config["head_dim"] * config["num_attention_heads"] == config["hidden_size"]

    tokenizer = Tokenizer.from_file(str(tiny_model.hf_dir / "tokenizer.json"))
    assert tokenizer.get_vocab_size(with_added_tokens=True) == config["vocab_size"]
    assert tokenizer.token_to_id("<|im_end|>") == config["eos_token_id"]
    added = {t.content: t.special for t in tokenizer.get_added_tokens_decoder().values()}
    assert added == {"<|endoftext|>": True, "<|im_start|>": True, "<|im_end|>": True,
                     "<tool_call>": False, "</tool_call>": False}  # fmt: skip
    tokenizer_config = json.loads((tiny_model.hf_dir / "tokenizer_config.json").read_text())
    assert tokenizer_config["eos_token"] == "<|im_end|>"
    assert "<tool_call>" in tokenizer_config["chat_template"]

    d, hd, v = config["hidden_size"], config["head_dim"], config["vocab_size"]
    kv, ff = config["num_key_value_heads"] * hd, config["intermediate_size"]
    expected = {
        "model.embed_tokens.weight": (v, d),
        "model.norm.weight": (d,),
        "lm_head.weight": (v, d),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        expected |= {
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (d, d), p + "self_attn.k_proj.weight": (kv, d),
            p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.o_proj.weight": (d, d),
            p + "mlp.gate_proj.weight": (ff, d), p + "mlp.up_proj.weight": (ff, d),
            p + "mlp.down_proj.weight": (d, ff),
        }  # fmt: skip
    with safe_open(str(tiny_model.hf_dir / "model.safetensors"), framework="numpy") as f:
        assert {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()} == expected  # noqa: SIM118


def _hf_logits(weights, config, ids, interleaved_rope=False):
    """Hugging Face Llama's forward pass in numpy (float64)."""
    t, h, kv, hd = len(ids), config.num_heads, config.num_kv_heads, config.head_dim
    angles = np.arange(t)[:, None] * config.rope_theta ** (-np.arange(0, hd, 2) / hd)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]

    def rope(x):
        if interleaved_rope:
            a, b = x[..., 0::2], x[..., 1::2]
            return np.stack([a * cos - b * sin, a * sin + b * cos], -1).reshape(x.shape)
        a, b = x[..., : hd // 2], x[..., hd // 2 :]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + config.rms_norm_eps) * w

    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = w["model.embed_tokens.weight"][ids]
    causal = np.triu(np.ones((t, t), dtype=bool), 1)
    for i in range(config.num_layers):
        p = f"model.layers.{i}."
        y = norm(x, w[p + "input_layernorm.weight"])
        q = rope((y @ w[p + "self_attn.q_proj.weight"].T).reshape(t, h, hd))
        k = rope((y @ w[p + "self_attn.k_proj.weight"].T).reshape(t, kv, hd)).repeat(h // kv, 1)
        v = (y @ w[p + "self_attn.v_proj.weight"].T).reshape(t, kv, hd).repeat(h // kv, 1)
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        scores[:, causal] = -np.inf
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        x = (
            x
            + np.einsum("hts,shd->thd", probs, v).reshape(t, h * hd)
            @ w[p + "self_attn.o_proj.weight"].T
        )
        y = norm(x, w[p + "post_attention_layernorm.weight"])
        gate = y @ w[p + "mlp.gate_proj.weight"].T
        x = (
            x
            + (gate / (1 + np.exp(-gate)) * (y @ w[p + "mlp.up_proj.weight"].T))
            @ w[p + "mlp.down_proj.weight"].T
        )
    return norm(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


def test_gguf_computes_the_same_function_as_the_hf_weights(tmp_path):
    """Weights large enough that attention is sharp, so a wrong q/k row order would show."""
    from safetensors.numpy import load_file

    config = TinyModelConfig(hidden_size=128, intermediate_size=256, num_layers=2, init_std=0.15)
    model = build_tiny_model(tmp_path, seed=5, config=config)
    weights = load_file(str(model.hf_dir / "model.safetensors"))
    llm = llama_cpp.Llama(
        str(model.gguf_path), n_ctx=256, logits_all=True, type_k=0, type_v=0, verbose=False
    )
    ids = llm.tokenize(TEXTS[1].encode(), add_bos=False, special=True)
    llm.eval(ids)
    engine = np.asarray(llm.scores[: len(ids)], dtype=np.float64)

    reference = _hf_logits(weights, config, ids)
    assert np.abs(engine - reference).max() < 1e-3 * np.abs(reference).max()
    wrong = _hf_logits(weights, config, ids, interleaved_rope=True)
    assert np.abs(engine - wrong).max() > 0.1 * np.abs(reference).max()


def test_chat_template_renders_like_chat_format(tiny_model, tmp_path):
    """Engines that render prompts themselves produce the provider's prompt (given a
    ``tojson`` that writes canonical JSON)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    tools = [
        {
            "name": "file_ls",
            "description": "List",
            "parameters": {"type": "object", "properties": {}},
        }
    ]
    session = Session.create(tmp_path / "s")
    builder = ContextBuilder(system_prompt="Be brief.", tools=tools, project_root=tmp_path)
    session.append(UserEntry(text="What is here?"))
    session.append(
        AssistantEntry(
            text="", tool_calls=(ToolCallRecord(id="c", name="file_ls", arguments_json="{}"),)
        )
    )
    session.append(
        ToolResultEntry(call_id="c", tool_name="file_ls", status="success", content="a.txt")
    )
    session.append(AssistantEntry(text="One file."))
    request = builder.build(session)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = canonical_json
    template = json.loads((tiny_model.hf_dir / "tokenizer_config.json").read_text())[
        "chat_template"
    ]
    rendered = env.from_string(template).render(
        messages=request.messages, tools=request.tools, add_generation_prompt=True
    )
    assert rendered == render_prompt(request)
