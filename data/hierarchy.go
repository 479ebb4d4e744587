package data

import (
	"fmt"
	"strings"
)

// hierarchyKeys are the ToolBench-style text keys, in the order they appear.
var hierarchyKeys = []string{"category_name", "tool_name", "api_name", "api_description"}

// hierarchy returns category, tool and API names from metadata fields if present, else parsed
// from ToolBench-style text ("category_name:Food, tool_name:Worldwide Recipes, api_name:...").
func hierarchy(meta map[string]any, text string) (category, tool, api string) {
	category = metaString(meta, "category_name", "category")
	tool = metaString(meta, "tool_name", "tool")
	api = metaString(meta, "api_name", "api")
	if category != "" || tool != "" || api != "" {
		return category, tool, api
	}
	f := ParseToolBenchText(text)
	return f["category_name"], f["tool_name"], f["api_name"]
}

func metaString(meta map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := meta[k]; ok && v != nil {
			if s, ok := v.(string); ok {
				return strings.TrimSpace(s)
			}
			return strings.TrimSpace(fmt.Sprint(v))
		}
	}
	return ""
}

// ParseToolBenchText extracts the known keys (category_name, tool_name, api_name,
// api_description) from a ToolBench-style tool text. A value runs from its key to the next
// known key that follows it (", key:"), so values may contain commas and colons.
// Keys that are absent are missing from the map.
func ParseToolBenchText(text string) map[string]string {
	out := map[string]string{}
	type hit struct {
		key             string
		start, valStart int
	}
	var hits []hit
	pos := 0
	for _, k := range hierarchyKeys {
		var i int
		if pos == 0 && strings.HasPrefix(text, k+":") {
			i = 0
		} else {
			j := strings.Index(text[pos:], ", "+k+":")
			if j < 0 {
				continue
			}
			i = pos + j + 2
		}
		hits = append(hits, hit{k, i, i + len(k) + 1})
		pos = i + len(k) + 1
	}
	for n, h := range hits {
		end := len(text)
		if n+1 < len(hits) {
			end = hits[n+1].start - 2
		} else if h.key == "api_description" {
			// The description runs until the parameter lists, when present.
			if j := strings.Index(text[h.valStart:], ", required_params:"); j >= 0 {
				end = h.valStart + j
			}
		} else if j := strings.Index(text[h.valStart:], ", "); j >= 0 {
			end = h.valStart + j
		}
		if end < h.valStart {
			end = h.valStart
		}
		out[h.key] = strings.TrimSpace(text[h.valStart:end])
	}
	return out
}
