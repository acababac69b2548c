"""Built-in MCP servers, each ``python -m avo_mcp.servers.<name>``.

- ``filesystem --root DIR``: workspace-bounded file tools and resources.
- ``git --repo DIR``: bounded, read-only git wrappers (status, diff, log).
- ``http_fetch [--allow-network CIDR]``: GET through avo-tools' egress policy.
- ``sqlite --database FILE``: read-only, parameterized queries.

Register one with ``avo mcp add fs python -m avo_mcp.servers.filesystem --root .``.
"""
