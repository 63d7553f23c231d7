package app

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/eviction"
)

// The errors of the library about the arguments and settings of the
// commands that run a Drainer read, on the command line, in terms of the
// command's arguments and flags.
func TestDrainerErrorsNameTheCommandsArguments(t *testing.T) {
	ctx := t.Context()
	d, err := eviction.New(fake.NewClientset(), eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const emptyDomain = "invalid DOMAIN: empty; give the value of the domain label of the nodes to drain"
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"plan", func() error { _, err := d.Plan(ctx, ""); return err }, emptyDomain},
		{"drain", func() error { _, _, err := d.Drain(ctx, "", eviction.DrainOptions{}); return err }, emptyDomain},
		{"uncordon", func() error { _, err := d.Uncordon(ctx, ""); return err }, emptyDomain},
		{"domains", func() error { _, err := d.Health(ctx, ""); return err }, emptyDomain},
		{"wait-healthy", func() error { _, err := d.WaitHealthy(ctx, ""); return err }, emptyDomain},
		{"status ID", func() error {
			_, err := d.RolloutStatus(ctx, "a b", eviction.RolloutStatusOptions{})
			return err
		}, "invalid ID: "},
		{"status --domains", func() error {
			_, err := d.RolloutStatus(ctx, "", eviction.RolloutStatusOptions{Domains: []string{"ud-1", "ud-1"}})
			return err
		}, `invalid --domains: "ud-1" is named twice`},
		{"status --order", func() error {
			_, err := d.RolloutStatus(ctx, "", eviction.RolloutStatusOptions{Order: "x"})
			return err
		}, `invalid --order: "x" is not an order`},
		{"status --lock-namespace", func() error {
			_, err := d.RolloutStatus(ctx, "", eviction.RolloutStatusOptions{LockNamespace: "A"})
			return err
		}, `invalid --lock-namespace: "A" is not a namespace name`},
	} {
		err := inFlagTerms(tc.call())
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error starting %q", tc.name, err, tc.want)
		}
	}
}
