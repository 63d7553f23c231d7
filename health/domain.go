package health

// DomainStatus is the health of an upgrade domain's groups and of the
// PodDisruptionBudgets over their members, each judged by this package
// (Evaluate, Budget): Healthy when every one of them is. Package eviction
// returns it (Drainer.WaitRecovered; in Report, a rollout's events and
// results, and the error of a domain that did not recover): a rollout's
// recovery waits until it is Healthy.
type DomainStatus struct {
	Domain  string         `json:"domain"`
	Healthy bool           `json:"healthy"`
	Groups  []GroupStatus  `json:"groups,omitempty"`
	Budgets []BudgetStatus `json:"budgets,omitempty"`
}

// Unhealthy returns s with only its groups and budgets that are not
// healthy.
func (s DomainStatus) Unhealthy() DomainStatus {
	out := DomainStatus{Domain: s.Domain, Healthy: s.Healthy}
	for _, g := range s.Groups {
		if !g.Healthy {
			out.Groups = append(out.Groups, g)
		}
	}
	for _, b := range s.Budgets {
		if !b.Healthy {
			out.Budgets = append(out.Budgets, b)
		}
	}
	return out
}

// Report is the health of the groups of some upgrade domains and of the
// budgets over them, with the groups of the same workloads that are on
// no node yet: what package eviction's Drainer.Health and WaitHealthy
// return, and what a RetryError that waited for health in vain carries.
// Healthy when every domain and every unscheduled group is. (The CLI's
// "wait-healthy" document, package report's HealthReport, wraps one.)
type Report struct {
	Healthy bool           `json:"healthy"`
	Domains []DomainStatus `json:"domains"`
	// Unscheduled are the groups none of whose pods is on a node (Pending,
	// waiting for room), of workloads with a pod on some node of the
	// layout, named domain or not (a group drained from a named domain has
	// no pod left there to tie it to it): they are not healthy, and belong
	// to no domain yet. A Drainer scoped to a namespace sees only that
	// namespace's.
	Unscheduled []GroupStatus `json:"unscheduled,omitempty"`
}
