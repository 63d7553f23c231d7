// Package readiness makes a group's leader ready only while every member of
// its group is healthy: the "delegated readiness" layer of the udrain
// contract. With it, a PodDisruptionBudget over the leaders becomes a budget
// of healthy groups, and draining an upgrade domain cannot break more groups
// than the budget allows.
//
// A [Checker] checks a fixed list of [Member]s ([HTTPCheck]: any 2xx is
// healthy; [TCPCheck]: a connection is accepted; or a [CheckFunc] of your
// own) and serves the verdict through [Checker.Handler] in the exact text
// format of the kube-apiserver's /readyz (?verbose, ?exclude=, /readyz/<member>).
// [Checker.NewServer] serves it with bounds on what clients can hold.
// [MembersFromLWSEnv] builds the member list of a LeaderWorkerSet group from
// the variables LeaderWorkerSet sets in the leader pod; [MembersOptions]
// take the members from a NAME=URL list or from those variables, with the
// TLS settings of https members, as a sidecar's configuration gives them
// ("udrain serve-readiness" maps its flags to them). Point the leader's
// readinessProbe at /readyz, with timeoutSeconds above [Options.Timeout].
//
// How it behaves under load and failure:
//
//   - All members are checked concurrently, each within
//     [Options.MemberTimeout] and all within [Options.Timeout], so one hanging
//     member costs one member timeout, not a probe timeout.
//   - Results are reused for [Options.TTL], and concurrent requests share one
//     round of checks: a burst of probes causes at most one check per member
//     per TTL.
//   - A member that cannot be resolved or refuses connections is down at
//     once; one that answers badly or slowly is down after
//     [Options.FailureThreshold] consecutive failures; one not checked yet is
//     not ready. These rules are the pure functions [ClassOf],
//     [MemberState.Observe], [MemberState.Verdict] and [GroupReady]. (The
//     readiness-gate controller in readiness/gate checks no endpoint: it
//     judges the member pods by their status, with package health.)
//   - The members are fixed when the checker is built: no request can choose
//     what is dialed. Member answers are read up to a size limit, and every
//     network call has a deadline.
//
// What the endpoint shows, to whoever can reach the pod (it has no
// authentication, like the kubelet's probes): whether each member is
// healthy, by name, and on /readyz/<member> the class of a failure
// ([Reason]: "connection refused", "HTTP status 503", "TLS handshake
// failed", ...). The full error, which names the member's URL, its address,
// the DNS resolver's and the start of an unhealthy answer's body, is shown
// only with [Options.ExposeMemberErrors]. Credentials in member URLs (user
// info, secret query values, fragments) appear nowhere, errors and logs
// included: see package redact. The [Server] answers only GET and HEAD,
// refuses long headers, times out slow clients and caps the connections open
// at once, closing those held without a request first, so that clients
// cannot starve the kubelet's probes or exhaust the sidecar's memory
// ([ServeOptions.ConnectionMemory] is the bound, [ServeOptions.Memory] the
// whole of what a checker and its server hold); members served over https
// with a private CA or a client certificate take [TLSOptions].
//
// What it is not for:
//
//   - Liveness. Never wire group health into a livenessProbe: when a worker
//     fails, the kubelet would restart the healthy leader, and the group
//     would lose more than it had lost. Keep the leader's livenessProbe on its
//     own process.
//   - Workloads whose containers cannot change: readiness/gate sets a
//     readiness-gate condition on the leader from the member pods' status
//     instead.
//   - Discovering members at run time: the member list is fixed; a group
//     whose size changes gets a new leader pod (as LeaderWorkerSet does).
//
// Members found by DNS name (as with LeaderWorkerSet) need the group's
// headless Service to publish not-ready addresses, which LeaderWorkerSet's
// does: otherwise an unready leader could not resolve its own name, and would
// never become ready.
//
// The package uses the standard library, k8s.io/utils/clock and package
// redact only, and does not log: it reports through return values and the
// [Options.OnChange] callback. Bad configuration is a *udrain.ConfigError
// whose Field names the setting, e.g. "readiness.Options.MemberTimeout".
package readiness
