"""A small FastMCP server (Python MCP SDK) for toolret's MCP importer tests.

Usage: python fastmcp_server.py stdio | streamable-http PORT
"""
import sys

from mcp.server.fastmcp import FastMCP

port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
server = FastMCP("toolret-test", host="127.0.0.1", port=port, log_level="WARNING")


@server.tool()
def add(a: int, b: float = 1.5) -> float:
    """Add two numbers."""
    return a + b


@server.tool(title="Search the docs")
def search_docs(query: str, tags: list[str] | None = None, limit: int = 10) -> list[str]:
    """Search the documentation for pages matching a query."""
    return [query][:limit]


@server.tool()
def convert_temperature(celsius: float, to: str = "fahrenheit") -> dict:
    """Convert a temperature in degrees Celsius to Fahrenheit or Kelvin."""
    return {"value": celsius * 9 / 5 + 32 if to == "fahrenheit" else celsius + 273.15, "unit": to}


if __name__ == "__main__":
    server.run(transport=sys.argv[1] if len(sys.argv) > 1 else "stdio")
