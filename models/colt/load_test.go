package colt

import (
	"strings"
	"testing"
)

// TestParseRunConfig reads colt.json as train colt writes it today and as older runs did
// (init_embeddings, tau, no layer weights), and refuses files without a stage 1 or with an
// invalid configuration.
func TestParseRunConfig(t *testing.T) {
	for _, c := range []struct {
		name, in  string
		want      RunConfig
		errSubstr string
	}{
		{"current", `{"colt": {"layers": 2, "lambda": 0.04, "temperature": 0.2, "list_len": 10, "edge_dropout": 0.2, "views": "both",
			"inductive": true, "attach_temp": 0.05, "tool_layer_weight": 0.5, "scene_layer_weight": 0}, "retriever": "runs/be"}`,
			RunConfig{Colt: Config{Layers: 2, Lambda: 0.04, Temperature: 0.2, ListLen: 10, EdgeDropout: 0.2, Views: "both",
				Inductive: true, AttachTemp: 0.05, ToolWeight: 0.5}, Retriever: "runs/be"}, ""},
		{"legacy", `{"colt": {"layers": 1, "lambda": 0.04, "tau": 0.1, "list_len": 10, "edge_dropout": 0.2, "views": "scene"}, "init_embeddings": "/r/be"}`,
			RunConfig{Colt: Config{Layers: 1, Lambda: 0.04, Temperature: 0.1, ListLen: 10, EdgeDropout: 0.2, Views: "scene",
				ToolWeight: 1, SceneWeight: 1}, Retriever: "/r/be"}, ""},
		{"no stage 1", `{"colt": {"layers": 1, "temperature": 0.1, "list_len": 10, "views": "both"}}`, RunConfig{}, "stage-1"},
		{"no colt", `{"retriever": "x"}`, RunConfig{}, `no "colt"`},
		{"invalid", `{"colt": {"layers": 1, "temperature": 0.1, "list_len": 1, "views": "both"}, "retriever": "x"}`, RunConfig{}, "list length"},
		{"not json", `{"colt": `, RunConfig{}, "colt config"},
	} {
		got, err := ParseRunConfig([]byte(c.in))
		if c.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSubstr) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.errSubstr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if *got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, *got, c.want)
		}
	}
}
