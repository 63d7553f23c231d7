package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/udrain/udrain"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// daemonPodTolerations are the tolerations the DaemonSet controller adds to
// every pod it creates (k8s.io/kubernetes/pkg/controller/daemon/util,
// AddOrUpdateDaemonPodTolerations): daemon pods survive node conditions and
// cordons. The network-unavailable one is added only to host-network pods.
var daemonPodTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

var hostNetworkDaemonPodToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// Diagnosis says whether a DaemonSet's pods can run on a node and, when they
// cannot, exactly what stops them and what would fix it.
type Diagnosis struct {
	// DaemonSet is "namespace/name".
	DaemonSet string `json:"daemonSet"`
	// Node is the node's name.
	Node string `json:"node"`
	// Vendor is the vendor whose device plugin the DaemonSet looks like,
	// empty when it is not recognised (see DevicePluginVendor).
	Vendor Vendor `json:"vendor,omitempty"`
	// SelectsNode is true when the pod template's nodeName, nodeSelector
	// and required node affinity match the node: the DaemonSet is meant to
	// run there, taints aside.
	SelectsNode bool `json:"selectsNode"`
	// CanRun is true when the DaemonSet controller would place a pod on the
	// node: the pod template's nodeName, nodeSelector and required node
	// affinity match it, and its tolerations, with those the controller
	// adds to every daemon pod, tolerate every NoSchedule and NoExecute
	// taint. Resources and host ports are not checked.
	CanRun bool `json:"canRun"`
	// UntoleratedTaints are the node's NoSchedule and NoExecute taints that
	// no toleration of the pod template tolerates.
	UntoleratedTaints []corev1.Taint `json:"untoleratedTaints,omitempty"`
	// SuggestedTolerations tolerate exactly UntoleratedTaints; add them to
	// spec.template.spec.tolerations.
	SuggestedTolerations []corev1.Toleration `json:"suggestedTolerations,omitempty"`
	// NodeSelectorMismatches are the entries of the pod template's
	// nodeSelector that the node's labels do not satisfy.
	NodeSelectorMismatches []Mismatch `json:"nodeSelectorMismatches,omitempty"`
	// AffinityMismatches are the requirements of the required node
	// affinity's terms that fail, for every term when none matches (the
	// terms are ORed; the requirements of one term are ANDed).
	AffinityMismatches []Mismatch `json:"affinityMismatches,omitempty"`
	// Fix is a kubectl command that adds SuggestedTolerations to the
	// DaemonSet, empty when no taint is untolerated.
	Fix string `json:"fix,omitempty"`
	// Findings say what stops the pods, one per cause, with what to do.
	Findings []Finding `json:"findings,omitempty"`
}

// Mismatch is one node selector entry or node affinity requirement that a
// node fails.
type Mismatch struct {
	// Path locates the requirement in the DaemonSet, e.g.
	// "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1]".
	Path string `json:"path"`
	// Requirement is the requirement in words: "nvidia.com/gpu.present In [true]".
	Requirement string `json:"requirement"`
	// Key is the label (or field) the requirement reads.
	Key string `json:"key"`
	// NodeHasKey says whether the node has that label (or field), and
	// NodeValue what its value is.
	NodeHasKey bool   `json:"nodeHasKey"`
	NodeValue  string `json:"nodeValue,omitempty"`
	// Error is set when the requirement cannot be parsed; such a
	// requirement matches no node.
	Error string `json:"error,omitempty"`
}

const (
	pathNodeSelector = "spec.template.spec.nodeSelector"
	pathRequired     = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
)

// DiagnoseDaemonSet checks, the way the DaemonSet controller does, whether
// ds's pods can run on node: the template's nodeName, its nodeSelector and
// required node affinity (matched with k8s.io/component-helpers), and its
// tolerations, plus those the controller adds to every daemon pod, against
// the node's NoSchedule and NoExecute taints. Tolerations with the Lt and Gt
// operators tolerate nothing, as while the TaintTolerationComparisonOperators
// feature gate is off (its default); a finding says when such a toleration
// would have matched. A nil ds or node gives a zero Diagnosis (CanRun
// false).
func DiagnoseDaemonSet(ds *appsv1.DaemonSet, node *corev1.Node) Diagnosis {
	if ds == nil || node == nil {
		return Diagnosis{}
	}
	d := Diagnosis{DaemonSet: ds.Namespace + "/" + ds.Name, Node: node.Name}
	d.Vendor, _ = DevicePluginVendor(ds)
	spec := &ds.Spec.Template.Spec

	nameOK := spec.NodeName == "" || spec.NodeName == node.Name
	if !nameOK {
		d.Findings = append(d.Findings, Finding{
			Code:     FindingNodeNameMismatch,
			Severity: udrain.SeverityError,
			Key:      "spec.template.spec.nodeName",
			Value:    spec.NodeName,
			Message: fmt.Sprintf("DaemonSet %s pins its pods to node %s by spec.template.spec.nodeName, so none runs on %s; remove nodeName from the pod template.",
				d.DaemonSet, spec.NodeName, node.Name),
		})
	}

	affinityOK, _ := nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity).Match(node)
	if !affinityOK {
		d.explainNodeSelector(spec.NodeSelector, node)
		d.explainAffinity(spec.Affinity, node)
	}

	d.checkTaints(ds, node)
	d.SelectsNode = nameOK && affinityOK
	d.CanRun = d.SelectsNode && len(d.UntoleratedTaints) == 0
	return d
}

// checkTaints fills UntoleratedTaints, SuggestedTolerations, Fix and their
// findings.
func (d *Diagnosis) checkTaints(ds *appsv1.DaemonSet, node *corev1.Node) {
	spec := &ds.Spec.Template.Spec
	tolerations := append(slices.Clip(spec.Tolerations), daemonPodTolerations...)
	if spec.HostNetwork {
		tolerations = append(tolerations, hostNetworkDaemonPodToleration)
	}
	logger := logr.Discard() // only comparison operators log, on malformed values
	var comparisonNote []bool
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if !keepsPodsOff(t) || corev1helpers.TolerationsTolerateTaint(logger, tolerations, t, false) {
			continue
		}
		d.UntoleratedTaints = append(d.UntoleratedTaints, *t)
		d.SuggestedTolerations = append(d.SuggestedTolerations, tolerationFor(t))
		comparisonNote = append(comparisonNote, corev1helpers.TolerationsTolerateTaint(logger, tolerations, t, true))
	}
	if len(d.UntoleratedTaints) == 0 {
		return
	}
	d.Fix = tolerationPatch(ds, d.SuggestedTolerations)
	for i, t := range d.UntoleratedTaints {
		msg := fmt.Sprintf("DaemonSet %s does not tolerate taint %s of node %s, so its pod never runs there",
			d.DaemonSet, t.ToString(), d.Node)
		if d.Vendor != "" {
			msg += " and nothing advertises the node's devices"
		}
		msg += fmt.Sprintf("; add this item to spec.template.spec.tolerations: - %s", tolerationYAML(d.SuggestedTolerations[i]))
		if comparisonNote[i] {
			msg += " (A toleration with operator Lt or Gt would match, but only where the alpha feature gate TaintTolerationComparisonOperators is enabled.)"
		}
		d.Findings = append(d.Findings, Finding{
			Code:     FindingUntoleratedTaint,
			Severity: udrain.SeverityError,
			Key:      t.Key,
			Value:    t.ToString(),
			Message:  msg,
			Fix:      d.Fix,
		})
	}
}

// tolerationFor returns the narrowest toleration of t: same key, value and
// effect.
func tolerationFor(t *corev1.Taint) corev1.Toleration {
	if t.Value == "" {
		return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpExists, Effect: t.Effect}
	}
	return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect}
}

// tolerationYAML writes a toleration as a YAML flow mapping, strings quoted
// so that values like "true" stay strings.
func tolerationYAML(t corev1.Toleration) string {
	parts := []string{"key: " + strconv.Quote(t.Key), "operator: " + string(t.Operator)}
	if t.Operator != corev1.TolerationOpExists {
		parts = append(parts, "value: "+strconv.Quote(t.Value))
	}
	parts = append(parts, "effect: "+string(t.Effect))
	return "{" + strings.Join(parts, ", ") + "}"
}

// tolerationPatch returns a kubectl JSON-patch command adding tolerations to
// ds's pod template: appended to the list when there is one, else as the new
// list (a JSON patch cannot append to a missing array).
func tolerationPatch(ds *appsv1.DaemonSet, tolerations []corev1.Toleration) string {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	if len(ds.Spec.Template.Spec.Tolerations) == 0 {
		ops = append(ops, op{"add", "/spec/template/spec/tolerations", tolerations})
	} else {
		for _, t := range tolerations {
			ops = append(ops, op{"add", "/spec/template/spec/tolerations/-", t})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return "" // a Toleration always marshals
	}
	return fmt.Sprintf("kubectl -n %s patch daemonset %s --type=json -p '%s'", ds.Namespace, ds.Name, patch)
}

// explainNodeSelector records each nodeSelector entry the node fails,
// matching one entry at a time with the same helper the controller uses.
func (d *Diagnosis) explainNodeSelector(selector map[string]string, node *corev1.Node) {
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := selector[k]
		if ok, _ := nodeaffinity.NewRequiredNodeAffinity(map[string]string{k: want}, nil).Match(node); ok {
			continue
		}
		have, has := node.Labels[k]
		m := Mismatch{Path: pathNodeSelector + "[" + strconv.Quote(k) + "]", Requirement: k + "=" + want, Key: k, NodeHasKey: has, NodeValue: have}
		d.NodeSelectorMismatches = append(d.NodeSelectorMismatches, m)
		d.Findings = append(d.Findings, Finding{
			Code:     FindingNodeSelectorMismatch,
			Severity: udrain.SeverityError,
			Key:      k,
			Value:    have,
			Message: fmt.Sprintf("DaemonSet %s selects nodes with %s=%s but node %s %s; label the node, or change the DaemonSet's nodeSelector.",
				d.DaemonSet, k, want, d.Node, nodeHas(m)),
			Fix: fmt.Sprintf("kubectl label node %s %s=%s --overwrite", d.Node, k, want),
		})
	}
}

// explainAffinity records, for every term of the required node affinity, the
// requirements the node fails; the terms are ORed, so all of them failed.
func (d *Diagnosis) explainAffinity(affinity *corev1.Affinity, node *corev1.Node) {
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	required := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(required).Match(node); ok {
		return // the nodeSelector alone failed
	}
	if len(required.NodeSelectorTerms) == 0 {
		d.Findings = append(d.Findings, Finding{
			Code:     FindingNodeAffinityMismatch,
			Severity: udrain.SeverityError,
			Key:      pathRequired,
			Message:  fmt.Sprintf("DaemonSet %s has a required node affinity without terms, which matches no node; add a term or remove requiredDuringSchedulingIgnoredDuringExecution.", d.DaemonSet),
		})
		return
	}
	for i, term := range required.NodeSelectorTerms {
		termPath := fmt.Sprintf("%s.nodeSelectorTerms[%d]", pathRequired, i)
		var failed []Mismatch
		var fixes []string
		check := func(kind string, j int, req corev1.NodeSelectorRequirement) {
			single := corev1.NodeSelectorTerm{}
			var has bool
			var have string
			if kind == "matchFields" {
				single.MatchFields = []corev1.NodeSelectorRequirement{req}
				if req.Key == "metadata.name" {
					has, have = true, node.Name
				}
			} else {
				single.MatchExpressions = []corev1.NodeSelectorRequirement{req}
				have, has = node.Labels[req.Key]
			}
			ok, err := nodeaffinity.NewLazyErrorNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{single}}).Match(node)
			if ok {
				return
			}
			m := Mismatch{Path: fmt.Sprintf("%s.%s[%d]", termPath, kind, j), Requirement: requirementString(req), Key: req.Key, NodeHasKey: has, NodeValue: have}
			if err != nil {
				m.Error = requirementError(err)
			}
			failed = append(failed, m)
			fixes = append(fixes, labelFix(node.Name, kind, req))
		}
		for j, req := range term.MatchExpressions {
			check("matchExpressions", j, req)
		}
		for j, req := range term.MatchFields {
			check("matchFields", j, req)
		}
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			failed = append(failed, Mismatch{Path: termPath, Requirement: "(empty term)", Error: "an empty term matches no node"})
			fixes = append(fixes, "")
		}
		d.AffinityMismatches = append(d.AffinityMismatches, failed...)
		d.Findings = append(d.Findings, affinityFinding(d, termPath, failed, fixes))
	}
}

func affinityFinding(d *Diagnosis, termPath string, failed []Mismatch, fixes []string) Finding {
	var why []string
	invalid := false
	for _, m := range failed {
		if m.Error != "" {
			invalid = true
			why = append(why, fmt.Sprintf("%s is invalid (%s)", m.Requirement, m.Error))
			continue
		}
		why = append(why, fmt.Sprintf("%s fails: node %s", m.Requirement, nodeHas(m)))
	}
	f := Finding{
		Code:     FindingNodeAffinityMismatch,
		Severity: udrain.SeverityError,
		Key:      termPath,
		Message: fmt.Sprintf("DaemonSet %s's required node affinity %s does not match node %s: %s; label the node to satisfy the term, or change the term.",
			d.DaemonSet, termPath, d.Node, strings.Join(why, "; ")),
	}
	if invalid {
		f.Code = FindingInvalidNodeAffinity
		f.Message = fmt.Sprintf("DaemonSet %s's required node affinity %s cannot be parsed and matches no node: %s; fix the term.",
			d.DaemonSet, termPath, strings.Join(why, "; "))
	} else if len(failed) == 1 {
		f.Fix = fixes[0]
	}
	return f
}

// labelFix proposes the kubectl label command that satisfies a single
// failing In or Exists label requirement; other operators, and fields, have
// no one obvious fix.
func labelFix(node, kind string, req corev1.NodeSelectorRequirement) string {
	if kind != "matchExpressions" {
		return ""
	}
	switch {
	case req.Operator == corev1.NodeSelectorOpExists:
		return fmt.Sprintf("kubectl label node %s %s= --overwrite", node, req.Key)
	case req.Operator == corev1.NodeSelectorOpIn && len(req.Values) > 0:
		return fmt.Sprintf("kubectl label node %s %s=%s --overwrite", node, req.Key, req.Values[0])
	}
	return ""
}

// requirementError states a parse error without the field path, which
// would name the one-requirement selector built to test it rather than the
// DaemonSet's (Mismatch.Path does that).
func requirementError(err error) string {
	var errs []error
	if agg, ok := err.(utilerrors.Aggregate); ok {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	var out []string
	for _, e := range errs {
		if fe, ok := errors.AsType[*field.Error](e); ok {
			out = append(out, fe.ErrorBody())
		} else {
			out = append(out, e.Error())
		}
	}
	return strings.Join(out, "; ")
}

func requirementString(r corev1.NodeSelectorRequirement) string {
	switch r.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return r.Key + " " + string(r.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, ","))
}

func nodeHas(m Mismatch) string {
	if !m.NodeHasKey {
		return "has no " + m.Key
	}
	return fmt.Sprintf("has %s=%s", m.Key, m.NodeValue)
}

// DevicePluginVendor reports whether ds is a device plugin that gpu knows,
// and for which vendor, from its name and its containers' images: the
// NVIDIA device plugin (Helm chart, GPU Operator, GKE's), the AMD (ROCm)
// plugin, Intel's GPU plugin, the Habana and AWS Neuron plugins, GKE's TPU
// plugin. Summarize and Losses pick the device plugins among the
// DaemonSets they are given with it.
func DevicePluginVendor(ds *appsv1.DaemonSet) (Vendor, bool) {
	if ds == nil {
		return "", false
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(ds.Name))
	for _, cs := range [][]corev1.Container{ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers} {
		for _, c := range cs {
			b.WriteByte(' ')
			b.WriteString(strings.ToLower(c.Image))
		}
	}
	s := b.String()
	plugin := strings.Contains(s, "device-plugin") || strings.Contains(s, "gpu-plugin")
	switch {
	case !plugin, strings.Contains(s, "mps-control-daemon"):
		// The GPU Operator's MPS control daemon shares the plugin's image
		// but runs only where MPS is configured.
		return "", false
	case strings.Contains(s, "nvidia"):
		return VendorNVIDIA, true
	case strings.Contains(s, "amdgpu") || strings.Contains(s, "amd-gpu") || strings.Contains(s, "rocm"):
		return VendorAMD, true
	case strings.Contains(s, "intel-gpu-plugin") || strings.Contains(s, "intel/"):
		return VendorIntel, true
	case strings.Contains(s, "habana") || strings.Contains(s, "gaudi"):
		return VendorHabana, true
	case strings.Contains(s, "neuron"):
		return VendorAWSNeuron, true
	case strings.Contains(s, "tpu-device-plugin"):
		return VendorGoogleTPU, true
	}
	return "", false
}

// pluginVendors are the vendors whose device plugins DevicePluginVendor
// knows: a GPU node of another vendor (an in-house plugin's, see
// Options.ExtraResources) is not diagnosed against the DaemonSets.
var pluginVendors = map[Vendor]bool{VendorNVIDIA: true, VendorAMD: true, VendorIntel: true, VendorHabana: true, VendorAWSNeuron: true, VendorGoogleTPU: true}
