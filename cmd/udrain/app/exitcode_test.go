package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/topology"
	"github.com/udrain/udrain/upgrade"
)

// TestExitCode: the exit code of each class of report.ReasonOf (whose
// table is in package report), and the command line's own usage errors.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"plain", errors.New("boom"), ExitError},
		{"usage", usageErrorf("bad"), ExitUsage},
		{"config", &udrain.ConfigError{Field: "eviction.Options.Concurrency"}, ExitUsage},
		{"readiness env", &readiness.EnvError{Name: "LWS_GROUP_SIZE"}, ExitUsage},
		{"readiness env as a usage error", &UsageError{Err: &readiness.EnvError{Name: "LWS_GROUP_SIZE"}}, ExitUsage},
		{"blocked", &eviction.RetryError{Reason: eviction.ReasonBlocked}, ExitBlocked},
		{"multiple PDBs in a domain", &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase1, Err: &eviction.ClusterError{Reason: eviction.ReasonMultiplePDBs}}, ExitContract},
		{"locked", &eviction.RetryError{Reason: eviction.ReasonLocked}, ExitError},
		{"contract", &topology.ContractError{}, ExitContract},
		{"canceled", context.Canceled, ExitInterrupted},
		{"usage interrupted", &UsageError{Err: context.Canceled}, ExitInterrupted},
		{"upgrade command", &upgrade.CommandError{Domain: "ud-1", ExitCode: 3}, ExitError},
		{"reported contract", &reportedError{err: &topology.ContractError{}}, ExitContract},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
			if info := errorInfo(tc.err); info != nil && (info.ExitCode != tc.want || exitCodes[info.Reason] != tc.want) {
				t.Errorf("errorInfo(%v) = %+v, want exit code %d and its reason", tc.err, info, tc.want)
			}
		})
	}
}

// TestCommandExitCodes runs command lines that fail in each class and checks
// the exit code and what stderr says.
func TestCommandExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []clusterOption
		args       []string
		want       int
		wantStderr string
	}{
		{"unknown command", nil, []string{"drian"}, ExitUsage, `unknown command "drian"`},
		{"unknown flag", nil, []string{"drain", "ud-1", "--forse"}, ExitUsage, "unknown flag: --forse"},
		{"missing domain", nil, []string{"plan"}, ExitUsage, "takes one upgrade domain"},
		{"two domains", nil, []string{"drain", "ud-1", "ud-2"}, ExitUsage, "takes one upgrade domain"},
		{"unknown domain", nil, []string{"plan", "ud-9"}, ExitUsage, "known domains: ud-1, ud-2"},
		{"unknown domain in rollout", nil, []string{"rollout", "--domains", "ud-1,ud-9"}, ExitUsage, `unknown upgrade domain "ud-9"`},
		{"domain twice in rollout", nil, []string{"rollout", "--domains", "ud-1,ud-1", "--dry-run"}, ExitUsage, "named twice"},
		{"bad output", nil, []string{"domains", "-o", "xml"}, ExitUsage, "use -o table, -o json or -o yaml"},
		{"bad dry-run", nil, []string{"drain", "ud-1", "--dry-run=maybe"}, ExitUsage, `must be "none", "server", or "client"`},
		{"bad unlabeled", nil, []string{"domains", "--unlabeled=ignore"}, ExitUsage, "use error, skip or own-domain"},
		{"bad pod selector", nil, []string{"drain", "ud-1", "--pod-selector", "a in (b"}, ExitUsage, "invalid --pod-selector: \"a in (b\": unable to parse requirement"},
		{"negative timeout", nil, []string{"drain", "ud-1", "--timeout=-1s"}, ExitUsage, "--timeout"},
		{"bad rollout id", nil, []string{"rollout", "--id", "no spaces please"}, ExitUsage, "--id"},
		{"bad URL", nil, []string{"wait-server", "ftp://x"}, ExitUsage, `invalid URL: ftp://x has scheme "ftp"`},
		{"refused pods", nil, []string{"drain", "ud-1"}, ExitError, "use --ignore-daemonsets"},
		{"contract in audit", []clusterOption{withViolations()}, []string{"audit"}, ExitContract, "placement contract violated: 2 errors"},
		{"no room under strict steering in audit", []clusterOption{withGPULoss()}, []string{"audit", "--steering", "Strict"}, ExitContract, "placement contract violated: 1 error"},
		{"no room under the default steering in audit", []clusterOption{withGPULoss()}, []string{"audit"}, ExitOK, ""},
		{"bad steering in audit", nil, []string{"audit", "--steering", "Sideways"}, ExitUsage, "--steering"},
		{"zero domains at once", nil, []string{"rollout", "--parallel", "0", "--dry-run"}, ExitUsage, `invalid argument "0" for "--parallel" flag: "0" is not a number of domains: use 1 (one at a time), a larger number, or auto`},
		{"negative domains at once", nil, []string{"audit", "--parallel=-1"}, ExitUsage, `"-1" is not a number of domains`},
		{"words for domains at once", nil, []string{"rollout", "--parallel", "many", "--dry-run"}, ExitUsage, `"many" is not a number of domains`},
		{"in place, one domain at a time", nil, []string{"rollout", "--in-place", "--dry-run"}, ExitUsage, `--in-place takes several domains at once: add --parallel auto`},
		{"in place, steering that lets a group land twice", nil, []string{"audit", "--parallel", "auto", "--in-place", "--steering", "Auto"}, ExitUsage, `--in-place needs --steering Strict (what it sets without --steering): with --steering Auto`},
		{"contract in plan", []clusterOption{withViolations()}, []string{"plan", "ud-1", "--ignore-daemonsets"}, ExitContract, "--allow-violations"},
		{"contract in drain", []clusterOption{withViolations()}, []string{"drain", "ud-1", "--ignore-daemonsets"}, ExitContract, "Pack"},
		{"contract in rollout", []clusterOption{withViolations()}, []string{"rollout", "--ignore-daemonsets"}, ExitContract, "UnprotectedLeader"},
		{"violations allowed", []clusterOption{withViolations()}, []string{"drain", "ud-1", "--ignore-daemonsets", "--allow-violations"}, ExitOK, ""},
		{"unlabeled nodes", []clusterOption{withUnlabeledNode()}, []string{"domains"}, ExitContract, "--unlabeled=skip"},
		{"unlabeled nodes skipped", []clusterOption{withUnlabeledNode()}, []string{"domains", "--unlabeled=skip"}, ExitOK, ""},
		{"blocked past timeout", []clusterOption{withPDBAllowing(0)}, []string{"drain", "ud-2", "--timeout", "2s"}, ExitBlocked, "PodDisruptionBudget inference/llama-leaders allows 0"},
		{"blocked: what to do", []clusterOption{withPDBAllowing(0)}, []string{"drain", "ud-2", "--timeout", "2s"}, ExitBlocked, "wait until its groups are healthy ('udrain wait-healthy') and run the same command again"},
		{"upgrade command fails", nil, []string{"rollout", "--ignore-daemonsets", "--upgrade-command", "echo broken >&2; exit 7"}, ExitError, "exited with status 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.opts...)
			c.recreate = true
			r := runOn(t, c, tc.args...)
			if r.code != tc.want {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.want, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("stderr does not say %q:\n%s", tc.wantStderr, r.stderr)
			}
			if tc.want == ExitUsage || tc.want == ExitContract || tc.name == "refused pods" {
				if ev := c.evicted(); len(ev) > 0 {
					t.Errorf("evicted %v before failing with exit code %d; nothing may change", ev, tc.want)
				}
			}
		})
	}
}

func TestClientErrorExitCode(t *testing.T) {
	cfg, _ := testConfig(nil)
	cfg.NewClient = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		return nil, errors.New("no kubeconfig")
	}
	r := run(t, t.Context(), cfg, "domains")
	if r.code != ExitError {
		t.Fatalf("exit code %d, want %d", r.code, ExitError)
	}
	if !strings.Contains(r.stderr, "connecting to the cluster: no kubeconfig (give a kubeconfig") {
		t.Errorf("stderr does not say how to connect:\n%s", r.stderr)
	}
}

// TestDrainInterrupted cancels a drain blocked by a budget: it exits 130,
// prints what was done and how to resume, and evicts nothing after the
// cancel.
func TestDrainInterrupted(t *testing.T) {
	c := newCluster(t, withPDBAllowing(0))
	cfg, _ := testConfig(c.client)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errOut, done := runInBackground(ctx, cfg, "drain", "ud-2")
	waitFor(t, func() bool { return strings.Contains(errOut.String(), " Blocked domain=ud-2 ") })
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not stop within 10s of the cancel")
	}
	if code != ExitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, ExitInterrupted, errOut.String())
	}
	for _, want := range []string{"The drain of domain ud-2 was interrupted after 0s.", "Phase 1: 0 of 1 pod evicted", "Longest block: 0s by PodDisruptionBudget inference/llama-leaders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout does not say %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "interrupted\ninterrupted: nothing new was started after the signal; run the same command again to resume") {
		t.Errorf("stderr does not say how to resume:\n%s", errOut.String())
	}
	if ev := c.evicted(); len(ev) > 0 {
		t.Errorf("evicted %v although the budget allowed nothing", ev)
	}
}

// waitFor polls cond (a real wait: the command runs in another goroutine
// with its own watches) for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The library's stops name its calls and settings; the command line says
// commands and flags instead.
func TestStopsNameCommandsNotLibraryCalls(t *testing.T) {
	c := newCluster(t, withPDBAllowing(0))
	r := runOn(t, c, "drain", "ud-2", "--timeout", "2s")
	if r.code != ExitBlocked {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, ExitBlocked, r.stderr)
	}
	if strings.Contains(r.stderr, "Drainer.") || !strings.Contains(r.stderr, "'udrain uncordon ud-2'") {
		t.Errorf("stderr names library calls, or not the command:\n%s", r.stderr)
	}
}

// The advice the command line gives for a stop comes from the error's
// fields: which domain, whether its nodes stay cordoned, who holds it.
func TestHintFromStopFields(t *testing.T) {
	held := &eviction.RetryError{Reason: eviction.ReasonInProgress, Domain: "ud-1", Node: "n1", By: "maint-42", ID: "udrain-abc"}
	for _, tc := range []struct {
		name    string
		err     error
		want    []string
		wantNot []string
	}{{
		name: "stopped cordoned, no limit ran out",
		err:  &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageUpgrade, Err: errors.New("step failed")},
		want: []string{"stay cordoned", "run the same command again", "'udrain uncordon ud-1'"},
	}, {
		name: "timeout in phase 2",
		err:  &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePhase2, Timeout: time.Minute, Err: context.DeadlineExceeded},
		want: []string{"resumable", "--timeout", "'udrain uncordon ud-1'"},
	}, {
		name:    "recovery timeout: the nodes are uncordoned already",
		err:     &eviction.DomainError{Domain: "ud-1", Stage: eviction.StageRecovery, Timeout: time.Minute, Err: context.DeadlineExceeded},
		want:    []string{"--recovery-timeout"},
		wantNot: []string{"uncordon"},
	}, {
		name:    "held by another drain: nothing changed here",
		err:     &eviction.DomainError{Domain: "ud-1", Stage: eviction.StagePlan, Err: held},
		want:    []string{`resume "maint-42"`, "--id maint-42", "'udrain uncordon ud-1'"},
		wantNot: []string{"stay cordoned"},
	}, {
		name: "interrupted while cordoned",
		err:  &eviction.DomainError{Domain: "ud-2", Stage: eviction.StagePhase1, Err: context.Canceled},
		want: []string{"interrupted", "'udrain uncordon ud-2'"},
	}, {
		name: "blocked by a budget while cordoned",
		err: &eviction.DomainError{Domain: "ud-2", Stage: eviction.StagePhase1, Err: context.DeadlineExceeded,
			Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{Namespace: "ns", PDB: "llm"}}},
		want: []string{"'udrain wait-healthy'", "'udrain uncordon ud-2'"},
	}, {
		name: "blocked by a budget, stopped by an unreachable server",
		err: &eviction.DomainError{Domain: "ud-2", Stage: eviction.StagePhase1, Err: &eviction.RetryError{Reason: eviction.ReasonUnreachable, Err: errors.New("connection refused")},
			Block: &eviction.BlockInfo{BudgetRef: health.BudgetRef{Namespace: "ns", PDB: "llm"}}},
		want: []string{"'udrain wait-healthy'", "'udrain uncordon ud-2'"},
	}, {
		name: "the Lease's namespace is missing",
		err:  fmt.Errorf("rollout: %w", &eviction.ClusterError{Reason: eviction.ReasonNoLockNamespace, Namespace: "udrain-system", Lease: "udrain-rollout-x", Err: errors.New("not found")}),
		want: []string{"'kubectl create namespace udrain-system'", "--lock-namespace"},
	}, {
		name:    "refused at plan: nothing to release",
		err:     &eviction.DomainError{Domain: "ud-2", Stage: eviction.StagePlan, Err: context.Canceled},
		want:    []string{"interrupted"},
		wantNot: []string{"uncordon"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := hint(tc.err, "udrain", "udrain drain")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("hint %q: want %q in it", got, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("hint %q: want no %q in it", got, w)
				}
			}
		})
	}
}
