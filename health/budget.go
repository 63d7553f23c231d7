package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubectl/pkg/util/podutils"
)

// BudgetCounts are a PodDisruptionBudget's status counts, as the
// disruption controller last wrote them.
type BudgetCounts struct {
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`
	CurrentHealthy     int32 `json:"currentHealthy"`
	DesiredHealthy     int32 `json:"desiredHealthy"`
	ExpectedPods       int32 `json:"expectedPods"`
}

// BudgetRef names a PodDisruptionBudget in the reports of packages
// eviction and report (a blocker of a plan, a block of a drain, a block's
// record in a rollout's history).
type BudgetRef struct {
	Namespace string `json:"namespace"`
	PDB       string `json:"pdb"`
}

// String returns "namespace/name".
func (r BudgetRef) String() string { return r.Namespace + "/" + r.PDB }

// BudgetRefOf returns the reference of pdb.
func BudgetRefOf(pdb *policyv1.PodDisruptionBudget) BudgetRef {
	return BudgetRef{Namespace: pdb.Namespace, PDB: pdb.Name}
}

// CountsOf returns the status counts of pdb.
func CountsOf(pdb *policyv1.PodDisruptionBudget) BudgetCounts {
	return BudgetCounts{
		DisruptionsAllowed: pdb.Status.DisruptionsAllowed,
		CurrentHealthy:     pdb.Status.CurrentHealthy,
		DesiredHealthy:     pdb.Status.DesiredHealthy,
		ExpectedPods:       pdb.Status.ExpectedPods,
	}
}

// String returns e.g. "allows 0 disruption(s): 2 healthy, 2 needed, 3
// expected".
func (c BudgetCounts) String() string {
	return fmt.Sprintf("allows %d disruption(s): %d healthy, %d needed, %d expected",
		c.DisruptionsAllowed, c.CurrentHealthy, c.DesiredHealthy, c.ExpectedPods)
}

// BudgetReason says whether a budget's status has caught up with its pods.
type BudgetReason string

// The reasons of a BudgetStatus.
const (
	// BudgetCaughtUp: the status counts at least the Ready pods the budget
	// selects.
	BudgetCaughtUp BudgetReason = "CaughtUp"
	// BudgetNotObserved: the disruption controller has not written a
	// status for the budget's current spec yet.
	BudgetNotObserved BudgetReason = "NotObserved"
	// BudgetBehind: the status counts fewer healthy pods than are Ready:
	// the disruption controller has not caught up (it writes a little
	// after pods turn Ready), or it still counts a pod as being evicted
	// (status.disruptedPods) until that entry expires.
	BudgetBehind BudgetReason = "Behind"
)

// BudgetStatus is the judgment of one PodDisruptionBudget: whether its
// status has caught up with the pods it selects. Evictions are judged by
// that status, so a rollout waits for it before the next domain.
//
// Its reference is spelled Namespace and Name, not as a BudgetRef, because
// its JSON (a report's "budgets") was published so; Ref converts.
type BudgetStatus struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	BudgetCounts `json:",inline"`
	// ReadyPods counts the pods it selects that are Ready and not being
	// deleted, as the pods show.
	ReadyPods int32 `json:"readyPods"`
	// Healthy is true when Reason is BudgetCaughtUp.
	Healthy bool         `json:"healthy"`
	Reason  BudgetReason `json:"reason"`
	// Message says the same in a sentence, empty when caught up.
	Message string `json:"message,omitempty"`
	// StaleUntil, when set, is when the disruption controller stops
	// counting a Ready pod as being evicted (a replacement that took the
	// name of a pod evicted while the controller was not looking): the
	// status changes then without any pod changing.
	StaleUntil *time.Time `json:"staleUntil,omitempty"`
}

// Ref returns the reference of the budget s judges.
func (s BudgetStatus) Ref() BudgetRef { return BudgetRef{Namespace: s.Namespace, PDB: s.Name} }

// DisruptedPodTimeout is how long the disruption controller keeps a pod in
// status.disruptedPods when it does not see the pod go (DeletionTimeout in
// the Kubernetes disruption controller).
const DisruptedPodTimeout = 2 * time.Minute

// CountsForBudget reports whether the disruption controller counts pod as
// healthy for a PodDisruptionBudget that selects it: Ready and not being
// deleted. An eviction of such a pod spends a disruption.
func CountsForBudget(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && podutils.IsPodReady(pod)
}

// Budget judges pdb against pods (pods of other namespaces and pods it
// does not select are ignored) at time now.
func Budget(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) BudgetStatus {
	st := BudgetStatus{Namespace: pdb.Namespace, Name: pdb.Name, BudgetCounts: CountsOf(pdb), Reason: BudgetCaughtUp, Healthy: true}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		st.Healthy, st.Reason, st.Message = false, BudgetNotObserved, "status not yet observed for the current spec"
		return st
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return st
	}
	var stale []string
	var until time.Time
	for _, p := range pods {
		if p.Namespace != pdb.Namespace || !sel.Matches(labels.Set(p.Labels)) || !CountsForBudget(p) {
			continue
		}
		st.ReadyPods++
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok {
			if end := t.Add(DisruptedPodTimeout); end.After(now) {
				stale = append(stale, p.Name)
				if end.After(until) {
					until = end
				}
			}
		}
	}
	if pdb.Status.CurrentHealthy >= st.ReadyPods {
		return st
	}
	st.Healthy, st.Reason = false, BudgetBehind
	st.Message = fmt.Sprintf("status counts %d healthy, the pods show %d", pdb.Status.CurrentHealthy, st.ReadyPods)
	if len(stale) > 0 {
		slices.Sort(stale)
		st.StaleUntil = &until
		st.Message += fmt.Sprintf("; the disruption controller still counts %s as being evicted (status.disruptedPods) until %s",
			strings.Join(stale, ", "), until.UTC().Format(time.TimeOnly))
	}
	return st
}
