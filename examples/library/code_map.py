"""The code map: a ranked map of the workspace's definitions, once per turn and as a tool.

Needs: pip install 'contextengine[codemap]'
"""

import os
from pathlib import Path

from contextengine import Agent, Config
from contextengine.providers.openai import OpenAIProvider

repo = Path("./repo")
repo.mkdir(exist_ok=True)
(repo / "app.py").write_text("def parse(text):\n    return text.split()\n\nprint(parse('a b'))\n")
provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
with Agent(provider, repo, Config(code_map=True, code_map_tokens=2048)) as agent:
    print(agent.run("Where is parse defined?").final_answer)
