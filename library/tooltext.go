package library

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Budgets of the default tool text (DefaultTemplate), in characters (runes). A model reads
// the first 256 or so tokens of a text (about 1,000 characters of English): the budgets keep
// the description's first sentences and the parameters that say what the tool needs within
// that, whatever the source writes.
const (
	// SummaryBudget bounds TextData.Summary: the cleaned description is cut at the last
	// sentence end before it (at a word when no sentence ends in its second half).
	SummaryBudget = 400
	// ArgBudget bounds one parameter's description in TextData.Args (its first sentence,
	// cut at a word).
	ArgBudget = 100
	// ArgsBudget bounds TextData.Args: parameters are listed in schema order until the next
	// would pass it (the first is always listed).
	ArgsBudget = 600
	// MaxEnum is the longest enumeration shown as a parameter's values ("open|closed|all");
	// a longer one is left out of the text (the schema keeps it).
	MaxEnum = 8
)

// ToolText returns t's retrieval text under DefaultTemplate: the text every library path
// embeds unless the library names a template of its own (Library.Template).
func ToolText(t Tool) string {
	s, err := defaultTemplate.Text(t)
	if err != nil {
		// DefaultTemplate names only fields TextData has; Execute cannot fail on it.
		panic(err)
	}
	return s
}

var defaultTemplate = mustParse(DefaultTemplate)

func mustParse(src string) *Template {
	tp, err := ParseTemplate(src)
	if err != nil {
		panic(err)
	}
	return tp
}

// Summarize returns the tool's description as the default text gives it: the title first when
// the description does not start with it, paragraphs that are OpenAPI boilerplate left out
// (Boilerplate), Markdown reduced to its words (links to their text, emphasis, code marks,
// headings and HTML tags dropped), white space collapsed, within SummaryBudget, ending in a
// period when it has no final punctuation.
func Summarize(title, description string) string {
	paras := paragraphs(description)
	var kept []string
	for i, p := range paras {
		if i > 0 && BoilerplateParagraph(p) {
			continue
		}
		if p = plainText(p); p != "" {
			kept = append(kept, p)
		}
	}
	title = plainText(title)
	if title != "" && (len(kept) == 0 || !strings.HasPrefix(strings.ToLower(kept[0]), strings.ToLower(strings.TrimRight(title, ".!?:")))) {
		kept = append([]string{title}, kept...)
	}
	s := budget(joinSentences(kept), SummaryBudget, true)
	if s != "" && !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}

// ArgList returns parameters ps as the default text lists them, each "name (type, required):
// first sentence of its description", with an enumeration of at most MaxEnum values as the
// type ("state (open|closed|all)"), joined by "; " within ArgsBudget.
func ArgList(ps []Property) string {
	var b strings.Builder
	for _, p := range ps {
		var attrs []string
		switch {
		case len(p.Enum) > 0 && len(p.Enum) <= MaxEnum:
			attrs = append(attrs, strings.Join(p.Enum, "|"))
		case p.Type != "":
			attrs = append(attrs, p.Type)
		}
		if p.Required {
			attrs = append(attrs, "required")
		}
		s := p.Name
		if len(attrs) > 0 {
			s += " (" + strings.Join(attrs, ", ") + ")"
		}
		if d := strings.TrimRight(budget(firstSentence(plainText(p.Description)), ArgBudget, false), ".;: "); d != "" {
			s += ": " + d
		}
		if b.Len() > 0 {
			if utf8.RuneCountInString(b.String())+2+utf8.RuneCountInString(s) > ArgsBudget {
				break
			}
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// TextParams returns the properties of t's input schema the default text lists: all of them,
// less an OpenAPI operation's boilerplate parameters (BoilerplateParam).
func TextParams(t Tool, ps []Property) []Property {
	if t.Source.Kind != KindOpenAPI {
		return ps
	}
	in := make(map[string]Param, len(t.Source.Params))
	for _, p := range t.Source.Params {
		in[p.Prop()] = p
	}
	out := make([]Property, 0, len(ps))
	for _, p := range ps {
		if q, ok := in[p.Name]; ok && BoilerplateParam(q, p.Description) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Standard request headers: an operation that declares one says how to call the API, not what
// the operation does.
var standardHeaders = map[string]bool{
	"accept": true, "accept-charset": true, "accept-encoding": true, "accept-language": true,
	"authorization": true, "proxy-authorization": true, "cache-control": true, "content-type": true,
	"content-length": true, "content-encoding": true, "content-language": true, "cookie": true,
	"if-match": true, "if-none-match": true, "if-modified-since": true, "if-unmodified-since": true,
	"prefer": true, "user-agent": true, "x-api-key": true, "api-key": true, "apikey": true,
	"x-request-id": true, "x-correlation-id": true, "x-requested-with": true, "idempotency-key": true,
}

// x-github-api-version, x-api-version, api-version, x-ms-version, ...
var versionHeader = regexp.MustCompile(`(?i)^(x-)?([a-z0-9]+-)*(api-)?version$`)

// Credentials passed in the query string.
var authQuery = map[string]bool{"apikey": true, "accesstoken": true, "authtoken": true}

// Query parameters that page through results whatever their description says, names
// lower-cased without '_' and '-'.
var pagingNames = map[string]bool{
	"page": true, "perpage": true, "pagesize": true, "pagenumber": true, "pagenum": true,
	"cursor": true, "pagetoken": true, "nextpagetoken": true, "nexttoken": true,
	"continuationtoken": true, "startingafter": true, "endingbefore": true,
}

// Query parameters that page through results when their description says so.
var maybePagingNames = map[string]bool{
	"limit": true, "offset": true, "after": true, "before": true, "skip": true, "top": true,
	"size": true, "count": true, "maxresults": true, "start": true,
}

var pagingDescription = regexp.MustCompile(`(?i)\b(pages?|paginat\w*|cursor)\b|\b(number|max(imum)?|how many)\b[^.]*\b(results|items|records|entries|rows|objects|elements)\b|\b(results|items|records|entries|rows|objects|elements)\b[^.]*\b(return|skip|per)\b`)

// BoilerplateParam reports whether OpenAPI parameter p (description desc) is one the default
// text leaves out: a standard header (Accept, Authorization, Content-Type, User-Agent, the
// conditional and caching ones, an API key, an API version such as X-GitHub-Api-Version), a
// credential in the query (api_key, access_token), or a generic pagination parameter in the
// query (page, per_page, page_size, cursor, page_token, starting_after, ... by name; limit,
// offset, after, before, skip, top, size, count, max_results, start when desc speaks of pages,
// a cursor or a number of results).
func BoilerplateParam(p Param, desc string) bool {
	name := strings.ToLower(p.Name)
	flat := strings.NewReplacer("_", "", "-", "").Replace(name)
	switch p.In {
	case InHeader:
		return standardHeaders[name] || versionHeader.MatchString(name)
	case InQuery:
		if authQuery[flat] {
			return true
		}
		if pagingNames[flat] {
			return true
		}
		return maybePagingNames[flat] && pagingDescription.MatchString(desc)
	}
	return false
}

var (
	blankLine    = regexp.MustCompile(`\n[ \t]*\n`)
	mediaType    = regexp.MustCompile(`(?i)\b(media[- ]types?|content[- ]types?)\b|\b(application|text|image|audio|video|multipart)/[a-z0-9.+-]+`)
	accessPara   = regexp.MustCompile(`(?i)\b(access tokens?|oauth|fine-grained (personal access )?tokens?|scopes?|rate limit(s|ing)?)\b`)
	endpointPara = regexp.MustCompile(`(?i)\bth(is|e) endpoint\b`)
	accessWords  = regexp.MustCompile(`(?i)\b(access|permissions?|authenticated|authenticate|tokens?|administrator|admin)\b`)
)

// BoilerplateParagraph reports whether a paragraph of a description (after its first one,
// which is always kept) is one the default text leaves out: a block quote (GitHub's
// "> [!NOTE]" notes and warnings), one about media types (a custom media type list, "This
// endpoint supports the following custom media types"), or one about access (tokens, OAuth
// scopes, rate limits, who may use "this endpoint").
func BoilerplateParagraph(p string) bool {
	p = strings.TrimSpace(p)
	switch {
	case strings.HasPrefix(p, ">"):
		return true
	case mediaType.MatchString(p):
		return true
	case accessPara.MatchString(p):
		return true
	case endpointPara.MatchString(p) && accessWords.MatchString(p):
		return true
	}
	return false
}

func paragraphs(s string) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var out []string
	for _, p := range blankLine.Split(s, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var (
	mdImage    = regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`)
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdRefLink  = regexp.MustCompile(`\[([^\]]*)\]\[[^\]]*\]`)
	htmlTag    = regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>`)
	mdEmphasis = regexp.MustCompile("\\*\\*|__|`+")
	mdLine     = regexp.MustCompile(`(?m)^[ \t]*(#{1,6}[ \t]+|[-*+][ \t]+|>[ \t]?)`)
	space      = regexp.MustCompile(`\s+`)
)

// plainText reduces Markdown to its words on one line.
func plainText(s string) string {
	if s == "" {
		return ""
	}
	s = mdImage.ReplaceAllString(s, "")
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdRefLink.ReplaceAllString(s, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = mdEmphasis.ReplaceAllString(s, "")
	s = mdLine.ReplaceAllString(s, "")
	return strings.TrimSpace(space.ReplaceAllString(s, " "))
}

// joinSentences joins paragraphs into one line, ending each that has no final punctuation
// with a period.
func joinSentences(ps []string) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			if !strings.ContainsAny(ps[i-1][len(ps[i-1])-1:], ".!?:;") {
				b.WriteByte('.')
			}
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

func firstSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if sentenceEnd(s, i) {
			return s[:i+1]
		}
	}
	return s
}

// abbreviations end in a period that does not end a sentence (lower case, without it).
var abbreviations = map[string]bool{"e.g": true, "i.e": true, "etc": true, "vs": true, "approx": true, "cf": true, "no": true, "incl": true}

// sentenceEnd reports whether s[i] ends a sentence: '.', '!' or '?' followed by a space, the
// period not that of an abbreviation (e.g., i.e., etc.) or an initial.
func sentenceEnd(s string, i int) bool {
	if i+1 >= len(s) || s[i+1] != ' ' {
		return false
	}
	switch s[i] {
	case '!', '?':
		return true
	case '.':
		w := s[strings.LastIndexByte(s[:i], ' ')+1 : i]
		return len(w) > 1 && !abbreviations[strings.ToLower(w)]
	}
	return false
}

// budget cuts s to at most n runes: at the last sentence end when sentences is set and one
// ends in the second half, else at the last space (or hard at n).
func budget(s string, n int, sentences bool) string {
	end, runes := len(s), 0
	for i := range s {
		if runes == n {
			end = i
			break
		}
		runes++
	}
	if end == len(s) {
		return s
	}
	if sentences {
		best := -1
		for i := 0; i < end; i++ {
			if sentenceEnd(s, i) {
				best = i + 1
			}
		}
		if best >= end/2 {
			return s[:best]
		}
	}
	if s[end] != ' ' {
		if i := strings.LastIndexByte(s[:end], ' '); i > 0 {
			end = i
		}
	}
	return strings.TrimRight(s[:end], " ,;:")
}
