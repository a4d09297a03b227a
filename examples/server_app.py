"""The web UI and API as an ASGI app you can mount or serve yourself.

Needs: pip install 'contextengine[server]'. Serve it with uvicorn.run(app, host="127.0.0.1", port=8765).
"""

import os
from pathlib import Path

from contextengine import Config
from contextengine.providers.openai import OpenAIProvider
from contextengine.server import create_app

model = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
workspace = Path("ws")
workspace.mkdir(exist_ok=True)
app = create_app(workspace, lambda: OpenAIProvider(model), Config())
print("token:", app.state.token)  # send it as Authorization: Bearer <token>
