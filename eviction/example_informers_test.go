package eviction_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
)

// A controller that runs a SharedInformerFactory hands its informers to the
// Drainer (clusterinformers.FromFactory, before the factory starts): plans, drains,
// rollouts and health reports then read through them, and send no list or
// watch of their own. (A controller-runtime manager does the same with
// clusterinformers.FromCache(ctx, mgr.GetCache()).)
func Example_sharedInformers() {
	client := exampleClient(false)

	// The controller's factory, with the informers udrain needs.
	factory := informers.NewSharedInformerFactory(client, 0)
	d, err := eviction.New(client, eviction.Options{Informers: clusterinformers.FromFactory(factory)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for watching(client) < 4 { // nodes, pods, budgets, DaemonSets
		time.Sleep(time.Millisecond)
	}
	started := len(client.Actions()) // the factory's own lists and watches

	for range 3 {
		plan, err := d.Plan(ctx, "ud-1")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("phase 1:", plan.Phase1[0].String(), "phase 2:", plan.Phase2[0].String())
	}
	report, err := d.Health(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dom := range report.Domains {
		for _, g := range dom.Groups {
			fmt.Printf("%s: group %s %s, %d/%d ready\n", dom.Domain, g.ID, g.Reason, g.ReadyMembers, g.Size)
		}
	}
	fmt.Println("requests sent by the plans and the health report:", len(client.Actions())-started)
	// Output:
	// phase 1: inference/llama-0 phase 2: inference/llama-0-1
	// phase 1: inference/llama-0 phase 2: inference/llama-0-1
	// phase 1: inference/llama-0 phase 2: inference/llama-0-1
	// ud-1: group inference/llama-0 GroupReady, 2/2 ready
	// ud-2: group inference/llama-1 GroupReady, 2/2 ready
	// requests sent by the plans and the health report: 0
}

// watching counts the watches the factory has started.
func watching(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" {
			n++
		}
	}
	return n
}
