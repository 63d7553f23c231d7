package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/udrain/udrain/e2e/fixture"
)

// TestLabel marks a test's namespace with the test's name.
const TestLabel = "udrain.dev/testbed-test"

// Test is one test's share of the testbed: its own namespace, named like the
// test, and the node pool of the same name (use Name as [fixture.Nodes].Pool
// and [fixture.LWS].Pool), both deleted when the test ends. If the test
// fails, the cluster's state is dumped first and the folder is named in the
// test's output.
type Test struct {
	// Name is the namespace and node pool of the test: a DNS label made of
	// the test's name and a random suffix.
	Name string
	// Client is a cluster-admin clientset; Config its REST config.
	Client kubernetes.Interface
	Config *rest.Config

	bed *Testbed
	t   testing.TB

	mu    sync.Mutex
	dumps []namedDump
}

type namedDump struct {
	name  string
	write func(io.Writer) error
}

// ForTest creates the test's namespace (and waits for its default service
// account, without which pods are refused) and registers the cleanup. It
// fails the test now if the cluster cannot be reached.
func (b *Testbed) ForTest(t testing.TB) *Test {
	t.Helper()
	c := b.Client()
	if c == nil {
		t.Fatal("testbed: the cluster is not started (is TestMain calling testbed.Run?)")
	}
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	tt := &Test{
		Name:   testName(t.Name(), hex.EncodeToString(suffix)),
		Client: c,
		Config: b.Config(),
		bed:    b,
		t:      t,
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tt.Name, Labels: map[string]string{TestLabel: dnsLabel(t.Name(), 63)}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testbed: create namespace %s: %v", tt.Name, err)
	}
	t.Cleanup(tt.cleanup)
	t.Cleanup(tt.dumpIfFailed) // runs first: cleanups run last-in first-out
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(tt.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("testbed: no default service account in %s: %v", tt.Name, err)
	}
	return tt
}

// testName is a test's namespace and pool name: at most 35+1+4 characters,
// a DNS label that is also a valid [fixture.Nodes] pool.
func testName(goName, suffix string) string { return dnsLabel(goName, 35) + "-" + suffix }

// Testbed returns the testbed, for fault helpers such as
// [Testbed.RestartAPIServer].
func (tt *Test) Testbed() *Testbed { return tt.bed }

// OnFailure adds a file to the dump made if the test fails, such as a
// [fixture.PodRecorder] timeline.
func (tt *Test) OnFailure(file string, write func(io.Writer) error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.dumps = append(tt.dumps, namedDump{file, write})
}

// ArtifactsDir is where the test's dump goes if it fails.
func (tt *Test) ArtifactsDir() string {
	return filepath.Join(tt.bed.opts.ArtifactsDir, tt.bed.runID, dnsLabel(tt.t.Name(), 100))
}

func (tt *Test) dumpIfFailed() {
	if !tt.t.Failed() {
		return
	}
	// The test's context is over by now.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tt.logPoolNodes(ctx)
	dir := tt.ArtifactsDir()
	errs := []error{tt.bed.DumpArtifacts(ctx, dir)}
	tt.mu.Lock()
	dumps := tt.dumps
	tt.mu.Unlock()
	for _, d := range dumps {
		if err := writeFile(filepath.Join(dir, d.name), d.write); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		tt.t.Logf("testbed: artifacts of this failure in %s (incomplete: %v)", dir, err)
		return
	}
	tt.t.Logf("testbed: artifacts of this failure in %s", dir)
}

// logPoolNodes writes the test's nodes (readiness, cordon, taints) into
// the test's log, where a CI run shows them: the artifacts stay on the
// machine that ran the test.
func (tt *Test) logPoolNodes(ctx context.Context) {
	nodes, err := tt.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fixture.PoolLabel + "=" + tt.Name})
	if err != nil || len(nodes.Items) == 0 {
		return
	}
	var b strings.Builder
	if err := nodeTable(&b, nodes.Items); err == nil {
		tt.t.Logf("testbed: the test's nodes at its failure:\n%s", b.String())
	}
}

// cleanup deletes the namespace and the pool's nodes without waiting.
func (tt *Test) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := tt.Client.CoreV1().Namespaces().Delete(ctx, tt.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		tt.t.Logf("testbed: delete namespace %s: %v", tt.Name, err)
	}
	if err := fixture.DeletePool(ctx, tt.Client, tt.Name); err != nil {
		tt.t.Logf("testbed: %v", err)
	}
}
