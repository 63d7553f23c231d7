package e2e

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/eviction"
)

// TestNoNativePodGroupsIsQuietAtV0: this package's cluster runs without the
// GenericWorkload feature gate, so its API server does not serve
// scheduling.k8s.io/v1beta1 PodGroups. A plan (the library and the CLI) and
// an audit (the CLI) then group by labels only and say nothing about it, nor
// about the end of their own watches, at V(0),
// what an operator sees by default; at V(2) they say why there are no
// native groups. (e2e/nativegroups runs a cluster with the gate on.)
func TestNoNativePodGroupsIsQuietAtV0(t *testing.T) {
	t.Parallel()
	tt := bed.ForTest(t)
	ctx := t.Context()
	_, err := tt.Client.SchedulingV1beta1().PodGroups(tt.Name).List(ctx, metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("listing PodGroups without the GenericWorkload gate: %v, want NotFound (the API not served)", err)
	}
	nodes := fixture.Nodes{Pool: tt.Name, UDs: 2, PerUD: 1}
	if _, err := nodes.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	w := fixture.LWS{Namespace: tt.Name, Name: "llm", Groups: 2, Size: 1, Pool: tt.Name, NoReadinessGate: true, ReadyDelay: 200 * time.Millisecond}
	if err := w.Create(ctx, tt.Client); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WaitForPods(ctx, tt.Client, tt.Name, w.Selector(), fixture.PodsReady(2)); err != nil {
		t.Fatal(err)
	}

	library := func(verbosity int) (string, error) {
		var logs bytes.Buffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity), textlogger.Output(&logs)))
		d, err := eviction.New(tt.Client, eviction.Options{})
		if err != nil {
			return "", err
		}
		plan, err := d.Plan(klog.NewContext(ctx, logger), nodes.UD(0))
		if err == nil && len(plan.Groups) != 1 {
			t.Errorf("plan of %s: groups %+v, want the LWS group found by its labels", nodes.UD(0), plan.Groups)
		}
		return logs.String(), err
	}
	cli := func(command ...string) func(verbosity int) (string, error) {
		return func(verbosity int) (string, error) {
			return runQuiet(t, ctx, verbosity, command...)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(verbosity int) (string, error)
	}{{"library plan", library}, {"CLI audit", cli("audit")}, {"CLI plan", cli("plan", nodes.UD(0))}} {
		t.Run(tc.name, func(t *testing.T) {
			quiet, err := tc.run(0)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(quiet, "PodGroup") {
				t.Errorf("at V(0) the log mentions PodGroups:\n%s", quiet)
			}
			// A call that ends stops its watches: that is no failure to
			// report (it printed "Failed to watch ... context canceled").
			if strings.Contains(quiet, "Failed to watch") || strings.Contains(quiet, "context canceled") {
				t.Errorf("at V(0) the log reports the end of its own watches:\n%s", quiet)
			}
			verbose, err := tc.run(2)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(verbose, "No native PodGroups") {
				t.Errorf("at V(2) the log does not say why there are no native PodGroups:\n%s", verbose)
			}
		})
	}
}

// runQuiet runs a udrain command line in process at the verbosity and
// returns its stderr; it fails the test on an exit code other than 0 or
// 4 (contract findings).
func runQuiet(t *testing.T, ctx context.Context, verbosity int, command ...string) (string, error) {
	var out, errOut bytes.Buffer
	args := append([]string{"--kubeconfig", bed.Kubeconfig(), "-v", strconv.Itoa(verbosity)}, command...)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: &out, ErrOut: &errOut}
	if code := app.Run(context.WithoutCancel(ctx), args, streams, app.Config{Name: "udrain"}); code != app.ExitOK && code != app.ExitContract {
		t.Errorf("udrain %s: exit code %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return errOut.String(), nil
}
