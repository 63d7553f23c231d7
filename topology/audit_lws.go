package topology

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/udrain/udrain"
)

// LWSExclusiveTopologyAnnotation, on a LeaderWorkerSet, names a node label
// key: LeaderWorkerSet keeps each group's pods together, and every other
// group's apart, on that key.
const LWSExclusiveTopologyAnnotation = "leaderworkerset.sigs.k8s.io/exclusive-topology"

// GroupReadyGate is the readiness gate udrain's readiness-gate controller
// writes on leaders (package readiness/gate's ConditionType; topology does
// not import it).
const GroupReadyGate corev1.PodConditionType = "udrain.dev/group-ready"

// The findings of a LeaderWorkerSet's own spec ([AuditLeaderWorkerSets]):
// each names the field to fix.
const (
	// FindingLWSPlacement: nothing in the LeaderWorkerSet keeps its groups
	// each in one domain and apart from each other (no exclusive topology
	// on the domain label, no spread of the leaders on it), or its
	// exclusive topology names another key.
	FindingLWSPlacement FindingCode = "LWSPlacement"
	// FindingLWSReplicas: with exclusive topology on the domain label, it
	// wants more groups than there are domains: the rest stay Pending.
	FindingLWSReplicas FindingCode = "LWSReplicas"
	// FindingLWSStartup: startupPolicy LeaderReady with leaders gated on
	// their group's health: the workers wait for a leader that waits for
	// them, and no group ever starts.
	FindingLWSStartup FindingCode = "LWSStartup"
	// FindingLWSReadiness: its leaders' readiness does not stand for their
	// group (no group-ready gate, no readiness probe), or the gate sits on
	// the workers too (no leaderTemplate), which then never become Ready.
	FindingLWSReadiness FindingCode = "LWSReadiness"
	// FindingLWSBudget: no PodDisruptionBudget selects its leaders, or one
	// selects its workers too.
	FindingLWSBudget FindingCode = "LWSBudget"
)

// LWSSpec is what the audit reads of a LeaderWorkerSet
// (leaderworkerset.x-k8s.io/v1), decoded by the caller (udrain does not
// import LWS's Go module).
type LWSSpec struct {
	Namespace, Name string
	// Replicas is spec.replicas (groups), Size
	// spec.leaderWorkerTemplate.size (pods a group).
	Replicas, Size int
	// StartupPolicy is spec.startupPolicy (LeaderCreated, LeaderReady);
	// RestartPolicy spec.leaderWorkerTemplate.restartPolicy.
	StartupPolicy, RestartPolicy string
	// ExclusiveTopology is its LWSExclusiveTopologyAnnotation ("" without).
	ExclusiveTopology string
	// LeaderTemplate is spec.leaderWorkerTemplate.leaderTemplate (nil
	// without: the leaders are made from WorkerTemplate too).
	LeaderTemplate *corev1.PodTemplateSpec
	WorkerTemplate corev1.PodTemplateSpec
}

// leader is the leaders' template.
func (w *LWSSpec) leader() *corev1.PodTemplateSpec {
	if w.LeaderTemplate != nil {
		return w.LeaderTemplate
	}
	return &w.WorkerTemplate
}

// leaderField names the leaders' template in the spec.
func (w *LWSSpec) leaderField() string {
	if w.LeaderTemplate != nil {
		return "spec.leaderWorkerTemplate.leaderTemplate"
	}
	return "spec.leaderWorkerTemplate.workerTemplate (no leaderTemplate)"
}

// AuditLeaderWorkerSets checks each LeaderWorkerSet's own spec against the
// contract, whether or not its pods exist: placement over the domains of
// layout (exclusive topology on the domain label, or the leaders spread on
// it), replicas against the domains, a startup policy that cannot start
// with gated leaders, leaders whose readiness stands for their group, and a
// PodDisruptionBudget over its leaders only. Each finding names the field
// to fix. pdbs may be nil (NewPDBIndex of none).
func AuditLeaderWorkerSets(layout *Layout, sets []LWSSpec, pdbs *PDBIndex) []Finding {
	if pdbs == nil {
		pdbs = NewPDBIndex(nil)
	}
	key, domains := DefaultDomainLabel, 0
	if layout != nil {
		key, domains = layout.LabelKey, len(layout.Names())
	}
	var out []Finding
	for i := range sets {
		w := &sets[i]
		f := func(code FindingCode, sev udrain.Severity, format string, args ...any) {
			out = append(out, Finding{Code: code, Severity: sev, Namespace: w.Namespace, Workload: w.Name,
				Message: fmt.Sprintf("LeaderWorkerSet %s/%s: ", w.Namespace, w.Name) + fmt.Sprintf(format, args...)})
		}
		leader := w.leader()
		gated := declaresGate(leader)
		switch {
		case w.ExclusiveTopology == key:
			if domains > 0 && w.Replicas > domains {
				f(FindingLWSReplicas, udrain.SeverityError, "spec.replicas is %d, and its exclusive topology on %s keeps a group per domain: %d groups stay Pending with %d domains; lower spec.replicas or add domains",
					w.Replicas, key, w.Replicas-domains, domains)
			}
		case w.ExclusiveTopology != "":
			f(FindingLWSPlacement, udrain.SeverityWarning, "metadata.annotations[%q] is %q, not the domain label %s: its groups are kept apart per %s, and two of them may share a domain (one drain breaks both); set it to %s",
				LWSExclusiveTopologyAnnotation, w.ExclusiveTopology, key, w.ExclusiveTopology, key)
		case !spreadsOn(leader, key):
			f(FindingLWSPlacement, udrain.SeverityWarning, "nothing keeps its groups each in one domain and apart: set metadata.annotations[%q] to %s (or spread its leaders with a topologySpreadConstraint on %s and keep each group's workers with their leader)",
				LWSExclusiveTopologyAnnotation, key, key)
		}
		if gated && w.StartupPolicy == "LeaderReady" {
			f(FindingLWSStartup, udrain.SeverityError, "spec.startupPolicy is LeaderReady and its leaders declare the readiness gate %s: LWS makes the workers only once the leader is Ready, the gate makes the leader Ready only once its workers are, and no group ever starts; use spec.startupPolicy LeaderCreated",
				GroupReadyGate)
		}
		switch {
		case gated && w.LeaderTemplate == nil && w.Size > 1:
			f(FindingLWSReadiness, udrain.SeverityError, "spec.leaderWorkerTemplate.workerTemplate declares the readiness gate %s and there is no leaderTemplate: the workers carry the gate too, which the controller writes on leaders only, so they never become Ready; move the gate into spec.leaderWorkerTemplate.leaderTemplate",
				GroupReadyGate)
		case !gated && !probesReadiness(leader):
			f(FindingLWSReadiness, udrain.SeverityWarning, "%s declares neither the readiness gate %s nor a readinessProbe: its leader is Ready while its group is broken, and a budget over the leaders counts broken groups healthy; add readinessGates [{conditionType: %s}] there (and run udrain's readiness-gate controller), or a readinessProbe that checks the whole group (package readiness, its members from LWS's environment)",
				w.leaderField(), GroupReadyGate, GroupReadyGate)
		}
		out = append(out, auditLWSBudget(w, pdbs)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Workload < out[j].Workload
	})
	return out
}

// auditLWSBudget checks the budgets over a LeaderWorkerSet's leaders and
// workers, on pods shaped as LWS labels them.
func auditLWSBudget(w *LWSSpec, pdbs *PDBIndex) []Finding {
	pod := func(worker string, tpl *corev1.PodTemplateSpec) *corev1.Pod {
		l := map[string]string{}
		for k, v := range tpl.Labels {
			l[k] = v
		}
		l[LWSNameLabel], l[LWSGroupIndexLabel], l[LWSWorkerIndexLabel] = w.Name, "0", worker
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-0", Labels: l}}
	}
	finding := func(format string, args ...any) Finding {
		return Finding{Code: FindingLWSBudget, Severity: udrain.SeverityWarning, Namespace: w.Namespace, Workload: w.Name,
			Message: fmt.Sprintf("LeaderWorkerSet %s/%s: ", w.Namespace, w.Name) + fmt.Sprintf(format, args...)}
	}
	var out []Finding
	leaders := pdbs.For(pod("0", w.leader()))
	if len(leaders) == 0 {
		f := finding("no PodDisruptionBudget selects its leaders: nothing stops a drain from breaking a group while others are down; create one with selector %s=%s,%s=0 and minAvailable %d",
			LWSNameLabel, w.Name, LWSWorkerIndexLabel, max(w.Replicas-1, 0))
		if w.Replicas <= 1 {
			f.Message += " (or one over the leaders of several LeaderWorkerSets: a budget over one group allows no disruption, or any)"
		}
		out = append(out, f)
	}
	if w.Size > 1 {
		if workers := pdbs.For(pod("1", &w.WorkerTemplate)); len(workers) > 0 {
			var names []string
			for _, p := range workers {
				names = append(names, p.Name)
			}
			f := finding("PodDisruptionBudget %s selects its workers too: they are evicted in phase 1 with the leaders and may block there; add %s=0 to its selector",
				strings.Join(names, ", "), LWSWorkerIndexLabel)
			f.PDBs = names
			out = append(out, f)
		}
	}
	return out
}

// declaresGate reports whether tpl declares the group-ready gate.
func declaresGate(tpl *corev1.PodTemplateSpec) bool {
	for _, g := range tpl.Spec.ReadinessGates {
		if g.ConditionType == GroupReadyGate {
			return true
		}
	}
	return false
}

// probesReadiness reports whether a container of tpl has a readiness probe.
func probesReadiness(tpl *corev1.PodTemplateSpec) bool {
	for _, c := range tpl.Spec.Containers {
		if c.ReadinessProbe != nil {
			return true
		}
	}
	return false
}

// spreadsOn reports whether tpl keeps its pods apart on key: a topology
// spread constraint that does not schedule past its skew, or a required
// pod anti-affinity, on key.
func spreadsOn(tpl *corev1.PodTemplateSpec, key string) bool {
	for _, c := range tpl.Spec.TopologySpreadConstraints {
		if c.TopologyKey == key && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	if a := tpl.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == key {
				return true
			}
		}
	}
	return false
}
