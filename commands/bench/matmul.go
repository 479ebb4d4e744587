package benchcmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/toolret/toolret/benchmark"
	"github.com/toolret/toolret/internal/cli"
)

// matmulDTypes are bench matmul's -dtypes: the name, GoMLX's dtype and torch's.
var matmulDTypes = map[string]struct {
	dt    dtypes.DType
	torch string
}{
	"float32":  {dtypes.Float32, "float32"},
	"bfloat16": {dtypes.BFloat16, "bfloat16"},
	"float16":  {dtypes.Float16, "float16"},
}

// matmulBench measures n×n matmul throughput per backend and dtype, and torch.mm's on the
// same sizes and dtypes (scripts/bench/torch_matmul.py), in one run: whether a lower
// precision pays on this CPU before any model is trained in it.
func matmulBench(args []string) error {
	fs := flag.NewFlagSet("bench matmul", flag.ContinueOnError)
	backends := fs.String("backends", "go,onnx", "toolret backends, comma-separated (a backend's options stay with it: onnx:cpu,intra_threads=1)")
	list := fs.String("dtypes", "float32,bfloat16", "dtypes, comma-separated: float32, bfloat16, float16")
	n := fs.Int("n", 1024, "matrix size (n×n by n×n)")
	python := fs.String("python", "/usr/bin/python3", "python with torch (empty: skip)")
	blas := torchBLASFlag(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := cli.Positive("n", *n); err != nil {
		return err
	}
	var dts []string
	for _, d := range strings.Split(*list, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		if _, ok := matmulDTypes[d]; !ok {
			return fmt.Errorf("-dtypes: unknown dtype %q (want float32, bfloat16 or float16)", d)
		}
		dts = append(dts, d)
	}
	if len(dts) == 0 {
		return fmt.Errorf("-dtypes %q: no dtype", *list)
	}
	cores, err := torchCores(*blas)
	if err != nil {
		return err
	}
	const w = 24
	fmt.Printf("matmul %d×%d by %d×%d, 4 chained per call, best of 3 rounds of 0.5 s: GFLOP/s\n", *n, *n, *n, *n)
	fmt.Printf("%-*s", w, "engine")
	for _, d := range dts {
		fmt.Printf(" %10s", d)
	}
	fmt.Println()
	names, bes, skipped := openBackends(*backends, w, false)
	notMeasured := skippedError(skipped)
	for k, name := range names {
		fmt.Printf("%-*s", w, "toolret-"+name)
		for _, d := range dts {
			gf, err := benchmark.MatmulPeakDType(bes[k], *n, matmulDTypes[d].dt)
			if err != nil {
				fmt.Printf(" %10s", "n/a")
				notMeasured = errors.Join(notMeasured, fmt.Errorf("%w: toolret-%s %s: %v", errNotMeasured, name, d, firstLine(err)))
				continue
			}
			fmt.Printf(" %10.1f", gf)
		}
		fmt.Println()
	}
	if *python != "" {
		var tdt []string
		for _, d := range dts {
			tdt = append(tdt, matmulDTypes[d].torch)
		}
		for _, core := range cores {
			row := torchRow(core)
			out, err := runTorch(*python, "scripts/bench/torch_matmul.py", core, map[string]any{"n": *n, "dtypes": tdt})
			if err != nil {
				fmt.Printf("%-*s (%v)\n", w, row, err)
				notMeasured = errors.Join(notMeasured, fmt.Errorf("%w: %s: %v", errNotMeasured, row, err))
				continue
			}
			var res struct {
				GFLOPs  map[string]float64 `json:"gflops"`
				Threads map[string]int     `json:"threads"`
				BLAS    string             `json:"blas_core"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				return fmt.Errorf("%s output %s: %v", row, out, err)
			}
			fmt.Printf("%-*s", w, row)
			for _, d := range tdt {
				fmt.Printf(" %10.1f", res.GFLOPs[d])
			}
			fmt.Printf("  (OpenBLAS core %s)\n", res.BLAS)
		}
	}
	return notMeasured
}

// firstLine is an error's first line (compile errors carry whole graphs after it).
func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
