package library

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// githubIssues is an operation as the importer makes it from GitHub's REST description, with
// its boilerplate: a summary repeated as the description's first paragraph, a note, a
// media-type list, an access paragraph, pagination and standard header parameters, a long
// enumeration.
var githubIssues = Tool{
	Name: "issues/list-for-repo", Namespace: "github", Title: "List repository issues",
	Description: "List repository issues\n\nList issues in a [repository](https://docs.github.com/repos). Only open issues will be listed.\n\n" +
		"> [!NOTE]\n> GitHub's REST API considers every pull request an issue.\n\n" +
		"This endpoint supports the following custom media types. For more information, see \"[Media types](https://docs.github.com/rest).\"\n\n" +
		"- **`application/vnd.github.raw+json`**: Returns the raw markdown body.\n- **`application/vnd.github.html+json`**: Returns HTML.\n\n" +
		"OAuth app tokens and personal access tokens (classic) need the `repo` scope to use this endpoint.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{
		"owner":{"type":"string","description":"The account owner of the repository. The name is not case sensitive."},
		"repo":{"type":"string","description":"The name of the repository without the ` + "`.git`" + ` extension."},
		"state":{"type":"string","enum":["open","closed","all"],"description":"Indicates the state of the issues to return."},
		"language":{"type":"string","enum":["c","go","java","js","perl","php","python","ruby","rust"],"description":"A language."},
		"per_page":{"type":"integer","description":"The number of results per page (max 100)."},
		"page":{"type":"integer","description":"The page number of the results to fetch."},
		"before":{"type":"string","description":"A cursor, as given in the Link header."},
		"since":{"type":"string","description":"Only show results that were last updated after the given time."},
		"accept":{"type":"string","description":"Setting to application/vnd.github+json is recommended."},
		"X-GitHub-Api-Version":{"type":"string"}},
		"required":["owner","repo"]}`),
	Source: Source{Kind: KindOpenAPI, Method: "GET", Path: "/repos/{owner}/{repo}/issues", Params: []Param{
		{Name: "owner", In: InPath}, {Name: "repo", In: InPath}, {Name: "state", In: InQuery}, {Name: "language", In: InQuery},
		{Name: "per_page", In: InQuery}, {Name: "page", In: InQuery}, {Name: "before", In: InQuery}, {Name: "since", In: InQuery},
		{Name: "accept", In: InHeader}, {Name: "X-GitHub-Api-Version", In: InHeader}}},
}

func TestToolText(t *testing.T) {
	for _, c := range []struct {
		name string
		tool Tool
		want string
	}{
		{"mcp", Tool{Name: "create_entities", Namespace: "memory", Title: "Create Entities",
			Description: "Create multiple new entities in the knowledge graph",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object"}}},"required":["entities"]}`),
			Source:      Source{Kind: KindMCP, Server: "memory", Transport: "stdio"}},
			"memory.create_entities: Create Entities. Create multiple new entities in the knowledge graph. Parameters: entities (array, required)"},
		{"openapi", githubIssues,
			"github.issues/list-for-repo: List repository issues. List issues in a repository. Only open issues will be listed. " +
				"Parameters: owner (string, required): The account owner of the repository; repo (string, required): The name of the repository without the .git extension; " +
				"state (open|closed|all): Indicates the state of the issues to return; language (string): A language; since (string): Only show results that were last updated after the given time"},
		{"functions", Tool{Name: "get_weather",
			Description: "Get the current weather in a city.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city, e.g. Paris."},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"page":{"type":"integer","description":"A page of the forecast."}},"required":["city"]}`),
			Source:      Source{Kind: KindFunctions}},
			// A function's "page" is its own: only an OpenAPI query parameter is pagination.
			"get_weather: Get the current weather in a city. Parameters: city (string, required): The city, e.g. Paris; unit (celsius|fahrenheit); page (integer): A page of the forecast"},
		{"no parameters", Tool{Name: "now", Namespace: "clock", Description: "  The time  ", InputSchema: json.RawMessage(`{"type":"object"}`), Source: Source{Kind: KindFunctions}},
			"clock.now: The time."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ToolText(c.tool); got != c.want {
				t.Errorf("ToolText\ngot  %q\nwant %q", got, c.want)
			}
			// The default template is ToolText, and a library without a template of its own uses it.
			if got, err := Text(c.tool, ""); err != nil || got != c.want {
				t.Errorf("Text(tool, \"\") = %q, %v", got, err)
			}
			if got, err := (&Library{Tools: []Tool{c.tool}}).Texts(); err != nil || got[0] != c.want {
				t.Errorf("Library.Texts() = %q, %v", got, err)
			}
		})
	}
}

func TestBoilerplateParam(t *testing.T) {
	for _, c := range []struct {
		p    Param
		desc string
		want bool
	}{
		{Param{Name: "Accept", In: InHeader}, "", true},
		{Param{Name: "authorization", In: InHeader}, "", true},
		{Param{Name: "X-GitHub-Api-Version", In: InHeader}, "", true},
		{Param{Name: "api-version", In: InHeader}, "", true},
		{Param{Name: "X-Tenant", In: InHeader}, "The tenant.", false},
		{Param{Name: "per_page", In: InQuery}, "", true},
		{Param{Name: "pageToken", In: InQuery}, "", true},
		{Param{Name: "cursor", In: InQuery}, "", true},
		{Param{Name: "api_key", In: InQuery}, "", true},
		{Param{Name: "limit", In: InQuery}, "The maximum number of results to return.", true},
		{Param{Name: "offset", In: InQuery}, "How many items to skip.", true},
		{Param{Name: "limit", In: InQuery}, "Spending limit in dollars.", false},
		{Param{Name: "before", In: InQuery}, "Only commits before this date.", false},
		{Param{Name: "page", In: InPath}, "", false},
		{Param{Name: "per_page", In: InCookie}, "", false},
	} {
		if got := BoilerplateParam(c.p, c.desc); got != c.want {
			t.Errorf("BoilerplateParam(%+v, %q) = %v, want %v", c.p, c.desc, got, c.want)
		}
	}
}

func TestBoilerplateParagraph(t *testing.T) {
	for _, c := range []struct {
		p    string
		want bool
	}{
		{"> [!NOTE]\n> This endpoint is in public preview.", true},
		{"This endpoint supports the following custom media types.", true},
		{"- **`application/vnd.github.raw+json`**: Returns the raw markdown body.", true},
		{"OAuth app tokens and personal access tokens (classic) need the `repo` scope to use this endpoint.", true},
		{"Anyone with read access to the repository can use this endpoint.", true},
		{"This endpoint triggers notifications. Creating content too quickly may result in secondary rate limiting.", true},
		{"The parent and source objects are present when the repository is a fork.", false},
		{"Lists the files of a directory.", false},
	} {
		if got := BoilerplateParagraph(c.p); got != c.want {
			t.Errorf("BoilerplateParagraph(%q) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestTextBudgets(t *testing.T) {
	sentence := "This sentence says what the tool does in some words. "
	long := Tool{Name: "big", Description: strings.Repeat(sentence, 40), Source: Source{Kind: KindFunctions}}
	var props []string
	for i := range 40 {
		props = append(props, `"p`+string(rune('a'+i%26))+string(rune('a'+i/26))+`":{"type":"string","description":"`+strings.Repeat("word ", 50)+`"}`)
	}
	long.InputSchema = json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
	d := Data(long)
	if n := utf8.RuneCountInString(d.Summary); n > SummaryBudget || !strings.HasSuffix(d.Summary, "does in some words.") {
		t.Errorf("Summary: %d runes, ends %q", n, d.Summary[len(d.Summary)-20:])
	}
	if n := utf8.RuneCountInString(d.Args); n > ArgsBudget || n < ArgsBudget/2 {
		t.Errorf("Args: %d runes", n)
	}
	for _, a := range strings.Split(d.Args, "; ") {
		if n := utf8.RuneCountInString(a); n > ArgBudget+len("paa (string): ") {
			t.Errorf("argument %q: %d runes", a, n)
		}
	}
	if got := ToolText(long); !strings.HasPrefix(got, "big: "+sentence) || len(got) > 1100 {
		t.Errorf("text %d bytes: %.80q", len(got), got)
	}
	// Multi-byte text is cut on rune boundaries.
	if got := budget(strings.Repeat("é", 10), 4, false); got != "éééé" {
		t.Errorf("budget: %q", got)
	}
}

// TestTextSchemaWhole: the text leaves boilerplate out; the tool, and what it round-trips
// to, keep every parameter.
func TestTextSchemaWhole(t *testing.T) {
	tool := githubIssues
	before := string(tool.InputSchema)
	text := ToolText(tool)
	for _, p := range []string{"per_page", "page ", "accept", "X-GitHub-Api-Version", "media type", "python", "OAuth", "NOTE", "https://"} {
		if strings.Contains(text, p) {
			t.Errorf("text has %q: %s", p, text)
		}
	}
	if string(tool.InputSchema) != before || len(Properties(tool.InputSchema)) != 10 || len(tool.Source.Params) != 10 {
		t.Error("rendering changed the tool")
	}
	if got := Properties(tool.InputSchema)[2].Enum; strings.Join(got, ",") != "open,closed,all" {
		t.Errorf("state's enumeration %q", got)
	}
}
