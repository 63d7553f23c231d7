package eviction_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/eviction/evictiontest"
)

// exampleClient is a fake clientset holding exampleCluster, over which
// evictions behave as the API server's (package evictiontest); with spent,
// its budget allows no disruption (its status counts a group down
// elsewhere), and evicting a leader is refused (429).
func exampleClient(spent bool) *fake.Clientset {
	nodes, pods, pdbs := exampleCluster()
	if spent {
		pdbs[0].Status.DisruptionsAllowed, pdbs[0].Status.CurrentHealthy = 0, 1
	}
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, &nodes[i])
	}
	for i := range pods {
		objs = append(objs, &pods[i])
	}
	for i := range pdbs {
		objs = append(objs, &pdbs[i])
	}
	return evictiontest.NewClientset(objs...)
}

// Every stop of a domain is a *DomainError: where it stopped, what was
// still waiting and the budget blocking, unwrapping to the cause, here
// the drain's timeout while a budget refused the leader (429): a
// *RetryError with ReasonBlocked, what a caller waits out.
func ExampleDomainError() {
	client := exampleClient(true)
	d, err := eviction.New(client, eviction.Options{Helper: &drain.Helper{GracePeriodSeconds: -1, Timeout: time.Second}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _, err = d.Drain(context.Background(), "ud-1", eviction.DrainOptions{ID: "maint-42"})
	var stop *eviction.DomainError
	var blocked *eviction.RetryError
	if errors.As(err, &stop) && errors.As(err, &blocked) && blocked.Reason == eviction.ReasonBlocked {
		fmt.Println(stop.Domain, stop.ID, stop.Stage, "timeout", stop.Timeout)
		fmt.Println("still waiting:", stop.Pending[0], "and", len(stop.Pending)-1, "more")
		fmt.Println("blocked by:", blocked.Block.PDB, "allowing", blocked.Block.DisruptionsAllowed)
		fmt.Println("deadline:", errors.Is(err, context.DeadlineExceeded))
		fmt.Println("blocked anywhere:", errors.Is(err, &eviction.RetryError{Reason: eviction.ReasonBlocked}))
	}
	// Output:
	// ud-1 maint-42 Phase1 timeout 1s
	// still waiting: inference/llama-0 and 1 more
	// blocked by: llama-leaders allowing 0
	// deadline: true
	// blocked anywhere: true
}

// Health judges the groups with a pod on each domain, and the budgets over
// them, with package health: a controller sets its conditions from it.
func ExampleDrainer_Health() {
	d, err := eviction.New(exampleClient(false), eviction.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := d.Health(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dom := range report.Domains {
		for _, g := range dom.Groups {
			fmt.Println(dom.Domain, g.ID, g.Reason, g.Message)
		}
		for _, b := range dom.Budgets {
			fmt.Println(dom.Domain, b.Name, b.Reason, b.DisruptionsAllowed)
		}
	}
	// Output:
	// ud-1 inference/llama-0 GroupReady 2/2 members healthy
	// ud-1 llama-leaders CaughtUp 1
	// ud-2 inference/llama-1 GroupReady 2/2 members healthy
	// ud-2 llama-leaders CaughtUp 1
}
