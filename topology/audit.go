package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/udrain/udrain"
)

// FindingCode names a rule of the placement contract. The values are
// stable, for scripts and controllers that filter findings.
type FindingCode string

// The rules the audit checks.
const (
	// FindingPack: a group's pods sit in more than one domain, so draining
	// either domain breaks it, and it is broken twice in a rollout.
	FindingPack FindingCode = "Pack"
	// FindingSpread: two groups of one workload share a domain while another
	// domain holds none of them, so one drain breaks both.
	FindingSpread FindingCode = "Spread"
	// FindingUnprotectedLeader: no PDB selects a group's leader, so nothing
	// stops a drain from breaking the group while others are down.
	FindingUnprotectedLeader FindingCode = "UnprotectedLeader"
	// FindingMultiplePDBs: more than one PDB selects a pod; the Eviction API
	// answers 500 for such a pod and it can never be evicted.
	FindingMultiplePDBs FindingCode = "MultiplePDBs"
	// FindingProtectedWorker: a PDB selects a group's worker; its evictions
	// in phase 2 may block on that budget.
	FindingProtectedWorker FindingCode = "ProtectedWorker"
	// FindingControlPlaneQuorum: a domain holds so many control-plane nodes
	// that draining it loses etcd quorum.
	FindingControlPlaneQuorum FindingCode = "ControlPlaneQuorum"
)

// Finding is one violation of the placement contract.
type Finding struct {
	Code     FindingCode     `json:"code"`
	Severity udrain.Severity `json:"severity"`
	// Namespace and Group identify the group involved, if any.
	Namespace string `json:"namespace,omitempty"`
	Group     string `json:"group,omitempty"`
	// Workload is the workload of the group(s) involved, if any.
	Workload string   `json:"workload,omitempty"`
	Domains  []string `json:"domains,omitempty"`
	PDBs     []string `json:"pdbs,omitempty"`
	Pods     []string `json:"pods,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
	// Message says what is wrong and what to fix.
	Message string `json:"message"`
}

// AuditInput is what the audit looks at.
type AuditInput struct {
	Layout *Layout
	Groups []Group
	PDBs   []policyv1.PodDisruptionBudget
	// Pods are checked for multiple PDBs; groups' members are checked
	// whether or not they are listed here.
	Pods []*corev1.Pod
	// Only, if set, limits the audit to findings that concern these
	// domains (a drain of one domain needs no more); checks that cannot
	// concern them are skipped, which makes the audit cheap on a large
	// cluster.
	Only []string
	// PDBIndex, if set, is NewPDBIndex(PDBs), built already by the caller
	// (a plan has one): the audit then does not build it again.
	PDBIndex *PDBIndex
}

// Report is the result of an audit: what it looked at, and what it found.
type Report struct {
	// LabelKey is the node label the layout's domains come from; Domains
	// are the domains audited (AuditInput.Only when set, else every
	// domain of the layout, in natural order).
	LabelKey string   `json:"labelKey,omitempty"`
	Domains  []string `json:"domains,omitempty"`
	// Groups and PDBs count the groups and PodDisruptionBudgets the audit
	// was given (AuditInput.Groups, PDBs).
	Groups   int       `json:"groups"`
	PDBs     int       `json:"pdbs"`
	Findings []Finding `json:"findings"`
}

// Errors returns the findings of udrain.SeverityError.
func (r Report) Errors() []Finding { return r.bySeverity(udrain.SeverityError) }

// Warnings returns the findings of udrain.SeverityWarning.
func (r Report) Warnings() []Finding { return r.bySeverity(udrain.SeverityWarning) }

func (r Report) bySeverity(s udrain.Severity) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity == s {
			out = append(out, f)
		}
	}
	return out
}

// Err returns a *ContractError holding the error findings, or nil.
func (r Report) Err() error {
	if errs := r.Errors(); len(errs) > 0 {
		return &ContractError{Findings: errs}
	}
	return nil
}

// ContractError reports violations of the placement contract.
type ContractError struct {
	Findings []Finding
}

func (e *ContractError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "placement contract violated (%d finding(s))", len(e.Findings))
	for i, f := range e.Findings {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Findings)-5)
			break
		}
		fmt.Fprintf(&b, "; %s: %s", f.Code, f.Message)
	}
	return b.String()
}

// Audit checks the placement contract: each group packed in one domain,
// groups of a workload spread over domains, every leader under exactly one
// PDB, no worker under a PDB, no pod under two PDBs, no domain holding
// enough control-plane nodes to lose etcd quorum, and no group member
// that tolerates every taint (so ignores a cordon). Findings come in a
// deterministic order.
func Audit(in AuditInput) Report {
	r := Report{Domains: slices.Clone(in.Only), Groups: len(in.Groups), PDBs: len(in.PDBs)}
	if in.Layout != nil {
		r.LabelKey = in.Layout.LabelKey
		if len(in.Only) == 0 {
			r.Domains = in.Layout.Names()
		}
	}
	idx := in.PDBIndex
	if idx == nil {
		idx = NewPDBIndex(in.PDBs)
	}
	scope := newScope(in.Layout, in.Only)
	// Pack and the PDB checks look at a group only if it touches the
	// domains in scope; spread needs every group of those workloads.
	groups := in.Groups
	if scope != nil {
		groups = nil
		for i := range in.Groups {
			if scope.touches(&in.Groups[i]) {
				groups = append(groups, in.Groups[i])
			}
		}
	}
	var pods []*corev1.Pod
	for _, p := range in.Pods {
		if scope.holds(p) {
			pods = append(pods, p)
		}
	}
	for _, f := range auditControlPlane(in.Layout) {
		r.add(scope, f)
	}
	for _, f := range auditPack(in.Layout, groups) {
		r.add(scope, f)
	}
	for _, f := range auditSpread(in.Layout, in.Groups) {
		r.add(scope, f)
	}
	for _, f := range auditPDBs(in.Layout, idx, groups, pods) {
		r.add(scope, f)
	}
	for _, f := range auditTolerations(in.Layout, groups) {
		r.add(scope, f)
	}
	for _, f := range auditBudgetCounts(in.Layout, idx, in.Pods) {
		r.add(scope, f)
	}
	return r
}

// scope is the set of domains an audit reports on; nil means all.
type scope struct {
	layout  *Layout
	domains map[string]bool
}

func newScope(l *Layout, only []string) *scope {
	if len(only) == 0 || l == nil {
		return nil
	}
	s := &scope{layout: l, domains: map[string]bool{}}
	for _, d := range only {
		s.domains[d] = true
	}
	return s
}

func (s *scope) holds(p *corev1.Pod) bool {
	if s == nil {
		return true
	}
	d, ok := s.layout.DomainOf(p.Spec.NodeName)
	return ok && s.domains[d]
}

func (s *scope) touches(g *Group) bool {
	for _, p := range g.Members {
		if s.holds(p) {
			return true
		}
	}
	return false
}

func (r *Report) add(s *scope, f Finding) {
	if s != nil {
		in := false
		for _, d := range f.Domains {
			in = in || s.domains[d]
		}
		if !in {
			return
		}
	}
	r.Findings = append(r.Findings, f)
}

// groupDomains returns the domains of a group's scheduled members.
func groupDomains(l *Layout, g *Group) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range g.Members {
		if p.Spec.NodeName == "" || l == nil {
			continue
		}
		if d, ok := l.DomainOf(p.Spec.NodeName); ok && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sortNatural(out)
	return out
}

// podDomains returns the domain of a scheduled pod as a one-element list.
func podDomains(l *Layout, p *corev1.Pod) []string {
	if l == nil {
		return nil
	}
	if d, ok := l.DomainOf(p.Spec.NodeName); ok {
		return []string{d}
	}
	return nil
}

func auditPack(l *Layout, groups []Group) []Finding {
	var out []Finding
	for i := range groups {
		g := &groups[i]
		ds := groupDomains(l, g)
		if len(ds) < 2 {
			continue
		}
		var pods []string
		for _, p := range g.Members {
			if d, ok := l.DomainOf(p.Spec.NodeName); ok {
				pods = append(pods, p.Name+"@"+d)
			}
		}
		out = append(out, Finding{
			Code: FindingPack, Severity: udrain.SeverityError,
			Namespace: g.ID.Namespace, Group: g.ID.Name, Workload: g.Workload,
			Domains: ds, Pods: pods,
			Message: fmt.Sprintf("group %s spans %d upgrade domains (%s): each drain of one of them breaks it, so a rollout breaks it %d times; pack the group into one domain with a required pod affinity on the domain label %q to its leader",
				g.ID, len(ds), strings.Join(ds, ", "), len(ds), l.LabelKey),
		})
	}
	return out
}

func auditSpread(l *Layout, groups []Group) []Finding {
	if l == nil || len(l.Domains) < 2 {
		return nil
	}
	type wkey struct {
		kind         Kind
		ns, workload string
	}
	perDomain := map[wkey]map[string][]string{}
	var order []wkey
	for i := range groups {
		g := &groups[i]
		k := wkey{g.ID.Kind, g.ID.Namespace, g.Workload}
		if perDomain[k] == nil {
			perDomain[k] = map[string][]string{}
			order = append(order, k)
		}
		for _, d := range groupDomains(l, g) {
			perDomain[k][d] = append(perDomain[k][d], g.ID.Name)
		}
	}
	var out []Finding
	for _, k := range order {
		m := perDomain[k]
		var empty []string
		for _, d := range l.Domains {
			if len(m[d.Name]) == 0 {
				empty = append(empty, d.Name)
			}
		}
		if len(empty) == 0 {
			continue
		}
		for _, d := range l.Domains {
			names := m[d.Name]
			if len(names) < 2 {
				continue
			}
			sortNatural(names)
			out = append(out, Finding{
				Code: FindingSpread, Severity: udrain.SeverityError,
				Namespace: k.ns, Workload: k.workload,
				Domains: []string{d.Name},
				Message: fmt.Sprintf("%d groups of workload %s/%s (%s) share upgrade domain %s while %s hold(s) none: draining %s breaks them all at once; spread the leaders with a topologySpreadConstraint (maxSkew 1, whenUnsatisfiable DoNotSchedule) on the domain label %q",
					len(names), k.ns, k.workload, abbreviate(names, 5), d.Name, abbreviate(empty, 5), d.Name, l.LabelKey),
			})
		}
	}
	return out
}

func auditPDBs(l *Layout, idx *PDBIndex, groups []Group, pods []*corev1.Pod) []Finding {
	var out []Finding
	multi := map[podKey]bool{}
	checkMulti := func(p *corev1.Pod, g *Group) {
		k := podKey{p.Namespace, p.Name}
		if multi[k] {
			return
		}
		pdbs := idx.For(p)
		if len(pdbs) < 2 {
			return
		}
		multi[k] = true
		f := Finding{
			Code: FindingMultiplePDBs, Severity: udrain.SeverityError,
			Namespace: p.Namespace, PDBs: PDBNames(pdbs), Pods: []string{p.Name}, Domains: podDomains(l, p),
			Message: fmt.Sprintf("pod %s/%s is selected by %d PodDisruptionBudgets (%s): the Eviction API refuses to evict it (HTTP 500); narrow the selectors so that one PDB selects it",
				p.Namespace, p.Name, len(pdbs), strings.Join(PDBNames(pdbs), ", ")),
		}
		if g != nil {
			f.Group, f.Workload = g.ID.Name, g.Workload
		}
		out = append(out, f)
	}
	for i := range groups {
		g := &groups[i]
		for _, p := range g.Members {
			checkMulti(p, g)
		}
		if g.Leader != nil {
			if len(idx.For(g.Leader)) == 0 {
				out = append(out, Finding{
					Code: FindingUnprotectedLeader, Severity: udrain.SeverityError,
					Namespace: g.ID.Namespace, Group: g.ID.Name, Workload: g.Workload,
					Pods: []string{g.Leader.Name}, Domains: podDomains(l, g.Leader),
					Message: fmt.Sprintf("leader %s/%s of group %s is selected by no PodDisruptionBudget: nothing stops a drain from breaking this group while others are down; create a PDB over the leaders (selector on the leader labels, minAvailable = groups - 1)",
						g.Leader.Namespace, g.Leader.Name, g.ID),
				})
			}
		}
		var protectedWorkers []string
		pdbSet := map[string]bool{}
		for _, p := range g.Members {
			if p == g.Leader || g.Leader == nil {
				continue
			}
			if pdbs := idx.For(p); len(pdbs) > 0 {
				protectedWorkers = append(protectedWorkers, p.Name)
				for _, n := range PDBNames(pdbs) {
					pdbSet[n] = true
				}
			}
		}
		if len(protectedWorkers) > 0 {
			out = append(out, Finding{
				Code: FindingProtectedWorker, Severity: udrain.SeverityWarning,
				Namespace: g.ID.Namespace, Group: g.ID.Name, Workload: g.Workload,
				Pods: protectedWorkers, PDBs: sortedKeys(pdbSet), Domains: groupDomains(l, g),
				Message: fmt.Sprintf("%d worker(s) of group %s are selected by a PodDisruptionBudget (%s): they are evicted in phase 1 with the leaders and may block there; select only leaders (e.g. add %s=0 to the selector)",
					len(protectedWorkers), g.ID, strings.Join(sortedKeys(pdbSet), ", "), LWSWorkerIndexLabel),
			})
		}
	}
	for _, p := range pods {
		checkMulti(p, nil)
	}
	return out
}

func auditControlPlane(l *Layout) []Finding {
	if l == nil || l.ControlPlaneTotal == 0 {
		return nil
	}
	n := l.ControlPlaneTotal
	tolerable := (n - 1) / 2
	var out []Finding
	for _, d := range l.Domains {
		if len(d.ControlPlaneNodes) <= tolerable {
			continue
		}
		out = append(out, Finding{
			Code: FindingControlPlaneQuorum, Severity: udrain.SeverityError,
			Domains: []string{d.Name}, Nodes: d.ControlPlaneNodes,
			Message: fmt.Sprintf("upgrade domain %s holds %d of the cluster's %d control-plane nodes; etcd keeps quorum only while at most %d are down, so draining %s loses quorum; spread the control-plane nodes so that no domain holds more than %d",
				d.Name, len(d.ControlPlaneNodes), n, tolerable, d.Name, tolerable),
		})
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
