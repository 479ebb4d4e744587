// Package toolret trains, evaluates, exports and serves the models that pick the right tools
// for an LLM agent out of a library of thousands.
//
// This package is the API: the handful of calls the `toolret` commands make, each taking a
// typed configuration. The packages it names (data, models/..., export, toolindex, serve,
// hub, library) hold the parts for a user who needs more.
//
//   - [Train] trains a model of any registered kind from its typed configuration, resuming a
//     run when asked.
//   - [OpenModel] opens a trained run, a pre-trained model directory or a hub id as an
//     encoder; [OpenIndex] opens an exported index as a tool retriever.
//   - [Evaluate] scores a method, run, model, index, cross-encoder reranking or fusion on a
//     dataset split (Recall, NDCG, COMP@K), as eval does ([NewEvaluation]: set up, not yet
//     run); [Suite] scores BM25 and more systems on every zero-shot test set at once.
//   - [Export] writes a run or pre-trained model as a Hugging Face / sentence-transformers
//     directory, an ONNX model or a served index; [UpdateIndex] brings an index's tools up to
//     date with a library.
//   - [Serve] serves an index over HTTP and MCP until its context ends.
//   - [ImportLibrary] imports MCP servers, OpenAPI descriptions and function-tool lists into a
//     tool library file; [ImportModel] puts a model directory into the Hugging Face hub cache
//     under its hub id.
//
// A model reference (OpenModel, ExportConfig.Model, the -init of training) is a directory (HF
// or sentence-transformers layout), a run, or a hub id "org/name[@revision]" resolved in the
// Hugging Face hub cache (HF_HUB_CACHE, HF_HOME) and downloaded into it when missing and
// HF_HUB_OFFLINE is unset.
//
// A model directory may carry its retrieval recipe, toolret_recipe.json (export.Recipe: a BM25
// fusion, per-clause retrieval, a cross-encoder reranker inside the directory, and the dev
// split they were chosen on; [ModelRecipe] reads it): Evaluate, Suite, Serve and Export apply
// it unless told not to (NoRecipe), and an index exported from the model records it (the
// cross-encoder copied into it). [EvalConfig].Reranker picks a reranker's weight on a dev
// split for a model directory's first stage.
package toolret
