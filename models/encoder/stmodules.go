package encoder

import "strings"

// STModule is the kind of a sentence-transformers module named in modules.json.
type STModule string

// The sentence-transformers modules toolret reads.
const (
	STModTransformer STModule = "transformer"
	STModPooling     STModule = "pooling"
	STModDense       STModule = "dense"
	STModNormalize   STModule = "normalize"
)

// stModuleTypes maps the module types sentence-transformers writes into modules.json to their
// kind: the 2.x-5.x names (sentence_transformers.models.X) and the 6.x ones, which moved the
// classes into sentence_transformers.base.modules and sentence_transformers.sentence_transformer
// .modules (6.x still reads the old names through its deprecated-import table).
var stModuleTypes = map[string]STModule{
	"sentence_transformers.models.Transformer":                           STModTransformer,
	"sentence_transformers.base.modules.transformer.Transformer":         STModTransformer,
	"sentence_transformers.models.Pooling":                               STModPooling,
	"sentence_transformers.sentence_transformer.modules.pooling.Pooling": STModPooling,
	"sentence_transformers.models.Dense":                                 STModDense,
	"sentence_transformers.base.modules.dense.Dense":                     STModDense,
	"sentence_transformers.models.Normalize":                             STModNormalize,
	"sentence_transformers.base.modules.normalize.Normalize":             STModNormalize,
}

// STModuleOf returns the kind of a modules.json type, and false for a module toolret does not
// read (the caller names it in its error).
func STModuleOf(typ string) (STModule, bool) {
	m, ok := stModuleTypes[typ]
	return m, ok
}

// STPoolingMode reads a Pooling module's config.json (decoded): sentence-transformers <= 5
// writes one boolean per mode (pooling_mode_mean_tokens, pooling_mode_cls_token, ...), 6.x one
// string (pooling_mode: "mean", "cls", "lasttoken", ...). ok is false for a mode toolret lacks
// (max, weighted mean, several at once).
func STPoolingMode(c map[string]any) (p Pooling, ok bool) {
	if s, isString := c["pooling_mode"].(string); isString {
		switch strings.ToLower(s) {
		case "mean", "mean_tokens":
			return PoolMean, true
		case "cls", "cls_token":
			return PoolCLS, true
		case "lasttoken":
			return PoolLast, true
		}
		return "", false
	}
	mean, cls, last := c["pooling_mode_mean_tokens"] == true, c["pooling_mode_cls_token"] == true, c["pooling_mode_lasttoken"] == true
	for _, k := range []string{"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"} {
		if c[k] == true {
			return "", false
		}
	}
	switch {
	case mean && !cls && !last:
		return PoolMean, true
	case cls && !mean && !last:
		return PoolCLS, true
	case last && !mean && !cls:
		return PoolLast, true
	}
	return "", false
}
