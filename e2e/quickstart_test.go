package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestQuickstartUpgrade runs examples/quickstart/upgrade, the core of an
// upgrade script a newcomer writes from the documentation (list the
// domains, plan, roll with a callback), as a user would: built with go
// build and run with the testbed's kubeconfig, on the test's domains. It lists each domain with its nodes and health, plans them in
// the order given, calls back for each, and the rollout keeps the
// scenario's guarantees: each group disrupted once, never more than one
// down, every node marked upgraded and uncordoned.
func TestQuickstartUpgrade(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "quickstart/upgrade")
	s := deploy(t, defaultScenario())
	domains := s.domains()
	id := "quickstart-" + s.tt.Name
	args := []string{"--kubeconfig", bed.Kubeconfig(), "--id", id}
	for _, d := range domains {
		args = append(args, "--domain", d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if _, err := runLogged(t, s.tt, cmd, "quickstart-upgrade.log"); err != nil {
		t.Fatalf("quickstart/upgrade: %v\n%s", err, out.String())
	}
	t.Logf("quickstart/upgrade took %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())

	want := []string{fmt.Sprintf("plan %s: %v, upgraded already: []", id, domains)}
	for i, d := range domains {
		want = append(want, fmt.Sprintf("domain %s: %d nodes, healthy true", d, s.nodes.PerUD),
			fmt.Sprintf("upgrading %s: [%s %s]", d, s.nodes.Name(i, 0), s.nodes.Name(i, 1)))
	}
	want = append(want, fmt.Sprintf("rolled %d domains (0 skipped), %d groups disrupted", len(domains), s.lws.Groups))
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the program's output has no %q", w)
		}
	}
	checkWholeRollout(t, s, start, "quickstart/upgrade")
	checkUpgradedAndUncordoned(t, s, id)
}
