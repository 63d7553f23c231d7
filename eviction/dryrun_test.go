package eviction

import (
	"k8s.io/apimachinery/pkg/labels"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func dryRunStrategy(s string) cmdutil.DryRunStrategy {
	switch s {
	case "client":
		return cmdutil.DryRunClient
	case "server":
		return cmdutil.DryRunServer
	}
	return cmdutil.DryRunNone
}

func parseSelector(s string) (labels.Selector, error) { return labels.Parse(s) }

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }
