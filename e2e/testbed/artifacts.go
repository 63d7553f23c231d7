package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain/e2e/fixture"
)

// DumpArtifacts writes into dir what a failed test needs to be understood:
// the control-plane logs (logs/), every event sorted by time (events.txt),
// the nodes and pods as tables (nodes.txt, pods.txt) and in full
// (nodes.yaml, pods.yaml), and the PDBs and StatefulSets (pdbs.txt,
// workloads.yaml). It goes on past a failing part and returns every error.
func (b *Testbed) DumpArtifacts(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	if b.cluster != nil {
		logs := filepath.Join(dir, "logs")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			errs = append(errs, err)
		} else if err := b.cluster.copyLogs(ctx, logs); err != nil {
			errs = append(errs, fmt.Errorf("control-plane logs: %w", err))
		}
	}
	if c := b.Client(); c != nil {
		errs = append(errs, dumpCluster(ctx, c, dir))
	}
	return errors.Join(errs...)
}

// dumpCluster writes the API side of the artifacts.
func dumpCluster(ctx context.Context, c kubernetes.Interface, dir string) error {
	var errs []error
	write := func(name string, fn func(io.Writer) error) {
		if err := writeFile(filepath.Join(dir, name), fn); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		write("nodes.txt", func(w io.Writer) error { return nodeTable(w, nodes.Items) })
		write("nodes.yaml", func(w io.Writer) error { return writeYAML(w, nodes) })
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		write("pods.txt", func(w io.Writer) error { return podTable(w, pods.Items) })
		write("pods.yaml", func(w io.Writer) error { return writeYAML(w, pods) })
	}
	events, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		write("events.txt", func(w io.Writer) error { return eventTable(w, events.Items) })
	}
	pdbs, err := c.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		write("pdbs.txt", func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tMIN-AVAILABLE\tMAX-UNAVAILABLE\tEXPECTED\tHEALTHY\tDESIRED\tALLOWED")
			for _, p := range pdbs.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", p.Namespace, p.Name, p.Spec.MinAvailable, p.Spec.MaxUnavailable,
					p.Status.ExpectedPods, p.Status.CurrentHealthy, p.Status.DesiredHealthy, p.Status.DisruptionsAllowed)
			}
			return tw.Flush()
		})
	}
	sets, err := c.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		write("workloads.yaml", func(w io.Writer) error { return writeYAML(w, sets) })
	}
	return errors.Join(errs...)
}

func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeYAML(w io.Writer, obj any) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func nodeTable(w io.Writer, nodes []corev1.Node) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUD\tPOOL\tREADY\tSCHEDULABLE\tTAINTS")
	for _, n := range nodes {
		ready := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status)
			}
		}
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.ToString())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", n.Name, orDash(n.Labels[fixture.UpgradeDomainLabel]), orDash(n.Labels[fixture.PoolLabel]),
			ready, !n.Spec.Unschedulable, orDash(strings.Join(taints, ",")))
	}
	return tw.Flush()
}

func podTable(w io.Writer, pods []corev1.Pod) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tNODE\tPHASE\tREADY\tCONTAINERS-READY\tDELETING\tUID")
	for i := range pods {
		p := &pods[i]
		deleting := "-"
		if p.DeletionTimestamp != nil {
			deleting = p.DeletionTimestamp.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%t\t%s\t%s\n", p.Namespace, p.Name, orDash(p.Spec.NodeName), p.Status.Phase,
			fixture.IsReady(p), fixture.ContainersReady(p), deleting, p.UID)
	}
	return tw.Flush()
}

// eventTime is the best time an event carries.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

func eventTable(w io.Writer, events []corev1.Event) error {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for i := range events {
		e := &events[i]
		obj := fmt.Sprintf("%s/%s", strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name)
		if e.InvolvedObject.Namespace != "" {
			obj = e.InvolvedObject.Namespace + "/" + obj
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason, obj, max(e.Count, 1), e.Message)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
