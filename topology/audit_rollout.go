package topology

// The codes of the findings a rollout (package eviction) adds to the
// contract's: its plan, its destinations and its parallelism.
const (
	// FindingDisruptedAgain: a group evicted from one domain can only go
	// to a domain not upgraded yet, where the rollout disrupts it again.
	// A warning.
	FindingDisruptedAgain FindingCode = "DisruptedAgain"
	// FindingNoRoom: a group evicted from a domain finds no room, not
	// even in its own domain after the upgrade. An error with the strict
	// steering (the rollout refuses to start unless violations are
	// allowed), a warning otherwise.
	FindingNoRoom FindingCode = "NoRoom"
	// FindingLWSUnread: the audit could not read the LeaderWorkerSets
	// (RBAC), so their specs are not checked.
	FindingLWSUnread FindingCode = "LWSUnread"
	// FindingParallelLimited: a rollout asked for more domains at once
	// than its budgets and the upgraded room allow; it runs as many as
	// they allow. A warning.
	FindingParallelLimited FindingCode = "ParallelLimited"
)
