package eviction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/topology"
)

// This file reads LeaderWorkerSets without LWS's Go module: a small typed
// decode of the fields udrain needs (lwsObject), from the caller's
// informer (Informers.LeaderWorkerSets) or through the clientset's REST
// client.

// errNoRESTClient: the clientset has no REST client to GET a
// LeaderWorkerSet with (a fake clientset's Discovery has none).
var errNoRESTClient = errors.New("the clientset has no REST client to read LeaderWorkerSets with; give Options.Informers a LeaderWorkerSets informer")

// readLeaderWorkerSet reads one LeaderWorkerSet: from the caller's
// informer if the Drainer has one, else with a GET.
func (d *Drainer) readLeaderWorkerSet(ctx context.Context, ref workloadRef) (*lwsObject, error) {
	notFound := apierrors.NewNotFound(LeaderWorkerSetResource.GroupResource(), ref.name)
	if in := d.s.Informers; in != nil && in.LeaderWorkerSets != nil {
		if !in.LeaderWorkerSets.HasSynced() {
			sctx, cancel := context.WithTimeout(ctx, d.s.ConnectTimeout)
			synced := cache.WaitForCacheSync(sctx.Done(), in.LeaderWorkerSets.HasSynced)
			cancel()
			if !synced {
				return nil, fmt.Errorf("the LeaderWorkerSets informer of Options.Informers has not synced within %v", d.s.ConnectTimeout)
			}
		}
		obj, ok, err := in.LeaderWorkerSets.GetStore().GetByKey(ref.namespace + "/" + ref.name)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, notFound
		}
		return decodeLWS(obj)
	}
	if d.s.readLWS != nil { // tests
		return d.s.readLWS(ctx, ref)
	}
	rc := d.client.Discovery().RESTClient()
	if rc == nil {
		return nil, errNoRESTClient
	}
	path := fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s/%s", LeaderWorkerSetResource.Group, LeaderWorkerSetResource.Version, ref.namespace, LeaderWorkerSetResource.Resource, ref.name)
	var raw []byte
	err := d.bounded(ctx, func(ctx context.Context) (err error) {
		raw, err = rc.Get().AbsPath(path).DoRaw(ctx)
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, err
	}
	var o lwsObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("decode LeaderWorkerSet %s/%s: %w", ref.namespace, ref.name, err)
	}
	return &o, nil
}

// decodeLWS decodes what an informer's store holds: an
// *unstructured.Unstructured (a dynamic informer) or any object that
// converts to one (a typed LeaderWorkerSet of a controller-runtime cache).
func decodeLWS(obj any) (*lwsObject, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("the LeaderWorkerSets informer holds a %T, not an API object", obj)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
	if err != nil {
		return nil, fmt.Errorf("the LeaderWorkerSets informer's %T: %w", obj, err)
	}
	var o lwsObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &o); err != nil {
		return nil, fmt.Errorf("the LeaderWorkerSets informer's %T: %w", obj, err)
	}
	return &o, nil
}

// leaderWorkerSets lists the LeaderWorkerSets (of Options.Namespace, or
// all), from the caller's informer or through the REST client, in pages;
// none when the API does not serve them.
func (d *Drainer) leaderWorkerSets(ctx context.Context) ([]lwsObject, error) {
	if in := d.s.Informers; in != nil && in.LeaderWorkerSets != nil {
		var out []lwsObject
		for _, obj := range in.LeaderWorkerSets.GetStore().List() {
			o, err := decodeLWS(obj)
			if err != nil {
				return nil, err
			}
			if d.s.Namespace == "" || o.Metadata.Namespace == d.s.Namespace {
				out = append(out, *o)
			}
		}
		return out, nil
	}
	rc := d.client.Discovery().RESTClient()
	if rc == nil {
		return nil, errNoRESTClient
	}
	path := "/apis/" + LeaderWorkerSetResource.GroupVersion().String() + "/" + LeaderWorkerSetResource.Resource
	if d.s.Namespace != "" {
		path = "/apis/" + LeaderWorkerSetResource.GroupVersion().String() + "/namespaces/" + d.s.Namespace + "/" + LeaderWorkerSetResource.Resource
	}
	var out []lwsObject
	next := ""
	for {
		var raw []byte
		err := d.bounded(ctx, func(ctx context.Context) (err error) {
			req := rc.Get().AbsPath(path).Param("limit", "500")
			if next != "" {
				req = req.Param("continue", next)
			}
			raw, err = req.DoRaw(ctx)
			return err
		})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil // the API does not serve LeaderWorkerSets
		case err != nil:
			return nil, err
		}
		var list struct {
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []lwsObject     `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("decode the LeaderWorkerSets: %w", err)
		}
		out = append(out, list.Items...)
		if next = list.Metadata.Continue; next == "" {
			return out, nil
		}
	}
}

// auditLeaderWorkerSets checks the specs of the LeaderWorkerSets
// (topology.AuditLeaderWorkerSets); when they cannot be read, an Info
// finding says so.
func (d *Drainer) auditLeaderWorkerSets(ctx context.Context, layout *topology.Layout, pdbs *topology.PDBIndex) []topology.Finding {
	objs, err := d.leaderWorkerSets(ctx)
	switch {
	case errors.Is(err, errNoRESTClient):
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return []topology.Finding{{Code: topology.FindingLWSUnread, Severity: udrain.SeverityInfo,
			Message: fmt.Sprintf("the LeaderWorkerSets were not read (forbidden), so their specs are not checked; grant list on %s", LeaderWorkerSetResource.GroupResource())}}
	case err != nil:
		klog.FromContext(ctx).V(1).Info("Cannot read the LeaderWorkerSets; their specs are not checked", "err", err)
		return []topology.Finding{{Code: topology.FindingLWSUnread, Severity: udrain.SeverityInfo,
			Message: fmt.Sprintf("the LeaderWorkerSets were not read (%v), so their specs are not checked", err)}}
	}
	specs := make([]topology.LWSSpec, len(objs))
	for i := range objs {
		specs[i] = objs[i].spec()
	}
	return topology.AuditLeaderWorkerSets(layout, specs, pdbs)
}

// lwsObject is what udrain reads of a LeaderWorkerSet
// (leaderworkerset.x-k8s.io/v1).
type lwsObject struct {
	Metadata struct {
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		Generation  int64             `json:"generation"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Replicas             *int32 `json:"replicas"`
		StartupPolicy        string `json:"startupPolicy"`
		LeaderWorkerTemplate struct {
			Size           *int32                  `json:"size"`
			RestartPolicy  string                  `json:"restartPolicy"`
			LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate"`
			WorkerTemplate corev1.PodTemplateSpec  `json:"workerTemplate"`
		} `json:"leaderWorkerTemplate"`
		RolloutStrategy struct {
			RollingUpdateConfiguration *struct {
				Partition *int32 `json:"partition"`
			} `json:"rollingUpdateConfiguration"`
		} `json:"rolloutStrategy"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64              `json:"observedGeneration"`
		ReadyReplicas      int32              `json:"readyReplicas"`
		UpdatedReplicas    int32              `json:"updatedReplicas"`
		Conditions         []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// spec is what the audit checks of the LeaderWorkerSet, with the defaults
// LWS's CRD and webhook give (1 replica, size 1, LeaderCreated,
// RecreateGroupOnPodRestart).
func (o *lwsObject) spec() topology.LWSSpec {
	t := &o.Spec.LeaderWorkerTemplate
	s := topology.LWSSpec{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name, Replicas: 1, Size: 1,
		StartupPolicy: o.Spec.StartupPolicy, RestartPolicy: t.RestartPolicy,
		ExclusiveTopology: o.Metadata.Annotations[topology.LWSExclusiveTopologyAnnotation],
		LeaderTemplate:    t.LeaderTemplate, WorkerTemplate: t.WorkerTemplate}
	if o.Spec.Replicas != nil {
		s.Replicas = int(*o.Spec.Replicas)
	}
	if t.Size != nil {
		s.Size = int(*t.Size)
	}
	if s.StartupPolicy == "" {
		s.StartupPolicy = "LeaderCreated"
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = "RecreateGroupOnPodRestart"
	}
	return s
}
