// Package nativegroups holds the end-to-end tests of udrain on the native
// Kubernetes group API: PodGroups (scheduling.k8s.io/v1beta1, beta in 1.37
// behind the GenericWorkload feature gate) and pods that name them in
// spec.schedulingGroup. Its tests need a control plane with that gate on,
// so the package brings up a cluster of its own (testbed.Options
// FeatureGates and RuntimeConfig); package e2e's cluster runs without it.
//
// Run: cd e2e && go test ./nativegroups   (see testbed.OptionsFromEnv).
package nativegroups
