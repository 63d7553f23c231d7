package eviction

import cmdutil "k8s.io/kubectl/pkg/cmd/util"

func dryRunStrategy(s string) cmdutil.DryRunStrategy {
	switch s {
	case "client":
		return cmdutil.DryRunClient
	case "server":
		return cmdutil.DryRunServer
	}
	return cmdutil.DryRunNone
}
