// A real agent-side MCP client (the npm MCP SDK) against the toolret gateway.
// Usage: node client.mjs SDK_DIR URL QUERY SERVER MESSAGE
// SDK_DIR is the installed @modelcontextprotocol/sdk package directory.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdk, url, query, server, message] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(join(sdk, "dist/esm/client/index.js")));
const { StreamableHTTPClientTransport } = await import(pathToFileURL(join(sdk, "dist/esm/client/streamableHttp.js")));

const out = {};
const t0 = performance.now();
const client = new Client({ name: "toolret-e2e", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
let t = performance.now();
let r = await client.callTool({ name: "search_tools", arguments: { query, k: 50, filters: { server } } });
out.search_ms = Math.round(10 * (performance.now() - t)) / 10;
const found = r.structuredContent ?? JSON.parse(r.content[0].text);
const echo = found.tools.find((x) => x.tool_name === "echo");
out.found = found.tools.slice(0, 5).map((x) => x.name);
out.definition = { name: echo.name, server: echo.server, input_schema: echo.input_schema };
t = performance.now();
r = await client.callTool({ name: "call_tool", arguments: { name: echo.name, arguments: { message }, search_id: found.search_id } });
out.call_ms = Math.round(10 * (performance.now() - t)) / 10;
out.is_error = r.isError ?? false;
out.answer = r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
r = await client.callTool({ name: "call_tool", arguments: { name: echo.name, arguments: {} } });
out.invalid = { is_error: r.isError ?? false, text: r.content[0].text };
await client.close();
out.total_ms = Math.round(10 * (performance.now() - t0)) / 10;
console.log(JSON.stringify(out));
