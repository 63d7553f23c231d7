package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ComponentPIDs returns the process IDs of a kwok cluster's control-plane
// components by name (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok-controller), from kwokctl's pid files, for
// measuring what the testbed itself costs (CPU, memory) next to the code
// under test. Other providers return [ErrNotSupported].
func (b *Testbed) ComponentPIDs(ctx context.Context) (map[string]int, error) {
	if b.kwok == nil {
		return nil, fmt.Errorf("component pids: %w", ErrNotSupported)
	}
	dir, err := b.kwok.dir(ctx)
	if err != nil {
		return nil, err
	}
	return readPIDs(filepath.Join(dir, "pids"))
}

// readPIDs reads the "<component>.pid" files of dir (kwokctl writes the
// pid without a newline).
func readPIDs(dir string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("pid file %s: %w", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no pid files in %s", dir)
	}
	return out, nil
}
