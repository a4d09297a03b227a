"""The embedded local engine's pieces: ChatML prompts, mask grammars, and a tiny test model.

``contextengine.providers.local.LlamaCppProvider`` puts them together; the tiny model
builder needs the ``numpy``, ``tokenizers``, ``safetensors`` and ``gguf`` packages.
"""
