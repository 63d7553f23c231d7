package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kwokCluster drives hack/cluster.sh for one kwokctl cluster.
type kwokCluster struct {
	script string // hack/cluster.sh
	name   string
	logf   func(string, ...any)
	// flags are the extra kwokctl create flags (feature gates, runtime
	// config).
	flags []string
}

func newKwokCluster(o Options) *kwokCluster {
	k := &kwokCluster{script: filepath.Join(o.RepoRoot, "hack", "cluster.sh"), name: o.ClusterName, logf: o.Logf}
	if o.FeatureGates != "" {
		k.flags = append(k.flags, "--kube-feature-gates="+o.FeatureGates)
	}
	if o.RuntimeConfig != "" {
		k.flags = append(k.flags, "--kube-runtime-config="+o.RuntimeConfig)
	}
	k.flags = append(k.flags, o.KwokctlFlags...)
	return k
}

// run runs cluster.sh with args and returns its stdout; its stderr goes to
// logf line by line and, on failure, into the error.
func (k *kwokCluster) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.script, args...)
	cmd.Env = append(os.Environ(), "UDRAIN_CLUSTER="+k.name)
	cmd.Stdin = nil
	var stdout, tail bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "{") { // kwokctl's JSON progress
				continue
			}
			k.logf("%s", line)
			tail.WriteString(line + "\n")
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	_ = pw.Close()
	<-done
	if err != nil {
		return "", fmt.Errorf("hack/cluster.sh %s (UDRAIN_CLUSTER=%s): %w\n%s", strings.Join(args, " "), k.name, err, lastLines(tail.String(), 60))
	}
	return stdout.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (k *kwokCluster) up(ctx context.Context) (string, error) {
	args := []string{"up"}
	if len(k.flags) > 0 {
		args = append(append(args, "--"), k.flags...)
	}
	out, err := k.run(ctx, args...)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "export KUBECONFIG="); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("hack/cluster.sh up printed no kubeconfig: %q", out)
}

func (k *kwokCluster) down(ctx context.Context) error {
	_, err := k.run(ctx, "down")
	return err
}

func (k *kwokCluster) dir(ctx context.Context) (string, error) {
	out, err := k.run(ctx, "kubeconfig")
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(out)), nil
}

// reaper is the command that deletes the cluster if the test process dies.
func (k *kwokCluster) reaper() []string { return []string{k.script, "down"} }

func (k *kwokCluster) reaperEnv() []string { return []string{"UDRAIN_CLUSTER=" + k.name} }

// copyLogs copies the components' log files (etcd, kube-apiserver, ...).
func (k *kwokCluster) copyLogs(ctx context.Context, dest string) error {
	dir, err := k.dir(ctx)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no log files in %s", filepath.Join(dir, "logs"))
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, copyFile(f, filepath.Join(dest, filepath.Base(f))))
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
