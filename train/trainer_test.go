package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/toolret/toolret/backend"
	"github.com/toolret/toolret/checkpoints"
)

// toyTask fits y = x·w* with a hidden layer and dropout (so the RNG state matters).
type toyTask struct {
	seed    uint64
	batches int
	nanAt   int           // epoch*batches+i at which the loss becomes NaN (0 = never)
	delay   time.Duration // sleep per batch, so a child process can be killed mid-run
	calls   int           // Batch calls
	last    int           // examples of an epoch's last batch (0: 16, as the others)
}

func (t *toyTask) Loss(s *model.Scope, in []*Node) *Node {
	x, y := in[0], in[1]
	hs := s.In("hidden")
	h := hs.WithInitializer(initializer.RandomNormalFn(s, 0.5)).VariableWithShape("weights", shapes.Make(dtypes.Float32, 4, 8))
	hb := hs.WithInitializer(initializer.Zero).VariableWithShape("bias", shapes.Make(dtypes.Float32, 8))
	o := s.In("out").WithInitializer(initializer.RandomNormalFn(s, 0.5)).VariableWithShape("weights", shapes.Make(dtypes.Float32, 8, 1))
	z := Tanh(Add(MatMul(x, h.NodeValue(x.Graph())), InsertAxes(hb.NodeValue(x.Graph()), 0)))
	z = layers.DropoutStatic(s, z, 0.2)
	pred := Reshape(MatMul(z, o.NodeValue(x.Graph())), -1)
	return ReduceAllMean(Square(Sub(pred, y)))
}

func (t *toyTask) Batches(int) int { return t.batches }

func (t *toyTask) Batch(epoch, i int) ([]*tensors.Tensor, int, error) {
	time.Sleep(t.delay)
	t.calls++
	r := rand.New(rand.NewPCG(t.seed, uint64(epoch*1000+i)))
	rows := 16
	if t.last > 0 && i == t.batches-1 {
		rows = t.last
	}
	x := make([]float32, rows*4)
	y := make([]float32, rows)
	for j := range y {
		for k := 0; k < 4; k++ {
			x[j*4+k] = float32(r.NormFloat64())
		}
		y[j] = x[j*4] - 2*x[j*4+1] + 0.5*x[j*4+3]
		if t.nanAt > 0 && epoch*t.batches+i+1 >= t.nanAt {
			y[j] = float32(nan())
		}
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, rows, 4), tensors.FromFlatDataAndDimensions(y, rows)}, rows, nil
}

func nan() float64 { var z float64; return z / z }

func (t *toyTask) Evaluate(store *model.Store) (map[string]float64, error) {
	w := tensors.MustCopyFlatData[float32](store.GetVariable("/out/weights").MustValue())
	s := 0.0
	for _, v := range w {
		s += float64(v * v)
	}
	return map[string]float64{"neg_norm": -s}, nil
}

func (t *toyTask) Files() (map[string][]byte, error) {
	return map[string][]byte{"config.json": []byte(`{"kind":"toy"}`)}, nil
}

func toyConfig(dir string) Config {
	o := DefaultOptimizer()
	o.LR, o.Warmup = 0.05, 3
	return Config{RunDir: dir, Seed: 1, Epochs: 3, EvalEvery: 4, Metric: "neg_norm", KeepLast: 2, Optimizer: o, Fingerprint: "toy", Quiet: true}
}

func newToyStore() *model.Store {
	s := model.NewStore()
	s.SetParam(model.ParamInitialSeed, int64(42))
	return s
}

func weightsBytes(t *testing.T, store *model.Store) map[string][]byte {
	out := map[string][]byte{}
	for v := range store.IterVariables() {
		var b []byte
		v.MustValue().ConstBytes(func(x []byte) { b = append(b, x...) })
		out[v.Path()] = b
	}
	return out
}

// TestKillResumeBitIdentical: a run stopped after k steps (at several k, including between
// checkpoints, so work since the last checkpoint is lost as with SIGKILL) and resumed from
// its checkpoint ends with exactly the weights of an uninterrupted run.
func TestKillResumeBitIdentical(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &toyTask{seed: 5, batches: 10}
	ref := newToyStore()
	sum, err := Run(be, ref, task, toyConfig(filepath.Join(t.TempDir(), "ref")), false)
	if err != nil {
		t.Fatal(err)
	}
	want := weightsBytes(t, ref)
	if sum.Steps != 30 {
		t.Fatalf("steps %d", sum.Steps)
	}
	for _, k := range []int{4, 6, 13, 29} {
		dir := filepath.Join(t.TempDir(), "run")
		cfg := toyConfig(dir)
		cfg.StopAfter = k
		if _, err := Run(be, newToyStore(), task, cfg, false); !errors.Is(err, ErrStopped) {
			t.Fatalf("k=%d: %v", k, err)
		}
		cfg.StopAfter = 0
		resumed := model.NewStore()
		if _, err := Run(be, resumed, task, cfg, true); err != nil {
			t.Fatalf("resume after %d: %v", k, err)
		}
		got := weightsBytes(t, resumed)
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Fatalf("stopped after %d steps and resumed: variable %s differs from the uninterrupted run", k, p)
			}
		}
		// metrics.jsonl has each step exactly once.
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if n := strings.Count(string(b), "\n"); n != 30 {
			t.Fatalf("metrics.jsonl has %d records, want 30", n)
		}
	}
}

// TestSIGKILLResume trains the toy task in a child process (this test binary), kills it with
// SIGKILL at several moments (mid-step, just after a dev evaluation, around checkpoint
// writes), resumes the run in-process and checks the weights equal an uninterrupted run's.
func TestSIGKILLResume(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("TOOLRET_KILL_CHILD_DIR"); dir != "" {
		Run(be, newToyStore(), &toyTask{seed: 5, batches: 10, delay: 20 * time.Millisecond}, toyConfig(dir), false)
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	ref := newToyStore()
	if _, err := Run(be, ref, &toyTask{seed: 5, batches: 10}, toyConfig(filepath.Join(t.TempDir(), "ref")), false); err != nil {
		t.Fatal(err)
	}
	want := weightsBytes(t, ref)
	for _, after := range []int{5, 8, 12, 17, 25} {
		dir := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLResume$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TOOLRET_KILL_CHILD_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
			if strings.Count(string(b), "\n") >= after {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("child did not reach step %d", after)
			}
			time.Sleep(time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL on unix
			t.Fatal(err)
		}
		cmd.Wait()
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if n := strings.Count(string(b), "\n"); n >= 30 {
			t.Fatalf("killed after %d steps but the child finished (%d records): kill came too late", after, n)
		}
		ck, err := checkpoints.List(dir)
		if err != nil || len(ck) == 0 {
			t.Fatalf("SIGKILL at step >= %d: no checkpoint to resume from (%v)", after, err)
		}
		from := ck[len(ck)-1]
		resumed, task := model.NewStore(), &toyTask{seed: 5, batches: 10}
		if _, err := Run(be, resumed, task, toyConfig(dir), true); err != nil {
			t.Fatalf("resume after SIGKILL at step >= %d: %v", after, err)
		}
		if task.calls != 30-from {
			t.Fatalf("resumed from the step-%d checkpoint but trained %d steps, want %d", from, task.calls, 30-from)
		}
		t.Logf("killed at step >= %d, resumed from step %d", after, from)
		got := weightsBytes(t, resumed)
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Fatalf("SIGKILL at step >= %d and resume: variable %s differs from the uninterrupted run", after, p)
			}
		}
		b, _ = os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if n := strings.Count(string(b), "\n"); n != 30 {
			t.Fatalf("SIGKILL at step >= %d: metrics.jsonl has %d records, want 30", after, n)
		}
	}
}

func TestRunArtifactsAndErrors(t *testing.T) {
	be, _ := backend.Open("go")
	dir := filepath.Join(t.TempDir(), "run")
	var out strings.Builder
	defer func(w io.Writer) { msgs = w }(msgs)
	msgs = &out
	if _, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8}, toyConfig(dir), false); err != nil {
		t.Fatal(err)
	}
	if want := "plot: " + filepath.Join(dir, "plot.html") + "\n"; out.String() != want {
		t.Errorf("training output %q, want %q", out.String(), want)
	}
	for _, f := range []string{"metrics.jsonl", "plot.html", "summary.json", "train_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	var sum Summary
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	json.Unmarshal(b, &sum)
	if sum.Steps != 24 || sum.BestStep <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if !(sum.CompileSeconds > 0 && sum.CompileSeconds < sum.Seconds) {
		t.Errorf("summary: compile %v s of %v s: want a positive part of the run", sum.CompileSeconds, sum.Seconds)
	}
	// A second run into the same directory must not silently overwrite it.
	if _, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8}, toyConfig(dir), false); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("want already-has-checkpoints error, got %v", err)
	}
	// Resuming on other data is refused.
	cfg := toyConfig(dir)
	cfg.Fingerprint = "other"
	if _, err := Run(be, model.NewStore(), &toyTask{seed: 1, batches: 8}, cfg, true); err == nil || !strings.Contains(err.Error(), "other data") {
		t.Errorf("want fingerprint error, got %v", err)
	}
	// NaN loss stops with the step named.
	nanDir := filepath.Join(t.TempDir(), "nan")
	_, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8, nanAt: 6}, toyConfig(nanDir), false)
	if err == nil || !strings.Contains(err.Error(), "loss is NaN at step 6") {
		t.Errorf("want NaN error at step 6, got %v", err)
	}
}

// TestResumeRefusesChangedConfig: a run resumed with another training configuration is
// refused with a message naming every field that differs; bad configurations and an unknown
// dev metric are errors, not panics.
func TestResumeRefusesChangedConfig(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := toyConfig(dir)
	cfg.StopAfter = 8
	if _, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8}, cfg, false); !errors.Is(err, ErrStopped) {
		t.Fatalf("want ErrStopped, got %v", err)
	}
	changed := toyConfig(dir)
	changed.Seed++
	changed.Optimizer.LR *= 2
	_, err = Run(be, model.NewStore(), &toyTask{seed: 1, batches: 8}, changed, true)
	if err == nil || !strings.Contains(err.Error(), "seed: run has") || !strings.Contains(err.Error(), "optimizer.lr: run has") {
		t.Fatalf("want refusal naming seed and optimizer.lr, got %v", err)
	}
	// The recorded configuration is not rewritten by a refused resume.
	same := toyConfig(dir)
	same.Optimizer.TotalSteps = 24 // as Run fills it: 3 epochs of 8 batches
	if err := checkRecorded(same); err != nil {
		t.Fatalf("recorded configuration changed: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"zero epochs", func(c *Config) { c.Epochs = 0 }, "-epochs 0"},
		{"negative epochs", func(c *Config) { c.Epochs = -2 }, "-epochs -2"},
		{"negative patience", func(c *Config) { c.Patience = -1 }, "-patience -1"},
		{"negative eval-every", func(c *Config) { c.EvalEvery = -1 }, "-eval-every -1"},
		{"unknown metric", func(c *Config) { c.Metric = "ndcg@20" }, `-metric "ndcg@20" is not a dev metric`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(filepath.Join(t.TempDir(), "run"))
			tc.edit(&c)
			_, err := Run(be, newToyStore(), &toyTask{seed: 1, batches: 8}, c, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// wideTask has many variables created in reverse path order, and gradients large enough
// that clipping is active, so the global gradient norm sums many terms: a resumed store
// (which creates its variables from the checkpoint, in another order) must still sum them in
// the same order.
type wideTask struct{ toyTask }

func (t *wideTask) Loss(s *model.Scope, in []*Node) *Node {
	x, y := in[0], in[1]
	g := x.Graph()
	z := x
	for l := 11; l >= 0; l-- {
		w := s.In("layer%02d", l).WithInitializer(initializer.RandomNormalFn(s, 1)).VariableWithShape("weights", shapes.Make(dtypes.Float32, 4, 4))
		z = Add(z, Tanh(MatMul(z, w.NodeValue(g))))
	}
	pred := ReduceSum(z, -1)
	return MulScalar(ReduceAllMean(Square(Sub(pred, y))), 100)
}

func (t *wideTask) Evaluate(store *model.Store) (map[string]float64, error) {
	return map[string]float64{}, nil
}

func TestResumeBitIdenticalWithClipping(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &wideTask{toyTask{seed: 9, batches: 10}}
	cfg := toyConfig(filepath.Join(t.TempDir(), "ref"))
	cfg.Metric = ""
	ref := newToyStore()
	if _, err := Run(be, ref, task, cfg, false); err != nil {
		t.Fatal(err)
	}
	want := weightsBytes(t, ref)
	dir := filepath.Join(t.TempDir(), "run")
	cfg.RunDir, cfg.StopAfter = dir, 8
	if _, err := Run(be, newToyStore(), task, cfg, false); !errors.Is(err, ErrStopped) {
		t.Fatal(err)
	}
	cfg.StopAfter = 0
	resumed := model.NewStore()
	if _, err := Run(be, resumed, task, cfg, true); err != nil {
		t.Fatal(err)
	}
	got := weightsBytes(t, resumed)
	var differ []string
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			differ = append(differ, p)
		}
	}
	if len(differ) > 0 {
		t.Fatalf("resumed with clipping: %d of %d variables differ from the uninterrupted run (%v)", len(differ), len(want), differ[:min(3, len(differ))])
	}
}

// TestMaxSteps: a run capped at MaxSteps stops there mid-epoch, evaluates and checkpoints at
// its last step, fits the learning-rate schedule to the cap, and resumes bit for bit.
func TestMaxSteps(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	task := &toyTask{seed: 3, batches: 10}
	capped := func(dir string) Config {
		cfg := toyConfig(dir)
		cfg.MaxSteps = 13
		return cfg
	}
	dir := filepath.Join(t.TempDir(), "ref")
	ref := newToyStore()
	sum, err := Run(be, ref, task, capped(dir), false)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 13 || sum.Epochs != 2 {
		t.Fatalf("summary: %d steps, %d epochs; want 13 steps in 2 epochs", sum.Steps, sum.Epochs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 13 {
		t.Fatalf("metrics.jsonl has %d records, want 13", len(lines))
	}
	var last, prev map[string]any
	json.Unmarshal([]byte(lines[12]), &last)
	json.Unmarshal([]byte(lines[11]), &prev)
	if _, ok := last["dev_neg_norm"]; !ok {
		t.Errorf("no dev evaluation at the capped last step: %s", lines[12])
	}
	if last["lr"].(float64) >= prev["lr"].(float64) || last["lr"].(float64) > 0.01 {
		t.Errorf("lr %v then %v at the last two steps: the schedule is not fitted to 13 steps", prev["lr"], last["lr"])
	}
	cfg := capped(filepath.Join(t.TempDir(), "run"))
	cfg.StopAfter = 7
	if _, err := Run(be, newToyStore(), task, cfg, false); !errors.Is(err, ErrStopped) {
		t.Fatal(err)
	}
	cfg.StopAfter = 0
	resumed := model.NewStore()
	if _, err := Run(be, resumed, task, cfg, true); err != nil {
		t.Fatal(err)
	}
	got, want := weightsBytes(t, resumed), weightsBytes(t, ref)
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Fatalf("variable %s differs after stop at 7 and resume", p)
		}
	}
	bad := toyConfig(filepath.Join(t.TempDir(), "bad"))
	bad.MaxSteps = -1
	if _, err := Run(be, newToyStore(), task, bad, false); err == nil || !strings.Contains(err.Error(), "-max-steps -1") {
		t.Errorf("MaxSteps -1: %v", err)
	}
}

// TestMaxTime: a run past its MaxTime stops at that step, evaluated and checkpointed there, and
// says why in its summary; a negative limit is refused.
func TestMaxTime(t *testing.T) {
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := toyConfig(dir)
	cfg.MaxTime = time.Nanosecond // over by the end of the first step
	sum, err := Run(be, newToyStore(), &toyTask{seed: 3, batches: 10}, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 1 || !strings.HasPrefix(sum.Stopped, "time limit") || sum.BestStep != 1 {
		t.Fatalf("summary: %d steps, best %d, stopped %q; want 1 step stopped by the time limit", sum.Steps, sum.BestStep, sum.Stopped)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "dev_neg_norm") {
		t.Fatalf("metrics.jsonl: %q; want one record with a dev evaluation", lines)
	}
	if steps, err := checkpoints.List(dir); err != nil || len(steps) != 1 || steps[0] != 1 {
		t.Fatalf("checkpoints %v (%v); want step 1", steps, err)
	}
	// The limit is not part of the recorded configuration: the run resumes under another one
	// (none) and finishes its steps.
	cfg.MaxTime = 0
	sum, err = Run(be, model.NewStore(), &toyTask{seed: 3, batches: 10}, cfg, true)
	if err != nil {
		t.Fatalf("resume without the limit: %v", err)
	}
	if sum.Steps <= 1 || sum.Stopped != "completed" {
		t.Errorf("resumed: %d steps, stopped %q; want the remaining steps completed", sum.Steps, sum.Stopped)
	}
	cfg = toyConfig(filepath.Join(t.TempDir(), "bad"))
	cfg.MaxTime = -time.Second
	if _, err := Run(be, newToyStore(), &toyTask{seed: 3, batches: 10}, cfg, false); err == nil || !strings.Contains(err.Error(), "-max-time") {
		t.Errorf("MaxTime -1s: %v", err)
	}
}
