"""An OpenAI-client-style agent step over the gateway's REST API, with urllib only.

Usage: openai_style.py BASE_URL QUERY SERVER MESSAGE [API_KEY]
Searches (POST /v1/search), turns the definitions into OpenAI function tools (the "tools"
of a chat completions request), plays the model's tool call of the echo tool, performs it
(POST /v1/call) and builds the "tool" message that goes back to the model.
"""
import json
import sys
import time
import urllib.request


def post(base, path, body, key):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", "Bearer " + key)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def main(base, query, server, message, key=""):
    out = {}
    t = time.perf_counter()
    found = post(base, "/v1/search", {"query": query, "k": 50, "filters": {"server": server}}, key)
    out["search_ms"] = round(1000 * (time.perf_counter() - t), 1)
    # OpenAI function names allow 1 to 64 letters, digits, '_' and '-': each definition's
    # client_name is such a name, and /v1/call takes it as it is.
    tools = [{"type": "function", "function": {"name": d["client_name"], "description": d.get("description", ""),
                                               "parameters": d["input_schema"]}} for d in found["tools"]]
    echo = next(x for x in tools if x["function"]["name"].endswith("__echo"))
    out["openai_tool"] = echo
    tool_call = {"id": "call_1", "type": "function",
                 "function": {"name": echo["function"]["name"], "arguments": json.dumps({"message": message})}}
    t = time.perf_counter()
    res = post(base, "/v1/call", {"name": tool_call["function"]["name"],
                                  "arguments": json.loads(tool_call["function"]["arguments"]),
                                  "search_id": found["search_id"]}, key)
    out["call_ms"] = round(1000 * (time.perf_counter() - t), 1)
    out["tool_message"] = {"role": "tool", "tool_call_id": tool_call["id"], "content": res["text"]}
    out["is_error"] = res["is_error"]
    print(json.dumps(out))


main(*sys.argv[1:])
