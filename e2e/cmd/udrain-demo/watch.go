package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/udrain/udrain/e2e/fixture"
)

// recordingLine is what watch prints once it records: the demo script
// starts the rollout only after it.
const recordingLine = "recording pod events"

// PromiseError reports a recorded run that broke the budget's promise.
type PromiseError struct {
	Problems []string
}

func (e *PromiseError) Error() string {
	return "the recorded run broke the promise: " + strings.Join(e.Problems, "; ")
}

// watch records the workload's pod events until ctx ends, then prints what
// they show and returns a *PromiseError if more groups were down at once
// than the budget allows, or a worker was evicted before its leader.
func (d demo) watch(ctx context.Context, c kubernetes.Interface, out io.Writer) error {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: d.nodes.Selector().String()})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	rec, err := fixture.RecordPods(ctx, c, d.namespace(), d.selector())
	if err != nil {
		return err
	}
	from := time.Now() // the pods that existed are recorded by now
	fmt.Fprintln(out, recordingLine)
	<-ctx.Done()
	rec.Stop()
	o, err := observe(rec.Events(), from, nodes.Items, d.view())
	if err != nil {
		return err
	}
	if rerr := rec.Err(); rerr != nil {
		fmt.Fprintf(out, "  (the recording ended early: %v)\n", rerr)
	}
	fmt.Fprint(out, o.String())
	n := d.groupCount()
	if p := o.problems(n - 1); len(p) > 0 {
		return &PromiseError{Problems: p}
	}
	fmt.Fprintf(out, "  The budget's promise held: never fewer than %d of %d groups healthy, leaders evicted first in every domain.\n", n-1, n)
	return nil
}

// observation is what a recording of the workload's pods shows.
type observation struct {
	// Events is how many pod events were recorded.
	Events int
	// Disruptions counts, per group index, the times the group went from
	// healthy (whole, leader Ready) to not.
	Disruptions map[int]int
	// MinHealthy is the fewest healthy groups at any recorded moment from
	// the start of the observation on.
	MinHealthy, Groups int
	// Evictions lists, in order, the domain and role of each pod first
	// seen terminating.
	Evictions []eviction
}

type eviction struct {
	Pod, Domain string
	Leader      bool
	At          time.Time
}

// groupView is how a workload's groups are judged from its pods.
type groupView struct {
	// count is the number of groups.
	count int
	// groups is the status of each group.
	groups func(pods []corev1.Pod, nodes []corev1.Node) []fixture.GroupStatus
	// isLeader tells a group's leader (a Ray head).
	isLeader func(p *corev1.Pod) bool
}

// lwsView is the view of LeaderWorkerSets of one group each: group i is
// the group of sets[i].
func lwsView(sets []fixture.LeaderWorkerSet) groupView {
	return groupView{
		count: len(sets),
		groups: func(pods []corev1.Pod, nodes []corev1.Node) []fixture.GroupStatus {
			var out []fixture.GroupStatus
			for i, w := range sets {
				for _, g := range w.Groups(pods, nodes) {
					g.Index = i
					out = append(out, g)
				}
			}
			return out
		},
		isLeader: func(p *corev1.Pod) bool { return p.Labels[fixture.LWSWorkerIndexLabel] == "0" },
	}
}

// observe replays events of the workload w over nodes, from the moment from
// on: events before it (the pods that existed when the recording started,
// recorded one by one) only set the initial state.
func observe(events []fixture.PodEvent, from time.Time, nodes []corev1.Node, w groupView) (observation, error) {
	groups := w.count
	o := observation{Events: len(events), Disruptions: map[int]int{}, MinHealthy: groups, Groups: groups}
	udOf := map[string]string{}
	for _, n := range nodes {
		udOf[n.Name] = n.Labels[fixture.UpgradeDomainLabel]
	}
	prev := map[int]bool{}
	seen := map[types.UID]bool{}
	err := fixture.Replay(events, func(at time.Time, pods map[types.UID]*corev1.Pod) error {
		list := make([]corev1.Pod, 0, len(pods))
		for _, p := range pods {
			list = append(list, *p)
			if p.DeletionTimestamp != nil && !seen[p.UID] && p.Spec.NodeName != "" {
				seen[p.UID] = true
				o.Evictions = append(o.Evictions, eviction{Pod: p.Name, Domain: udOf[p.Spec.NodeName], Leader: w.isLeader(p), At: at})
			}
		}
		now := map[int]bool{}
		healthy := 0
		for _, g := range w.groups(list, nodes) {
			if g.Healthy() {
				now[g.Index] = true
				healthy++
			}
		}
		if !at.Before(from) {
			for g := range groups {
				if prev[g] && !now[g] {
					o.Disruptions[g]++
				}
			}
			o.MinHealthy = min(o.MinHealthy, healthy)
		}
		prev = now
		return nil
	})
	sort.SliceStable(o.Evictions, func(i, j int) bool { return o.Evictions[i].At.Before(o.Evictions[j].At) })
	return o, err
}

// problems lists how the recording breaks the promise of a budget that
// keeps minHealthy groups: fewer healthy groups at some moment, or a
// domain's worker evicted before a leader of that domain.
func (o observation) problems(minHealthy int) []string {
	var out []string
	if o.MinHealthy < minHealthy {
		out = append(out, fmt.Sprintf("only %d of %d groups healthy at one moment (the budget keeps %d)", o.MinHealthy, o.Groups, minHealthy))
	}
	leaderDone := map[string]bool{}
	workerSeen := map[string]string{}
	for _, e := range o.Evictions {
		if e.Leader {
			if w, ok := workerSeen[e.Domain]; ok && !leaderDone[e.Domain] {
				out = append(out, fmt.Sprintf("domain %s: worker %s evicted before leader %s", e.Domain, w, e.Pod))
			}
			leaderDone[e.Domain] = true
		} else if _, ok := workerSeen[e.Domain]; !ok {
			workerSeen[e.Domain] = e.Pod
		}
	}
	return out
}

// String is the verdict, a few lines each indented by two spaces.
func (o observation) String() string {
	var b strings.Builder
	var per []string
	total := 0
	for g := range o.Groups {
		per = append(per, fmt.Sprintf("group %d: %d", g, o.Disruptions[g]))
		total += o.Disruptions[g]
	}
	fmt.Fprintf(&b, "  %d pod events recorded during the rollout (a watch, independent of udrain):\n", o.Events)
	fmt.Fprintf(&b, "    group disruptions: %d (%s)\n", total, strings.Join(per, ", "))
	fmt.Fprintf(&b, "    fewest healthy groups at any moment: %d of %d\n", o.MinHealthy, o.Groups)
	if order := o.order(); order != "" {
		fmt.Fprintf(&b, "    eviction order: %s\n", order)
	}
	return b.String()
}

// order is the eviction order per domain, runs of one role counted:
// "ud0: leader, 3 workers; ud1: ...".
func (o observation) order() string {
	var domains []string
	var cur []string
	domain, role, n := "", "", 0
	flush := func() {
		if n > 0 {
			if n == 1 {
				cur = append(cur, role)
			} else {
				cur = append(cur, fmt.Sprintf("%d %ss", n, role))
			}
		}
		n = 0
	}
	for _, e := range o.Evictions {
		r := "worker"
		if e.Leader {
			r = "leader"
		}
		if e.Domain != domain {
			flush()
			if domain != "" {
				domains = append(domains, domain+": "+strings.Join(cur, ", "))
			}
			domain, cur = e.Domain, nil
		}
		if r != role {
			flush()
			role = r
		}
		n++
	}
	flush()
	if domain != "" {
		domains = append(domains, domain+": "+strings.Join(cur, ", "))
	}
	return strings.Join(domains, "; ")
}
