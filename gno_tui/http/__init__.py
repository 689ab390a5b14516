"""`gno-tui serve`: the memory over HTTP for agents on other machines (docs/server.md).

One Starlette application over the façade: GNO's REST routes, OB1's agent-memory routes, the
keyed API in instantKV's style, and the MCP tools over Streamable HTTP at /mcp. Every route is
one entry of `routes.ROUTES` (a module per domain: gno_routes; OB1's ob1_routes (recall),
ob1_writeback_routes and ob1_review_routes; keyed_routes; system_routes); the routing, the
OpenAPI document and the access checks all read that table. Who a request is and what it may
reach come from its bearer token (guard.py), never from its body."""
