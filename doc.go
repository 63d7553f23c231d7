// Package udrain makes node upgrades safe for gang-scheduled, multi-host
// inference: groups of pods (LeaderWorkerSet, Ray, multi-node vLLM) that live
// or die together.
//
// Draining nodes one at a time breaks the same group again and again;
// draining many at once breaks many groups at once. udrain drains upgrade
// domains (UDs, sets of nodes sharing a label value) in an order that a plain
// PodDisruptionBudget over the groups' leaders can protect. The contract it
// relies on has three layers:
//
//  1. Topology: all pods of a group sit in one UD; groups of one workload sit
//     in different UDs.
//  2. Delegated readiness: a group's leader is Ready only while every member
//     of its group is healthy.
//  3. A PDB over the leaders, which is then a budget of healthy groups.
//
// The module is a set of small packages; import only what you need:
//
//   - [github.com/udrain/udrain/topology]: upgrade domains from node labels,
//     groups from pod labels or PodGroups, and an audit of the contract.
//   - [github.com/udrain/udrain/health]: the one judgment of a group's
//     health and of a PodDisruptionBudget's status, as structured values.
//   - [github.com/udrain/udrain/eviction]: plan and execute the drain of one
//     UD (protected pods first, then the rest), and the resumable rollout over
//     all UDs. Compatible with k8s.io/kubectl/pkg/drain.
//   - [github.com/udrain/udrain/clusterinformers]: the shared informers a
//     controller already runs (a client-go factory, a controller-runtime
//     cache), for eviction to read the cluster through.
//   - [github.com/udrain/udrain/readiness]: a leader's readiness endpoint that
//     aggregates its group's health; its gate subpackage sets a readiness gate
//     condition for workloads whose containers cannot change.
//   - [github.com/udrain/udrain/gpu]: GPU node classification, including GPU
//     nodes whose device plugin never advertised the GPUs.
//   - [github.com/udrain/udrain/bootstrap]: wait until a server is reachable
//     before starting (the worker-registration problem).
//   - [github.com/udrain/udrain/upgrade]: ready-made upgrade steps for a
//     rollout that need no shell: a Job per node from a template, a node
//     label handshake with an agent, a webhook.
//   - [github.com/udrain/udrain/kubeclient]: a client-go configuration that
//     never waits forever on a sick API server (each request bounded,
//     watches only until they start), with udrain's rate limits.
//   - [github.com/udrain/udrain/redact]: the one rule for the credentials a
//     URL carries, which every package that prints URLs applies.
//
// The udrain command (cmd/udrain, also usable as "kubectl udrain") wraps all
// of them for scripts and containers: flags, output and exit codes over the
// library, nothing more.
//
// Shared by every package: [ConfigError], the one shape of a configuration
// error (naming the setting or argument at fault; nothing changed because
// of it), and [Severity], the one casing of a finding's severity. A caller
// whose users set the settings another way (a command line's flags, a
// custom resource's fields) names them its own way in any error of the
// module with [DescribeError], and in the module's log lines with
// [NamingLogger], as the udrain command names its flags.
package udrain
