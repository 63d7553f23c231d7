package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/udrain/udrain/health"
)

// WriteTable writes the domains (nodes, cordoned, control plane, groups,
// unhealthy groups, GPUs), then every node, then every group with the
// domain it runs in.
func (r DomainList) WriteTable(w io.Writer, _ TableOptions) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DOMAIN\tNODES\tCORDONED\tCONTROL-PLANE\tGROUPS\tUNHEALTHY\tGPUS")
	for _, d := range r.Items {
		unhealthy := 0
		for _, g := range d.Health.Groups {
			if !g.Healthy {
				unhealthy++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%d\t%s\n", d.Name, len(d.Nodes), d.CordonedNodes, len(d.Nodes), d.ControlPlaneNodes, len(d.Health.Groups), unhealthy, gpuText(d.GPUs))
	}
	fmt.Fprintln(tw, "\nNODE\tDOMAIN\tREADY\tCORDONED\tGPUS\tPRODUCT\tGPU-STATUS\tUPGRADED-BY")
	for _, d := range r.Items {
		for _, n := range d.Nodes {
			cordoned := yesNo(n.Cordoned)
			if n.CordonedBy != "" {
				cordoned += " (udrain " + n.CordonedBy + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, d.Name, yesNo(n.Ready), cordoned, n.GPU.Count, orDash(n.GPU.Product), n.GPU.Status, orDash(n.UpgradedBy))
		}
	}
	groups := len(r.Unscheduled)
	for _, d := range r.Items {
		groups += len(d.Health.Groups)
	}
	if groups > 0 {
		fmt.Fprintln(tw, "\nNAMESPACE\tGROUP\tKIND\tDOMAIN\tLEADER\tREADY\tHEALTHY")
		row := func(domain string, g health.GroupStatus) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", g.ID.Namespace, g.ID.Name, g.ID.Kind, domain, orDash(g.Leader), g.ReadyMembers, g.Size, healthText(g))
		}
		for _, d := range r.Items {
			for _, g := range d.Health.Groups {
				row(d.Name, g)
			}
		}
		for _, g := range r.Unscheduled {
			row("(unscheduled)", g)
		}
	}
	if len(r.Unlabeled) > 0 {
		fmt.Fprintf(tw, "\nNodes without the label %s (left out): %s\n", r.LabelKey, strings.Join(r.Unlabeled, ", "))
	}
	return tw.Flush()
}

// WriteTable writes what was audited, where the simulated rollout's
// evicted groups would go, and the findings: a table, then each message
// in full.
func (r AuditReport) WriteTable(w io.Writer, o TableOptions) error {
	fmt.Fprintf(w, "Audited %s (label %s), %s and %s.\n", plural(len(r.Domains), "domain", "domains"), r.LabelKey,
		plural(r.Groups, "group", "groups"), plural(r.PDBs, "PodDisruptionBudget", "PodDisruptionBudgets"))
	switch {
	case r.Rollout != nil:
		names := make([]string, len(r.Rollout.Domains))
		for i, d := range r.Rollout.Domains {
			names[i] = d.Domain
		}
		fmt.Fprintf(w, "A rollout over every domain (steering %s) would take them in the order %s.\n", r.Rollout.Steering, strings.Join(names, ", "))
		if err := writeSchedule(w, o, r.Rollout.Parallel, r.Rollout.MaxInFlight, r.Rollout.InPlace, r.Rollout.Domains); err != nil {
			return err
		}
		if err := writeDestinations(w, r.Rollout.Destinations); err != nil {
			return err
		}
		fmt.Fprintln(w)
	case r.RolloutProblem != "":
		fmt.Fprintf(w, "Where evicted groups would go was not simulated: %s\n\n", r.RolloutProblem)
	}
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintln(w, "The placement contract holds: no findings.")
		return err
	}
	fmt.Fprintf(w, "%s, %s.\n\n", plural(r.Errors, "error", "errors"), plural(r.Warnings, "warning", "warnings"))
	return writeFindings(w, r.Findings, o)
}

// WriteTable writes the GPU pools, the products, every GPU node, and the
// problems with their fixes.
func (r GPUSummary) WriteTable(w io.Writer, _ TableOptions) error {
	s := r.Summary
	tw := newTable(w)
	fmt.Fprintln(tw, "POOL\tNODES\tGPUS\tADVERTISED\tPROBLEM NODES")
	for _, p := range s.Pools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", p.Kind, len(p.Nodes), p.GPUs, p.AdvertisedGPUs, p.ProblemNodes)
	}
	if len(s.Products) > 0 {
		fmt.Fprintln(tw, "\nVENDOR\tPRODUCT\tNODES\tGPUS\tADVERTISED")
		for _, p := range s.Products {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", p.Vendor, orDash(p.Product), p.Nodes, p.GPUs, p.AdvertisedGPUs)
		}
	}
	gpuNodes := 0
	for _, n := range s.Nodes {
		if n.GPU {
			gpuNodes++
		}
	}
	if gpuNodes > 0 {
		fmt.Fprintln(tw, "\nNODE\tDOMAIN\tSTATUS\tVENDOR\tPRODUCT\tGPUS\tRESOURCE\tSHARING\tDEDICATED")
		for _, n := range s.Nodes {
			if !n.GPU {
				continue
			}
			sharing := string(n.Sharing.Strategy)
			if n.Sharing.Replicas > 1 {
				sharing += fmt.Sprintf(" x%d", n.Sharing.Replicas)
			}
			if m := n.Sharing.MIGStrategy; m != "" && m != "none" {
				sharing += ", mig " + m
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s %d/%d\t%s\t%s\n", n.Node, orDash(r.Domains[n.Node]), n.Status, n.Vendor, orDash(n.Product), n.Count,
				orDash(string(n.Resource)), n.Allocatable, n.Capacity, sharing, yesNo(n.Dedicated))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Problems) == 0 {
		_, err := fmt.Fprintln(w, "\nNo problems found.")
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", plural(len(s.Problems), "problem", "problems"))
	for i, p := range s.Problems {
		where := "node " + p.Node
		if p.DaemonSet != "" {
			where += " (DaemonSet " + p.DaemonSet + ")"
		}
		fmt.Fprintf(w, "%d. %s %s %s: %s\n", i+1, strings.ToUpper(string(p.Severity)), p.Code, where, p.Message)
		if p.Fix != "" {
			fmt.Fprintf(w, "   fix: %s\n", p.Fix)
		}
	}
	return nil
}
