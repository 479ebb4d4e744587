package importer

import (
	"slices"
	"strings"
	"testing"
)

const lenientHead = "openapi: 3.1.0\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://api.example'}]\n"

// TestOpenAPILenient: a description that does not load whole costs only what is wrong in
// it, each with a named warning, unless Strict; a webhooks-only description says why it
// gives no tools.
func TestOpenAPILenient(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		tools   []string          // lenient import's tool IDs
		skipped []string          // substrings of Report.Skipped, in order
		notes   []string          // substrings of some Report.Notes
		schemas map[string]string // tool ID → a substring of its input schema
		err     string            // lenient import's error
		strict  string            // Strict import's error
	}{
		{
			name: "examples map in a schema (@scalar/galaxy)",
			spec: lenientHead + `paths:
  /planets/{planetId}:
    get:
      operationId: getPlanet
      parameters:
        - name: planetId
          in: path
          required: true
          schema: {type: integer, examples: {earth: {value: 1}, mars: {summary: Mars, value: 4}}}
          examples: {earth: {value: 1}}
      responses: {'200': {description: ok}}
  /planets:
    post:
      operationId: createPlanet
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Planet'}
      responses: {'201': {description: ok}}
components:
  schemas:
    Planet:
      type: object
      properties:
        name: {type: string, examples: {earth: {value: Earth}}}
        examples: {type: array, items: {type: string}}
`,
			tools:  []string{"ns.createPlanet", "ns.getPlanet"},
			notes:  []string{"#/paths/~1planets~1{planetId}/get/parameters/0/schema/examples: a map of named examples", "#/components/schemas/Planet/properties/name/examples: a map"},
			strict: "cannot construct !!map into []interface {}",
		},
		{
			name: "one invalid operation",
			spec: lenientHead + `paths:
  /a:
    get: {operationId: a, responses: {'200': {description: ok}}}
    post: {operationId: a2, parameters: oops, responses: {'200': {description: ok}}}
  /b:
    get:
      operationId: b
      parameters: [{$ref: '#/components/parameters/missing'}]
      responses: {'200': {description: ok}}
  /c:
    get:
      operationId: c
      parameters: [{$ref: '#/components/parameters/q'}]
      responses: {'200': {description: ok}}
components:
  parameters:
    q: {name: q, in: query, schema: {type: string}}
`,
			tools:   []string{"ns.a", "ns.c"},
			skipped: []string{"POST /a (#/paths/~1a/post): cannot construct !!str `oops` into openapi3.Parameters", "GET /b (#/paths/~1b/get): ", "#/components/parameters/missing"},
			notes:   []string{"its operations were loaded one by one"},
			strict:  "cannot construct !!str `oops`",
		},
		{
			name: "webhooks only",
			spec: lenientHead + `webhooks:
  newPet:
    post:
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses: {'200': {description: ok}}
`,
			err:    "no paths, only 1 webhooks (newPet): webhooks describe requests the API sends",
			strict: "no paths, only 1 webhooks (newPet)",
		},
		{
			name: "webhooks only, not loading whole",
			spec: lenientHead + `webhooks:
  newPet: {post: {parameters: oops, responses: {'200': {description: ok}}}}
  oldPet: {post: {responses: {'200': {description: ok}}}}
`,
			err:    "no paths, only 2 webhooks (newPet, oldPet)",
			strict: "cannot construct",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, r, err := DecodeOpenAPI(t.Context(), []byte(tc.spec), "spec", "ns")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.err == "" {
				checkTools(t, tools, "openapi")
			}
			if got := names(tools); !slices.Equal(got, tc.tools) && len(got)+len(tc.tools) > 0 {
				t.Errorf("tools %v, want %v", got, tc.tools)
			}
			m := byID(tools)
			for id, want := range tc.schemas {
				if got := string(m[id].InputSchema); !strings.Contains(got, want) {
					t.Errorf("%s: input schema %s, want it to hold %s", id, got, want)
				}
			}
			if len(r.Skipped) > len(tc.skipped) {
				t.Errorf("skipped %q, want %d", r.Skipped, len(tc.skipped))
			}
			all := strings.Join(r.Skipped, "\n")
			for _, s := range tc.skipped {
				if !strings.Contains(all, s) {
					t.Errorf("skipped %q, want one saying %q", r.Skipped, s)
				}
			}
			notes := strings.Join(r.Notes, "\n")
			for _, s := range tc.notes {
				if !strings.Contains(notes, s) {
					t.Errorf("notes %q, want one saying %q", r.Notes, s)
				}
			}
			_, _, err = DecodeOpenAPIWith(t.Context(), []byte(tc.spec), "spec", "ns", OpenAPIOptions{Strict: true})
			if err == nil || !strings.Contains(err.Error(), tc.strict) {
				t.Errorf("strict: error %v, want one saying %q", err, tc.strict)
			}
		})
	}
}
