package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"
)

// parseDrainFlags parses args with the drain flags and builds the helper.
func parseDrainFlags(t *testing.T, args ...string) (*drain.Helper, *drainFlags, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "drain"}
	var f drainFlags
	f.add(cmd, "")
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	h, err := f.helper()
	return h, &f, err
}

// TestDrainFlagsToHelper maps every kubectl drain flag to the drain.Helper
// field kubectl sets from it.
func TestDrainFlagsToHelper(t *testing.T) {
	kubectlDefaults := drain.Helper{GracePeriodSeconds: -1, ChunkSize: cmdutil.DefaultChunkSize, DryRunStrategy: cmdutil.DryRunNone}
	with := func(mod func(h *drain.Helper)) drain.Helper {
		h := kubectlDefaults
		mod(&h)
		return h
	}
	for _, tc := range []struct {
		name string
		args []string
		want drain.Helper
	}{
		{"defaults", nil, kubectlDefaults},
		{"force", []string{"--force"}, with(func(h *drain.Helper) { h.Force = true })},
		{"ignore-daemonsets", []string{"--ignore-daemonsets"}, with(func(h *drain.Helper) { h.IgnoreAllDaemonSets = true })},
		{"delete-emptydir-data", []string{"--delete-emptydir-data"}, with(func(h *drain.Helper) { h.DeleteEmptyDirData = true })},
		{"grace-period", []string{"--grace-period", "30"}, with(func(h *drain.Helper) { h.GracePeriodSeconds = 30 })},
		{"grace-period 0 deletes at once", []string{"--grace-period=0"}, with(func(h *drain.Helper) { h.GracePeriodSeconds = 0 })},
		{"timeout", []string{"--timeout", "15m"}, with(func(h *drain.Helper) { h.Timeout = 15 * time.Minute })},
		{"pod-selector", []string{"--pod-selector", "app!=db"}, with(func(h *drain.Helper) { h.PodSelector = "app!=db" })},
		{"disable-eviction", []string{"--disable-eviction"}, with(func(h *drain.Helper) { h.DisableEviction = true })},
		{"skip-wait-for-delete-timeout", []string{"--skip-wait-for-delete-timeout", "60"}, with(func(h *drain.Helper) { h.SkipWaitForDeleteTimeoutSeconds = 60 })},
		{"chunk-size", []string{"--chunk-size", "100"}, with(func(h *drain.Helper) { h.ChunkSize = 100 })},
		{"dry-run alone is client", []string{"--dry-run"}, with(func(h *drain.Helper) { h.DryRunStrategy = cmdutil.DryRunClient })},
		{"dry-run=client", []string{"--dry-run=client"}, with(func(h *drain.Helper) { h.DryRunStrategy = cmdutil.DryRunClient })},
		{"dry-run=server", []string{"--dry-run=server"}, with(func(h *drain.Helper) { h.DryRunStrategy = cmdutil.DryRunServer })},
		{"dry-run=none", []string{"--dry-run=none"}, kubectlDefaults},
		{"udrain's own flags leave the helper alone", []string{"--allow-violations", "--concurrency", "4"}, kubectlDefaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parseDrainFlags(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(drain.Helper{}, "Ctx", "Client", "Out", "ErrOut")); diff != "" {
				t.Errorf("helper (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDrainFlagsOwn(t *testing.T) {
	_, f, err := parseDrainFlags(t, "--allow-violations", "--concurrency", "4")
	if err != nil {
		t.Fatal(err)
	}
	if !f.allowViolations || f.concurrency != 4 {
		t.Errorf("allowViolations=%v concurrency=%d, want true and 4", f.allowViolations, f.concurrency)
	}
	_, f, _ = parseDrainFlags(t)
	if f.allowViolations || f.concurrency != 32 {
		t.Errorf("defaults: allowViolations=%v concurrency=%d, want false and 32", f.allowViolations, f.concurrency)
	}
}

// Bad values are refused as usage errors, judged by package eviction's
// validation and named by their flags, not by the library's fields.
func TestDrainFlagsInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--dry-run=maybe"}, "--dry-run"},
		{[]string{"--dry-run=true"}, "--dry-run"},
		{[]string{"--pod-selector", "a in (b"}, "--pod-selector"},
		{[]string{"--timeout=-1s"}, "--timeout"},
		{[]string{"--skip-wait-for-delete-timeout=-5"}, "--skip-wait-for-delete-timeout"},
		{[]string{"--chunk-size=-1"}, "--chunk-size"},
		{[]string{"--concurrency=-1"}, "--concurrency"},
	} {
		_, f, err := parseDrainFlags(t, tc.args...)
		if err == nil {
			err = f.validate()
		}
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.flag) || strings.Contains(err.Error(), "eviction.") {
			t.Errorf("%q: got %v (exit code %d), want a usage error naming %s (not the library's field)", tc.args, err, ExitCode(err), tc.flag)
		}
	}
	// 0 is the library's default, not an error.
	if _, f, err := parseDrainFlags(t, "--concurrency=0"); err != nil || f.validate() != nil {
		t.Errorf("--concurrency=0: %v, %v; want the default", err, f.validate())
	}
}

// kubectlDrainFlags are the flags of "kubectl drain" in k8s.io/kubectl
// v0.37.2 (pkg/cmd/drain/drain.go, NewCmdDrain, with cmdutil's
// AddChunkSizeFlag, AddDryRunFlag and AddLabelSelectorFlagVar): name, type
// and default. Importing that package would add modules to go.mod (its
// describe dependency), so they are written down here.
var kubectlDrainFlags = map[string][2]string{
	"force":                        {"bool", "false"},
	"ignore-daemonsets":            {"bool", "false"},
	"delete-emptydir-data":         {"bool", "false"},
	"grace-period":                 {"int", "-1"},
	"timeout":                      {"duration", "0s"},
	"pod-selector":                 {"string", ""},
	"disable-eviction":             {"bool", "false"},
	"skip-wait-for-delete-timeout": {"int", "0"},
	"chunk-size":                   {"int64", "500"},
	"dry-run":                      {"string", "none"},
	"selector":                     {"string", ""},
}

// TestDrainFlagsMatchKubectl checks that every kubectl drain flag exists in
// udrain drain with the same type and default, except those that cannot
// apply.
func TestDrainFlagsMatchKubectl(t *testing.T) {
	cmd := &cobra.Command{Use: "drain"}
	var f drainFlags
	f.add(cmd, "")
	notShared := map[string]string{"selector": "the domain selects the nodes"}
	for name, want := range kubectlDrainFlags {
		ours := cmd.Flags().Lookup(name)
		if ours == nil {
			if notShared[name] == "" {
				t.Errorf("kubectl drain has --%s, udrain drain does not: add it or say why not", name)
			}
			continue
		}
		if got := [2]string{ours.Value.Type(), ours.DefValue}; got != want {
			t.Errorf("--%s: type and default %q, kubectl drain's are %q", name, got, want)
		}
	}
}
