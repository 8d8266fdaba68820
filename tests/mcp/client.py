"""Drives `chatmill mcp` with the official MCP Python SDK, as a desktop
client would: spawn it over stdio, initialize, list the tools, then make
the calls the plan (JSON on stdin) names, and print one JSON object with
everything the server said. The Rust e2e tests assert on it.

Plan: {"command": [...argv...], "env": {...}, "calls": [{"tool": ..., "arguments": {...}}],
       "cancel": {"tool": ..., "arguments": {...}, "after_s": 0.2} (optional)}
or, over Streamable HTTP to a running server, "url" and "token" instead of
"command" and "env". With "repeat": {"tool", "arguments", "times"} it also
times that call (client-side latency of each, in milliseconds).
"""

import asyncio
import json
import sys

import time
from contextlib import asynccontextmanager

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def result_json(r):
    texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
    return {
        "is_error": bool(r.is_error),
        "text": "\n".join(texts),
        "structured": r.structured_content,
    }


@asynccontextmanager
async def transport(plan):
    if "url" in plan:
        headers = {"Authorization": f"Bearer {plan['token']}"} if plan.get("token") else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            async with streamable_http_client(plan["url"], http_client=http) as streams:
                yield streams
    else:
        params = StdioServerParameters(
            command=plan["command"][0], args=plan["command"][1:], env=plan.get("env")
        )
        async with stdio_client(params) as streams:
            yield streams


async def main():
    plan = json.load(sys.stdin)
    out = {"calls": []}
    async with transport(plan) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["protocol"] = str(init.protocol_version)
            out["instructions"] = init.instructions
            tools = await session.list_tools()
            out["tools"] = [
                {
                    "name": t.name,
                    "input_schema": t.input_schema,
                    "output_schema": t.output_schema,
                }
                for t in tools.tools
            ]
            for call in plan.get("calls", []):
                try:
                    r = await session.call_tool(call["tool"], call.get("arguments") or {})
                    out["calls"].append(result_json(r))
                except Exception as e:  # a protocol error
                    out["calls"].append({"protocol_error": str(e)})
            if "cancel" in plan:
                c = plan["cancel"]
                with anyio.move_on_after(c["after_s"]) as scope:
                    await session.call_tool(c["tool"], c.get("arguments") or {})
                out["cancelled"] = scope.cancel_called
                # The session still answers after a cancelled call.
                r = await session.call_tool("recent", {"k": 1})
                out["after_cancel"] = result_json(r)
            if "repeat" in plan:
                rep = plan["repeat"]
                ms = []
                for _ in range(rep["times"]):
                    t = time.perf_counter()
                    r = await session.call_tool(rep["tool"], rep.get("arguments") or {})
                    ms.append((time.perf_counter() - t) * 1000)
                    assert not r.is_error, r
                out["latency_ms"] = ms
    json.dump(out, sys.stdout)


asyncio.run(main())
