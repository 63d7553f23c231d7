package manifests

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// enforceLabel is the namespace label Pod Security admission enforces.
const enforceLabel = psaapi.EnforceLevelLabel

// violations evaluates a pod template at a Pod Security level, latest
// version, with the admission's own checks, and returns what it would
// refuse, each as the admission words it: "allowPrivilegeEscalation !=
// false (container "x" must set ...)".
func violations(t *testing.T, level psaapi.Level, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, meta, spec) {
		if r.Allowed {
			continue
		}
		v := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			v += " (" + r.ForbiddenDetail + ")"
		}
		out = append(out, v)
	}
	return out
}

// TestExamplesPassPodSecurityRestricted: every pod template of every YAML
// file under examples/ (every document, every kind) would be admitted in a
// namespace that enforces Pod Security "restricted", so that a platform
// team can apply the examples where its own workloads run. A failure names
// the file, the object, where its pod spec is, and each check it fails.
// Every namespace an example declares enforces "restricted".
func TestExamplesPassPodSecurityRestricted(t *testing.T) {
	checked := 0
	for _, o := range readTree(t, "examples") {
		// A namespace an example declares enforces it too (and applying
		// it over deploy/namespace's udrain-system keeps its labels).
		if o.u.GetKind() == "Namespace" {
			if got := o.u.GetLabels()[enforceLabel]; got != string(psaapi.LevelRestricted) {
				t.Errorf("%s: %s: %s=%q, want restricted", o.file, o, enforceLabel, got)
			}
		}
		pts, err := podTemplates(o.u)
		if err != nil {
			t.Errorf("%s: %s: %v", o.file, o, err)
			continue
		}
		for _, pt := range pts {
			checked++
			for _, v := range violations(t, psaapi.LevelRestricted, &pt.meta, &pt.spec) {
				t.Errorf("%s: %s, %s: violates PodSecurity \"restricted:latest\": %s", o.file, o, pt.path, v)
			}
		}
	}
	// examples/lws-readiness-gate (a Deployment and a LeaderWorkerSet's two
	// templates), examples/lws-serve-readiness (two templates) and
	// examples/wait-server-init (a StatefulSet), at the least.
	if checked < 6 {
		t.Errorf("%d pod templates checked under examples/, want at least 6: the search misses some", checked)
	}
}

// TestDeployPassesItsNamespacesPodSecurity: every pod template of deploy/
// passes the Pod Security level its namespace enforces there: "restricted"
// in udrain-system (which deploy/namespace declares so), and in any
// namespace deploy/ does not declare; only a namespace deploy/ declares
// with a lower level (udrain-upgrade, where the job-step component's node
// upgrades run privileged) lowers it.
func TestDeployPassesItsNamespacesPodSecurity(t *testing.T) {
	objs := readTree(t, "deploy")
	levels := map[string]psaapi.Level{}
	for _, o := range objs {
		if o.u.GetKind() == "Namespace" && o.u.GetAPIVersion() == "v1" {
			level, err := psaapi.ParseLevel(o.u.GetLabels()[enforceLabel])
			if err != nil {
				t.Errorf("%s: %s: %s: %v", o.file, o, enforceLabel, err)
				continue
			}
			levels[o.u.GetName()] = level
		}
	}
	if levels["udrain-system"] != psaapi.LevelRestricted {
		t.Errorf("deploy/ declares udrain-system with %s=%q, want restricted", enforceLabel, levels["udrain-system"])
	}
	checked := 0
	for _, o := range objs {
		pts, err := podTemplates(o.u)
		if err != nil {
			t.Errorf("%s: %s: %v", o.file, o, err)
			continue
		}
		level, ok := levels[o.u.GetNamespace()]
		if !ok {
			level = psaapi.LevelRestricted
		}
		for _, pt := range pts {
			checked++
			if level != psaapi.LevelRestricted {
				t.Logf("%s: %s, %s: checked at %q, what namespace %s enforces", o.file, o, pt.path, level, o.u.GetNamespace())
			}
			for _, v := range violations(t, level, &pt.meta, &pt.spec) {
				t.Errorf("%s: %s, %s: violates PodSecurity \"%s:latest\" of namespace %q: %s", o.file, o, pt.path, level, o.u.GetNamespace(), v)
			}
		}
	}
	// The readiness-gate Deployment, the rollout Job, the job-step template.
	if checked < 3 {
		t.Errorf("%d pod templates checked under deploy/, want at least 3", checked)
	}
}

// TestViolationsNameTheCheck: the evaluation refuses what the admission
// refuses, in its words. Without it, a library update that quietly passed
// everything would pass the tests above.
func TestViolationsNameTheCheck(t *testing.T) {
	bare := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x:v1"}}}
	got := strings.Join(violations(t, psaapi.LevelRestricted, &metav1.ObjectMeta{}, bare), "; ")
	for _, want := range []string{"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"} {
		if !strings.Contains(got, want) {
			t.Errorf("a container without a security context: %q, want %q among the violations", got, want)
		}
	}
	hardened := &corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "app", Image: "x:v1", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}
	if v := violations(t, psaapi.LevelRestricted, &metav1.ObjectMeta{}, hardened); len(v) > 0 {
		t.Errorf("a hardened pod: %v, want none", v)
	}
	if v := violations(t, psaapi.LevelPrivileged, &metav1.ObjectMeta{}, bare); len(v) > 0 {
		t.Errorf("privileged: %v, want none", v)
	}
}
