// Package data holds toolret's tool-retrieval dataset: a tool library (the corpus), queries,
// relevance judgements (qrels) per split, optional scenes (ground-truth tool sets) and the tool
// hierarchy category → tool → API.
//
// Query ids and tool ids are separate namespaces: in ToolLens they overlap numerically, so a
// query "12" and a tool "12" are unrelated. Inside a Dataset both are addressed by dense
// indices into Queries and Tools.
package data

// Tool is one retrievable item of the corpus. In ToolBench-derived data it is an API; its
// hierarchy is Category → ToolName → APIName.
type Tool struct {
	ID    string
	Title string
	Text  string
	// Hierarchy, read from metadata fields or parsed from ToolBench-style text
	// ("category_name:…, tool_name:…, api_name:…"). Empty when unknown.
	Category string
	ToolName string
	APIName  string
	// Metadata is the raw metadata object of the corpus line, if any.
	Metadata map[string]any
}

// Group returns the key of the hierarchy level above the API ("category/tool_name"), used by
// query-type classification and hierarchy-aware reranking. Tools with no hierarchy form their
// own group (their ID).
func (t Tool) Group() string {
	if t.ToolName == "" {
		return "id:" + t.ID
	}
	return t.Category + "/" + t.ToolName
}

// Query is one user request.
type Query struct {
	ID   string
	Text string
}

// Split is one set of judged queries (train, dev, test, ...).
type Split struct {
	Name string
	// Queries lists the indices (into Dataset.Queries) of the split's queries, in file order
	// of first appearance, without duplicates.
	Queries []int
	// Relevant maps a query index to the sorted, duplicate-free indices (into Dataset.Tools)
	// of its relevant tools (qrel score > 0).
	Relevant map[int][]int
	// Scene maps a query index to its scene index (into Dataset.Scenes), when known.
	Scene map[int]int
}

// Dataset is a complete tool-retrieval dataset.
type Dataset struct {
	Name    string
	Tools   []Tool
	Queries []Query
	// ToolIndex and QueryIndex map external ids to indices; separate namespaces.
	ToolIndex  map[string]int
	QueryIndex map[string]int
	// Splits by name ("train", "test", ...).
	Splits map[string]*Split
	// Scenes are ground-truth tool sets (sorted tool indices). Either read from scene files
	// or derived as the distinct relevant sets of all splits.
	Scenes [][]int
	// SceneIDs holds the external id of each scene.
	SceneIDs []string
	// Holdout is set on a held-out-tool view (HoldoutTools, or a dataset written from one and
	// loaded again), whose dev splits CarveDev carves by tools; HeldOut lists its held-out
	// tools (sorted indices).
	Holdout *Holdout
	HeldOut []int
	// Libraries are the tool libraries of a multi-source dataset (OpenSources), nil for one
	// library: in-batch negatives, dev splits and evaluation stay within a library.
	// ToolLibrary maps each tool index to its library.
	Libraries   []Library
	ToolLibrary []int
	// Warnings are problems of the input that do not stop loading (a tool with no name),
	// each naming file and line (or row) and id. Loading prints them to WarnOutput.
	Warnings []string
}
