package udrain

// The labels, annotations and taint udrain writes on the cluster's
// objects, in one place, so that a program that only reads them (a
// dashboard, an admission policy, a script with kubectl) needs no other
// package of the module. Their values are stable.
const (
	// CordonedByAnnotation marks nodes that udrain cordoned, with the ID
	// of the drain or rollout as value, so that it uncordons those and
	// leaves alone nodes someone else cordoned.
	CordonedByAnnotation = "udrain.dev/cordoned-by"

	// UpgradedByAnnotation marks the nodes of a domain whose upgrade step
	// has succeeded, with the rollout's ID as value. A rollout run again
	// with the same ID skips those domains: they are never drained twice.
	UpgradedByAnnotation = "udrain.dev/upgraded-by"

	// UpgradedAtAnnotation records, beside UpgradedByAnnotation and in the
	// same patch, when the rollout marked the node's domain upgraded (RFC
	// 3339): a resumed rollout keeps the order in which its domains were
	// upgraded.
	UpgradedAtAnnotation = "udrain.dev/upgraded-at"

	// RecoveredByAnnotation marks one node of a domain whose recovery a
	// rollout saw end (the groups its drain disrupted healthy again, their
	// budgets caught up), with the rollout's ID as value. A domain marked
	// upgraded but not recovered is still recovering: the rollout's status
	// says so, and a rollout run again with the same ID waits in it for
	// the groups a stopped run left Pending or incomplete. With several
	// domains in flight, more than one can be.
	RecoveredByAnnotation = "udrain.dev/recovered-by"

	// PendingUpgradeTaint is the key of the taint a rollout puts on the
	// nodes of its domains that are not upgraded yet, with the rollout's
	// ID as value: the scheduler then places evicted pods (groups and
	// ordinary pods alike) on upgraded nodes first, and a pod is not moved
	// again when the domain it landed on drains in its turn. A domain's
	// cordon takes it off its nodes (the cordon keeps evicted pods off;
	// DaemonSet pods, which tolerate the cordon, may start there during
	// the upgrade step); the patch that uncordons a node and marks it
	// upgraded removes it from any node that still has it; a rollout that
	// stops removes it from the nodes it is still on, and an uncordon
	// removes it too.
	PendingUpgradeTaint = "udrain.dev/upgrade-pending"

	// UpgradeStepLabel marks the pods of a rollout's own upgrade step: it
	// is on every Job package upgrade's Job step creates and on its pods,
	// with a hash of the rollout ID and the domain as value (shared by the
	// Jobs of one domain). Plans skip the pods that carry it (a rollout
	// resumed while a Job still runs on a node of the domain does not
	// evict them).
	UpgradeStepLabel = "udrain.dev/upgrade-step"

	// RolloutIDAnnotation, DomainAnnotation and NodeAnnotation name the
	// rollout, the domain and the node a Job of package upgrade's Job step
	// upgrades.
	RolloutIDAnnotation = "udrain.dev/rollout-id"
	DomainAnnotation    = "udrain.dev/domain"
	NodeAnnotation      = "udrain.dev/node"
)
