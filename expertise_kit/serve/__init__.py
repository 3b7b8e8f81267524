"""The expertise served to agents over MCP (``expertise mcp``): the four tools as plain functions that raise
``UserError`` (``tools.py``), and the MCP server that exposes them over stdio (``server.py``, the only module
that imports the ``mcp`` SDK)."""
