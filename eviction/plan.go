package eviction

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/gpu"
	"github.com/udrain/udrain/health"
	"github.com/udrain/udrain/topology"
)

// Snapshot is the cluster state a plan is computed from.
type Snapshot struct {
	Nodes []corev1.Node
	// Pods should hold every pod of the cluster, or at least the domain's
	// pods, every member of their groups and every pod of a workload with
	// two or more groups on the domain, so that groups and the audit see
	// members and sibling groups outside the domain too. The plan does not
	// modify them.
	Pods      []*corev1.Pod
	PDBs      []policyv1.PodDisruptionBudget
	PodGroups []schedulingv1beta1.PodGroup
	// DaemonSets are the cluster's DaemonSets, as a lister gives them:
	// kubectl refuses to drain pods of existing DaemonSets without
	// --ignore-daemonsets, and treats pods of deleted ones as orphans. Nil
	// when a pod of the domain is owned by a DaemonSet is a
	// *udrain.ConfigError (NewPlan refuses to guess); empty, not nil, says
	// there are none. A Snapshot from Drainer.Snapshot leaves it nil and
	// answers through the Drainer's DaemonSet informer, or a GET of each
	// DaemonSet a plan meets.
	DaemonSets []*appsv1.DaemonSet
	// Now is when the snapshot was taken; kubectl's
	// --skip-wait-for-delete-timeout compares deletion timestamps with it.
	Now time.Time

	// layout is the layout of Nodes under the Drainer's settings, when the
	// view that took the snapshot has built it already; groups are the
	// groups of Pods under its groupers, when a rollout's first look has
	// found them already (its plans of every domain share them).
	layout *topology.Layout
	groups []topology.Group
	// daemonSet answers for DaemonSets when the view that took the
	// snapshot knows them otherwise (its informer, or a GET).
	daemonSet dsLookup
}

// layoutOf returns the snapshot's layout under s: the one its view or
// look built, else built now.
func (snap *Snapshot) layoutOf(s *settings) (*topology.Layout, error) {
	if snap.layout != nil {
		return snap.layout, nil
	}
	return topology.BuildLayout(snap.Nodes, s.layoutOptions())
}

// groupsOf returns the groups of the snapshot's pods under s's groupers:
// those its look found, else found now.
func (snap *Snapshot) groupsOf(s *settings) []topology.Group {
	if snap.groups != nil {
		return snap.groups
	}
	return topology.FindGroups(snap.Pods, groupersFor(s, snap)...)
}

// Phase numbers the two stages of a domain drain that evict: 1 for
// StagePhase1 (the pods some PodDisruptionBudget selects, the groups'
// leaders, so that every disruption is charged to a budget), 2 for
// StagePhase2 (the other pods, once every phase-1 pod is evicted); 0 for
// any other stage.
func (s Stage) Phase() int {
	switch s {
	case StagePhase1:
		return 1
	case StagePhase2:
		return 2
	}
	return 0
}

// phaseWords is "phase 1" or "phase 2", the words of udrain's messages
// for the stage.
func (s Stage) phaseWords() string { return fmt.Sprintf("phase %d", s.Phase()) }

// PlannedPod is a pod of a plan: one it evicts (Plan.Phase1, Phase2), or
// one it leaves alone (Plan.Skipped) or refuses (Plan.Refused), with its
// Reason.
type PlannedPod struct {
	topology.PodRef
	// Reason, set on the pods of Plan.Skipped and Plan.Refused only, is
	// kubectl's reason to skip the pod ("ignoring DaemonSet-managed Pods")
	// or to refuse it ("Pods with local storage (use
	// --delete-emptydir-data to override)"), or udrain's where kubectl
	// has none.
	Reason string `json:"reason,omitempty"`
	// PDBs are the PodDisruptionBudgets that select the pod.
	PDBs []string `json:"pdbs,omitempty"`
	// Group is the pod's group, if any.
	Group *topology.GroupID `json:"group,omitempty"`
	// Leader marks the group's leader.
	Leader bool `json:"leader,omitempty"`
	// Terminating marks a pod already being deleted: it is waited on, not
	// evicted again.
	Terminating bool `json:"terminating,omitempty"`
	// Warning is kubectl's warning for the pod, if any (e.g. "deleting Pods
	// with local storage").
	Warning string `json:"warning,omitempty"`
	// Stage and the DryRun fields are set on the pods of a dry run's
	// Result (Result.DryRunPods), and written in its JSON; a Plan leaves
	// them empty (its Phase1 and Phase2 say the stage).
	//
	// Stage is the pod's phase: StagePhase1 or StagePhase2.
	Stage Stage `json:"-"`
	// DryRun is what the dry run found: WouldEvict, WouldDelete,
	// WouldWait, WouldBlock, WouldFail, or RequestGone (the pod no longer
	// exists).
	DryRun RequestResult `json:"-"`
	// DryRunMessage says the same in a sentence.
	DryRunMessage string `json:"-"`
	// DryRunBlock is the refusing budget for WouldBlock.
	DryRunBlock *BlockInfo `json:"-"`
}

// Skip reasons udrain adds where kubectl has no text.
const (
	reasonMirrorPod       = "mirror pod (managed by the kubelet, not by the API server)"
	reasonDeletedLongAgo  = "DeletionTimestamp older than --skip-wait-for-delete-timeout"
	reasonSkippedByFilter = "skipped by an additional filter"
	reasonUpgradeStepPod  = "a pod of the rollout's own upgrade step (label " + udrain.UpgradeStepLabel + ")"
)

// AffectedGroup is a group that loses pods when the domain drains: its
// health when the plan was made (package health's judgment), and how many
// of its pods the plan evicts.
type AffectedGroup struct {
	health.GroupStatus
	// Evicted counts the group's pods in this plan.
	Evicted int `json:"evicted"`
}

// Plan is what draining one domain will do. It is computed from a snapshot
// and names every pod it evicts by UID: executing it never evicts another.
type Plan struct {
	Domain   string   `json:"domain"`
	LabelKey string   `json:"labelKey"`
	Nodes    []string `json:"nodes"`
	// Phase1 lists the pods some PDB selects; Phase2 the others.
	Phase1 []PlannedPod `json:"phase1"`
	Phase2 []PlannedPod `json:"phase2"`
	// Skipped lists pods left alone (DaemonSet, mirror, long-deleted),
	// each with its Reason.
	Skipped []PlannedPod `json:"skipped,omitempty"`
	// Refused lists pods kubectl drain would refuse, each with its
	// Reason; Err reports them.
	Refused []PlannedPod `json:"refused,omitempty"`
	// Warnings are kubectl drain's warnings, in its format.
	Warnings []string `json:"warnings,omitempty"`
	// Blockers are the PDBs that would refuse phase 1 now.
	Blockers []health.Blocker `json:"blockers,omitempty"`
	// Groups are the groups the drain disrupts.
	Groups []AffectedGroup `json:"groups,omitempty"`
	// GPUs are the GPUs taken out of service, per product.
	GPUs []gpu.Capacity `json:"gpus,omitempty"`
	// GPUFit says, per GPU resource the evicted pods request, whether
	// they fit back onto the domain's nodes after the drain: pods in its
	// Unplaced or SpreadUnplaced may stay Pending when they come back
	// (fragmentation risk; fix placement before the drain).
	GPUFit []gpu.Fit `json:"gpuFit,omitempty"`
	// Findings are the contract findings that concern this domain.
	Findings []topology.Finding `json:"findings,omitempty"`
	// AllowViolations records whether error findings are tolerated.
	AllowViolations bool `json:"allowViolations,omitempty"`
	// CreatedAt is the snapshot time.
	CreatedAt time.Time `json:"createdAt"`
}

// Pods returns the pods of both phases.
func (p *Plan) Pods() []PlannedPod {
	out := make([]PlannedPod, 0, len(p.Phase1)+len(p.Phase2))
	return append(append(out, p.Phase1...), p.Phase2...)
}

// Err returns why the plan cannot be executed: a *ClusterError
// (ReasonRefusedPods) when
// kubectl's filters refuse pods, a *topology.ContractError for error
// findings (unless violations are allowed), or a *ClusterError (ReasonMultiplePDBs) when a
// phase-1 pod is selected by several PDBs. Nil means it can run.
func (p *Plan) Err() error {
	if len(p.Refused) > 0 {
		byMsg := map[string][]string{}
		for _, r := range p.Refused {
			byMsg[r.Reason] = append(byMsg[r.Reason], r.String())
		}
		return &ClusterError{Reason: ReasonRefusedPods, Pods: p.Refused, Messages: kubectlErrors(byMsg)}
	}
	for _, pod := range p.Phase1 {
		if len(pod.PDBs) > 1 {
			return &ClusterError{Reason: ReasonMultiplePDBs, Pod: pod.PodRef, PDBs: pod.PDBs}
		}
	}
	if !p.AllowViolations {
		var errs []topology.Finding
		for _, f := range p.Findings {
			if f.Severity == udrain.SeverityError {
				errs = append(errs, f)
			}
		}
		if len(errs) > 0 {
			return &topology.ContractError{Findings: errs}
		}
	}
	return nil
}

// planInput is what NewPlan needs besides the snapshot.
type planInput struct {
	domain string
	s      *settings
}

// NewPlan computes the plan for draining domain from a snapshot, with the
// drain settings of opts. It is a pure function: it calls no API. It fails
// with a *udrain.ConfigError for invalid options, an empty domain name, a
// nil snapshot or a snapshot without DaemonSets where pods need them, and a
// *topology.UnknownDomainError or *topology.UnlabeledNodesError for a bad
// layout. Refused pods and contract findings do not make it fail: they
// are in the plan, and Plan.Err reports them.
func NewPlan(domain string, snap *Snapshot, opts Options) (*Plan, error) {
	s, err := opts.settle()
	if err != nil {
		return nil, err
	}
	if domain == "" {
		return nil, emptyDomainError("NewPlan(domain)")
	}
	if snap == nil {
		return nil, configError("NewPlan(snap)", "nil; pass the cluster's state, e.g. from Drainer.Snapshot, or a Snapshot you built")
	}
	return newPlan(domain, snap, s)
}

func newPlan(domain string, snap *Snapshot, s *settings) (*Plan, error) {
	pl, err := newPlanner(domain, snap, s)
	if err != nil {
		return nil, err
	}
	for _, p := range pl.local {
		pl.add(p)
	}
	return pl.finish(), nil
}

// planner is one newPlan: what it knows of the domain, and what it has
// gathered of the pods it has gone through.
type planner struct {
	s        *settings
	snap     *Snapshot
	layout   *topology.Layout
	plan     *Plan
	now      time.Time
	inDomain map[string]bool
	// local are the pods of the domain's nodes, by node (in natural
	// order), namespace and name.
	local   []*corev1.Pod
	lookup  dsLookup
	groups  []topology.Group
	groupOf map[*corev1.Pod]*topology.Group
	pdbs    *topology.PDBIndex

	warnings      map[string][]string
	affected      map[topology.GroupID]*AffectedGroup
	affectedOrder []topology.GroupID
	pdbNeeded     map[health.BudgetRef]int
}

// newPlanner finds the domain and its pods, in a deterministic order, and
// their groups and budgets.
func newPlanner(domain string, snap *Snapshot, s *settings) (*planner, error) {
	layout, err := snap.layoutOf(s)
	if err != nil {
		return nil, err
	}
	d, err := layout.Domain(domain)
	if err != nil {
		return nil, err
	}
	pl := &planner{s: s, snap: snap, layout: layout, now: snap.Now, inDomain: make(map[string]bool, len(d.Nodes)),
		warnings: map[string][]string{}, affected: map[topology.GroupID]*AffectedGroup{}, pdbNeeded: map[health.BudgetRef]int{}}
	if pl.now.IsZero() {
		pl.now = s.Clock.Now()
	}
	rank := make(map[string]int, len(d.Nodes)) // d.Nodes are in natural order
	for i, n := range d.Nodes {
		pl.inDomain[n] = true
		rank[n] = i
	}
	pl.plan = &Plan{Domain: d.Name, LabelKey: layout.LabelKey, Nodes: d.Nodes, CreatedAt: pl.now, AllowViolations: s.AllowViolations}
	for _, p := range snap.Pods {
		if pl.inDomain[p.Spec.NodeName] {
			pl.local = append(pl.local, p)
		}
	}
	pl.lookup = snap.daemonSet
	if pl.lookup == nil {
		if snap.DaemonSets == nil {
			for _, p := range pl.local {
				if ref := metav1.GetControllerOf(p); ref != nil && isDaemonSetRef(ref) {
					return nil, configError("Snapshot.DaemonSets", "nil, but pod %s/%s is owned by DaemonSet %s; kubectl's filters need to know whether it exists: set DaemonSets to the cluster's DaemonSets (an empty slice if there are none)", p.Namespace, p.Name, ref.Name)
				}
			}
		}
		pl.lookup = daemonSetsLookup(snap.DaemonSets)
	}
	sort.Slice(pl.local, func(i, j int) bool {
		a, b := pl.local[i], pl.local[j]
		if ra, rb := rank[a.Spec.NodeName], rank[b.Spec.NodeName]; ra != rb {
			return ra < rb
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return topology.NaturalLess(a.Name, b.Name)
	})
	pl.groups = snap.groupsOf(s)
	pl.groupOf = map[*corev1.Pod]*topology.Group{}
	for i := range pl.groups {
		for _, m := range pl.groups[i].Members {
			if pl.inDomain[m.Spec.NodeName] {
				pl.groupOf[m] = &pl.groups[i]
			}
		}
	}
	pl.pdbs = topology.NewPDBIndex(snap.PDBs)
	return pl, nil
}

// add puts a pod of the domain where kubectl's filters and its budgets
// say: refused, skipped, phase 1 (a budget selects it) or phase 2.
func (pl *planner) add(p *corev1.Pod) {
	s, plan := pl.s, pl.plan
	if !s.podSelector.Matches(labels.Set(p.Labels)) {
		return
	}
	st := s.filters.filterPod(p, pl.lookup, pl.now)
	if st.Reason == drain.PodDeleteStatusTypeWarning {
		pl.warnings[st.Message] = append(pl.warnings[st.Message], p.Namespace+"/"+p.Name)
	}
	if !st.Delete {
		switch st.Reason {
		case drain.PodDeleteStatusTypeError:
			msg := st.Message
			if msg == "" {
				msg = "unexpected error"
			}
			plan.Refused = append(plan.Refused, PlannedPod{PodRef: topology.RefOf(p), Reason: msg})
		default:
			plan.Skipped = append(plan.Skipped, PlannedPod{PodRef: topology.RefOf(p), Reason: skipReason(p, st, s, pl.now)})
		}
		return
	}
	pp := PlannedPod{PodRef: topology.RefOf(p), Terminating: p.DeletionTimestamp != nil}
	if st.Reason == drain.PodDeleteStatusTypeWarning {
		pp.Warning = st.Message
	}
	selected := pl.pdbs.For(p)
	pp.PDBs = topology.PDBNames(selected)
	if g, ok := pl.groupOf[p]; ok {
		pp.Group = &g.ID
		pp.Leader = g.Leader == p
		ag := pl.affected[g.ID]
		if ag == nil {
			ag = &AffectedGroup{GroupStatus: health.Evaluate(g, health.Options{})}
			pl.affected[g.ID] = ag
			pl.affectedOrder = append(pl.affectedOrder, g.ID)
		}
		ag.Evicted++
	}
	if len(selected) == 0 {
		plan.Phase2 = append(plan.Phase2, pp)
		return
	}
	plan.Phase1 = append(plan.Phase1, pp)
	if health.CountsForBudget(p) {
		for _, b := range selected {
			pl.pdbNeeded[health.BudgetRefOf(b)]++
		}
	}
}

// finish adds to the plan what the whole domain tells: kubectl's
// warnings, the groups it disrupts, its blockers, GPUs and findings.
func (pl *planner) finish() *Plan {
	plan, snap := pl.plan, pl.snap
	plan.Warnings = kubectlWarnings(pl.warnings)
	for _, id := range pl.affectedOrder {
		plan.Groups = append(plan.Groups, *pl.affected[id])
	}
	sort.Slice(plan.Groups, func(i, j int) bool { return topology.CompareGroupIDs(plan.Groups[i].ID, plan.Groups[j].ID) < 0 })
	plan.Blockers = blockers(snap.PDBs, pl.pdbNeeded)
	nodes := planNodes(snap.Nodes, plan)
	plan.GPUs = gpu.CapacityOf(nodes, pl.s.GPU)
	plan.GPUFit = gpuFits(nodes, pl.local, plan, pl.s.GPU)
	// The findings that concern this domain: its groups, their sibling
	// groups of the same workloads, its pods and its control-plane nodes.
	plan.Findings = topology.Audit(topology.AuditInput{Layout: pl.layout, Groups: pl.groups, PDBs: snap.PDBs, PDBIndex: pl.pdbs,
		Pods: pl.local, Only: []string{plan.Domain}}).Findings
	return plan
}

// groupersFor returns the configured groupers, or the defaults with the
// snapshot's PodGroups.
func groupersFor(s *settings, snap *Snapshot) []topology.Grouper {
	if s.Groupers != nil {
		return s.Groupers
	}
	return topology.Groupers(snap.PodGroups)
}

func skipReason(p *corev1.Pod, st drain.PodDeleteStatus, s *settings, now time.Time) string {
	switch {
	case st.Message != "":
		return st.Message
	case s.filters.skipDeleted(p, now).Reason == drain.PodDeleteStatusTypeSkip:
		return reasonDeletedLongAgo
	case mirrorPod(p).Reason == drain.PodDeleteStatusTypeSkip:
		return reasonMirrorPod
	case upgradeStepPod(p).Reason == drain.PodDeleteStatusTypeSkip:
		return reasonUpgradeStepPod
	default:
		return reasonSkippedByFilter
	}
}

func blockers(pdbs []policyv1.PodDisruptionBudget, needed map[health.BudgetRef]int) []health.Blocker {
	var out []health.Blocker
	for i := range pdbs {
		b := &pdbs[i]
		n := needed[health.BudgetRefOf(b)]
		if n == 0 {
			continue
		}
		if int(b.Status.DisruptionsAllowed) >= n && b.Status.ObservedGeneration >= b.Generation {
			continue
		}
		out = append(out, health.Blocker{BudgetRef: health.BudgetRefOf(b), Needed: n, BudgetCounts: health.CountsOf(b)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].PDB < out[j].PDB
	})
	return out
}

// emptyDomainError is the error for a call that names no domain; arg is
// the call's domain argument, e.g. "Drainer.Drain(domain)".
func emptyDomainError(arg string) error {
	return configError(arg, "empty; give the value of the domain label of the nodes to drain")
}
