#!/usr/bin/env bash
# Installs the real inputs of the tool-library importer tests (library/importer) into a cache
# directory, nothing into the repository:
#   npm: the MCP reference servers (server-everything, server-filesystem, server-memory; they
#        bring the npm MCP SDK) and @octokit/openapi (GitHub's REST description, ~1000 operations);
#   pip: the Python MCP SDK (its FastMCP server) in a virtual environment.
# Idempotent: a second run with everything present returns at once. Each half is best effort on
# its own; the tests that need a missing piece skip with a message naming this script.
# Usage: scripts/install-mcp-test.sh   (cache: ${TOOLRET_CACHE:-$HOME/.cache/toolret})
# Versions: MCP_SERVERS_VERSION, OCTOKIT_OPENAPI_VERSION, PY_MCP_VERSION.
set -uo pipefail
cache="${TOOLRET_CACHE:-$HOME/.cache/toolret}"
servers="${MCP_SERVERS_VERSION:-2026.8.31}"
octokit="${OCTOKIT_OPENAPI_VERSION:-23.0.2}"
pymcp="${PY_MCP_VERSION:-1.27.0}"
status=0

npmdir="$cache/mcp-npm"
want() { # want PKG VERSION: the package is installed at that version
  grep -q "\"version\": \"$2\"" "$npmdir/node_modules/$1/package.json" 2>/dev/null
}
if want @modelcontextprotocol/server-everything "$servers" && want @modelcontextprotocol/server-filesystem "$servers" &&
  want @modelcontextprotocol/server-memory "$servers" && want @octokit/openapi "$octokit"; then
  echo "install-mcp-test: npm packages present in $npmdir"
elif ! command -v npm >/dev/null; then
  echo "install-mcp-test: npm is required for the MCP reference servers (apt-get install npm)" >&2
  status=1
else
  mkdir -p "$npmdir"
  cat > "$npmdir/package.json" <<JSON
{
  "name": "toolret-mcp-test",
  "private": true,
  "description": "MCP reference servers and GitHub's OpenAPI description for toolret's importer tests (scripts/install-mcp-test.sh)",
  "dependencies": {
    "@modelcontextprotocol/server-everything": "$servers",
    "@modelcontextprotocol/server-filesystem": "$servers",
    "@modelcontextprotocol/server-memory": "$servers",
    "@octokit/openapi": "$octokit"
  }
}
JSON
  if (cd "$npmdir" && npm install --ignore-scripts --no-audit --no-fund --silent); then
    echo "install-mcp-test: npm packages installed in $npmdir"
  else
    echo "install-mcp-test: npm install in $npmdir failed" >&2
    status=1
  fi
fi

venv="$cache/mcp-venv"
if "$venv/bin/python" -c "import mcp.server.fastmcp" 2>/dev/null; then
  echo "install-mcp-test: Python mcp present in $venv"
else
  py="$(command -v python3 || true)"
  if [ -z "$py" ] || ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "install-mcp-test: Python 3.10 or later is required for the Python MCP SDK" >&2
    status=1
  elif "$py" -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$pymcp" &&
    "$venv/bin/python" -c "import mcp.server.fastmcp"; then
    echo "install-mcp-test: Python mcp $pymcp installed in $venv"
  else
    echo "install-mcp-test: installing Python mcp into $venv failed" >&2
    status=1
  fi
fi
exit $status
