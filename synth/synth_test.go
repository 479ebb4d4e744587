package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolret/toolret/data"
	"github.com/toolret/toolret/library"
	"github.com/toolret/toolret/llm"
)

func TestPhrases(t *testing.T) {
	for _, tc := range []struct{ in, words, verb string }{
		{"getUserById", "get user by id", ""},
		{"/v1/nutrition", "nutrition", ""},
		{"read_text-file.v2", "read text file", ""},
		{"", "", ""},
	} {
		if got := words(tc.in); got != tc.words {
			t.Errorf("words(%q) = %q, want %q", tc.in, got, tc.words)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"Returns the weather", "return the weather"},
		{"This endpoint retrieves a list of recipes", "retrieve a list of recipes"},
		{"Searches recipes", "search recipes"},
		{"Queries the index", "query the index"},
		{"Get suggestions", "get suggestions"},
		{"API Ninjas Nutrition API endpoint", "find API Ninjas Nutrition API endpoint"},
		{"Hourly weather data", "find hourly weather data"},
		{"Access the file", "access the file"},
		{"Echoes back the input", "echo back the input"},
	} {
		if got := verbPhrase(tc.in); got != tc.want {
			t.Errorf("verbPhrase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

var echo = library.Tool{Name: "echo_message", Namespace: "everything", Description: "Echoes back the input string. Useful for tests.",
	InputSchema: []byte(`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"},"times":{"type":"integer"}},"required":["message"]}`),
	Source:      library.Source{Kind: library.KindMCP}}

func TestCandidates(t *testing.T) {
	tools := FromLibrary(&library.Library{Tools: []library.Tool{echo}})
	got := Candidates(tools[0])
	for _, want := range []string{"Echoes back the input string", "how do I echo back the input string", "echo message",
		"echo message with message", "echo message by message and times", "echo back the input string: Message to echo"} {
		if !slices.Contains(got, want) {
			t.Errorf("candidates %q lack %q", got, want)
		}
	}
	// A tool with a name only still gets its name.
	if c := Candidates(Tool{ID: "x", Name: "listFiles"}); !reflect.DeepEqual(c, []string{"list files"}) {
		t.Errorf("name-only candidates %q", c)
	}
}

// TestTemplatesDeterministic: the same seed gives the same queries, another seed another
// draw; every query's positive is its tool; at most n per tool.
func TestTemplatesDeterministic(t *testing.T) {
	tools := FromLibrary(&library.Library{Tools: []library.Tool{echo,
		{Name: "create_entities", Namespace: "memory", Description: "Create multiple new entities in the knowledge graph",
			InputSchema: []byte(`{"type":"object","properties":{"entities":{"type":"array"}}}`), Source: library.Source{Kind: library.KindMCP}}}})
	a, b, c := Templates(tools, 4, 1), Templates(tools, 4, 1), Templates(tools, 4, 2)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different queries")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 1 and 2 drew the same queries")
	}
	per := map[string]int{}
	for _, e := range a {
		if len(e.Positives) != 1 || e.Source != "synthetic" || e.Query == "" {
			t.Errorf("example %+v", e)
		}
		per[e.Positives[0]]++
	}
	if per["everything.echo_message"] != 4 || per["memory.create_entities"] != 4 {
		t.Errorf("queries per tool %v, want 4 each", per)
	}
}

func TestFromDataset(t *testing.T) {
	d := &data.Dataset{Tools: []data.Tool{{ID: "0", Text: `category_name:Food, tool_name:Worldwide Recipes, api_name:Suggestions, api_description:Get Suggestions, required_params: [{"name": "q", "type": "STRING", "description": ""}], optional_params: [{"name": "max_results", "type": "NUMBER", "description": "How many results"}], return_schema: {"success": "bool"}`},
		{ID: "t", Title: "weather", Text: "Current weather for a city."}}}
	got := FromDataset(d)
	want := []Tool{{ID: "0", Name: "Worldwide Recipes Suggestions", Description: "Get Suggestions",
		Params: []library.Property{{Name: "q", Required: true}, {Name: "max_results", Description: "How many results"}}},
		{ID: "t", Name: "weather", Description: "Current weather for a city."}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if q := Candidates(got[0]); !slices.Contains(q, "how do I get Suggestions by q") {
		t.Errorf("candidates %q", q)
	}
}

// TestLLM: queries asked of an OpenAI-compatible server (a loopback fake), one request per
// tool, the tool described in the prompt; a reply without the JSON is an error naming the tool.
func TestLLM(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var req struct {
			Messages []llm.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", 400)
			return
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		content := "no json here"
		if strings.Contains(prompt, "name: echo_message") && strings.Contains(prompt, "- message (required): Message to echo") {
			content = "Sure:\n```json\n{\"queries\": [\"repeat what I say\", \"Repeat  what I say\", \"say hello back to me\", \"\", \"echo this\"]}\n```"
		}
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%q}}]}`, content)
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{URL: srv.URL + "/v1", Model: "fake", Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	tools := FromLibrary(&library.Library{Tools: []library.Tool{echo}})
	ex, err := LLM(context.Background(), c, tools, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []data.Example{{Query: "repeat what I say", Positives: []string{"everything.echo_message"}, Source: "synthetic"},
		{Query: "say hello back to me", Positives: []string{"everything.echo_message"}, Source: "synthetic"}}
	if !reflect.DeepEqual(ex, want) || requests.Load() != 1 {
		t.Errorf("got %+v after %d requests\nwant %+v", ex, requests.Load(), want)
	}
	_, err = LLM(context.Background(), c, []Tool{{ID: "other", Name: "other", Description: "d"}}, 2)
	if err == nil || !strings.Contains(err.Error(), "synthetic queries of tool other: the reply holds no JSON object") {
		t.Errorf("error %v", err)
	}
}
