// Package metrics exports Prometheus metrics of udrain's drains and
// rollouts, derived from the events of package eviction: a Recorder is
// built on a prometheus.Registerer the caller passes (a registry of its
// own, or controller-runtime's metrics.Registry) and is handed the
// Drainer's events through eviction.Options.OnEvent. Package eviction
// itself imports no Prometheus: a program that does not want metrics does
// not pay for them.
//
// The metrics, their labels and the queries they answer are in
// docs/METRICS.md; deploy/grafana holds a dashboard over them. Every name
// starts with udrain_. Labels are bounded: a request's result, a phase, a
// state, an event type, and the upgrade domain. Domain names are the
// values of one node label (topology.udrain.dev/upgrade-domain by
// default) and a cluster has few of them (tens: the fleet of 2,000 nodes
// in the performance tests has 20), so a domain label costs a handful of
// series per domain. No pod, node, PodDisruptionBudget or rollout ID is a
// label: those grow without bound over the life of a controller.
//
// What this package is not for: serving the metrics (use promhttp with
// the same registry), or knowing where a rollout stands after a restart
// (the metrics live in the process that ran it; the cluster's marks are
// the record).
package metrics
