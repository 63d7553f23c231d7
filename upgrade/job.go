package upgrade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/topology"
)

// The environment variables the Job step adds to every container (and init
// container) of the Job's pod.
const (
	EnvNode      = "UDRAIN_NODE"
	EnvDomain    = "UDRAIN_DOMAIN"
	EnvNodes     = "UDRAIN_NODES"
	EnvRolloutID = "UDRAIN_ROLLOUT_ID"
)

// defaultJobPrefix names the Jobs of a template without a name.
const defaultJobPrefix = "udrain-upgrade"

// JobOptions configure [Job].
type JobOptions struct {
	// Template is the Job created for each node of a domain. Its namespace
	// is where the Jobs go (required); its name, or else its generateName,
	// is the prefix of theirs (default "udrain-upgrade"). Each copy gets
	// the node in spec.template.spec.nodeName, the variables UDRAIN_NODE,
	// UDRAIN_DOMAIN, UDRAIN_NODES (comma-separated) and UDRAIN_ROLLOUT_ID
	// in every container, udrain.UpgradeStepLabel on the Job and its pods, and
	// restartPolicy Never if the template sets none. The template is not
	// modified.
	Template *batchv1.Job
	// RolloutID is the rollout's ID (eviction.RolloutOptions.ID). With
	// the domain and the node, it fixes each Job's name, so that a resumed
	// rollout finds the Jobs of the run before it.
	RolloutID string
	// Timeout bounds the wait for a domain's Jobs; zero means no limit
	// but the context's.
	Timeout time.Duration
	// Clock times Timeout; nil means the real clock.
	Clock clock.Clock
}

// Job returns an upgrade step that runs, for each node of a domain, one
// Job made from opts.Template and bound to the node by nodeName, all at
// once, and waits on a watch until every one has succeeded.
//
// Why one Job per node with nodeName: the domain is cordoned while the step
// runs, and nodeName bypasses the scheduler (which would refuse a cordoned
// node unless the pod tolerated node.kubernetes.io/unschedulable), as
// DaemonSet pods and node upgrade agents do; and each node's outcome is
// its own Job's, with its own logs and failure reason.
//
// A Job that fails (condition Failed) stops the step with a
// *JobFailedError carrying the Job's reason and message; the failed Job
// is left in place so its pods' logs can be read, and the other Jobs of
// the domain are left running. Succeeded Jobs are deleted with
// propagation Background once the whole domain has succeeded.
//
// Resuming is safe: the Jobs' names are fixed by the rollout ID, the domain
// and the node, so a Job that already succeeded counts as done, one still
// running is waited for, and a failed one is deleted and created again
// (the retry after the cause was fixed). An existing Job of that name that
// another rollout or domain made is an error, never adopted.
//
// When opts.Timeout passes first, the step fails with a *TimeoutError
// naming the nodes whose Jobs had not succeeded. Job returns a
// *udrain.ConfigError for options that cannot work, before anything is
// created.
func Job(client kubernetes.Interface, opts JobOptions) (eviction.UpgradeFunc, error) {
	if client == nil {
		return nil, &udrain.ConfigError{Field: "upgrade.Job(client)", Problem: "nil; pass a clientset, e.g. from kubernetes.NewForConfig"}
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &jobStep{client: client, opts: opts, template: opts.Template.DeepCopy()}
	return s.run, nil
}

// Validate checks the options without a cluster: it returns the
// *udrain.ConfigError that Job would return for them, so that a caller
// (a command line, an admission webhook) can refuse them before it
// connects.
func (o JobOptions) Validate() error {
	if o.Template == nil {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: "no Job template given"}
	}
	if o.Template.Namespace == "" {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: "the template has no metadata.namespace: set the namespace the Jobs are created in"}
	}
	if len(o.Template.Spec.Template.Spec.Containers) == 0 {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: "the template's pod has no containers"}
	}
	if o.Template.Spec.Template.Spec.NodeName != "" {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: fmt.Sprintf("the template's pod is bound to node %s: leave spec.template.spec.nodeName empty, the step sets it per node", o.Template.Spec.Template.Spec.NodeName)}
	}
	if p := jobPrefix(o.Template); len(validation.IsDNS1123Subdomain(p)) > 0 {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: fmt.Sprintf("the template's name %q is not a valid Job name prefix", p)}
	}
	if o.RolloutID == "" {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.RolloutID", Problem: "empty: the Jobs' names are made from it"}
	}
	if o.Timeout < 0 {
		return &udrain.ConfigError{Field: "upgrade.JobOptions.Timeout", Problem: fmt.Sprintf("%s: use 0 (no limit) or a positive duration", o.Timeout)}
	}
	return nil
}

// ParseJobTemplate reads a Job template for JobOptions.Template from data,
// YAML or JSON as kubectl takes it (a file, a ConfigMap's value): a
// batch/v1 Job, with no field that a Job does not have (a typo is an
// error, not a setting silently lost). Its errors are *udrain.ConfigError
// about JobOptions.Template; Validate checks the rest.
func ParseJobTemplate(data []byte) (*batchv1.Job, error) {
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		return nil, &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: fmt.Sprintf("not a Job: %v", err)}
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		return nil, &udrain.ConfigError{Field: "upgrade.JobOptions.Template", Problem: fmt.Sprintf("apiVersion %q, kind %q: want a batch/v1 Job", job.APIVersion, job.Kind)}
	}
	return &job, nil
}

type jobStep struct {
	client   kubernetes.Interface
	opts     JobOptions
	template *batchv1.Job
}

// JobName returns the name of the Job that upgrades node of domain in the
// rollout id, for a template called prefix: the prefix, cut to leave room,
// a dash and 10 hex digits of the SHA-256 of id, domain and node. Jobs'
// names are at most 63 characters (their pods carry the name in a label).
func JobName(prefix, id, domain, node string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + domain + "\x00" + node))
	hash := hex.EncodeToString(sum[:])[:10]
	const maxLen = validation.DNS1123LabelMaxLength
	if len(prefix) > maxLen-len(hash)-1 {
		prefix = strings.TrimRight(prefix[:maxLen-len(hash)-1], "-.")
	}
	return prefix + "-" + hash
}

// stepValue is the value of udrain.UpgradeStepLabel for the Jobs of domain in rollout id.
func stepValue(id, domain string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + domain))
	return hex.EncodeToString(sum[:])[:16]
}

func jobPrefix(t *batchv1.Job) string {
	switch {
	case t.Name != "":
		return t.Name
	case t.GenerateName != "":
		return strings.TrimRight(t.GenerateName, "-.")
	}
	return defaultJobPrefix
}

// JobFor returns the Job that the step made from template creates for node
// of dom in rollout id.
func JobFor(template *batchv1.Job, id string, dom topology.Domain, node string) *batchv1.Job {
	j := template.DeepCopy()
	j.ObjectMeta = metav1.ObjectMeta{
		Name:        JobName(jobPrefix(template), id, dom.Name, node),
		Namespace:   template.Namespace,
		Labels:      withEntry(template.Labels, udrain.UpgradeStepLabel, stepValue(id, dom.Name)),
		Annotations: withEntry(withEntry(withEntry(template.Annotations, udrain.RolloutIDAnnotation, id), udrain.DomainAnnotation, dom.Name), udrain.NodeAnnotation, node),
	}
	// What the API server or the Job controller set on a Job read back
	// from a cluster (kubectl get -o yaml) is not the template's to give.
	j.Status = batchv1.JobStatus{}
	if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
		j.Spec.Selector = nil
		for _, k := range []string{batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name"} {
			delete(j.Spec.Template.Labels, k)
		}
	}
	pod := &j.Spec.Template
	pod.Labels = withEntry(pod.Labels, udrain.UpgradeStepLabel, stepValue(id, dom.Name))
	pod.Spec.NodeName = node
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	env := []corev1.EnvVar{
		{Name: EnvNode, Value: node},
		{Name: EnvDomain, Value: dom.Name},
		{Name: EnvNodes, Value: strings.Join(dom.Nodes, ",")},
		{Name: EnvRolloutID, Value: id},
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Env = append(slices.DeleteFunc(cs[i].Env, func(e corev1.EnvVar) bool {
				return slices.ContainsFunc(env, func(o corev1.EnvVar) bool { return o.Name == e.Name })
			}), env...)
		}
	}
	return j
}

func withEntry(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}

// JobFailedError reports a Job of the step that failed.
type JobFailedError struct {
	Namespace string
	Name      string
	Domain    string
	Node      string
	// Reason and Message are those of the Job's Failed condition, such as
	// BackoffLimitExceeded, DeadlineExceeded or PodFailurePolicy.
	Reason  string
	Message string
}

func (e *JobFailedError) Error() string {
	return fmt.Sprintf("upgrade Job %s/%s for node %s of domain %s failed: %s: %s", e.Namespace, e.Name, e.Node, e.Domain, e.Reason, e.Message)
}

// JobGoneError reports a Job of the step deleted by someone else before it
// finished.
type JobGoneError struct {
	Namespace, Name, Domain, Node string
}

func (e *JobGoneError) Error() string {
	return fmt.Sprintf("upgrade Job %s/%s for node %s of domain %s was deleted before it finished", e.Namespace, e.Name, e.Node, e.Domain)
}

// JobConflictError reports an existing Job with a step Job's name that the
// step did not make for this rollout, domain and node.
type JobConflictError struct {
	Namespace, Name string
	// Annotations are the conflicting Job's rollout, domain and node
	// annotations.
	Annotations map[string]string
}

func (e *JobConflictError) Error() string {
	return fmt.Sprintf("Job %s/%s exists but was not made by this upgrade step (annotations %v): delete it or change the template's name", e.Namespace, e.Name, e.Annotations)
}

// jobState is what the step knows of one node's Job.
type jobState int

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
)

// stateOf reads a Job's terminal conditions.
func stateOf(j *batchv1.Job) (jobState, *batchv1.JobCondition) {
	for i, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded, &j.Status.Conditions[i]
		case batchv1.JobFailed:
			return jobFailed, &j.Status.Conditions[i]
		}
	}
	return jobRunning, nil
}

func (s *jobStep) run(ctx context.Context, dom topology.Domain) error {
	logger := klog.FromContext(ctx).WithValues("domain", dom.Name, "upgradeStep", "job")
	parent := ctx
	if s.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = withTimeout(ctx, s.opts.Clock, s.opts.Timeout)
		defer cancel()
	}
	ns := s.template.Namespace
	jobs := s.client.BatchV1().Jobs(ns)
	byName := map[string]string{} // Job name -> node
	for _, node := range dom.Nodes {
		want := JobFor(s.template, s.opts.RolloutID, dom, node)
		byName[want.Name] = node
		if err := s.ensure(ctx, want); err != nil {
			if cerr := parent.Err(); cerr != nil && !errors.Is(err, cerr) {
				return fmt.Errorf("%w: %w", err, cerr)
			}
			return err
		}
	}
	logger.Info("Upgrade Jobs created", "namespace", ns, "jobs", len(byName))

	done, failure, err := s.await(ctx, dom, byName, logger)
	if failure != nil {
		return failure
	}
	if err != nil {
		var left []string
		for name, node := range byName {
			if !done[name] {
				left = append(left, node)
			}
		}
		slices.Sort(left)
		return waitError(parent, ctx, err, &TimeoutError{Domain: dom.Name, Pending: left, Awaited: "upgrade Job complete", Timeout: s.opts.Timeout})
	}
	// Clean up: the Jobs and, in the background, their pods.
	bg := metav1.DeletePropagationBackground
	for name := range byName {
		if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the upgrade Job %s/%s, which succeeded: %w", ns, name, err)
		}
	}
	logger.Info("Upgrade Jobs succeeded", "jobs", len(byName))
	return nil
}

// await watches the domain's Jobs (byName: Job name to node) until all
// succeeded (done), one failed or was deleted (failure), or ctx ends (err).
func (s *jobStep) await(ctx context.Context, dom topology.Domain, byName map[string]string, logger klog.Logger) (done map[string]bool, failure, err error) {
	ns := s.template.Namespace
	jobs := s.client.BatchV1().Jobs(ns)
	// One watch over the domain's Jobs (by udrain.UpgradeStepLabel) until all succeed
	// or one fails. The initial list delivers the Jobs that finished
	// already.
	sel := labels.SelectorFromSet(labels.Set{udrain.UpgradeStepLabel: stepValue(s.opts.RolloutID, dom.Name)}).String()
	lw := listWatch(s.client, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = sel
		return jobs.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel
		return jobs.Watch(ctx, o)
	})
	done = map[string]bool{}
	_, err = watchtools.UntilWithSync(ctx, lw, &batchv1.Job{}, nil, func(ev watch.Event) (bool, error) {
		j, ok := ev.Object.(*batchv1.Job)
		if !ok {
			return false, nil
		}
		node, ours := byName[j.Name]
		if !ours {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			if done[j.Name] {
				return false, nil
			}
			failure = &JobGoneError{Namespace: ns, Name: j.Name, Domain: dom.Name, Node: node}
			return true, nil
		}
		switch st, c := stateOf(j); st {
		case jobFailed:
			failure = &JobFailedError{Namespace: ns, Name: j.Name, Domain: dom.Name, Node: node, Reason: c.Reason, Message: c.Message}
			return true, nil
		case jobSucceeded:
			if !done[j.Name] {
				done[j.Name] = true
				logger.V(2).Info("Upgrade Job succeeded", "job", klog.KObj(j), "node", node)
			}
		}
		return len(done) == len(byName), nil
	})
	return done, failure, err
}

// ensure creates want, or finds the Job of that name a run before made:
// kept if running or succeeded, deleted and created again if failed.
func (s *jobStep) ensure(ctx context.Context, want *batchv1.Job) error {
	jobs := s.client.BatchV1().Jobs(want.Namespace)
	for {
		_, err := jobs.Create(ctx, want, metav1.CreateOptions{})
		if err == nil || !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating the upgrade Job %s/%s for node %s: %w", want.Namespace, want.Name, want.Annotations[udrain.NodeAnnotation], err)
			}
			return nil
		}
		got, err := jobs.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("reading the upgrade Job %s/%s: %w", want.Namespace, want.Name, err)
		}
		for _, k := range []string{udrain.RolloutIDAnnotation, udrain.DomainAnnotation, udrain.NodeAnnotation} {
			if got.Annotations[k] != want.Annotations[k] {
				return &JobConflictError{Namespace: got.Namespace, Name: got.Name, Annotations: map[string]string{
					udrain.RolloutIDAnnotation: got.Annotations[udrain.RolloutIDAnnotation], udrain.DomainAnnotation: got.Annotations[udrain.DomainAnnotation], udrain.NodeAnnotation: got.Annotations[udrain.NodeAnnotation]}}
			}
		}
		if st, _ := stateOf(got); st != jobFailed {
			klog.FromContext(ctx).V(2).Info("Upgrade Job found from an earlier run", "job", klog.KObj(got), "succeeded", st == jobSucceeded)
			return nil
		}
		klog.FromContext(ctx).Info("Upgrade Job failed in an earlier run; creating it again", "job", klog.KObj(got))
		if err := s.deleteAndWait(ctx, got); err != nil {
			return err
		}
	}
}

// deleteAndWait deletes j (that UID) and waits on a watch until it is gone.
func (s *jobStep) deleteAndWait(ctx context.Context, j *batchv1.Job) error {
	jobs := s.client.BatchV1().Jobs(j.Namespace)
	bg := metav1.DeletePropagationBackground
	err := jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &j.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced: Create will tell
	}
	if err != nil {
		return fmt.Errorf("deleting the failed upgrade Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	sel := fields.OneTermEqualSelector("metadata.name", j.Name).String()
	lw := listWatch(s.client, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = sel
		return jobs.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return jobs.Watch(ctx, o)
	})
	gone := func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if o.(*batchv1.Job).UID == j.UID {
				return false, nil
			}
		}
		return true, nil
	}
	_, err = watchtools.UntilWithSync(ctx, lw, &batchv1.Job{}, gone, func(ev watch.Event) (bool, error) {
		got, ok := ev.Object.(*batchv1.Job)
		return ok && ev.Type == watch.Deleted && got.UID == j.UID, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the failed upgrade Job %s/%s to be deleted: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// listWatch is a ListerWatcher of list and watch that streams its initial
// list only if client supports it (a fake clientset does not).
func listWatch(client kubernetes.Interface, list cache.ListWithContextFunc, watch cache.WatchFuncWithContext) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watch}, client)
}
