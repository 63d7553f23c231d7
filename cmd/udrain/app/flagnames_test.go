package app

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
			_, err := d.RolloutStatus(ctx, eviction.RolloutOptions{ID: "a b"})
			return err
		}, "invalid ID: "},
		{"status --domains", func() error {
			_, err := d.RolloutStatus(ctx, eviction.RolloutOptions{Domains: []string{"ud-1", "ud-1"}})
			return err
		}, `invalid --domains: "ud-1" is named twice`},
		{"status --order", func() error {
			_, err := d.RolloutStatus(ctx, eviction.RolloutOptions{Order: "x"})
			return err
		}, `invalid --order: "x" is not an order`},
		{"status --lock-namespace", func() error {
			_, err := d.RolloutStatus(ctx, eviction.RolloutOptions{LockNamespace: "A"})
			return err
		}, `invalid --lock-namespace: "A" is not a namespace name`},
	} {
		in := inFlagTerms
		if strings.HasPrefix(tc.name, "status") {
			in = inStatusFlagTerms
		}
		err := in(tc.call())
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error starting %q", tc.name, err, tc.want)
		}
	}
}

// So do the errors of the read-only Drainer (eviction.NewReader) that the
// commands which change nothing (domains, audit, wait-healthy, rollout
// status) run.
func TestReaderErrorsNameTheCommandsArguments(t *testing.T) {
	ctx := t.Context()
	r, err := eviction.NewReader(fake.NewClientset(), eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newReader := func(opts eviction.Options) error {
		_, err := eviction.NewReader(fake.NewClientset(), opts)
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"domains", func() error { _, err := r.Health(ctx, ""); return err }, "invalid DOMAIN: empty"},
		{"wait-healthy", func() error { _, err := r.WaitHealthy(ctx, ""); return err }, "invalid DOMAIN: empty"},
		{"status ID", func() error { _, err := r.RolloutStatus(ctx, eviction.RolloutOptions{ID: "a b"}); return err }, "invalid ID: "},
		{"--domain-label", func() error { return newReader(eviction.Options{DomainLabel: "a b"}) }, `invalid --domain-label: "a b"`},
		{"--namespace", func() error { return newReader(eviction.Options{Namespace: "A"}) }, `invalid --namespace: "A"`},
		{"--timeout", func() error { return newReader(eviction.Options{ConnectTimeout: -1}) }, "invalid --timeout: -1ns"},
	} {
		in := inFlagTerms
		if strings.HasPrefix(tc.name, "status") {
			in = inStatusFlagTerms
		}
		err := in(tc.call())
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error starting %q", tc.name, err, tc.want)
		}
	}
}

// The flag tables name flags that exist: each flag of fieldFlags on some
// command, each remedy of findingFlags on the commands that print that
// finding's remedy (audit and rollout), with a value the library accepts.
func TestFlagTablesNameRealFlags(t *testing.T) {
	root := NewCommand(streamsOf(nil, nil), Config{})
	onSome := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { onSome["--"+f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { onSome["--"+f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for field, flag := range fieldFlags {
		name, _, _ := strings.Cut(flag, " ")
		if strings.HasPrefix(name, "--") && !onSome[name] {
			t.Errorf("fieldFlags[%q] = %q: no command has %s", field, flag, name)
		}
	}
	for code, advice := range findingFlags {
		name, value, _ := strings.Cut(advice, " ")
		for _, use := range []string{"audit", "rollout"} {
			cmd, _, err := root.Find([]string{use})
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Flags().Lookup(strings.TrimPrefix(name, "--")) == nil {
				t.Errorf("findingFlags[%s] = %q: %s has no %s", code, advice, use, name)
			}
		}
		if name == "--steering" {
			if err := (eviction.RolloutOptions{Steering: eviction.Steering(value)}).Validate(); err != nil {
				t.Errorf("findingFlags[%s] = %q: %v", code, advice, err)
			}
		} else {
			t.Errorf("findingFlags[%s] = %q: this test does not know how to check %s's value", code, advice, name)
		}
	}
}
