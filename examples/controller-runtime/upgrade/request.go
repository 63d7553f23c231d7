package upgrade

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The ConfigMap an upgrade request is declared in.
const (
	// RequestLabel marks the ConfigMaps that are upgrade requests (any
	// value); the controller sees no other ConfigMap.
	RequestLabel = "udrain.dev/upgrade-request"
	// StatusAnnotation holds the request's Status as JSON, written by the
	// controller.
	StatusAnnotation = "udrain.dev/upgrade-status"

	// KeyID is the data key of the rollout's ID (optional; default: the
	// ConfigMap's name and the target version, "kubelet-1.37.2"). A
	// rollout run again with the same ID continues where the last
	// stopped, and one that succeeded is not run again; a new ID (a new
	// target version) starts a new upgrade.
	KeyID = "id"
	// KeyDomains is the data key of the domains to upgrade, in order,
	// separated by commas or white space (optional; default: every
	// domain).
	KeyDomains = "domains"
	// KeyTargetVersion is the data key of the version the nodes go to
	// (required; a label value).
	KeyTargetVersion = "targetVersion"
)

// TargetVersionLabel is the node label the upgrade step sets: the version
// a node agent (or a Cluster API MachineDeployment) brings the node to.
const TargetVersionLabel = "upgrade.udrain.dev/target-version"

// Request is an upgrade request, read from its ConfigMap.
type Request struct {
	// ID names the rollout (eviction.RolloutOptions.ID).
	ID string
	// Domains are the upgrade domains, in order; empty means all.
	Domains []string
	// TargetVersion is the version the nodes are upgraded to.
	TargetVersion string
}

// ParseRequest reads the request declared in cm, or says what is wrong
// with it.
func ParseRequest(cm *corev1.ConfigMap) (Request, error) {
	r := Request{ID: cm.Data[KeyID], Domains: strings.FieldsFunc(cm.Data[KeyDomains], func(c rune) bool {
		return c == ',' || c == ' ' || c == '\n' || c == '\t'
	}), TargetVersion: cm.Data[KeyTargetVersion]}
	if r.ID == "" {
		r.ID = cm.Name
		if r.TargetVersion != "" {
			r.ID += "-" + r.TargetVersion
		}
	}
	var errs []error
	if errs2 := validation.IsValidLabelValue(r.ID); len(errs2) > 0 {
		errs = append(errs, fmt.Errorf("data.%s %q cannot be an annotation value udrain marks nodes with: %s", KeyID, r.ID, strings.Join(errs2, "; ")))
	}
	switch errs2 := validation.IsValidLabelValue(r.TargetVersion); {
	case r.TargetVersion == "":
		errs = append(errs, fmt.Errorf("data.%s is missing: set the version the nodes go to, e.g. 1.37.2", KeyTargetVersion))
	case len(errs2) > 0:
		errs = append(errs, fmt.Errorf("data.%s %q cannot be a label value: %s", KeyTargetVersion, r.TargetVersion, strings.Join(errs2, "; ")))
	}
	return r, errors.Join(errs...)
}

// StatusOf returns the status the controller wrote on cm (the zero Status
// if none).
func StatusOf(cm *corev1.ConfigMap) (Status, error) {
	var s Status
	raw, ok := cm.Annotations[StatusAnnotation]
	if !ok {
		return s, nil
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Status{}, fmt.Errorf("annotation %s of %s/%s: %w", StatusAnnotation, cm.Namespace, cm.Name, err)
	}
	return s, nil
}
