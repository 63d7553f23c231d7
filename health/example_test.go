package health_test

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"

	"fmt"

	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// A controller judges each group it found and sets a condition from the
// structured status: Reason for the condition's reason, Message for its
// message, Problems for the members to name.
func ExampleEvaluate() {
	groups := topology.FindGroups(append(leaders(1), pod(1), pod(2, notReady), pod(3, unschedulable)))
	for i := range groups {
		st := health.Evaluate(&groups[i], health.Options{})
		fmt.Println(st.ID, st.Healthy, st.Reason, st.ReadyMembers, "of", st.Size)
		for _, m := range st.Problems {
			fmt.Printf("  %s: %s (%s)\n", m.Name, m.Reason, m.Detail)
		}
	}
	// Output:
	// ns/vllm-0 false MemberUnscheduled 2 of 4
	//   vllm-0-3: MemberUnscheduled (Pending: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu.)
	//   vllm-0-2: MemberNotReady (not ready)
}

// A budget's status lags behind its pods for a moment after they turn
// Ready; the next domain's evictions are judged by that status, so a
// rollout waits until it has caught up.
func ExampleBudget() {
	b := pdb(func(b *policyv1.PodDisruptionBudget) { b.Status.CurrentHealthy, b.Status.DisruptionsAllowed = 2, 0 })
	st := health.Budget(b, leaders(3), time.Now())
	fmt.Println(st.Healthy, st.Reason, st.Message)
	// Output:
	// false Behind status counts 2 healthy, the pods show 3
}
