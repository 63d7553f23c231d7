package eviction

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/udrain/udrain"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubectl/pkg/drain"
)

// The texts kubectl drain uses for its filter decisions. udrain keeps them
// byte for byte so that scripts and people see the same reasons.
const (
	msgDaemonSetFatal      = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
	msgDaemonSetWarning    = "ignoring DaemonSet-managed Pods"
	msgLocalStorageFatal   = "Pods with local storage (use --delete-emptydir-data to override)"
	msgLocalStorageWarning = "deleting Pods with local storage"
	msgUnmanagedFatal      = "Pods that declare no controller (use --force to override)"
	msgUnmanagedWarning    = "deleting Pods that declare no controller"
)

// dsLookup reports whether the DaemonSet namespace/name exists: nil
// when it does, otherwise the error a GET of it returned (a NotFound error
// for a DaemonSet that is gone). kubectl drain makes that GET for every
// DaemonSet pod; udrain asks once per DaemonSet.
type dsLookup func(namespace, name string) error

// daemonSetsLookup returns a dsLookup over a list of DaemonSets,
// answering NotFound, with the API server's text, for the others.
func daemonSetsLookup(daemonSets []*appsv1.DaemonSet) dsLookup {
	exists := make(map[string]bool, len(daemonSets))
	for _, ds := range daemonSets {
		exists[ds.Namespace+"/"+ds.Name] = true
	}
	return func(namespace, name string) error {
		if exists[namespace+"/"+name] {
			return nil
		}
		return apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, name)
	}
}

// filterConfig is the part of a drain.Helper that decides which pods go.
type filterConfig struct {
	force              bool
	ignoreDaemonSets   bool
	deleteEmptyDirData bool
	skipDeletedSeconds int
	additional         []drain.PodFilter
}

// filterPod applies kubectl drain's filters, in kubectl's order and with its
// short-circuit rule: the first filter that says "do not delete" decides,
// otherwise the last filter's status is kept.
func (c filterConfig) filterPod(pod *corev1.Pod, daemonSets dsLookup, now time.Time) drain.PodDeleteStatus {
	// kubectl's filters, over a pointer: a plan filters every pod of a
	// domain (22,500 at 750 nodes), and each corev1.Pod copy is 1.2 kB.
	status := c.skipDeleted(pod, now)
	if status.Delete {
		status = c.daemonSet(pod, daemonSets)
	}
	if status.Delete {
		status = mirrorPod(pod)
	}
	if status.Delete {
		status = upgradeStepPod(pod)
	}
	if status.Delete {
		status = c.localStorage(pod)
	}
	if status.Delete {
		status = c.unreplicated(pod)
	}
	if !status.Delete {
		return status
	}
	for _, f := range c.additional {
		status = f(*pod)
		if !status.Delete {
			return status
		}
	}
	return status
}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (c filterConfig) skipDeleted(pod *corev1.Pod, now time.Time) drain.PodDeleteStatus {
	if c.skipDeletedSeconds > 0 && !pod.DeletionTimestamp.IsZero() &&
		int(now.Sub(pod.DeletionTimestamp.Time).Seconds()) > c.skipDeletedSeconds {
		return drain.MakePodDeleteStatusSkip()
	}
	return drain.MakePodDeleteStatusOkay()
}

func isDaemonSetRef(ref *metav1.OwnerReference) bool {
	return ref.Kind == "DaemonSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String()
}

func (c filterConfig) daemonSet(pod *corev1.Pod, lookup dsLookup) drain.PodDeleteStatus {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || !isDaemonSetRef(ref) || isFinished(pod) {
		return drain.MakePodDeleteStatusOkay()
	}
	if err := lookup(pod.Namespace, ref.Name); err != nil {
		if apierrors.IsNotFound(err) && c.force {
			return drain.MakePodDeleteStatusWithWarning(true, err.Error())
		}
		return drain.MakePodDeleteStatusWithError(err.Error())
	}
	if !c.ignoreDaemonSets {
		return drain.MakePodDeleteStatusWithError(msgDaemonSetFatal)
	}
	return drain.MakePodDeleteStatusWithWarning(false, msgDaemonSetWarning)
}

func mirrorPod(pod *corev1.Pod) drain.PodDeleteStatus {
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return drain.MakePodDeleteStatusSkip()
	}
	return drain.MakePodDeleteStatusOkay()
}

// upgradeStepPod skips the pods of a rollout's own upgrade step (package
// upgrade's Jobs): a rollout resumed while they run must not evict them.
func upgradeStepPod(pod *corev1.Pod) drain.PodDeleteStatus {
	if _, ok := pod.Labels[udrain.UpgradeStepLabel]; ok {
		return drain.MakePodDeleteStatusSkip()
	}
	return drain.MakePodDeleteStatusOkay()
}

func hasEmptyDir(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

func (c filterConfig) localStorage(pod *corev1.Pod) drain.PodDeleteStatus {
	if !hasEmptyDir(pod) || isFinished(pod) {
		return drain.MakePodDeleteStatusOkay()
	}
	if !c.deleteEmptyDirData {
		return drain.MakePodDeleteStatusWithError(msgLocalStorageFatal)
	}
	return drain.MakePodDeleteStatusWithWarning(true, msgLocalStorageWarning)
}

func (c filterConfig) unreplicated(pod *corev1.Pod) drain.PodDeleteStatus {
	if isFinished(pod) || metav1.GetControllerOfNoCopy(pod) != nil {
		return drain.MakePodDeleteStatusOkay()
	}
	if c.force {
		return drain.MakePodDeleteStatusWithWarning(true, msgUnmanagedWarning)
	}
	return drain.MakePodDeleteStatusWithError(msgUnmanagedFatal)
}

// kubectlWarnings formats warnings the way drain.PodDeleteList.Warnings
// does, with the messages in sorted order (kubectl's order is random).
func kubectlWarnings(byMessage map[string][]string) []string {
	msgs := make([]string, 0, len(byMessage))
	for msg, pods := range byMessage {
		msgs = append(msgs, fmt.Sprintf("%s: %s", msg, strings.Join(pods, ", ")))
	}
	sort.Strings(msgs)
	return msgs
}

// kubectlErrors formats refusals the way kubectl drain reports them
// ("cannot delete <reason>: ns/pod, ..."), sorted.
func kubectlErrors(byMessage map[string][]string) []string {
	msgs := make([]string, 0, len(byMessage))
	for msg, pods := range byMessage {
		if msg == "" {
			msg = "unexpected error"
		}
		msgs = append(msgs, fmt.Sprintf("cannot delete %s: %s", msg, strings.Join(pods, ", ")))
	}
	sort.Strings(msgs)
	return msgs
}
