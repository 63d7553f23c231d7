package eviction_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/udrain/udrain/eviction"
)

// A controller that runs each step itself (to record a condition between
// them, or to upgrade the nodes its own way) calls Plan, Execute, Uncordon
// and WaitRecovered in turn: what Rollout does for each domain. Here
// package evictiontest's fake clientset plays the API server (an accepted
// eviction deletes its pod), and the example the StatefulSet controller
// (the group's pods come back with new UIDs).
func ExampleDrainer_Execute() {
	client := exampleClient(false)
	_, pods, _ := exampleCluster()
	d, err := eviction.New(client, eviction.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// 1. The plan: what would happen, before anything does.
	plan, err := d.Plan(ctx, "ud-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := plan.Err(); err != nil {
		fmt.Println("not safe to drain:", err)
		return
	}
	fmt.Println("phase 1:", plan.Phase1[0].String(), "phase 2:", plan.Phase2[0].String())

	// 2. Execute exactly that plan: cordon, evict the leader, then the
	// worker, and wait until both are gone (by UID).
	res, err := d.Execute(ctx, plan, eviction.DrainOptions{ID: "kubelet-1.37"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cordoned:", res.Cordoned, "evicted:", res.Pods.Phase1Evicted, "+", res.Pods.Phase2Evicted, "groups disrupted:", res.GroupsDisrupted)

	// 3. The upgrade of the domain's nodes goes here. Then make them
	// schedulable again.
	changed, err := d.Uncordon(ctx, plan.Domain)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("uncordoned:", changed)

	// 4. The workload's controller creates the group again...
	for _, p := range pods[:2] {
		p.UID = types.UID("new-" + p.Name)
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, &p, metav1.CreateOptions{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	// ... and WaitRecovered waits until the groups the plan disrupted are
	// healthy again, before the next domain.
	h, err := d.WaitRecovered(ctx, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range h.Groups {
		fmt.Printf("group %s: %s, %d/%d ready\n", g.ID, g.Reason, g.ReadyMembers, g.Size)
	}
	// Output:
	// phase 1: inference/llama-0 phase 2: inference/llama-0-1
	// cordoned: [gpu-ud-1] evicted: 1 + 1 groups disrupted: [inference/llama-0]
	// uncordoned: [gpu-ud-1]
	// group inference/llama-0: GroupReady, 2/2 ready
}
