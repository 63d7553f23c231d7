package app

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// domainFlags are --domain-label and --unlabeled, on every command that
// names domains.
type domainFlags struct {
	label     string
	unlabeled string
}

func (f *domainFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.label, "domain-label", topology.DefaultDomainLabel, "Node label whose value names a node's upgrade domain (any key works: a zone, a node pool)")
	cmd.Flags().StringVar(&f.unlabeled, "unlabeled", "error", "What to do with nodes without the domain label: error (control-plane nodes without it are left out), skip (leave them out), or own-domain (each node its own domain)")
}

func (f *domainFlags) policy() (topology.UnlabeledPolicy, error) {
	switch f.unlabeled {
	case "error":
		return topology.UnlabeledError, nil
	case "skip":
		return topology.UnlabeledSkip, nil
	case "own-domain":
		return topology.UnlabeledOwnDomain, nil
	}
	return 0, usageErrorf("--unlabeled=%q: use error, skip or own-domain", f.unlabeled)
}

func (f *domainFlags) validate() error {
	if err := f.validateLabel(); err != nil {
		return err
	}
	_, err := f.policy()
	return err
}

// validateLabel checks --domain-label alone (gpu has no --unlabeled): an
// empty one, which the library takes for its default, is refused; the
// rest is package eviction's check of a label key.
func (f *domainFlags) validateLabel() error {
	if f.label == "" {
		return usageErrorf("--domain-label is empty: name the node label of the upgrade domains, e.g. %s", topology.DefaultDomainLabel)
	}
	return inFlagTerms(eviction.Options{DomainLabel: f.label}.Validate())
}

func (f *domainFlags) layoutOptions() topology.LayoutOptions {
	p, _ := f.policy()
	return topology.LayoutOptions{LabelKey: f.label, Unlabeled: p}
}

// connectTimeout is how long a command waits for an API server that does
// not serve it before it fails with an *eviction.RetryError (ReasonUnreachable):
// eviction.DefaultConnectTimeout, or the command's --timeout if shorter
// (zero: none given).
func connectTimeout(timeout time.Duration) time.Duration {
	if timeout > 0 {
		return min(eviction.DefaultConnectTimeout, timeout)
	}
	return eviction.DefaultConnectTimeout
}
