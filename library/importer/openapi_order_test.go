package importer

import "testing"

const orderSpec = `openapi: 3.1.0
info: {title: Order, version: "1"}
paths:
  /notes/{id}:
    put:
      operationId: putNote
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                title: {type: string}
                body: {type: string}
                author: {$ref: '#/components/schemas/Person'}
                archived: {type: boolean}
      responses:
        '200': {description: ok}
components:
  schemas:
    Person:
      type: object
      properties:
        name: {type: string}
        email: {type: string}
        age: {type: integer}
`

// orderSpecJSON is orderSpec as JSON, keys in the same order.
const orderSpecJSON = `{"openapi":"3.1.0","info":{"title":"Order","version":"1"},"paths":{"/notes/{id}":{"put":{"operationId":"putNote",` +
	`"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],` +
	`"requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"},` +
	`"author":{"$ref":"#/components/schemas/Person"},"archived":{"type":"boolean"}}}}}},"responses":{"200":{"description":"ok"}}}}},` +
	`"components":{"schemas":{"Person":{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string"},"age":{"type":"integer"}}}}}}`

// TestOpenAPIPropertyOrder checks that an operation's input schema lists the request body's
// properties, nested ones too, in the description's order, YAML or JSON, not alphabetised.
func TestOpenAPIPropertyOrder(t *testing.T) {
	want := `{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"},` +
		`"author":{"properties":{"name":{"type":"string"},"email":{"type":"string"},"age":{"type":"integer"}},"type":"object"},` +
		`"archived":{"type":"boolean"}},"required":["id"]}`
	for name, spec := range map[string]string{"yaml": orderSpec, "json": orderSpecJSON} {
		tools, _, err := DecodeOpenAPI(t.Context(), []byte(spec), "order", "order")
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != 1 {
			t.Fatalf("%s: %d tools", name, len(tools))
		}
		if got := string(tools[0].InputSchema); got != want {
			t.Errorf("%s: input schema\n%s\nwant\n%s", name, got, want)
		}
	}
}
