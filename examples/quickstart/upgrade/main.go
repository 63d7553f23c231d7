// Command upgrade is the core of an upgrade script on package eviction: it
// lists the upgrade domains with their nodes and health and plans the
// rollout (one read: PlanRollout), and rolls it, calling back for each
// domain's upgrade.
//
//	go run ./examples/quickstart/upgrade --kubeconfig ~/.kube/config --id kubelet-1.37.2
//
// The rollout holds a Lease in udrain-system while it runs: create that
// namespace once (kubectl apply -k deploy/namespace). Run again with the
// same --id after a stop, it resumes where the first run stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/report"
	"github.com/udrain/udrain/topology"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	id := flag.String("id", "quickstart", "the rollout's ID: run again with the same ID to resume")
	var domains []string
	flag.Func("domain", "a domain to roll, in this order (repeat; default: every domain)", func(s string) error {
		domains = append(domains, s)
		return nil
	})
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background()) // udrain logs through the context's logger
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		var client *kubernetes.Clientset
		if client, err = kubernetes.NewForConfig(cfg); err == nil {
			err = run(ctx, client, *id, domains, os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, client kubernetes.Interface, id string, domains []string, out io.Writer) error {
	// Nodes without the domain label (a control plane's) are in no domain,
	// and left alone.
	d, err := eviction.New(client, eviction.Options{Unlabeled: topology.UnlabeledSkip})
	if err != nil {
		return err
	}

	// List and plan, from one read: the domains in the rollout's order,
	// each with its nodes and the health of its groups, and what is done
	// already. A broken placement contract is a *topology.ContractError
	// listing its findings.
	opts := eviction.RolloutOptions{
		ID:      id,
		Domains: domains,
		Upgrade: upgrade(out),
		OnEvent: func(_ context.Context, e eviction.Event) {
			if e.Type == eviction.EventDomainStarted || e.Type == eviction.EventDomainDone {
				fmt.Fprintln(out, report.FormatEvent(e, time.RFC3339))
			}
		},
	}
	plan, err := d.PlanRollout(ctx, opts)
	if err != nil {
		return err
	}
	var order, upgraded []string
	for _, dom := range plan.Domains { // in the rollout's order
		order = append(order, dom.Domain)
		if dom.State == eviction.StateSkipped {
			upgraded = append(upgraded, dom.Domain)
			continue
		}
		fmt.Fprintf(out, "domain %s: %d nodes, healthy %t, %d pods to evict\n",
			dom.Domain, len(dom.Plan.Nodes), dom.Health.Healthy, len(dom.Plan.Phase1)+len(dom.Plan.Phase2))
	}
	fmt.Fprintf(out, "plan %s: %v, upgraded already: %v\n", plan.ID, order, upgraded)

	// Roll: each domain drained, upgraded, uncordoned and recovered in turn.
	res, err := d.Rollout(ctx, opts)
	if err != nil {
		return err // a *eviction.DomainError says where and why it stopped
	}
	sum := report.SummarizeRollout(res)
	fmt.Fprintf(out, "rolled %d domains (%d skipped), %d groups disrupted\n", sum.DomainsDone, sum.DomainsSkipped, sum.GroupsDisrupted)
	return nil
}

// upgrade is the callback each domain's upgrade runs in, its nodes drained
// and cordoned: reboot them, change their image, upgrade the kubelet.
func upgrade(out io.Writer) eviction.UpgradeFunc {
	return func(ctx context.Context, dom topology.Domain) error {
		fmt.Fprintf(out, "upgrading %s: %v\n", dom.Name, dom.Nodes)
		return nil
	}
}
