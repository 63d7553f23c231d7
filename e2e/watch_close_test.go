package e2e

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

// serverWatchTimeout is how long the API server serves each watch of the
// watch-close drill before it closes it itself.
const serverWatchTimeout = 3

// TestRolloutSurvivesWatchesTheServerCloses is issue 24's watch-close
// drill: the kube-apiserver itself ends every watch udrain reads through,
// every 3 s, for the whole rollout. It is what the server does with
// --min-request-timeout to a watch that asks for no timeout, and with
// timeoutSeconds to one that does (k8s.io/apiserver
// pkg/endpoints/handlers/get.go, handleWatch): client-go's reflectors
// always ask for one, of 5 to 10 minutes, so the test asks for 3 s instead
// (its client's transport rewrites timeoutSeconds) and the server ends the
// watch when that runs out, cleanly, not cut on the way as by the proxy of
// TestRolloutSurvivesCutWatches. udrain reads through a controller's
// SharedInformerFactory on that client (Options.Informers), so every wait
// of the rollout (budgets, pods gone, recovery) spans closes.
//
// The rollout completes with the guarantees of the plain rollout, and the
// API server's audit log shows that the server ended the watches: for
// nodes, pods and PDBs, watches of the account answered after about 3 s.
func TestRolloutSurvivesWatchesTheServerCloses(t *testing.T) {
	t.Parallel()
	if !hasAuditLog(t) {
		t.Skip("this cluster has no audit log to see the watches with")
	}
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	const name = "short-watches"
	user := "system:serviceaccount:" + s.tt.Name + ":" + name
	rules := append(clusterRoleFromFile(t, drainerRoleFile, drainerRoleName).Rules,
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"list", "watch"}})
	clientAs(t, s.tt, name, rules, true)
	var rewritten atomic.Int32
	client := tokenClientWith(t, s.tt, s.tt.Name, name, func(rt http.RoundTripper) http.RoundTripper {
		return shortWatches{next: rt, n: &rewritten}
	})
	events := &eventLog{}
	opts := eviction.Options{Helper: eviction.KubectlDefaults(), OnEvent: events.add, Informers: startedInformers(t, client)}
	d, err := eviction.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.tt.OnFailure("udrain-events.txt", events.write)
	start := time.Now()
	res, err := d.Rollout(ctx, eviction.RolloutOptions{ID: "e2e-server-closes", Domains: s.domains(), RecoveryTimeout: 3 * time.Minute,
		NoLock: true,
		Upgrade: func(ctx context.Context, _ topology.Domain) error {
			return sleepCtx(ctx, 2*serverWatchTimeout*time.Second)
		}})
	if err != nil {
		t.Fatalf("rollout with watches the server closes: %v", err)
	}
	took := time.Since(start)
	t.Logf("rollout took %s", took.Round(time.Millisecond))
	if sum := report.SummarizeRollout(res); sum.DomainsDone != 3 {
		t.Errorf("summary %+v, want 3 domains done", sum)
	}
	checkWholeRollout(t, s, start, "udrain rollout over watches the server closes")
	checkUpgradedAndUncordoned(t, s, "e2e-server-closes")

	// The server ended the watches: those of the rollout's time, answered
	// (not cut: a code), lasted about timeoutSeconds.
	reqs := auditSettled(t, user)
	closed := map[string]int{}
	for _, r := range reqs {
		if r.Verb != "watch" || r.Code != 200 || r.Received.Before(start) {
			continue
		}
		closed[r.Resource]++
	}
	t.Logf("%d watch request(s) given timeoutSeconds=%d; watches the server ended during the rollout: %v", rewritten.Load(), serverWatchTimeout, closed)
	// A rollout of about 30 s: each kind's watch was ended several times.
	want := int(took/(2*serverWatchTimeout*time.Second)) - 1
	for _, res := range []string{"nodes", "pods", "poddisruptionbudgets.policy"} {
		if closed[res] < want {
			t.Errorf("%d watch(es) of %s ended by the server during the %s rollout, want %d or more", closed[res], res, took.Round(time.Second), want)
		}
	}
}

// shortWatches asks the API server to end every watch after
// serverWatchTimeout seconds.
type shortWatches struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (s shortWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		return s.next.RoundTrip(req)
	}
	q.Set("timeoutSeconds", strconv.Itoa(serverWatchTimeout))
	r := req.Clone(req.Context())
	r.URL.RawQuery = q.Encode() // Clone copied the URL
	s.n.Add(1)
	return s.next.RoundTrip(r)
}
