// Package store keeps an exported index directory with a live tool library: tool updates
// appended to an fsynced log (updates.log) and compacted back into the index files (Open),
// or committed to a Journal that several servers share (OpenShared; package pgstore is the
// PostgreSQL Journal). It sits above toolindex and below its users: serve answers HTTP and
// MCP requests over a Store, the gateway syncs its library into one, and toolret's
// UpdateIndex brings an index to a dataset through one.
package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolret/toolret/export"
	"github.com/toolret/toolret/internal/jsonfile"
	"github.com/toolret/toolret/models/biencoder"
	"github.com/toolret/toolret/toolindex"
)

// Files of the live tool library inside an index directory.
const (
	// LogFile is the append-only log of tool updates not yet compacted into the index: one
	// record a line, "CRC32C(hex) JSON", fsynced before the update is acknowledged.
	LogFile = "updates.log"
	// compactDir holds a compaction under way; its READY file marks it complete, to be
	// installed (renamed into the index) on the next start if the process died installing it.
	compactDir = ".compact"
	readyFile  = "READY"
	// VersionKey is the tools.safetensors metadata key of the library version compacted
	// into the index (absent: 0, the index as exported).
	VersionKey = export.IndexVersionKey
	// maxLogLine bounds one log record (a write request's tools and embeddings).
	maxLogLine = 1 << 30
)

// Store errors; serve maps them to HTTP status codes.
var (
	ErrInvalid  = errors.New("invalid update")
	ErrNotFound = errors.New("no such tool")
	ErrLastTool = errors.New("the library cannot become empty")
	ErrNoTower  = errors.New("this index cannot embed tools") // no tool tower, an MLC's labels, an ensemble
	ErrFailed   = errors.New("tool updates disabled")
)

// Store is an index directory served with live tool updates: an Index whose library is
// the index plus the updates in LogFile. An update is appended to the log and fsynced before
// the new library is published (Index.SetLibrary) and acknowledged; every CompactEvery
// records the library is written back into the index (tools.safetensors, tools.jsonl,
// manifest.json) through a complete copy in .compact/ renamed into place, and the log
// emptied. Open recovers from a crash at any point: a torn last log record is dropped (it
// was never acknowledged), a complete compaction is finished, an incomplete one discarded.
//
// Updates are serialised; queries never wait for them.
type Store struct {
	R            *toolindex.Index
	dir          string
	CompactEvery int // log records that trigger a compaction (<= 0: only at Close)

	mu      sync.Mutex // serialises updates, compactions and Close
	log     *os.File
	size    int64 // bytes of valid records in the log
	failed  error // set when the log or the index may no longer match the library
	closed  bool
	pending atomic.Int64 // records in the log
	compact atomic.Int64 // compactions done
	updates atomic.Int64 // tools put or deleted

	compactFails atomic.Int64
	compactErr   atomic.Pointer[error]
	data         *dataSource // set by Sync
	shared       *shared     // the library's Journal (OpenShared); nil: the files of dir
}

// Open recovers and opens the index directory dir with its update log. opts configure the
// retriever (backend, reranker).
func Open(dir string, compactEvery int, opts ...toolindex.Option) (s *Store, err error) {
	p := filepath.Join(dir, LogFile)
	if _, err := export.ReadManifest(dir); err != nil { // a run directory: "export it first"
		return nil, fmt.Errorf("store: index %s: %w", dir, err)
	}
	_, statErr := os.Stat(p)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := lockLog(f); err != nil {
		return nil, err
	}
	if err := recoverCompaction(dir); err != nil {
		return nil, err
	}
	r, lib, base, err := loadBase(dir, opts...)
	if err != nil {
		return nil, err
	}
	s = &Store{R: r, dir: dir, CompactEvery: compactEvery}
	recs, valid, err := readLog(p, r.Dim())
	if err != nil {
		return nil, err
	}
	n := 0
	for _, rec := range recs {
		if rec.Seq <= base {
			continue // compacted into the index before a crash emptied the log
		}
		if rec.Seq != lib.Version+1 {
			return nil, fmt.Errorf("store: %s: record of version %d follows version %d (records missing)", p, rec.Seq, lib.Version)
		}
		put, emb := rec.tools()
		if lib, err = lib.With(rec.Seq, put, emb, rec.Delete); err != nil {
			return nil, fmt.Errorf("store: %s: version %d: %w", p, rec.Seq, err)
		}
		n++
	}
	if err := r.SetLibrary(lib); err != nil {
		return nil, err
	}
	// Drop a torn last record (written, never acknowledged) so that appends follow the last
	// complete one; drop the whole log when every record is in the index already (a crash
	// between installing a compaction and emptying the log), as the compaction would have.
	if n == 0 {
		valid = 0
	}
	if err := f.Truncate(valid); err != nil {
		return nil, fmt.Errorf("store: %s: %w", p, err)
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		return nil, fmt.Errorf("store: %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", p, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	}
	s.log, s.size = f, valid
	s.pending.Store(int64(n))
	return s, nil
}

// baseVersion is the library version compacted into r's index.
func baseVersion(r *toolindex.Index) (uint64, error) {
	v, ok := r.Metadata()[VersionKey]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s metadata %s = %q: %w", export.IndexEmbeddings, VersionKey, v, err)
	}
	return n, nil
}

// Dir is the index directory.
func (s *Store) Dir() string { return s.dir }

// Pending is the number of records in the update log.
func (s *Store) Pending() int64 { return s.pending.Load() }

// Compactions is the number of compactions this Store has done.
func (s *Store) Compactions() int64 { return s.compact.Load() }

// Updates is the number of tools put or deleted through this Store.
func (s *Store) Updates() int64 { return s.updates.Load() }

// logTool is a tool of a log record: its record and embedding (little-endian float32).
type logTool struct {
	export.ToolRecord
	Emb []byte `json:"emb"`
}

// logRecord is one update: the library version it makes, the tools put and the ids deleted.
type logRecord struct {
	Seq    uint64    `json:"seq"`
	Put    []logTool `json:"put,omitempty"`
	Delete []string  `json:"delete,omitempty"`
}

func (r *logRecord) tools() ([]export.ToolRecord, [][]float32) {
	put := make([]export.ToolRecord, len(r.Put))
	emb := make([][]float32, len(r.Put))
	for i, t := range r.Put {
		put[i] = t.ToolRecord
		emb[i] = make([]float32, len(t.Emb)/4)
		for j := range emb[i] {
			emb[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(t.Emb[4*j:]))
		}
	}
	return put, emb
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord returns the log line of rec.
func encodeRecord(rec *logRecord) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(b)+10)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(b, castagnoli))
	line = append(line, b...)
	return append(line, '\n'), nil
}

// readLog reads the records of the log at p (absent: none) and the length of its valid
// prefix. A damaged last record — cut short or failing its checksum — is a write the crash
// interrupted and is left out; damage before the last record is an error.
func readLog(p string, dim int) ([]*logRecord, int64, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var recs []*logRecord
	var valid int64
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		var full []byte
		for errors.Is(err, bufio.ErrBufferFull) && len(full)+len(b) < maxLogLine {
			full = append(full, b...)
			b, err = br.ReadSlice('\n')
		}
		if full != nil {
			b = append(full, b...)
		}
		switch {
		case err == io.EOF:
			return recs, valid, nil // the end, or a last line cut short by a crash
		case errors.Is(err, bufio.ErrBufferFull):
			return nil, 0, fmt.Errorf("store: %s:%d: record longer than %d bytes", p, line, maxLogLine)
		case err != nil:
			return nil, 0, fmt.Errorf("store: %s: %w", p, err)
		}
		rec, perr := parseRecord(b, dim)
		if perr != nil {
			if _, more := br.Peek(1); more != nil {
				return recs, valid, nil // the damaged last record of an interrupted write
			}
			return nil, 0, fmt.Errorf("store: %s:%d: damaged record before the end of the log (%v); the log cannot be replayed", p, line, perr)
		}
		recs = append(recs, rec)
		valid += int64(len(b))
	}
}

// parseRecord checks and decodes one log line (with its newline).
func parseRecord(b []byte, dim int) (*logRecord, error) {
	if len(b) < 10 || b[8] != ' ' || b[len(b)-1] != '\n' {
		return nil, errors.New("malformed line")
	}
	sum, err := strconv.ParseUint(string(b[:8]), 16, 32)
	if err != nil {
		return nil, errors.New("malformed checksum")
	}
	body := b[9 : len(b)-1]
	if uint32(sum) != crc32.Checksum(body, castagnoli) {
		return nil, errors.New("checksum mismatch")
	}
	var rec logRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, err
	}
	for _, t := range rec.Put {
		if len(t.Emb) != 4*dim {
			return nil, fmt.Errorf("tool %q: %d embedding bytes, want %d", t.ID, len(t.Emb), 4*dim)
		}
	}
	return &rec, nil
}

// CheckTool reports what is wrong with a tool record to be put (nil: nothing).
func CheckTool(t export.ToolRecord) error {
	switch {
	case strings.TrimSpace(t.ID) == "":
		return errors.New(`"id" is empty`)
	case len(t.ID) > 256:
		return fmt.Errorf(`"id" has %d bytes, at most 256`, len(t.ID))
	case strings.IndexFunc(t.ID, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf(`"id" %q has control characters`, t.ID)
	case strings.TrimSpace(t.Text) == "":
		return errors.New(`"text" is empty`)
	}
	for _, f := range []string{t.ID, t.Title, t.Text, t.Category, t.ToolName, t.APIName} {
		if !utf8.ValidString(f) {
			return errors.New("invalid UTF-8")
		}
	}
	return nil
}

// Update puts tools (adding them, or replacing the tools of the same ids) and deletes the
// tools of the ids in del, as one new library version: durable (logged and fsynced) when it
// returns. Tools are embedded with the tool tower first; ids in del must exist. It returns
// the new library and the one it replaced.
func (s *Store) Update(put []export.ToolRecord, del []string) (next, prev *toolindex.Library, err error) {
	if len(put) == 0 && len(del) == 0 {
		return nil, nil, fmt.Errorf("%w: nothing to put or delete", ErrInvalid)
	}
	seen := map[string]int{}
	for i, t := range put {
		if err := CheckTool(t); err != nil {
			return nil, nil, fmt.Errorf("%w: tools[%d]: %v", ErrInvalid, i, err)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, nil, fmt.Errorf("%w: tools[%d]: id %q repeats tools[%d]", ErrInvalid, i, t.ID, j)
		}
		seen[t.ID] = i
	}
	for _, id := range del {
		if _, dup := seen[id]; dup {
			return nil, nil, fmt.Errorf("%w: tool %q both put and deleted", ErrInvalid, id)
		}
		seen[id] = -1
	}
	if err := s.sharedErr(); err != nil {
		return nil, nil, err // fail fast, before embedding
	}
	var emb [][]float32
	if len(put) > 0 {
		if err := s.R.CanEmbedTools(); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrNoTower, err)
		}
		texts := make([]string, len(put))
		for i, t := range put {
			texts[i] = t.Text
		}
		if emb, err = s.R.Embed(biencoder.ToolTower, texts); err != nil {
			return nil, nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, nil, err
	}
	if s.shared != nil {
		return s.sharedUpdate(put, emb, del)
	}
	cur := s.R.Library()
	if next, err = nextLibrary(cur, put, emb, del); err != nil {
		return nil, nil, err
	}
	rec := &logRecord{Seq: next.Version, Delete: del}
	for i, t := range put {
		b := make([]byte, 4*len(emb[i]))
		for j, v := range emb[i] {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
		}
		rec.Put = append(rec.Put, logTool{ToolRecord: t, Emb: b})
	}
	if err := s.append(rec); err != nil {
		return nil, nil, err
	}
	if err := s.R.SetLibrary(next); err != nil {
		s.failed = err
		return nil, nil, err
	}
	s.pending.Add(1)
	s.updates.Add(int64(len(put) + len(del)))
	if s.CompactEvery > 0 && s.pending.Load() >= int64(s.CompactEvery) {
		// The update is durable already; a failed compaction leaves the log to replay.
		if err := s.compactLocked(); err != nil {
			s.compactFails.Add(1)
			s.compactErr.Store(&err)
		}
	}
	return next, cur, nil
}

// Sync makes the library hold exactly tools, as one update: tools that are new or whose
// record differs are put (embedded with the tool tower), tools whose ids are not in tools are
// deleted. The next compaction records dataFingerprint and source as the index's data. It
// returns how many tools were added, changed and deleted (all 0: nothing to do).
func (s *Store) Sync(tools []export.ToolRecord, dataFingerprint, source string) (added, changed, deleted int, err error) {
	if s.shared != nil {
		s.catchUp() // diff against the latest version; an unreachable journal fails the update below
	}
	cur := s.R.Library()
	want := make(map[string]bool, len(tools))
	var put []export.ToolRecord
	for _, t := range tools {
		want[t.ID] = true
		i, ok := cur.Lookup(t.ID)
		switch {
		case !ok:
			added++
		case cur.Tool(i) != t:
			changed++
		default:
			continue
		}
		put = append(put, t)
	}
	var del []string
	for i := 0; i < cur.Len(); i++ {
		if id := cur.Tool(i).ID; !want[id] {
			del = append(del, id)
		}
	}
	deleted = len(del)
	s.mu.Lock()
	s.data = &dataSource{dataFingerprint, source}
	s.mu.Unlock()
	if len(put) == 0 && len(del) == 0 {
		return 0, 0, 0, nil
	}
	if _, _, err := s.Update(put, del); err != nil {
		return 0, 0, 0, err
	}
	return added, changed, deleted, nil
}

// dataSource is the dataset an index was synced to (Sync).
type dataSource struct{ fingerprint, source string }

// CompactionError returns the number of failed compactions and the last error (the updates
// that triggered them succeeded: they stay in the log).
func (s *Store) CompactionError() (int64, error) {
	if e := s.compactErr.Load(); e != nil {
		return s.compactFails.Load(), *e
	}
	return 0, nil
}

func (s *Store) usable() error {
	if s.closed {
		return fmt.Errorf("%w: the store is closed", ErrFailed)
	}
	if s.failed != nil {
		return fmt.Errorf("%w after an error (restart the server to recover): %v", ErrFailed, s.failed)
	}
	return nil
}

// append writes rec to the log and fsyncs it. On failure the log is cut back to its last
// complete record; if that fails too, updates are disabled until a restart replays the log.
func (s *Store) append(rec *logRecord) error {
	line, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if len(line) > maxLogLine {
		return fmt.Errorf("%w: update of %d bytes is larger than a log record may be (%d)", ErrInvalid, len(line), maxLogLine)
	}
	if err := testHook("append"); err != nil {
		return err
	}
	_, err = s.log.Write(line)
	if err == nil {
		err = s.log.Sync()
	}
	if err != nil {
		err = fmt.Errorf("store: %s: %w", filepath.Join(s.dir, LogFile), err)
		// After a failed fsync the file's state is unknown: stop taking updates.
		s.failed = err
		return fmt.Errorf("%w: %v", ErrFailed, err)
	}
	s.size += int64(len(line))
	return nil
}

// Compact writes the current library into the index and empties the log.
func (s *Store) Compact() error {
	if s.shared != nil {
		return nil // the journal holds the library
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	return s.compactLocked()
}

// Close compacts pending updates into the index and closes the log. The Index still
// answers queries from the last library.
func (s *Store) Close() error {
	if s.shared != nil {
		return s.closeShared()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if s.failed == nil && s.pending.Load() > 0 {
		err = s.compactLocked()
	}
	s.closed = true
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	return err
}

// compactLocked writes the library into .compact/ (index files, manifest, then READY, all
// fsynced) and installs it (installCompaction). s.mu is held.
func (s *Store) compactLocked() error {
	lib := s.R.Library()
	tmp := filepath.Join(s.dir, compactDir)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.writeCompaction(tmp, lib); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := testHook("installed"); err != nil {
		return err
	}
	if err := installCompaction(s.dir); err != nil {
		// Half the index may be renamed: only a restart (recoverCompaction) repairs it.
		s.failed = err
		return err
	}
	// Every logged record is in the index now (and would be skipped on replay).
	if err := testHook("truncate"); err != nil {
		return err
	}
	if err := s.log.Truncate(0); err != nil {
		s.failed = err
		return fmt.Errorf("store: compact: %w", err)
	}
	if _, err := s.log.Seek(0, io.SeekStart); err != nil {
		s.failed = err
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := s.log.Sync(); err != nil {
		s.failed = err
		return fmt.Errorf("store: compact: %w", err)
	}
	s.size = 0
	s.pending.Store(0)
	s.compact.Add(1)
	s.data = nil // later updates are live updates again
	return nil
}

// writeCompaction writes lib's index files and manifest into tmp, fsynced, then READY.
func (s *Store) writeCompaction(tmp string, lib *toolindex.Library) error {
	tools := make([]export.ToolRecord, lib.Len())
	emb := make([][]float32, lib.Len())
	for i := range tools {
		tools[i], emb[i] = lib.Tool(i), lib.Embedding(i)
	}
	meta := maps.Clone(s.R.Metadata())
	if meta == nil {
		meta = map[string]string{}
	}
	meta[VersionKey] = strconv.FormatUint(lib.Version, 10)
	if s.data != nil {
		meta["data_fingerprint"] = s.data.fingerprint
	}
	// An MLC index's per-tool bias goes with its rows (nil for a bi-encoder's: the same files).
	if err := export.WriteIndexFilesBias(tmp, tools, emb, lib.Bias(), meta); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := testHook("files"); err != nil {
		return err
	}
	man, err := export.ReadManifest(s.dir)
	if err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	files := maps.Clone(man.Files)
	for _, name := range []string{export.IndexEmbeddings, export.IndexTools} {
		p := filepath.Join(tmp, name)
		sum, err := syncAndHash(p)
		if err != nil {
			return fmt.Errorf("store: compact: %w", err)
		}
		files[name] = sum
	}
	man.Files, man.Tools = files, lib.Len()
	if s.data != nil {
		man.DataFingerprint, man.DataSource = s.data.fingerprint, s.data.source
	} else {
		src, _, _ := strings.Cut(man.DataSource, " + live updates")
		man.DataSource = fmt.Sprintf("%s + live updates to version %d", src, lib.Version)
	}
	if err := jsonfile.Write(filepath.Join(tmp, export.ManifestFile), man); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := testHook("manifest"); err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, readyFile), nil); err != nil {
		return err
	}
	return syncDir(tmp)
}

// compactedFiles are the files a compaction replaces, in installation order.
var compactedFiles = []string{export.IndexEmbeddings, export.IndexTools, export.ManifestFile}

// installCompaction renames the files of a complete compaction (READY present) into the
// index, fsyncs the directory and removes .compact/. Renaming files already moved is
// skipped, so it can be repeated after a crash.
func installCompaction(dir string) error {
	tmp := filepath.Join(dir, compactDir)
	for i, name := range compactedFiles {
		err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: install compaction: %w", err)
		}
		if err := testHook("rename" + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("store: install compaction: %w", err)
	}
	return syncDir(dir)
}

// recoverCompaction finishes a complete compaction that a crash interrupted and discards an
// incomplete one.
func recoverCompaction(dir string) error {
	tmp := filepath.Join(dir, compactDir)
	if _, err := os.Stat(filepath.Join(tmp, readyFile)); err == nil {
		return installCompaction(dir)
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("store: discard incomplete compaction: %w", err)
	}
	return nil
}

// testHook, when set by a test, is called at each step of an update and of a compaction;
// an error stops it there as a crash would.
var testHookFn func(step string) error

func testHook(step string) error {
	if testHookFn == nil {
		return nil
	}
	return testHookFn(step)
}

func syncAndHash(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSynced creates p with b and fsyncs it.
func writeSynced(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := io.Copy(f, bytes.NewReader(b)); err != nil {
		f.Close()
		return fmt.Errorf("store: %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store: %s: %w", p, err)
	}
	return f.Close()
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// nextLibrary is cur's next version: the tools of put (embeddings emb) added or replaced and
// those of del removed. A del id that cur lacks is ErrNotFound, an invalid tool ErrInvalid, an
// empty result ErrLastTool.
func nextLibrary(cur *toolindex.Library, put []export.ToolRecord, emb [][]float32, del []string) (*toolindex.Library, error) {
	for _, id := range del {
		if _, ok := cur.Lookup(id); !ok {
			return nil, fmt.Errorf("%w %q in the library", ErrNotFound, id)
		}
	}
	next, err := cur.With(cur.Version+1, put, emb, del)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if next.Len() == 0 {
		return nil, fmt.Errorf("%w: deleting the last %d tools would leave it empty", ErrLastTool, cur.Len())
	}
	return next, nil
}

// Healthy returns nil while the store takes updates, else why not (closed, or disabled by a
// failed write of the log or the index). A store busy compacting counts as healthy.
func (s *Store) Healthy() error {
	if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	return s.usable()
}

// loadBase loads the index at dir and its library at the base version the index records
// and that version (what Open and OpenShared start from before replaying updates).
func loadBase(dir string, opts ...toolindex.Option) (*toolindex.Index, *toolindex.Library, uint64, error) {
	r, err := toolindex.Load(dir, opts...)
	if err != nil {
		return nil, nil, 0, err
	}
	base, err := baseVersion(r)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("store: index %s: %w", dir, err)
	}
	lib, err := r.Library().With(base, nil, nil, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	return r, lib, base, nil
}
