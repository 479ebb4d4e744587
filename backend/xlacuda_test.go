package backend

import (
	"bufio"
	"debug/elf"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cudaDlopened are the libraries XLA's CUDA plugin dlopens at run time through its RPATH (it
// links none of them): CUDA runtime, BLAS, FFT, solvers, profiler, NVRTC, nvJitLink, cuDNN and
// NCCL.
var cudaDlopened = []string{
	"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcufft.so.12", "libcusolver.so.12",
	"libcusparse.so.12", "libcupti.so.13", "libnvrtc.so.13", "libnvJitLink.so.13", "libcudnn.so.9",
	"libnccl.so.2",
}

// TestInstallXLACUDA runs scripts/install-xla-cuda.sh (a no-op when the pinned set is
// installed; with TOOLRET_XLA_CUDA_NO_DOWNLOAD set unless TOOLRET_TEST_XLA_CUDA_DOWNLOAD=1, so
// it skips rather than fetch about 2.4 GB of wheels) and checks the tree it made without a GPU:
// the plugin exports GetPjrtApi, every library it dlopens is in one of its RPATH directories,
// every NEEDED library of every shared object in the tree resolves through that object's own
// RPATH/RUNPATH or the system's libraries (the NVIDIA driver's and NVSHMEM's optional network
// transports' dependencies excepted), and ptxas and libdevice are where XLA looks.
func TestInstallXLACUDA(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 (pip downloads the wheels)")
	}
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "install-xla-cuda.sh"))
	if os.Getenv("TOOLRET_TEST_XLA_CUDA_DOWNLOAD") != "1" {
		cmd.Env = append(os.Environ(), "TOOLRET_XLA_CUDA_NO_DOWNLOAD=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("install-xla-cuda.sh did not install (make install-xla-cuda downloads the wheels; TOOLRET_TEST_XLA_CUDA_DOWNLOAD=1 lets this test do it): %v\n%s", err, out)
	}
	plugin := strings.TrimSpace(string(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:]))
	if plugin != XLACUDAPluginCachePath() {
		t.Fatalf("script printed %q, want XLACUDAPluginCachePath() %q", plugin, XLACUDAPluginCachePath())
	}
	checkCUDATree(t, filepath.Dir(filepath.Dir(plugin)))
}

// checkCUDATree checks the tree install-xla-cuda.sh makes in dir (see TestInstallXLACUDA).
func checkCUDATree(t *testing.T, dir string) {
	nv := filepath.Join(dir, "nvidia")
	plugin := filepath.Join(nv, "pjrt_c_api_cuda_plugin.so")
	f, err := elf.Open(plugin)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", plugin, err)
	}
	if !hasSymbol(syms, "GetPjrtApi") {
		t.Errorf("%s does not export GetPjrtApi", plugin)
	}
	rpath := searchPath(t, f, plugin)
	f.Close()
	for _, lib := range cudaDlopened {
		if findIn(rpath, lib) == "" {
			t.Errorf("%s: %s not in its RPATH %v", plugin, lib, rpath)
		}
	}
	for _, p := range []string{"bin/ptxas", "cu13/bin/ptxas", "cu13/nvvm/libdevice/libdevice.10.bc"} {
		st, err := os.Stat(filepath.Join(nv, p))
		if err != nil {
			t.Errorf("nvidia/%s: %v", p, err)
		} else if strings.HasSuffix(p, "ptxas") && st.Mode()&0o111 == 0 {
			t.Errorf("nvidia/%s is not executable", p)
		}
	}

	system := systemLibs()
	n := 0
	err = filepath.WalkDir(nv, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isSharedName(d.Name()) {
			return err
		}
		f, err := elf.Open(path)
		if err != nil {
			return nil // not an ELF file (a linker script, say)
		}
		defer f.Close()
		needed, err := f.ImportedLibraries()
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		n++
		dirs := searchPath(t, f, path)
		for _, lib := range needed {
			if findIn(dirs, lib) != "" || system[lib] || optionalNeeded(d.Name(), lib) {
				continue
			}
			t.Errorf("%s: NEEDED %s resolves neither through its RPATH/RUNPATH %v nor in the system's libraries", path, lib, dirs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < len(cudaDlopened) {
		t.Errorf("only %d shared objects under %s", n, nv)
	}
	t.Logf("%s: %d shared objects, all NEEDED libraries resolve", nv, n)
}

// optionalNeeded reports whether lib, NEEDED by the shared object named name, may be absent
// from a machine without a GPU: the driver's libraries, and what NVSHMEM's bootstrap and network
// transport modules (loaded only when chosen) link.
func optionalNeeded(name, lib string) bool {
	if lib == "libcuda.so.1" || strings.HasPrefix(lib, "libnvidia-") {
		return true
	}
	return strings.HasPrefix(name, "nvshmem_bootstrap_") || strings.HasPrefix(name, "nvshmem_transport_")
}

func hasSymbol(syms []elf.Symbol, name string) bool {
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return true
		}
	}
	return false
}

func isSharedName(n string) bool {
	return strings.HasSuffix(n, ".so") || strings.Contains(n, ".so.")
}

// searchPath returns the directories of f's DT_RPATH and DT_RUNPATH with $ORIGIN expanded.
func searchPath(t *testing.T, f *elf.File, path string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		vals, err := f.DynString(tag)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.NewReplacer("${ORIGIN}", filepath.Dir(path), "$ORIGIN", filepath.Dir(path)).Replace(d)
				if d != "" {
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	return dirs
}

func findIn(dirs []string, lib string) string {
	for _, d := range dirs {
		p := filepath.Join(d, lib)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// systemLibs returns the names of the libraries the dynamic loader finds by itself: `ldconfig -p`
// and the default directories.
func systemLibs() map[string]bool {
	libs := map[string]bool{}
	if out, err := exec.Command("ldconfig", "-p").Output(); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if name, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok {
				libs[name] = true
			}
		}
	}
	for _, d := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		for _, e := range ents {
			libs[e.Name()] = true
		}
	}
	return libs
}
