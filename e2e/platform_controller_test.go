package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/e2e/testbed"
)

// TestPlatformControllerRollout runs the example examples/platform-controller
// (a client-go program that embeds a rollout over its own shared informer
// factory) as users would, against the testbed: built with go build, run
// with the cluster's kubeconfig, an upgrade webhook served by the test.
// The first run is interrupted (SIGINT) while the webhook upgrades the
// second domain; the second run, with the same target version, resumes.
// Across both runs the CLI scenario's guarantees hold: each group
// disrupted once, never more than one group down, leaders first in each
// domain, every node labelled, marked upgraded and uncordoned. Every
// evicted pod has a Kubernetes Event that names its UID.
func TestPlatformControllerRollout(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "platform-controller")
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	domains := s.domains()
	const version = "1.37.2"

	hook := &upgradeWebhook{hold: upgradeStep}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	args := []string{"--kubeconfig", bed.Kubeconfig(), "--target-version", version, "--webhook", srv.URL, "--recovery-timeout", "3m", "-v", "2"}
	for _, d := range domains {
		args = append(args, "--domain", d)
	}

	start := time.Now()
	first := exec.CommandContext(ctx, bin, args...)
	hook.setOnRequest(func(domain string) {
		if domain == domains[1] {
			_ = first.Process.Signal(os.Interrupt)
		}
	})
	log1, err := runLogged(t, s.tt, first, "platform-controller-run1.log")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("first run, interrupted in the upgrade of %s: %v, want exit code 1", domains[1], err)
	}
	for _, want := range []string{
		"Rollout stopped; run again with the same --target-version to resume",
		fmt.Sprintf(`domain=%q stage="Upgrade" id="platform-%s" cause="cancelled"`, domains[1], version),
		fmt.Sprintf(`domain.%s="Done" domain.%s="Interrupted" domain.%s="Pending"`, domains[0], domains[1], domains[2]),
	} {
		if !strings.Contains(log1, want) {
			t.Errorf("the first run's log has no %q", want)
		}
	}

	hook.setOnRequest(nil)
	log2, err := runLogged(t, s.tt, exec.CommandContext(ctx, bin, args...), "platform-controller-run2.log")
	if err != nil {
		t.Fatalf("second run with the same target version: %v", err)
	}
	t.Logf("both runs took %s", time.Since(start).Round(time.Millisecond))
	if want := fmt.Sprintf(`domain.%s="Skipped" domain.%s="Done" domain.%s="Done"`, domains[0], domains[1], domains[2]); !strings.Contains(log2, want) {
		t.Errorf("the second run's log has no %q", want)
	}
	// The upgrade step of the interrupted domain runs again; the first
	// domain's does not.
	if got, want := hook.domains(), []string{domains[0], domains[1], domains[1], domains[2]}; !slices.Equal(got, want) {
		t.Errorf("webhook called for %q, want %q", got, want)
	}

	o := checkWholeRollout(t, s, start, "both runs")
	checkUpgradedAndUncordoned(t, s, "platform-"+version)
	checkTargetVersion(t, s, "upgrade.example.com/target-version", version)

	// Each evicted pod (by UID) has its UdrainEvicted event, and no event
	// names another pod.
	events, err := s.tt.Client.CoreV1().Events(s.tt.Name).List(ctx, metav1.ListOptions{FieldSelector: "reason=UdrainEvicted"})
	if err != nil {
		t.Fatal(err)
	}
	var named []types.UID
	for _, e := range events.Items {
		named = append(named, e.InvolvedObject.UID)
	}
	checkEvictionEvents(t, o, "UdrainEvicted", named)
}

// upgradeWebhook is the upgrade service of the platform-controller
// example: it records each request's domain, calls onRequest, and answers
// 200 after hold (or gives up when the client goes away).
type upgradeWebhook struct {
	hold      time.Duration
	onRequest func(domain string)

	mu  sync.Mutex
	got []string
}

func (w *upgradeWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var req struct {
		Domain string `json:"domain"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.got = append(w.got, req.Domain)
	on := w.onRequest
	w.mu.Unlock()
	if on != nil {
		on(req.Domain)
	}
	select {
	case <-r.Context().Done():
		return
	case <-time.After(w.hold):
	}
	io.WriteString(rw, "upgraded")
}

func (w *upgradeWebhook) setOnRequest(fn func(domain string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onRequest = fn
}

func (w *upgradeWebhook) domains() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// buildExample builds the example program examples/<name> of the root
// module into the test's temporary folder.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./examples/"+name)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/%s: %v\n%s", name, err, out)
	}
	return bin
}

// runLogged runs cmd to its end and returns its stderr (its log), which
// also goes into the test's artifacts as file if the test fails.
func runLogged(t *testing.T, tt *testbed.Test, cmd *exec.Cmd, file string) (string, error) {
	t.Helper()
	var log bytes.Buffer
	cmd.Stderr = &log
	// Interrupted with the test, the program still reports what it did.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	out := log.String()
	tt.OnFailure(file, func(w io.Writer) error { _, err := io.WriteString(w, out); return err })
	return out, err
}
