// Command gpu-pool-audit prints a cluster's GPU pools, the totals per
// product and every problem with its GPU nodes: GPU nodes whose device
// plugin never advertised the devices (with the taint or node affinity that
// keeps the plugin off, and the toleration that would fix it), unhealthy
// devices, nodes advertising GPUs without labels. It is the smallest
// embedding of package gpu: list with client-go, then gpu.Summarize; it
// prints the table udrain gpu prints, with package report.
//
//	go run ./examples/gpu-pool-audit --kubeconfig ~/.kube/config
//	go run ./examples/gpu-pool-audit -o json | jq '.problems'
//
// It lists nodes and the DaemonSets of all namespaces, among which
// gpu.Summarize finds the device plugins; it needs list on nodes and
// daemonsets.apps, and works with nodes only, saying so, when DaemonSets are
// forbidden. It exits 0 when no problem was found, 3 when some were, 1 when
// the cluster could not be read, 2 on bad flags.
package main
