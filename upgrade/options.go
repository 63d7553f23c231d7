package upgrade

import (
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
)

// Options choose one step of the package, for a caller whose users pick
// it (a command line, the spec of a custom resource): at most one field
// is set, and none means no upgrade step (drain, uncordon and recover
// only).
type Options struct {
	Command   *CommandOptions
	Job       *JobOptions
	NodeLabel *NodeLabelOptions
	Webhook   *WebhookOptions
}

// chosen names the fields set.
func (o Options) chosen() []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"Command", o.Command != nil}, {"Job", o.Job != nil}, {"NodeLabel", o.NodeLabel != nil}, {"Webhook", o.Webhook != nil}} {
		if f.set {
			set = append(set, "upgrade.Options."+f.name)
		}
	}
	return set
}

// Validate checks that at most one step is chosen, and the chosen step's
// options (its Validate). It returns the *udrain.ConfigError that New
// would return for them, short of what New finds out (sh for Command).
func (o Options) Validate() error {
	if set := o.chosen(); len(set) > 1 {
		return &udrain.ConfigError{Field: set[0], Problem: "set together with another upgrade step: a rollout runs one, pick it", See: set[1:]}
	}
	switch {
	case o.Command != nil:
		return o.Command.Validate()
	case o.Job != nil:
		return o.Job.Validate()
	case o.NodeLabel != nil:
		return o.NodeLabel.Validate()
	case o.Webhook != nil:
		return o.Webhook.Validate()
	}
	return nil
}

// New returns the step o chooses, built by Command, Job, NodeLabel or
// Webhook (client is for Job and NodeLabel), or nil for none; or a
// *udrain.ConfigError for options that cannot work.
func New(client kubernetes.Interface, o Options) (eviction.UpgradeFunc, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch {
	case o.Command != nil:
		return Command(*o.Command)
	case o.Job != nil:
		return Job(client, *o.Job)
	case o.NodeLabel != nil:
		return NodeLabel(client, *o.NodeLabel)
	case o.Webhook != nil:
		return Webhook(*o.Webhook)
	}
	return nil, nil
}
