package feedback

import "time"

// CollectConfig is the settings of `train feedback`, a collection of iterative feedback
// (Run): every flag of the command but the operational -data, -backend and -quiet is a field
// whose json tag is the flag's name and whose help tag its help (package internal/flagcfg
// declares the flags from the fields). DefaultCollectConfig holds the defaults.
type CollectConfig struct {
	// Retriever is the bi-encoder run that retrieves the tools of each instruction
	// (-first-stage; required).
	Retriever string `json:"first-stage" help:"stage-1 bi-encoder run (train biencoder); its recorded dev split is used"`
	// Rewriter is what refines the instructions: llm (default) or prf (-rewriter).
	Rewriter string `json:"rewriter" help:"what refines the instructions: llm (an OpenAI-compatible chat server) or prf (pseudo-relevance feedback: q^0 plus the retrieved tools a -prf-model run accepts; no LLM)"`
	// PRFModel, PRFThreshold, PRFTools and PRFChars are the PRFOptions of -rewriter prf.
	PRFModel     string  `json:"prf-model" help:"-rewriter prf: the run that judges the retrieved tools: an mlc classifier, a refiner or a cross-encoder run (kind read from the run)"`
	PRFThreshold float64 `json:"prf-threshold" help:"-rewriter prf: a retrieved tool is accepted when the -prf-model's score of (q^0, tool) is at least this"`
	PRFTools     int     `json:"prf-tools" help:"-rewriter prf: most accepted tools written into the instruction, best scored first"`
	PRFChars     int     `json:"prf-chars" help:"-rewriter prf: characters of each accepted tool's description written (-1: names only)"`
	// LLMURL and LLMModel are the chat server of -rewriter llm (required with it); the API
	// key is read from $TOOLRET_LLM_API_KEY (llm.KeyEnv).
	LLMURL         string        `json:"llm-url" help:"base URL of an OpenAI-compatible chat-completions API, e.g. http://127.0.0.1:8080/v1 (llama-server) or http://127.0.0.1:11434/v1 (Ollama); the API key, if any, is read from $TOOLRET_LLM_API_KEY"`
	LLMModel       string        `json:"llm-model" help:"model name sent with every request"`
	LLMTimeout     time.Duration `json:"llm-timeout" help:"timeout of one request"`
	LLMRetries     int           `json:"llm-retries" help:"retries of a request after 429, 5xx, a timeout or a connection error (exponential backoff from 1s, or the server's Retry-After)"`
	LLMConcurrency int           `json:"llm-concurrency" help:"requests in flight at once (and queries refined at once)"`
	// LLMCache is the reply cache's directory ("": llm-cache beside Out).
	LLMCache     string `json:"llm-cache" help:"directory of the reply cache (default: llm-cache beside -out); a re-run or resumed run sends no request it has a reply for"`
	LLMJSON      bool   `json:"llm-json" help:"ask for a JSON object at the refinement step (response_format; dropped when the server refuses it)"`
	LLMMaxTokens int    `json:"llm-max-tokens" help:"cap on each reply's tokens (0: the server's default)"`
	// Prompts is a directory of prompt templates ("": DefaultPrompts).
	Prompts    string `json:"prompts" help:"directory holding comprehension.txt, assessment.txt and refinement.txt (text/template; default: the built-in prompts of package feedback)"`
	Iterations int    `json:"iterations" help:"most refinements per query (T); iteration T is retrieved and not refined"`
	K          int    `json:"k" help:"tools retrieved per instruction and shown to the refiner"`
	// Split is the comma-separated splits whose judged queries are collected.
	Split string `json:"split" help:"comma-separated splits whose judged queries are collected"`
	// Out is the JSONL output (required); Out + ConfigSuffix records its settings.
	Out string `json:"out" help:"output JSONL file, one line per query and iteration (its settings and prompts go to FILE.config.json)"`
}

// DefaultCollectConfig returns the defaults of train feedback's flags.
func DefaultCollectConfig() CollectConfig {
	return CollectConfig{Rewriter: "llm", PRFThreshold: DefaultPRFThreshold, PRFTools: DefaultPRFTools, PRFChars: DefaultPRFChars,
		LLMTimeout: 2 * time.Minute, LLMRetries: 5, LLMConcurrency: 4, LLMJSON: true, LLMMaxTokens: 512,
		Iterations: 3, K: 10, Split: "train,test"}
}
