// Package upgrade holds ready-made upgrade steps for a rollout
// (eviction.RolloutOptions.Upgrade): what runs while a domain is cordoned
// and drained, before udrain marks it upgraded and uncordons it. All but
// Command need no shell, so they run from udrain's own image, which has
// none:
//
//   - [Job] runs one Kubernetes Job per node of the domain, made from a
//     template the caller gives and bound to the node by nodeName, and
//     waits until all have succeeded. This is the Kubernetes-native way to
//     run a privileged node upgrade (a host-mounting pod that upgrades the
//     kubelet, a reboot).
//   - [NodeLabel] labels the domain's nodes with the version asked for and
//     waits until each node's agent reports done with a label, an
//     annotation or a node condition: the handshake of in-house node agents
//     and of system-upgrade-controller Plans, which select nodes by label.
//   - [Webhook] POSTs the domain and its nodes to an upgrade service (a
//     cloud's node-pool API behind a small adapter) and waits for a 2xx
//     answer, with a timeout per attempt, retries with backoff, and the
//     credentials of the URL and the headers masked in every error.
//   - [Command] runs a shell command once per domain ("sh -c", with the
//     domain and its nodes in UDRAIN_* variables), in a process group of its
//     own that a cancel terminates; its output goes, line by line, to the
//     writer the caller gives per domain. What "udrain rollout
//     --upgrade-command" runs.
//
// [Options] choose one of the four, for a caller whose users pick the
// step (a command line, a custom resource's spec), and [New] builds it.
// ParseJobTemplate, ParseLabel, ParseSignal and ParseHeader read the
// settings from the text a user writes (a template file, "KEY=VALUE",
// "Name: value").
//
// Every step waits on watches, on the answer or on the command's exit,
// never by polling; is safe to run again, so a rollout resumed with the
// same ID runs it again (a Job that succeeded counts as done, a node that
// reports done counts at once, a webhook request carries a fixed
// idempotency key; a command must be idempotent itself); bounds its wait by
// an optional timeout (a command, by the context); and fails with a typed
// error a caller can test with errors.As ([JobFailedError],
// [TimeoutError], [WebhookError], [CommandError]). Options that cannot
// work give a *udrain.ConfigError when the step is built, before any
// domain is touched; each options type's Validate gives it without a
// cluster.
//
// It is not a node upgrade tool: what the Job or the command runs, what
// the agent does, what the service does are the caller's. It does not drain, uncordon or
// mark nodes either: package eviction does, around the step.
package upgrade
