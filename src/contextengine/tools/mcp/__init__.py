"""MCP servers' tools in the session's tool list (R18).

``servers`` reads the ecosystem's ``mcpServers`` shape (no SDK needed); ``clients`` runs
the official ``mcp`` SDK's client sessions on a background event loop; ``adapter`` turns
each server tool into a tool of the toolset (``mcp__<server>__<tool>``); ``search`` is the
fixed ``tool_search`` / ``tool_call`` pair offered instead when the definitions are over
budget; ``attach`` puts it together for ``AgentParts.defaults``. Only ``clients`` and
``attach`` import the SDK (the ``mcp`` extra), and only when a server is configured.
"""
