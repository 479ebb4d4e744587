// Package feedback runs the retrieval loop of Xu et al., "Enhancing Tool Retrieval with
// Iterative Feedback from Large Language Models", and records it: at iteration t the
// retriever returns the top K tools for the instruction q^t, and a Refiner — the LLM that
// will use the tools (LLM), or later an LLM-free stand-in — (1) comprehends the instruction
// and the retrieved tools, (2) assesses which of the user's goals they solve and whether
// their order is right, and (3) refines the instruction into q^(t+1), or answers "N/A" when
// nothing needs refining, which ends the loop.
//
// Run collects the loop over the judged queries of some splits into a JSONL file, one Line
// per (query, iteration): iterations 0..T where q^0 is the user's instruction, T refinements
// at most, so a query costs the LLM refiner 3 requests per refinement (3T at most). The last
// line of a query says why its loop stopped (Line.Reason). The file can be killed and resumed:
// Run reads what it holds (cutting a torn last line), skips the finished (query, iteration)
// pairs and appends the rest in the same order, so the result is the file an uninterrupted
// run writes. The settings and the prompts are recorded beside it (Out + ConfigSuffix) and a
// resumed run must have the same ones.
package feedback

import "context"

// Tool is a retrieved tool as a refiner sees it. Fields the dataset lacks are empty.
type Tool struct {
	// Index is the tool's index in the dataset's Tools (what classifiers score).
	Index int
	// ID is the dataset's tool id.
	ID string
	// Category, Name and API are the hierarchy category → tool → API (ToolBench); a dataset
	// without one has Name = the tool's title (or id) and empty Category and API.
	Category, Name, API string
	// Description is the API's description (ToolBench text's api_description), else the
	// tool's text.
	Description string
	// Parameters lists the parameters, one "name (type, required|optional): description"
	// per entry joined by "; ", when the dataset has them.
	Parameters string
}

// Input is what a refiner gets at iteration t of one query.
type Input struct {
	// QueryID is the dataset's query id.
	QueryID string
	// Original is the user's instruction q^0; Query is q^t (equal to Original at t = 0).
	Original, Query string
	// Iteration is t, from 0.
	Iteration int
	// Tools are the retriever's top K tools for Query, best first.
	Tools []Tool
}

// Reply is one exchange of a refinement step: the step's name and the reply (for the LLM
// refiner, "comprehension", "assessment", "refinement" and the model's answers).
type Reply struct {
	Step string `json:"step"`
	Text string `json:"text"`
}

// Step is a refiner's answer for one iteration.
type Step struct {
	// Replies are the step's exchanges, in order (recorded in the output).
	Replies []Reply
	// Refined is the new instruction q^(t+1); empty when Stop or Err.
	Refined string
	// Stop reports that nothing needs refining ("N/A"): the loop ends at q^t.
	Stop bool
	// Err, when not empty, says why this query's step failed (a malformed reply, a request the
	// server refused): it is recorded and counted, and the query's loop ends at q^t. Failures
	// that concern every query (the server unreachable, a cancelled context) are Refine's
	// error instead, and stop the run.
	Err string
}

// Rewriter refines an instruction given the tools retrieved for it. Refine must be
// deterministic for the same input (a resumed run must reproduce an interrupted one), safe
// for concurrent use, and return an error only for failures that should stop the whole run;
// problems with one query's answer go into Step.Err.
//
// LLM is the LLM implementation; an LLM-free one (pseudo-relevance feedback) implements the
// same interface and records its own Replies.
type Rewriter interface {
	Rewrite(ctx context.Context, in Input) (Step, error)
}

// Stop reasons of Line.Reason.
const (
	// ReasonNA: the refiner answered that nothing needs refining.
	ReasonNA = "n/a"
	// ReasonUnchanged: the refined instruction equals q^t (the loop would repeat itself).
	ReasonUnchanged = "unchanged"
	// ReasonError: the step failed for this query (Line.Error says why).
	ReasonError = "error"
	// ReasonIterations: q^T, the last instruction; no refinement is asked for.
	ReasonIterations = "iterations"
)

// Line is one line of the output: one query at one iteration.
type Line struct {
	QueryID string `json:"query_id"`
	Split   string `json:"split"`
	// Iteration is t, from 0 (q^0 is the user's instruction).
	Iteration int `json:"iteration"`
	// Query is q^t.
	Query string `json:"query"`
	// Retrieved are the tool ids of the retriever's top K for q^t, best first.
	Retrieved []string `json:"retrieved"`
	// Replies are the refiner's exchanges at this iteration (none at iteration T).
	Replies []Reply `json:"replies,omitempty"`
	// Refined is q^(t+1), the next line's Query; empty on a query's last line.
	Refined string `json:"refined,omitempty"`
	// Stop marks the query's last line; Reason says why (Reason* constants).
	Stop   bool   `json:"stop"`
	Reason string `json:"reason,omitempty"`
	// Error is the failed step's problem (Reason "error").
	Error string `json:"error,omitempty"`
}
