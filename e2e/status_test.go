package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/udrain/udrain/cmd/udrain/app"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// TestRolloutStatusAcrossAStop proves issue 23's "rollout status from the
// cluster alone": a rollout is cancelled in the middle of its second
// domain (its upgrade step blocks there), and a second Drainer, which
// shares nothing with the first, reads where it stands while it runs and
// once it stopped; the CLI in-process reads the same; the rollout resumed
// with the same ID completes, and the status says so.
func TestRolloutStatusAcrossAStop(t *testing.T) {
	t.Parallel()
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	doms := s.domains()
	const id = "e2e-status"
	events := &eventLog{}
	d := s.drainer(t, events, eviction.Options{})
	var once sync.Once
	inSecond := make(chan struct{})
	step := func(ctx context.Context, dom topology.Domain) error {
		if dom.Name == doms[1] {
			once.Do(func() { close(inSecond) })
			<-ctx.Done() // a long upgrade, interrupted
			return ctx.Err()
		}
		time.Sleep(upgradeStep)
		return nil
	}
	opts := eviction.RolloutOptions{ID: id, Domains: doms, RecoveryTimeout: 3 * time.Minute, Upgrade: step}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		_, err := d.Rollout(rctx, opts)
		stopped <- err
	}()
	select {
	case <-inSecond:
	case err := <-stopped:
		t.Fatalf("the rollout ended before the upgrade of %s: %v", doms[1], err)
	case <-time.After(4 * time.Minute):
		t.Fatalf("the rollout did not reach the upgrade of %s in 4 minutes", doms[1])
	}

	reader, err := eviction.New(s.tt.Client, eviction.Options{Helper: eviction.KubectlDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	sopts := eviction.RolloutOptions{Domains: doms}
	st := readStatus(t, reader, id, sopts)
	checkStates(t, "running, in the upgrade of the second domain", st,
		[]eviction.DomainState{eviction.StateDone, eviction.StateUpgrading, eviction.StatePending})
	if !st.Running || st.LockName == "" || st.LockHolder == "" || st.Domains[1].Stage != eviction.StageUpgrade || st.Domains[1].Cordoned != s.nodes.PerUD {
		t.Errorf("running %v, Lease %q held by %q, %s stage %q with %d node(s) cordoned; want running, held, Upgrade, all %d cordoned",
			st.Running, st.LockName, st.LockHolder, doms[1], st.Domains[1].Stage, st.Domains[1].Cordoned, s.nodes.PerUD)
	}
	if st.Domains[0].Since == nil || st.Domains[1].NotBefore == nil || !st.Domains[1].NotBefore.Equal(*st.Domains[0].Since) {
		t.Errorf("since %v, not before %v; want the first domain's mark for both", st.Domains[0].Since, st.Domains[1].NotBefore)
	}

	cancel()
	var de *eviction.DomainError
	if err := <-stopped; !errors.As(err, &de) || de.Domain != doms[1] || de.Stage != eviction.StageUpgrade || !errors.Is(err, context.Canceled) {
		t.Fatalf("rollout: %v; want it cancelled in the upgrade of %s", err, doms[1])
	}
	st = readStatus(t, reader, id, sopts)
	checkStates(t, "stopped in the second domain", st,
		[]eviction.DomainState{eviction.StateDone, eviction.StateStopped, eviction.StatePending})
	if st.Running || st.LockName == "" || st.LockHolder != "" || st.Domains[1].Stage != eviction.StageUpgrade || st.Completed {
		t.Errorf("running %v, Lease %q held by %q, %s stage %q, completed %v; want the Lease released, stopped in Upgrade", st.Running, st.LockName, st.LockHolder, doms[1], st.Domains[1].Stage, st.Completed)
	}

	// The CLI, in-process with the test's kubeconfig, reads the same.
	var stdout, stderr bytes.Buffer
	code := app.Run(ctx, []string{"rollout", "status", id, "--domains", strings.Join(doms, ","), "-o", "json", "--kubeconfig", s.tt.Testbed().Kubeconfig()},
		genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr}, app.Config{Name: "udrain"})
	if code != app.ExitOK {
		t.Fatalf("udrain rollout status: exit code %d: %s", code, stderr.String())
	}
	var doc report.RolloutStatusReport
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("udrain rollout status -o json: %v\n%s", err, stdout.String())
	}
	if doc.Kind != report.KindRolloutStatus || doc.Status == nil {
		t.Fatalf("udrain rollout status -o json: kind %q, status %v", doc.Kind, doc.Status)
	}
	checkStates(t, "the CLI, stopped", doc.Status,
		[]eviction.DomainState{eviction.StateDone, eviction.StateStopped, eviction.StatePending})

	opts.Upgrade = func(ctx context.Context, dom topology.Domain) error {
		time.Sleep(upgradeStep)
		return nil
	}
	if _, err := d.Rollout(ctx, opts); err != nil {
		t.Fatalf("resumed rollout: %v", err)
	}
	st = readStatus(t, reader, id, sopts)
	checkStates(t, "resumed to completion", st,
		[]eviction.DomainState{eviction.StateDone, eviction.StateDone, eviction.StateDone})
	if !st.Completed || st.Done != len(doms) || st.Running {
		t.Errorf("completed %v, done %d, running %v; want completed, %d done, not running", st.Completed, st.Done, st.Running, len(doms))
	}
	checkUpgradedAndUncordoned(t, s, id)
}

func readStatus(t *testing.T, d *eviction.Drainer, id string, opts eviction.RolloutOptions) *eviction.RolloutStatus {
	t.Helper()
	opts.ID = id
	st, err := d.RolloutStatus(t.Context(), opts)
	if err != nil {
		t.Fatalf("RolloutStatus: %v", err)
	}
	b, _ := json.Marshal(st)
	t.Logf("status: %s", b)
	return st
}

func checkStates(t *testing.T, when string, st *eviction.RolloutStatus, want []eviction.DomainState) {
	t.Helper()
	var got []eviction.DomainState
	for _, p := range st.Domains {
		got = append(got, p.State)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: states %v, want %v", when, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: states %v, want %v", when, got, want)
			return
		}
	}
}
