package importer

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/toolret/toolret/library"
)

const bfcl = "../../../shared/datasets/bfcl"

// TestFunctionsBFCL imports BFCL's 894 functions, whose schemas use Python's type names,
// and checks every schema was normalised to compile, and that BFCLTemplate (the default
// before DefaultTemplate) gives BFCL's own corpus text for every function.
func TestFunctionsBFCL(t *testing.T) {
	if _, err := os.Stat(bfcl + "/functions.json"); err != nil {
		t.Skipf("BFCL not found beside the repository: %v", err)
	}
	tools, r, err := Functions(bfcl+"/functions.json", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if len(tools) != 894 || r.Tools != 894 || len(r.Skipped) != 0 || r.Normalised != 894 || r.Changes["type dict→object"] == 0 || r.Changes["type float→number"] == 0 {
		t.Fatalf("%d tools, report %+v", len(tools), r)
	}
	checkTools(t, tools, library.KindFunctions)
	// Before normalisation the schemas do not compile.
	var raw []struct {
		Function struct{ Parameters json.RawMessage } `json:"function"`
	}
	b, _ := os.ReadFile(bfcl + "/functions.json")
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, err := library.CompileSchema(raw[0].Function.Parameters); err == nil {
		t.Error("BFCL's first schema compiles as it is: nothing to normalise?")
	}
	corpus := map[string]string{}
	f, err := os.Open(bfcl + "/corpus.jsonl")
	if err != nil {
		t.Skipf("BFCL corpus: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		corpus[rec.ID] = rec.Text
	}
	texts, err := (&library.Library{Template: library.BFCLTemplate, Tools: tools}).Texts()
	if err != nil {
		t.Fatal(err)
	}
	diff := 0
	for i, tool := range tools {
		if want, ok := corpus[tool.ID()]; !ok || texts[i] != want {
			if diff++; diff <= 3 {
				t.Errorf("%s: text\n%q\nBFCL corpus\n%q", tool.ID(), texts[i], want)
			}
		}
	}
	if diff > 0 {
		t.Errorf("%d of %d texts differ from BFCL's corpus", diff, len(tools))
	}
}

func TestFunctionShapes(t *testing.T) {
	in := `{"tools": [
		{"type": "function", "function": {"name": "get_weather", "description": "Weather now.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": true}},
		{"type": "function", "name": "get_time", "description": "Time now.", "parameters": {"type": "object", "properties": {}}},
		{"name": "send_mail", "description": "Send a mail.", "input_schema": {"type": "object", "properties": {"to": {"type": "string", "required": true}, "cc": {"type": "list", "items": {"type": "str"}}}}},
		{"name": "noargs", "description": "No arguments."},
		{"type": "web_search_20250305", "name": "web_search"},
		{"name": "get_time", "parameters": {}},
		{"name": "bad", "parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}},
		{"name": "", "parameters": {}}
	]}`
	tools, r, err := DecodeFunctions([]byte(in), "tools.json", "fn")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"fn.get_weather": `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
		"fn.get_time":    `{"type":"object","properties":{}}`,
		"fn.send_mail":   `{"type":"object","properties":{"to":{"type":"string"},"cc":{"type":"array","items":{"type":"string"}}},"required":["to"]}`,
		"fn.noargs":      `{"type":"object","properties":{}}`,
	}
	if len(tools) != len(want) {
		t.Fatalf("tools %v", names(tools))
	}
	for _, tool := range tools {
		if string(tool.InputSchema) != want[tool.ID()] || tool.Source.Origin != "tools.json" || tool.Description == "" {
			t.Errorf("%s: %s, want %s", tool.ID(), tool.InputSchema, want[tool.ID()])
		}
	}
	if len(r.Skipped) != 4 || r.Normalised != 2 || r.Changes["property required: bool→parent's list"] != 1 || r.Changes["type list→array"] != 1 {
		t.Errorf("report %+v", r)
	}
	for _, s := range []string{"web_search", "duplicate", "bad): input schema", "no name"} {
		if !strings.Contains(strings.Join(r.Skipped, "\n"), s) {
			t.Errorf("skipped %q not reported: %v", s, r.Skipped)
		}
	}
	for _, bad := range []string{`{"x": 1}`, `[1]`, `{`, `"x"`} {
		if _, _, err := DecodeFunctions([]byte(bad), "x.json", ""); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestNormaliseSchema(t *testing.T) {
	for _, c := range []struct{ in, want, change string }{
		{`{"type":"dict","properties":{"a":{"type":"float"},"b":{"type":"tuple","items":{"type":"integer"}},"c":{"type":"any","description":"x"}}}`,
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"array","items":{"type":"integer"}},"c":{"description":"x"}}}`, "type any→(any)"},
		{`{"type":"object","properties":{"a":{"type":["String","NoneType"]},"b":"integer"}}`,
			`{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"integer"}}}`, "bare type→schema"},
		{`{"properties":{"a":{"type":"array","items":[{"type":"str"},{"type":"int"}]}}}`,
			`{"properties":{"a":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`, "items list→prefixItems"},
		{`{"type":"object","properties":{"a":{"type":"file"}},"required":"a"}`,
			`{"type":"object","properties":{"a":{}},"required":["a"]}`, "type file→(any, unknown)"},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","enum":"x"}},"additionalProperties":{"type":"double"}}}}`,
			`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","enum":["x"]}},"additionalProperties":{"type":"number"}}}}`, "enum value→list"},
		{``, `{"type":"object","properties":{}}`, "missing schema→object"},
		{`{"type":"object","properties":{"html":{"type":"string","default":"<b>&</b>"}}}`, `{"type":"object","properties":{"html":{"type":"string","default":"<b>&</b>"}}}`, ""},
	} {
		got, ch, err := NormaliseSchema(json.RawMessage(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want || (c.change != "" && ch[c.change] == 0) || (c.change == "" && len(ch) != 0) {
			t.Errorf("%s:\ngot  %s %v\nwant %s %q", c.in, got, ch, c.want, c.change)
		}
		if _, err := library.CompileSchema(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
	if _, _, err := NormaliseSchema(json.RawMessage(`[]`)); err == nil {
		t.Error("an array schema was taken")
	}
}
