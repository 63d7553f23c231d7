package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/udrain/udrain/e2e/fixture"
)

// KubeRayFeatureGates are the feature gates the testbed's KubeRay operator
// runs with: RayMultiHostIndexing makes it label the hosts of a multi-host
// worker replica (ray.io/worker-group-replica-name, ray.io/replica-host-index)
// and recreate a replica as a whole, the behaviour udrain's grouping of Ray
// clusters is checked against.
const KubeRayFeatureGates = "RayMultiHostIndexing=true"

// KubeRay is the KubeRay operator (github.com/ray-project/kuberay/ray-operator,
// the version hack/kuberay.sh pins) running out of process against the
// testbed's cluster, with its CRDs installed. Tests create RayClusters (see
// [fixture.RayClusters]) and the operator makes their head and worker pods,
// which kwok then runs.
type KubeRay struct {
	// Dir is the cache folder of the operator's binary and CRDs.
	Dir string
	// Log is the operator's log file (with the control-plane logs in a
	// failed test's artifacts when the cluster is kwok's).
	Log string

	proc *process
}

// KubeRay returns the testbed's KubeRay operator, starting it on the first
// call: it builds the operator if the cache lacks it (hack/kuberay.sh, about
// 3 minutes cold), installs its CRDs and waits until they are established,
// starts it with leader election off, metrics and health probes on
// 127.0.0.1, and [KubeRayFeatureGates], and waits until it answers its
// readiness probe. The operator runs until [Testbed.Stop] (also on a signal,
// and the reaper kills it if the test process dies). It fails if the
// operator has exited since.
func (b *Testbed) KubeRay(ctx context.Context) (*KubeRay, error) {
	b.kubeRayMu.Lock()
	defer b.kubeRayMu.Unlock()
	if kr := b.kubeRay; kr != nil {
		if done, err := kr.proc.exited(); done {
			return nil, fmt.Errorf("the KubeRay operator exited (%v); the end of its log %s:\n%s", err, kr.Log, kr.proc.logTail(20))
		}
		return kr, nil
	}
	if b.Client() == nil {
		return nil, errors.New("testbed: the cluster is not started")
	}
	start := time.Now()
	dir, err := b.buildCached(ctx, "kuberay.sh")
	if err != nil {
		return nil, err
	}
	if err := b.installKubeRayCRDs(ctx, dir); err != nil {
		return nil, err
	}
	logPath := filepath.Join(b.opts.ArtifactsDir, b.runID, "ray-operator.log")
	if b.kwok != nil {
		// With the control-plane logs: copied into a failed test's
		// artifacts, saved by the reaper, deleted with the cluster.
		if d, err := b.kwok.dir(ctx); err == nil {
			logPath = filepath.Join(d, "logs", "ray-operator.log")
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	argv := []string{
		filepath.Join(dir, "ray-operator"),
		"-kubeconfig", b.Kubeconfig(),
		"-enable-leader-election=false",
		"-metrics-addr", "127.0.0.1:0",
		"-health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(port),
		"-feature-gates", KubeRayFeatureGates,
		"-log-stdout-encoder", "console",
	}
	p, err := b.startProcess("KubeRay operator", argv, []string{"KUBECONFIG=" + b.Kubeconfig()}, logPath)
	if err != nil {
		return nil, err
	}
	kr := &KubeRay{Dir: dir, Log: logPath, proc: p}
	if err := waitReadyFunc(ctx, p.exited, fmt.Sprintf("http://127.0.0.1:%d/readyz", port), time.Minute); err != nil {
		_ = p.stop(5 * time.Second)
		return nil, fmt.Errorf("the KubeRay operator did not become ready: %w; the end of its log %s:\n%s", err, logPath, p.logTail(20))
	}
	b.opts.Logf("KubeRay operator ready in %s (log %s)", time.Since(start).Round(100*time.Millisecond), logPath)
	b.kubeRay = kr
	return kr, nil
}

// buildCached runs hack/<script> (hack/kuberay.sh, hack/lws.sh: a no-op
// when the cache has what it builds) and returns the folder it prints; its
// progress goes to Logf.
func (b *Testbed) buildCached(ctx context.Context, script string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(b.opts.RepoRoot, "hack", script))
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out strings.Builder
	cmd.Stdout = &out
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan string)
	go func() {
		var tail strings.Builder
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			b.opts.Logf("%s", sc.Text())
			tail.WriteString(sc.Text() + "\n")
		}
		_, _ = io.Copy(io.Discard, pr)
		done <- tail.String()
	}()
	err := cmd.Run()
	_ = pw.Close()
	tail := <-done
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w\n%s", script, err, lastLines(tail, 20))
	}
	return strings.TrimSpace(out.String()), nil
}

// installKubeRayCRDs creates the operator's CRDs (left as they are if they
// exist) and waits until the API server serves them.
func (b *Testbed) installKubeRayCRDs(ctx context.Context, dir string) error {
	dyn, err := dynamic.NewForConfig(b.Config())
	if err != nil {
		return err
	}
	if err := fixture.InstallCRDs(ctx, dyn, filepath.Join(dir, "crds"), fixture.KubeRayCRDFiles...); err != nil {
		return fmt.Errorf("KubeRay's CRDs (cached by hack/kuberay.sh): %w", err)
	}
	return nil
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReadyFunc polls url until it answers 200, exited reports that the
// process has exited, or timeout.
func waitReadyFunc(ctx context.Context, exited func() (bool, error), url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		if done, err := exited(); done {
			return fmt.Errorf("it exited: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
