"""An MCP server written with the official SDK, run as a subprocess by the tests.

``python sdk_server.py [stdio|http PORT [json]]`` (``json``: stateless, JSON answers).
Besides ordinary tools it has tools that misbehave on purpose: ``crash`` exits
mid-call, ``hang`` never answers, ``boom`` raises (a tool error). (``garbage``
tries to write non-JSON-RPC bytes on stdout, but the SDK diverts fd 1 to stderr.)
``book_table`` asks the user for a date (elicitation) and appends each booking
it makes to ``$SDK_BOOKINGS`` (one line each), so tests can count effects.
``summarize`` and ``summarize_file`` ask the client's model (sampling); the
latter reads its text from a file at each call, so a rerun may ask otherwise.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

app = MCPServer("sdk-demo")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


class Booking(BaseModel):
    date: str = Field(description="The day, YYYY-MM-DD")
    seats: int = Field(default=2, ge=1, le=9, description="How many people")


@app.tool()
async def book_table(place: str, ctx: Context) -> str:
    """Book a table at a restaurant (asks the user for the date)."""
    answer = await ctx.elicit(f"Which day should I book {place}?", Booking)
    if answer.action != "accept":
        return f"no booking: the user chose {answer.action}"
    booking = f"{place} on {answer.data.date} for {answer.data.seats}"
    path = os.environ.get("SDK_BOOKINGS")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(booking + "\n")
    return f"booked {booking}"


@app.tool()
async def count(to: int, ctx: Context) -> str:
    """Count to ``to``, reporting progress at each step."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step}")
    return f"counted to {to}"


@app.tool()
async def wait_for(path: str, ctx: Context) -> str:
    """Report progress 1/2, wait until ``path`` exists, report 2/2 (a long call to watch)."""
    import anyio

    await ctx.report_progress(1, 2, "waiting for the file")
    while not os.path.exists(path):
        await anyio.sleep(0.05)
    await ctx.report_progress(2, 2, "found it")
    return f"found {path}"


@app.tool()
async def where(ctx: Context) -> str:
    """The client's roots (where it lets this server work)."""
    listed = await ctx.session.list_roots()
    return " ".join(str(root.uri) for root in listed.roots)


@app.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model for a one-line summary (sampling)."""
    from mcp.types import SamplingMessage, TextContent

    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    result = await ctx.session.create_message([message], max_tokens=50)
    content = result.content
    return f"summary: {getattr(content, 'text', content)}"


@app.tool()
async def summarize_file(path: str, ctx: Context) -> str:
    """Ask the client's model to summarize a file's text, read anew at each call (sampling)."""
    from mcp.types import SamplingMessage, TextContent

    with open(path, encoding="utf-8") as source:
        text = source.read()
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    result = await ctx.session.create_message(
        [message], max_tokens=50, system_prompt="You summarize files in one line."
    )
    content = result.content
    return f"summary: {getattr(content, 'text', content)}"


@app.tool()
def boom() -> str:
    """Always fails with a tool error."""
    raise ValueError("the boom tool always fails")


@app.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    sys.stderr.write("crash tool: exiting now\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
def hang() -> str:
    """Never return."""
    while True:
        time.sleep(1)


@app.tool()
def garbage() -> str:
    """Write bytes that are not JSON-RPC to stdout, then never answer."""
    os.write(1, b"this is not json-rpc\n")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        uvicorn.run(
            app.streamable_http_app(
                json_response="json" in sys.argv[3:], stateless_http="json" in sys.argv[3:]
            ),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="error",
            timeout_graceful_shutdown=1,
        )
    else:
        app.run()
