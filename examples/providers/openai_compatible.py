"""A self-hosted server (vLLM, SGLang, llama.cpp, Ollama) through its OpenAI-compatible API.

``server`` says which one it is: each enforces tool masks and reports cache hits its own way.
"""

import os
import uuid
from pathlib import Path

from contextengine import ContextBuilder, Session, UserEntry
from contextengine.providers.openai_compatible import OpenAICompatibleProvider

provider = OpenAICompatibleProvider(
    os.environ.get("OPENAI_MODEL", "Qwen/Qwen2.5-Coder-32B-Instruct"),
    base_url=os.environ.get("OPENAI_BASE_URL", "http://localhost:8000/v1"),
    api_key=os.environ.get("OPENAI_API_KEY", "EMPTY"),
    server="vllm",  # "vllm" | "sglang" | "llamacpp" | "ollama" | "generic"
    temperature=0,  # extra body fields, sent with every request
)
session = Session.create(Path("sessions") / uuid.uuid4().hex[:12])
session.append(UserEntry(text="Say hello in five words."))
request = ContextBuilder(system_prompt="Be brief.").build(session)
reply = provider.complete(request)
print(reply.content, reply.usage)
session.close()
