"""A real agent-side MCP client (the Python MCP SDK) against the toolret gateway.

Usage: client.py URL QUERY SERVER MESSAGE
Connects over streamable HTTP, lists the tools, calls search_tools, takes the first tool
named *.echo with its input schema, calls it through call_tool and prints a JSON summary.
"""
import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url, query, server, message):
    out = {}
    t0 = time.perf_counter()
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            t1 = time.perf_counter()
            r = await s.call_tool("search_tools", {"query": query, "k": 50, "filters": {"server": server}})
            out["search_ms"] = round(1000 * (time.perf_counter() - t1), 1)
            found = r.structuredContent or json.loads(r.content[0].text)
            echo = next(t for t in found["tools"] if t["tool_name"] == "echo")
            out["found"] = [t["name"] for t in found["tools"]][:5]
            out["definition"] = {k: echo[k] for k in ("name", "server", "input_schema")}
            t2 = time.perf_counter()
            r = await s.call_tool("call_tool", {"name": echo["name"], "arguments": {"message": message}, "search_id": found["search_id"]})
            out["call_ms"] = round(1000 * (time.perf_counter() - t2), 1)
            out["is_error"] = r.isError
            out["answer"] = "\n".join(c.text for c in r.content if c.type == "text")
            r = await s.call_tool("call_tool", {"name": echo["name"], "arguments": {}})
            out["invalid"] = {"is_error": r.isError, "text": r.content[0].text}
    out["total_ms"] = round(1000 * (time.perf_counter() - t0), 1)
    print(json.dumps(out))


asyncio.run(main(*sys.argv[1:5]))
