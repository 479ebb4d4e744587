package tokenize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	for _, c := range []struct {
		n, max  int
		buckets []int
		want    int
	}{
		{3, 64, DefaultBuckets, 8},
		{8, 64, DefaultBuckets, 8},
		{9, 64, DefaultBuckets, 16},
		{33, 40, DefaultBuckets, 40},
		{600, 0, DefaultBuckets, 600},
		{600, 512, DefaultBuckets, 512},
		{17, 0, DefaultBuckets, 24},
		{5, 0, []int{32, 4, 12}, 12}, // unsorted buckets
		{5, 0, nil, 5},
		{40, 0, []int{32}, 40},
	} {
		if got := Bucket(c.n, c.max, c.buckets); got != c.want {
			t.Errorf("Bucket(%d, %d, %v) = %d, want %d", c.n, c.max, c.buckets, got, c.want)
		}
	}
}

func TestPad(t *testing.T) {
	tok := testTokenizer(t)
	tok.Buckets = []int{4, 6, 10}
	for _, tc := range []struct {
		name   string
		seqs   [][]int32
		maxLen int
		want   Batch
	}{
		{"bucket", [][]int32{{2, 5, 3}, {2, 3}}, 10, Batch{Len: 4,
			IDs:   [][]int32{{2, 5, 3, 0}, {2, 3, 0, 0}},
			Types: [][]int32{{0, 0, 0, 0}, {0, 0, 0, 0}},
			Mask:  [][]int32{{1, 1, 1, 0}, {1, 1, 0, 0}}}},
		{"next bucket", [][]int32{{2, 5, 6, 5, 3}}, 10, Batch{Len: 6,
			IDs: [][]int32{{2, 5, 6, 5, 3, 0}}, Types: [][]int32{{0, 0, 0, 0, 0, 0}}, Mask: [][]int32{{1, 1, 1, 1, 1, 0}}}},
		{"capped and cut at maxLen", [][]int32{{2, 5, 6, 5, 6, 3}}, 5, Batch{Len: 5,
			IDs: [][]int32{{2, 5, 6, 5, 6}}, Types: [][]int32{{0, 0, 0, 0, 0}}, Mask: [][]int32{{1, 1, 1, 1, 1}}}},
		{"empty", nil, 10, Batch{Len: 4, IDs: [][]int32{}, Types: [][]int32{}, Mask: [][]int32{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b := tok.Pad(tc.seqs, nil, tc.maxLen); !reflect.DeepEqual(b, tc.want) {
				t.Errorf("Pad =\n%+v\nwant\n%+v", b, tc.want)
			}
		})
	}
}

// TestMultipleBuckets: padded lengths are the longest sequence rounded up to the multiple,
// capped at the max length, and there are at most ceil(maxLen/m) of them; m 0 pads to maxLen.
func TestMultipleBuckets(t *testing.T) {
	for _, c := range []struct {
		m, maxLen int
		want      []int
	}{
		{16, 64, []int{16, 32, 48, 64}},
		{16, 40, []int{16, 32, 48}},
		{8, 8, []int{8}},
		{0, 32, []int{32}},
		{-1, 32, []int{32}},
	} {
		if got := MultipleBuckets(c.m, c.maxLen); !reflect.DeepEqual(got, c.want) {
			t.Errorf("MultipleBuckets(%d, %d) = %v, want %v", c.m, c.maxLen, got, c.want)
		}
	}
	tok := testTokenizer(t)
	for _, c := range []struct {
		m, maxLen int
		lens      []int
		want      int
	}{
		{16, 64, []int{3, 5}, 16},
		{16, 64, []int{17, 2}, 32},
		{16, 40, []int{33}, 40},
		{16, 40, []int{60}, 40}, // cut
		{0, 40, []int{3}, 40},
	} {
		var seqs [][]int32
		for _, n := range c.lens {
			seqs = append(seqs, make([]int32, n))
		}
		seen := map[int]bool{}
		for n := 1; n <= c.maxLen; n++ {
			seen[Bucket(n, c.maxLen, MultipleBuckets(c.m, c.maxLen))] = true
		}
		if limit := max(1, (c.maxLen+c.m-1)/max(c.m, 1)); c.m > 0 && len(seen) > limit {
			t.Errorf("m %d max %d: %d padded lengths, want <= %d", c.m, c.maxLen, len(seen), limit)
		}
		b := tok.PadBuckets(seqs, nil, c.maxLen, MultipleBuckets(c.m, c.maxLen))
		if b.Len != c.want || len(b.IDs[0]) != c.want {
			t.Errorf("m %d max %d lengths %v: padded to %d (row %d), want %d", c.m, c.maxLen, c.lens, b.Len, len(b.IDs[0]), c.want)
		}
	}
}

func TestPadPairs(t *testing.T) {
	tok := testTokenizer(t)
	var seqs, types [][]int32
	for i, a := range []string{"hello", "hello world hello world"} {
		ids, ty := tok.Pair(a, []string{"world !", "world"}[i], 7)
		seqs, types = append(seqs, ids), append(types, ty)
	}
	b := tok.Pad(seqs, types, 7)
	// Row 1: a has 4 tokens, b 1, budget 7-3 = 4: a is cut to 3.
	want := Batch{Len: 7,
		IDs:   [][]int32{{2, 5, 3, 6, 8, 3, 0}, {2, 5, 6, 5, 3, 6, 3}},
		Types: [][]int32{{0, 0, 0, 1, 1, 1, 0}, {0, 0, 0, 0, 0, 1, 1}},
		Mask:  [][]int32{{1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 1}}}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("Pad of pairs =\n%+v\nwant\n%+v", b, want)
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		lower, strip, chinese bool
		in, want              string
	}{
		{true, true, true, "Héllo\tWörld\u00a0!", "hello world !"},
		{true, false, true, "Héllo", "héllo"},
		{true, false, true, "İstanbul", "i\u0307stanbul"}, // Rust char::to_lowercase
		{true, true, true, "İstanbul", "istanbul"},
		{true, true, true, "ΟΔΟΣ ΟΔΟΣ. Σ ΑΣ'Σ ΣΑ", "οδος οδος. σ ασ'ς σα"},     // Final_Sigma, as JS and Python
		{false, false, true, "\U0002B91F\U0002B920", "\U0002B91F \U0002B920 "}, // HF's CJK ranges
		{false, false, true, "Héllo東京", "Héllo 東  京 "},
		{false, false, false, "東京", "東京"},
		{true, true, true, "a\u200bb\u0000c\ufffd\u0007d", "abcd"}, // Cf, NUL, U+FFFD, Cc removed
	} {
		tok := &Tokenizer{lower: c.lower, stripAccents: c.strip, chineseChars: c.chinese, cleanText: true}
		if got := tok.normalize(c.in); got != c.want {
			t.Errorf("normalize(%q) lower=%v strip=%v = %q, want %q", c.in, c.lower, c.strip, got, c.want)
		}
	}
	if got, want := preTokenize(" a,b  c-d\u3001e "), []string{"a", ",", "b", "c", "-", "d", "\u3001", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("preTokenize = %q, want %q", got, want)
	}
}

// jsonFor returns a minimal BERT tokenizer.json for vocab, with edit applied to it.
func jsonFor(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	tok := testTokenizer(t)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	return b
}

func TestLoadJSON(t *testing.T) {
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		err  string
		text string
		want []string
	}{
		{name: "as saved", edit: func(m map[string]any) {}, text: "Hello [SEP]Café", want: []string{"hello", SEP, "cafe"}},
		{name: "no normalizer", edit: func(m map[string]any) { m["normalizer"] = nil }, text: "Hello hello", want: []string{UNK, "hello"}},
		{name: "keep accents", edit: func(m map[string]any) { m["normalizer"].(map[string]any)["strip_accents"] = false }, text: "Café cafe", want: []string{UNK, "cafe"}},
		{name: "bert processing", edit: func(m map[string]any) {
			m["post_processor"] = map[string]any{"type": "BertProcessing", "sep": []any{SEP, 3}, "cls": []any{CLS, 2}}
		}, text: "hello", want: []string{"hello"}},
		{name: "added token", edit: func(m map[string]any) {
			m["added_tokens"] = append(m["added_tokens"].([]any), map[string]any{"id": 17, "content": "<tool>", "special": true})
		}, text: "hello<tool>world", want: []string{"hello", "<tool>", "world"}},
		{name: "wordlevel", edit: func(m map[string]any) { model(m)["type"] = "WordLevel" }, err: `model type "WordLevel" is not supported`},
		{name: "bpe with a subword prefix", edit: func(m map[string]any) { model(m)["type"] = "BPE" }, err: `continuing_subword_prefix "##" is not supported`},
		{name: "normalizer", edit: func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFC"} }, err: `normalizer "NFC"`},
		{name: "pretokenizer", edit: func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, err: `pre_tokenizer "Whitespace"`},
		{name: "no post", edit: func(m map[string]any) { m["post_processor"] = nil }, err: "post_processor: missing"},
		{name: "roberta", edit: func(m map[string]any) { m["post_processor"] = map[string]any{"type": "RobertaProcessing"} }, err: `RobertaProcessing cls: want [token, id]`},
		{name: "bad cls id", edit: func(m map[string]any) {
			m["post_processor"] = map[string]any{"type": "BertProcessing", "sep": []any{SEP, 3}, "cls": []any{CLS, 7}}
		}, err: `token "[CLS]" has id 7, vocab id 2`},
		{name: "template", edit: func(m map[string]any) {
			pp := m["post_processor"].(map[string]any)
			pp["single"] = pp["single"].([]any)[:2]
		}, err: "single template"},
		{name: "unk", edit: func(m map[string]any) { model(m)["unk_token"] = "<unk>" }, err: `unk_token "<unk>" not in the vocabulary`},
		{name: "gap", edit: func(m map[string]any) { model(m)["vocab"].(map[string]any)["hello"] = 40 }, err: `token "hello" has id 40 outside [0, 17)`},
		{name: "dup id", edit: func(m map[string]any) { model(m)["vocab"].(map[string]any)["hello"] = 6 }, err: "id 6 used by"},
		{name: "no sep", edit: func(m map[string]any) {
			v := model(m)["vocab"].(map[string]any)
			delete(v, SEP)
			v["[SEP2]"] = 3
			m["added_tokens"] = nil
		}, err: "no [SEP] token"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "tokenizer.json"), jsonFor(t, c.edit), 0o644)
		tok, err := Load(dir)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "tokenizer.json") {
				t.Errorf("%s: error %v, want %q naming the file", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := tok.Tokens(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Tokens(%q) = %v, want %v", c.name, c.text, got, c.want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("truncated JSON: error %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("empty dir: no error")
	}
}

func TestLoadVocabConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(testTokenizer(t).Vocab(), "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"do_lower_case": false}`), 0o644)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokens("Hello hello"); !reflect.DeepEqual(got, []string{UNK, "hello"}) {
		t.Errorf("cased: %v", got)
	}
}

// refBuildVocab is the direct (slow) form of BuildVocab's merge loop: every step recounts
// all pairs and takes the best one.
func refBuildVocab(texts []string, size, minFreq int, likelihood bool) []string {
	norm := &Tokenizer{lower: true, stripAccents: true, chineseChars: true, cleanText: true}
	freq := map[string]int{}
	for _, s := range texts {
		for _, w := range preTokenize(norm.normalize(s)) {
			freq[w]++
		}
	}
	type word struct {
		p []string
		f int
	}
	var words []word
	chars := map[string]bool{}
	for w, f := range freq {
		var p []string
		for i, r := range []rune(w) {
			s := string(r)
			if i > 0 {
				s = "##" + s
			}
			p = append(p, s)
			chars[s] = true
		}
		words = append(words, word{p, f})
	}
	vocab := []string{PAD, UNK, CLS, SEP, MASK}
	var cs []string
	for c := range chars {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	vocab = append(vocab, cs...)
	in := map[string]bool{}
	for _, v := range vocab {
		in[v] = true
	}
	for len(vocab) < size {
		unit, pair := map[string]int{}, map[[2]string]int{}
		for _, w := range words {
			for i, p := range w.p {
				unit[p] += w.f
				if i > 0 {
					pair[[2]string{w.p[i-1], p}] += w.f
				}
			}
		}
		var best [2]string
		bs, bc := -1.0, 0
		for pr, c := range pair {
			if c < minFreq {
				continue
			}
			s := float64(c)
			if likelihood {
				s /= float64(unit[pr[0]]) * float64(unit[pr[1]])
			}
			if s > bs || s == bs && (c > bc || c == bc && (pr[0] < best[0] || pr[0] == best[0] && pr[1] < best[1])) {
				best, bs, bc = pr, s, c
			}
		}
		if bs < 0 {
			break
		}
		m := best[0] + strings.TrimPrefix(best[1], "##")
		if !in[m] {
			in[m] = true
			vocab = append(vocab, m)
		}
		for wi := range words {
			var out []string
			p := words[wi].p
			for i := 0; i < len(p); i++ {
				if i+1 < len(p) && p[i] == best[0] && p[i+1] == best[1] {
					out = append(out, m)
					i++
				} else {
					out = append(out, p[i])
				}
			}
			words[wi].p = out
		}
	}
	return vocab
}

func TestBuildVocabMatchesReference(t *testing.T) {
	syll := []string{"ka", "ro", "mi", "tu", "sel", "an", "do", "re", "ba", "lo", "ne", "ti"}
	var texts []string
	x := uint32(7)
	for i := 0; i < 300; i++ {
		var ws []string
		for j := 0; j < 5; j++ {
			var w string
			for k := 0; k < 1+int(x>>28)%4; k++ {
				x = x*1664525 + 1013904223
				w += syll[(x>>24)%uint32(len(syll))]
			}
			ws = append(ws, w)
		}
		texts = append(texts, strings.Join(ws, " ")+".")
	}
	for _, size := range []int{30, 60, 120, 400} {
		for _, o := range []VocabOptions{{1, true, false}, {3, true, false}, {1, true, true}, {3, true, true}} {
			got, err := BuildVocabWith(texts, size, o)
			if err != nil {
				t.Fatal(err)
			}
			if want := refBuildVocab(texts, size, o.MinFreq, o.Likelihood); !reflect.DeepEqual(got, want) {
				t.Errorf("size %d %+v: got %d tokens %v\nwant %d %v", size, o, len(got), got, len(want), want)
			}
		}
	}
	if _, err := BuildVocab(texts, 5, 1, true); err == nil {
		t.Error("size 5: no error")
	}
	// An alphabet larger than the budget keeps the most frequent characters.
	v, _ := BuildVocab([]string{"aaa b"}, 7, 1, true)
	if want := []string{PAD, UNK, CLS, SEP, MASK, "##a", "a"}; !reflect.DeepEqual(v, want) {
		t.Errorf("small budget: %v, want %v", v, want)
	}
}

// toollensQueries reads the ToolLens query texts, skipping the test when they are absent.
func toollensQueries(tb testing.TB) []string {
	tb.Helper()
	f, err := os.Open("../../shared/datasets/toollens/queries.jsonl")
	if err != nil {
		tb.Skipf("ToolLens absent: %v", err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("queries.jsonl:%d: %v", n, err)
		}
		texts = append(texts, q.Text)
	}
	return texts
}

func TestBuildVocabToolLens(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	texts := toollensQueries(t)
	start := time.Now()
	vocab, err := BuildVocab(texts, 8000, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	tok, err := New(vocab, true)
	if err != nil {
		t.Fatal(err)
	}
	unk, n, words := 0, 0, 0
	for _, s := range texts {
		words += len(preTokenize(tok.normalize(s)))
		for _, id := range tok.Encode(s) {
			n++
			if id == tok.UNKID() {
				unk++
			}
		}
	}
	t.Logf("%d queries: vocab %d in %v; %d words, %d tokens, %d [UNK] (%.3f%%)", len(texts), len(vocab), took, words, n, unk, 100*float64(unk)/float64(n))
	if len(vocab) != 8000 || float64(unk) > 0.001*float64(n) {
		t.Errorf("vocab %d, %d/%d [UNK]", len(vocab), unk, n)
	}
	// Frequent words are whole tokens: few pieces per word.
	if float64(n) > 1.15*float64(words) {
		t.Errorf("%d tokens for %d words", n, words)
	}
	if took > 30*time.Second {
		t.Errorf("BuildVocab took %v", took)
	}
}

func BenchmarkPad(b *testing.B) {
	texts := toollensQueries(b)[:1024]
	p, _ := filepath.Abs("../../shared/vocab/bert-base-uncased-vocab.txt")
	tok, err := FromVocab(p, true)
	if err != nil {
		b.Skip(err)
	}
	b.ResetTimer()
	for b.Loop() {
		seqs := make([][]int32, len(texts))
		for i, s := range texts {
			seqs[i] = tok.Single(s, 128)
		}
		for i := 0; i < len(seqs); i += 64 {
			tok.Pad(seqs[i:min(i+64, len(seqs))], nil, 128)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts)), "ns/text")
}

func ExampleTokenizer_Pad() {
	tok, _ := New([]string{PAD, UNK, CLS, SEP, MASK, "find", "a", "flight", "weather"}, true)
	b := tok.Pad([][]int32{tok.Single("find a flight", 16), tok.Single("weather", 16)}, nil, 16)
	fmt.Println(b.Len, b.IDs, b.Mask)
	// Output: 8 [[2 5 6 7 3 0 0 0] [2 8 3 0 0 0 0 0]] [[1 1 1 1 1 0 0 0] [1 1 1 0 0 0 0 0]]
}
