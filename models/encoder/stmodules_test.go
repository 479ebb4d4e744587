package encoder

import "testing"

func TestSTPoolingMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want Pooling
		ok   bool
	}{
		{"5.x mean", map[string]any{"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false}, PoolMean, true},
		{"5.x cls", map[string]any{"pooling_mode_cls_token": true}, PoolCLS, true},
		{"5.x max", map[string]any{"pooling_mode_max_tokens": true}, "", false},
		{"5.x mean and max", map[string]any{"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true}, "", false},
		{"5.x mean and cls", map[string]any{"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": true}, "", false},
		{"6.x mean", map[string]any{"pooling_mode": "mean"}, PoolMean, true},
		{"6.x cls", map[string]any{"pooling_mode": "cls"}, PoolCLS, true},
		{"6.x lasttoken", map[string]any{"pooling_mode": "lasttoken"}, PoolLast, true},
		{"5.x lasttoken", map[string]any{"pooling_mode_lasttoken": true}, PoolLast, true},
		{"5.x lasttoken and mean", map[string]any{"pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": true}, "", false},
		{"6.x weightedmean", map[string]any{"pooling_mode": "weightedmean"}, "", false},
		{"nothing", map[string]any{}, "", false},
	} {
		got, ok := STPoolingMode(tc.cfg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: STPoolingMode = %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	for typ, want := range map[string]STModule{
		"sentence_transformers.models.Transformer":                           STModTransformer,
		"sentence_transformers.base.modules.transformer.Transformer":         STModTransformer,
		"sentence_transformers.sentence_transformer.modules.pooling.Pooling": STModPooling,
		"sentence_transformers.base.modules.normalize.Normalize":             STModNormalize,
		"sentence_transformers.base.modules.dense.Dense":                     STModDense,
		"sentence_transformers.sentence_transformer.modules.lstm.LSTM":       "",
		"sentence_transformers.models.WordEmbeddings":                        "",
	} {
		if got, ok := STModuleOf(typ); got != want || ok != (want != "") {
			t.Errorf("STModuleOf(%s) = %q %v, want %q", typ, got, ok, want)
		}
	}
}
